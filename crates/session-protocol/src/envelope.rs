//! JSON-RPC 2.0 envelopes, one per line: reading an incoming line
//! ([`Incoming::parse`]) and writing requests, results, errors and notifications.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use session_types::EntryId;

use crate::error::{Error, ErrorObject};
use crate::line::{LineError, LineLimits, check_line};
use crate::methods::{Method, Request};
use crate::notification::Notification;

/// The `jsonrpc` member every message carries.
pub const JSONRPC: &str = "2.0";

/// A request id: an integer or a string, chosen by the client and echoed in the
/// response. (`null` and fractional numbers are refused as invalid requests.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum RequestId {
    /// `"id": 7`
    Number(i64),
    /// `"id": "a7"`
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The members of any message, before it is classified (strings borrowed from the
/// line unless they hold escapes).
#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

/// An incoming line, classified; params and results stay unparsed JSON text until
/// the method (or the pending request) says what they are.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request: answer it with its id.
    Request {
        /// Its id.
        id: RequestId,
        /// Its method name (perhaps unknown), borrowed from the line unless escaped.
        method: Cow<'a, str>,
        /// Its params.
        params: Option<&'a RawValue>,
    },
    /// A notification: no answer.
    Notification {
        /// Its method name, borrowed from the line unless escaped.
        method: Cow<'a, str>,
        /// Its params.
        params: Option<&'a RawValue>,
    },
    /// A response to a request of ours.
    Response {
        /// The request's id.
        id: RequestId,
        /// Its result, or its error.
        outcome: Result<&'a RawValue, ErrorObject>,
    },
}

/// Why a line is not a message: the error to answer with, and the request id when it
/// could be read (JSON-RPC answers `"id": null` otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The request's id, if known.
    pub id: Option<RequestId>,
    /// What is wrong (boxed: a refusal travels through `Result`s on every line).
    pub error: Box<Error>,
}

impl From<LineError> for Error {
    fn from(e: LineError) -> Error {
        match e {
            LineError::TooLong { len, limit } => Error::LineTooLong {
                len: len as u64,
                limit: limit as u64,
            },
            LineError::TooDeep { limit, offset } => Error::TooDeep {
                limit: limit as u64,
                offset: offset as u64,
            },
        }
    }
}

impl<'a> Incoming<'a> {
    /// Reads one line (without its `\n`): the size and depth checks first, then the
    /// envelope. Never panics; every refusal is an [`Error`] to answer with.
    pub fn parse(line: &'a [u8], limits: LineLimits) -> Result<Incoming<'a>, Refusal> {
        let refuse = |error: Error| Refusal {
            id: None,
            error: Box::new(error),
        };
        check_line(line, limits).map_err(|e| refuse(e.into()))?;
        let text = std::str::from_utf8(line).map_err(|e| {
            refuse(Error::Parse {
                detail: format!("invalid utf-8 at byte {}", e.valid_up_to()),
            })
        })?;
        let raw: RawEnvelope<'a> = serde_json::from_str(text).map_err(|e| {
            refuse(if e.is_data() {
                Error::InvalidRequest {
                    detail: e.to_string(),
                }
            } else {
                Error::Parse {
                    detail: e.to_string(),
                }
            })
        })?;
        let id = match raw.id {
            None => None,
            Some(v) => Some(serde_json::from_str::<RequestId>(v.get()).map_err(|_| {
                refuse(Error::InvalidRequest {
                    detail: format!("id must be an integer or a string, not {}", v.get()),
                })
            })?),
        };
        let invalid = |detail: String| Refusal {
            id: id.clone(),
            error: Box::new(Error::InvalidRequest { detail }),
        };
        if raw.jsonrpc.as_deref() != Some(JSONRPC) {
            return Err(invalid(format!("jsonrpc must be {JSONRPC:?}")));
        }
        match (raw.method, id.clone(), raw.result, raw.error) {
            (Some(method), Some(id), None, None) => Ok(Incoming::Request {
                id,
                method,
                params: raw.params,
            }),
            (Some(method), None, None, None) => Ok(Incoming::Notification {
                method,
                params: raw.params,
            }),
            (None, Some(id), Some(result), None) if raw.params.is_none() => {
                Ok(Incoming::Response {
                    id,
                    outcome: Ok(result),
                })
            }
            (None, Some(id), None, Some(error)) if raw.params.is_none() => Ok(Incoming::Response {
                id,
                outcome: Err(error),
            }),
            _ => Err(invalid(
                "not a request, a notification or a response".to_owned(),
            )),
        }
    }
}

