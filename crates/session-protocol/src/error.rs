//! Typed errors and their stable numeric codes.
//!
//! On the wire an error is a JSON-RPC error object `{code, message, data}`: `code` is
//! one of [`code`]'s constants (the JSON-RPC ones for protocol faults, -32001…-32099
//! for the owner's own protocol faults, 1000 and up for the library's errors),
//! `message` the error's one-line text, and `data` its fields as an object tagged by
//! `kind` (camelCase keys). [`Error::to_object`] and [`Error::from_object`] convert; a
//! code or `kind` this version does not know reads as [`Error::Unknown`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::version::ProtocolVersion;

/// The stable error codes. A code never changes meaning; new errors get new codes.
pub mod code {
    /// The line is not JSON (JSON-RPC's parse error).
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a request object (JSON-RPC's invalid request).
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method (JSON-RPC's method not found).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params do not fit the method (JSON-RPC's invalid params).
    pub const INVALID_PARAMS: i64 = -32602;
    /// A fault of the owner itself (JSON-RPC's internal error).
    pub const INTERNAL_ERROR: i64 = -32603;
    /// A queue is full: retry later (as Codex's app-server answers a saturated server).
    pub const OVERLOADED: i64 = -32001;
    /// A request other than `initialize` came before `initialize`.
    pub const NOT_INITIALIZED: i64 = -32002;
    /// `initialize` came twice on one connection.
    pub const ALREADY_INITIALIZED: i64 = -32003;
    /// The client's protocol major version is not the server's.
    pub const UNSUPPORTED_PROTOCOL: i64 = -32004;
    /// The line is longer than the owner accepts.
    pub const LINE_TOO_LONG: i64 = -32005;
    /// The JSON nests deeper than the owner accepts.
    pub const TOO_DEEP: i64 = -32006;
    /// Another process owns the session.
    pub const LOCKED: i64 = 1001;
    /// No such session.
    pub const NOT_FOUND: i64 = 1002;
    /// The session is not open on this connection.
    pub const SESSION_NOT_OPEN: i64 = 1003;
    /// No such entry.
    pub const ENTRY_NOT_FOUND: i64 = 1004;
    /// A read needs more than its limits allow.
    pub const LIMIT_EXCEEDED: i64 = 1005;
    /// The journal is corrupt.
    pub const CORRUPT: i64 = 1006;
    /// The journal's format version is not supported.
    pub const UNSUPPORTED_VERSION: i64 = 1007;
    /// The entry to append is not valid.
    pub const INVALID_ENTRY: i64 = 1008;
    /// A session with this id exists already.
    pub const EXISTS: i64 = 1009;
    /// The file is legacy JSONL: import it.
    pub const LEGACY_JSONL: i64 = 1010;
    /// A file-system operation failed.
    pub const IO: i64 = 1011;
    /// The file is not a session journal (empty, or not the journal signature).
    pub const NOT_A_JOURNAL: i64 = 1012;
    /// Any other library error (its message says what).
    pub const STORE: i64 = 1099;
}

/// Which read limit was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum LimitKind {
    /// `maxSourceEntries`
    SourceEntries,
    /// `maxSourceBytes`
    SourceBytes,
}

impl std::fmt::Display for LimitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LimitKind::SourceEntries => "source entries",
            LimitKind::SourceBytes => "source bytes",
        })
    }
}

