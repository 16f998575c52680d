//! The listing summary: the reference's `SessionInfo`, computed incrementally.

use serde::{Deserialize, Serialize};
use session_types::{Timestamp, parse_js_date};

use crate::state::Aggregates;

/// ECMAScript `TimeClip`: `None` outside ±8.64e15 ms, else truncated.
fn time_clip(t: f64) -> Option<i64> {
    (t.is_finite() && t.abs() <= 8.64e15).then(|| t.trunc() as i64)
}

/// A JSON value that is present, `null` included, boxed (see `crate::state::present`).
fn present_boxed<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Box<serde_json::Value>>, D::Error> {
    serde_json::Value::deserialize(d).map(|v| Some(Box::new(v)))
}

/// When the session was last active, as the reference computes `modified`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Modified {
    /// A time from the entries or the header (ms since the epoch; `None`: Invalid Date).
    At(Option<i64>),
    /// Neither gave a time: the journal file's modification time applies.
    FileMtime,
}

/// The listing fields of one session, as the reference's `SessionInfo` computes them
/// from a full parse (all branches), minus `path` (the listing adds it) and
/// `allMessagesText` (not indexed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionSummary {
    /// Whether the journal has a session header record (the reference lists only
    /// files whose first record is one).
    pub has_header: bool,
    /// `header.id`, unvalidated (any JSON value; `None` when absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::state::present"
    )]
    pub id: Option<serde_json::Value>,
    /// `header.cwd` if it is a string, else `""`.
    pub cwd: String,
    /// The latest `session_info` name, trimmed; empty clears.
    pub name: Option<String>,
    /// `header.parentSession` as written (absent: `None`; `null` is listed). Boxed,
    /// as is `agent_status`: rarely set, and a JSON value inline would add 64 bytes to
    /// every entry of a listing (6 MB at 100,000 sessions).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_boxed"
    )]
    pub parent_session_path: Option<Box<serde_json::Value>>,
    /// `new Date(header.timestamp)` in ms (`None`: Invalid Date).
    pub created: Option<i64>,
    /// `modified` (see [`Modified`]).
    pub modified: Modified,
    /// `message` entries, any role, all branches.
    pub message_count: u64,
    /// The first non-empty user message text in append order, or `"(no messages)"`:
    /// at most its first [`FIRST_MESSAGE_MAX_BYTES`](crate::FIRST_MESSAGE_MAX_BYTES)
    /// bytes, cut on a char boundary (the index never keeps a whole message).
    pub first_message: String,
    /// Whether the first message is longer than [`first_message`](Self::first_message).
    #[serde(default)]
    pub first_message_truncated: bool,
    /// Set when the reference's listing would throw on this session and drop it (we
    /// list it anyway): the first reason.
    pub reference_would_drop: Option<String>,
    /// The latest `session_state` entry's state, as written (`active`, `archived`,
    /// …; `None`: none, or not a string). Not part of the reference's `SessionInfo`.
    #[serde(default)]
    pub session_state: Option<String>,
    /// The latest `agent_status` entry's `status` value, as written (`None`: none,
    /// or that entry had no `status`). Not part of the reference's `SessionInfo`.
    #[serde(default)]
    pub agent_status: Option<Box<serde_json::Value>>,
}

impl SessionSummary {
    pub(crate) fn from_aggregates(a: &Aggregates) -> Self {
        let h = a.header.clone().unwrap_or_default();
        // `new Date(header.timestamp)`, for every JSON type (an array is its join).
        let created = session_types::js::date_of(h.timestamp.as_ref());
        let modified = match a.last_activity {
            Some(t) if t > 0.0 => Modified::At(time_clip(t)),
            _ => match &h.timestamp {
                Some(serde_json::Value::String(s)) => match parse_js_date(s) {
                    Some(ms) => Modified::At(Some(ms)),
                    None => Modified::FileMtime,
                },
                _ => Modified::FileMtime,
            },
        };
        SessionSummary {
            has_header: a.header.is_some(),
            id: h.id,
            cwd: match h.cwd {
                Some(serde_json::Value::String(s)) => s,
                _ => String::new(),
            },
            name: a.name.clone(),
            parent_session_path: h.parent_session.map(Box::new),
            created,
            modified,
            message_count: a.message_count,
            first_message: a
                .first_message
                .clone()
                .unwrap_or_else(|| "(no messages)".to_owned()),
            first_message_truncated: a.first_message.is_some() && a.first_message_truncated,
            reference_would_drop: a.reference_would_drop.clone(),
            session_state: a.state.clone(),
            agent_status: a.agent_status.clone().map(Box::new),
        }
    }

    /// `modified` in ms, with the journal file's mtime (ms) for the fallback.
    pub fn modified_ms(&self, file_mtime_ms: Option<i64>) -> Option<i64> {
        match self.modified {
            Modified::At(t) => t,
            Modified::FileMtime => file_mtime_ms,
        }
    }

    /// The reference's JSON rendering (`list.mjs` with `--no-text`): dates as ISO
    /// strings (`null` for Invalid Date), `name` and `parentSessionPath` omitted when
    /// absent.
    pub fn to_json(&self, path: &str, file_mtime_ms: Option<i64>) -> serde_json::Value {
        serde_json::to_value(ReferenceJson {
            summary: self,
            path,
            file_mtime_ms,
        })
        .unwrap_or_default()
    }
}

/// A summary serialized as the reference's `SessionInfo` (see
/// [`SessionSummary::to_json`]) straight from its fields: a listing of thousands of
/// sessions is written without building a JSON value per session.
pub(crate) struct ReferenceJson<'a> {
    pub(crate) summary: &'a SessionSummary,
    pub(crate) path: &'a str,
    pub(crate) file_mtime_ms: Option<i64>,
}

impl Serialize for ReferenceJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let s = self.summary;
        let iso = |ms: Option<i64>| ms.map(Timestamp::from_unix_ms);
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry("path", self.path)?;
        if let Some(id) = &s.id {
            m.serialize_entry("id", id)?;
        }
        m.serialize_entry("cwd", &s.cwd)?;
        if let Some(n) = &s.name {
            m.serialize_entry("name", n)?;
        }
        if let Some(p) = &s.parent_session_path {
            m.serialize_entry("parentSessionPath", p)?;
        }
        m.serialize_entry("created", &iso(s.created).as_ref().map(Timestamp::as_str))?;
        let modified = iso(s.modified_ms(self.file_mtime_ms));
        m.serialize_entry("modified", &modified.as_ref().map(Timestamp::as_str))?;
        m.serialize_entry("messageCount", &s.message_count)?;
        m.serialize_entry("firstMessage", &s.first_message)?;
        m.end()
    }
}

/// `Date.prototype.toJSON`: ISO text, or `null` for Invalid Date.
pub fn iso(ms: Option<i64>) -> serde_json::Value {
    match ms {
        Some(ms) => Timestamp::from_unix_ms(ms).as_str().into(),
        None => serde_json::Value::Null,
    }
}