/// Reads a whole request line into a typed [`Request`] (what a server does with
/// [`Incoming::Request`], lone surrogates read as U+FFFD: [`crate::read_lone_surrogates`]):
/// an unknown method or ill-fitting params is a [`Refusal`] naming the request's id.
pub fn parse_request(line: &[u8], limits: LineLimits) -> Result<(RequestId, Request), Refusal> {
    let line = crate::read_lone_surrogates(line);
    match Incoming::parse(&line, limits)? {
        Incoming::Request { id, method, params } => {
            let request = typed_request(&method, params).map_err(|error| Refusal {
                id: Some(id.clone()),
                error: Box::new(error),
            })?;
            Ok((id, request))
        }
        Incoming::Notification { .. } | Incoming::Response { .. } => Err(Refusal {
            id: None,
            error: Box::new(Error::InvalidRequest {
                detail: "expected a request".to_owned(),
            }),
        }),
    }
}

/// The typed request of a method name and its params.
pub fn typed_request(method: &str, params: Option<&RawValue>) -> Result<Request, Error> {
    let m = Method::from_name(method).ok_or_else(|| Error::MethodNotFound {
        method: method.to_owned(),
    })?;
    Request::from_params(m, params)
}

#[derive(Serialize)]
struct OutRequest<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'static str,
    params: &'a RawValue,
}

#[derive(Serialize)]
struct OutResult<'a, T> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct OutError<'a> {
    jsonrpc: &'static str,
    id: Option<&'a RequestId>,
    error: ErrorObject,
}

#[derive(Serialize)]
struct OutNotification<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a RawValue,
}

/// Serializes values built from this crate's types, which cannot fail (string keys,
/// finite numbers); a failure would be a bug, answered as an internal error line.
fn line_of<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32603,"message":"internal error: {}"}}}}"#,
            e.to_string().replace(['"', '\\'], "'")
        )
    })
}

fn raw(text: String) -> Box<RawValue> {
    // `text` is JSON we just serialized.
    RawValue::from_string(text)
        .unwrap_or_else(|_| RawValue::from_string("{}".to_owned()).expect("`{}` is JSON"))
}

/// A request line (without `\n`).
pub fn encode_request(id: &RequestId, request: &Request) -> String {
    let params = raw(request.params_json());
    line_of(&OutRequest {
        jsonrpc: JSONRPC,
        id,
        method: request.method().as_str(),
        params: &params,
    })
}

/// A success response line.
pub fn encode_result<T: Serialize>(id: &RequestId, result: &T) -> String {
    line_of(&OutResult {
        jsonrpc: JSONRPC,
        id,
        result,
    })
}

/// The success line of an append (`{"entryId":…}`, [`crate::Appended`]): the bytes
/// [`encode_result`] writes, by a writer of this one shape (no serializer, one
/// allocation), for the owner's most frequent answer.
pub fn encode_appended(id: &RequestId, entry_id: &EntryId) -> String {
    let entry_id = entry_id.as_str();
    let mut line = String::with_capacity(64 + entry_id.len());
    line.push_str(r#"{"jsonrpc":"2.0","id":"#);
    match id {
        RequestId::Number(n) => {
            use std::fmt::Write;
            let _ = write!(line, "{n}"); // writing into a `String` cannot fail
        }
        RequestId::String(s) => push_json_string(&mut line, s),
    }
    line.push_str(r#","result":{"entryId":"#);
    push_json_string(&mut line, entry_id);
    line.push_str("}}");
    line
}

/// `s` as a JSON string, as `serde_json` writes it: quoted as it is when nothing in
/// it needs an escape, else through `serde_json`'s escaper.
fn push_json_string(line: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        line.push('"');
        line.push_str(s);
        line.push('"');
    } else {
        // Serializing a string into a `String` cannot fail.
        line.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

/// An error response line (`"id": null` when the request's id could not be read).
pub fn encode_error(id: Option<&RequestId>, error: &Error) -> String {
    line_of(&OutError {
        jsonrpc: JSONRPC,
        id,
        error: error.to_object(),
    })
}

/// A notification line.
pub fn encode_notification(notification: &Notification) -> String {
    let params = raw(notification.params_json());
    line_of(&OutNotification {
        jsonrpc: JSONRPC,
        method: notification.method(),
        params: &params,
    })
}