/// An error a call can return, with the fields a caller acts on.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// In the schema and TypeScript this is the `data` of an error object: `Error` would
// shadow JavaScript's own.
#[cfg_attr(feature = "schema", schemars(rename = "ErrorData"))]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Error {
    /// The line is not JSON.
    #[error("parse error: {detail}")]
    Parse {
        /// The parser's message.
        detail: String,
    },
    /// The JSON is not a JSON-RPC 2.0 request.
    #[error("invalid request: {detail}")]
    InvalidRequest {
        /// What is wrong.
        detail: String,
    },
    /// No such method.
    #[error("method not found: {method}")]
    MethodNotFound {
        /// The method asked for.
        method: String,
    },
    /// The params do not fit the method.
    #[error("invalid params for {method}: {detail}")]
    InvalidParams {
        /// The method.
        method: String,
        /// What is wrong.
        detail: String,
    },
    /// A fault of the owner.
    #[error("internal error: {detail}")]
    Internal {
        /// What failed.
        detail: String,
    },
    /// A queue is full; the request was not performed. Retry after a pause.
    #[error("overloaded: {queue} queue is full, retry later")]
    Overloaded {
        /// Which queue (e.g. `session <id>`).
        queue: String,
    },
    /// `initialize` must come first.
    #[error("not initialized: {method} before initialize")]
    NotInitialized {
        /// The method that came first.
        method: String,
    },
    /// `initialize` came twice.
    #[error("already initialized")]
    AlreadyInitialized,
    /// The client's major version is not the server's.
    #[error(
        "unsupported protocol version: the client speaks {client}, this owner speaks {server} (major {} only)",
        .server.major
    )]
    UnsupportedProtocol {
        /// What the client asked for.
        client: ProtocolVersion,
        /// What the server speaks.
        server: ProtocolVersion,
    },
    /// The line is too long.
    #[error("line of {len} bytes exceeds the limit of {limit} bytes")]
    LineTooLong {
        /// The line's length (a lower bound when it was not read whole).
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The JSON nests too deep.
    #[error("json nests deeper than {limit} levels at byte {offset}")]
    TooDeep {
        /// The limit.
        limit: u64,
        /// Where it crossed it.
        offset: u64,
    },
    /// Another process owns the session.
    #[error("{path}: session is owned by {}", holder_text(*.holder_pid, .holder_host.as_deref()))]
    Locked {
        /// The journal.
        path: String,
        /// The holder's process id, if recorded.
        holder_pid: Option<u32>,
        /// The holder's host, if recorded.
        holder_host: Option<String>,
    },
    /// No such session.
    #[error("{path}: no such session")]
    NotFound {
        /// The journal path (or the id asked for).
        path: String,
    },
    /// The session is not open on this connection (`store/open` it first).
    #[error("session {session_id} is not open on this connection")]
    SessionNotOpen {
        /// The session id.
        session_id: String,
    },
    /// No such entry.
    #[error("{session}: entry {entry_id} not found")]
    EntryNotFound {
        /// The session (journal path or id).
        session: String,
        /// The entry id.
        entry_id: String,
    },
    /// A read needs more than its limits allow; nothing was returned.
    #[error("{session}: read limit exceeded: {limit} limit is {limit_value}, the read needs {}{needed}", if *.exact { "" } else { "at least " })]
    LimitExceeded {
        /// The session.
        session: String,
        /// Which limit.
        limit: LimitKind,
        /// Its value.
        limit_value: u64,
        /// What the read needs (exactly, or at least: see `exact`).
        needed: u64,
        /// Whether `needed` is exact.
        exact: bool,
    },
    /// The journal is corrupt at `offset`.
    #[error("{path}: corrupt at offset {offset}: {detail}")]
    Corrupt {
        /// The journal.
        path: String,
        /// The byte offset.
        offset: u64,
        /// The library's message.
        detail: String,
    },
    /// The journal's format version is not supported.
    #[error("{path}: unsupported version {found} (supported: {supported})")]
    UnsupportedVersion {
        /// The journal.
        path: String,
        /// What it says.
        found: String,
        /// What this owner reads.
        supported: String,
    },
    /// The entry to append is not valid.
    #[error("invalid entry: {reason}")]
    InvalidEntry {
        /// What is wrong.
        reason: String,
    },
    /// A session with this id exists already.
    #[error("{path}: a session with id {session_id} already exists")]
    Exists {
        /// Its journal.
        path: String,
        /// The id.
        session_id: String,
    },
    /// The file is legacy JSONL and must be imported.
    #[error("{path}: legacy JSONL session, not a native journal: import it instead")]
    LegacyJsonl {
        /// The file.
        path: String,
    },
    /// A file-system operation failed.
    #[error("{path}: {op} failed: {detail}")]
    Io {
        /// The file or directory.
        path: String,
        /// What was being done.
        op: String,
        /// The OS error.
        detail: String,
    },
    /// The file is not a session journal: it is empty, holds no complete header (a
    /// creation that never finished), or does not start with the journal signature
    /// (and is not legacy JSONL, which is [`Error::LegacyJsonl`]).
    #[error("{path}: not a session journal: {detail}")]
    NotAJournal {
        /// The file.
        path: String,
        /// What was found instead.
        detail: String,
    },
    /// Another library error; its message says what and where.
    #[error("{detail}")]
    Store {
        /// The library's message.
        detail: String,
    },
    /// An error this version does not know (a newer server's): the raw object.
    #[error("error {code}: {message}")]
    #[serde(skip)]
    Unknown {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
        /// Its data.
        data: Option<Value>,
    },
}

fn holder_text(pid: Option<u32>, host: Option<&str>) -> String {
    match (pid, host) {
        (Some(pid), Some(host)) => format!("pid {pid} on {host}"),
        (Some(pid), None) => format!("pid {pid} on an unknown host"),
        (None, Some(host)) => format!("an unknown process on {host}"),
        (None, None) => "an unknown process".to_owned(),
    }
}

/// A JSON-RPC error object as it travels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorObject {
    /// The code ([`code`]).
    pub code: i64,
    /// One line of text.
    pub message: String,
    /// The fields, tagged by `kind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> i64 {
        match self {
            Error::Parse { .. } => code::PARSE_ERROR,
            Error::InvalidRequest { .. } => code::INVALID_REQUEST,
            Error::MethodNotFound { .. } => code::METHOD_NOT_FOUND,
            Error::InvalidParams { .. } => code::INVALID_PARAMS,
            Error::Internal { .. } => code::INTERNAL_ERROR,
            Error::Overloaded { .. } => code::OVERLOADED,
            Error::NotInitialized { .. } => code::NOT_INITIALIZED,
            Error::AlreadyInitialized => code::ALREADY_INITIALIZED,
            Error::UnsupportedProtocol { .. } => code::UNSUPPORTED_PROTOCOL,
            Error::LineTooLong { .. } => code::LINE_TOO_LONG,
            Error::TooDeep { .. } => code::TOO_DEEP,
            Error::Locked { .. } => code::LOCKED,
            Error::NotFound { .. } => code::NOT_FOUND,
            Error::SessionNotOpen { .. } => code::SESSION_NOT_OPEN,
            Error::EntryNotFound { .. } => code::ENTRY_NOT_FOUND,
            Error::LimitExceeded { .. } => code::LIMIT_EXCEEDED,
            Error::Corrupt { .. } => code::CORRUPT,
            Error::UnsupportedVersion { .. } => code::UNSUPPORTED_VERSION,
            Error::InvalidEntry { .. } => code::INVALID_ENTRY,
            Error::Exists { .. } => code::EXISTS,
            Error::LegacyJsonl { .. } => code::LEGACY_JSONL,
            Error::Io { .. } => code::IO,
            Error::NotAJournal { .. } => code::NOT_A_JOURNAL,
            Error::Store { .. } => code::STORE,
            Error::Unknown { code, .. } => *code,
        }
    }

    /// Whether the same request may succeed if sent again later unchanged.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Overloaded { .. })
    }

    /// The wire form.
    pub fn to_object(&self) -> ErrorObject {
        match self {
            Error::Unknown {
                code,
                message,
                data,
            } => ErrorObject {
                code: *code,
                message: message.clone(),
                data: data.clone(),
            },
            other => ErrorObject {
                code: other.code(),
                message: other.to_string(),
                data: serde_json::to_value(other).ok(),
            },
        }
    }

    /// Reads the wire form: the typed error when the code and the `kind` of `data`
    /// agree, [`Error::Unknown`] otherwise.
    pub fn from_object(object: ErrorObject) -> Error {
        if let Some(data) = &object.data
            && let Ok(typed) = Error::deserialize(data)
            && typed.code() == object.code
        {
            return typed;
        }
        Error::Unknown {
            code: object.code,
            message: object.message,
            data: object.data,
        }
    }
}
