//! Parsing and writing one record (a header or an entry) as JSON text.

use std::fmt;

use serde_json::Value;

use crate::entry::{Entry, EntryBase, EntryType};
use crate::header::SessionHeader;
use crate::ids::EntryId;
use crate::json::find_lone_surrogates;
use crate::message::AgentMessage;

/// One JSON record of a session: the header or an entry.
#[derive(Debug, Clone, PartialEq)]
// Variants are plain data read once and matched on; boxing them would only add
// allocations and indirection to every consumer.
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// `type: "session"`
    Header(SessionHeader),
    /// Any other `type`.
    Entry(Entry),
}

impl Record {
    /// Reads one record from JSON text (one legacy line, or one journal payload) the
    /// way the reference reads it: surrounding JavaScript whitespace is ignored, a
    /// repeated key keeps its last value, a number beyond the range of a double reads
    /// as `null`, and an entry of a known type whose fields do not fit the typed model
    /// is kept whole as [`Entry::Unknown`] (see [`Entry::read`]). Only text that is not a
    /// JSON object, and a session header that does not fit [`SessionHeader`], fail.
    ///
    /// ```
    /// use session_types::Record;
    /// let r = Record::parse(r#"{"type":"label","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","targetId":"b2","label":"x"}"#).unwrap();
    /// assert!(matches!(r, Record::Entry(e) if e.entry_type() == Some("label")));
    /// ```
    pub fn parse(text: &str) -> Result<Record, ParseError> {
        match Entry::read(text)? {
            Entry::Unknown(mut map)
                if map.get("type").and_then(Value::as_str) == Some(SessionHeader::TYPE) =>
            {
                // The tag is the record's kind, not an unmodelled field: kept in
                // `extra` it would be written twice by `to_json`.
                map.shift_remove("type");
                serde_json::from_value::<SessionHeader>(Value::Object(map))
                    .map(Record::Header)
                    .map_err(|e| ParseError::from_serde(text, &e))
            }
            entry => Ok(Record::Entry(entry)),
        }
    }

    /// Reads a stored payload as every view of it reads it: [`Record::parse`] of its
    /// bytes with invalid UTF-8 as U+FFFD (Node's decoding) and each lone surrogate
    /// escape, which no Rust string holds, as U+FFFD (`docs/context.md`, D6). The
    /// payload's bytes are the journal's to keep; this is its typed view.
    ///
    /// ```
    /// use session_types::Record;
    /// let r = Record::read_payload(br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w\ud800"}"#).unwrap();
    /// assert!(matches!(r, Record::Header(h) if h.cwd.as_deref() == Some("/w\u{fffd}")));
    /// ```
    pub fn read_payload(payload: &[u8]) -> Result<Record, ParseError> {
        let text = String::from_utf8_lossy(payload);
        Record::parse(&crate::json::replace_lone_surrogates(&text).0)
    }

    /// Compact JSON text, keys in the reference's order for the modelled fields.
    pub fn to_json(&self) -> String {
        match self {
            Record::Header(h) => header_to_json(h),
            Record::Entry(e) => e.to_json(),
        }
    }
}

fn header_to_json(h: &SessionHeader) -> String {
    #[derive(serde::Serialize)]
    struct Tagged<'a> {
        #[serde(rename = "type")]
        t: &'static str,
        #[serde(flatten)]
        h: &'a SessionHeader,
    }
    if h.extra.contains_key("type") {
        // A header built by hand with `type` in `extra`: the tag is written once.
        let mut h = h.clone();
        h.extra.shift_remove("type");
        return serde_json::to_string(&Tagged {
            t: SessionHeader::TYPE,
            h: &h,
        })
        .unwrap_or_default();
    }
    serde_json::to_string(&Tagged {
        t: SessionHeader::TYPE,
        h,
    })
    .unwrap_or_default()
}

impl SessionHeader {
    /// Compact JSON text with `"type":"session"` first.
    pub fn to_json(&self) -> String {
        header_to_json(self)
    }
}

impl Entry {
    /// Reads one entry from JSON text as the reference's `JSON.parse` and property
    /// accesses do: it fails only when the text (JavaScript-trimmed) is not a JSON
    /// object. A repeated key keeps its last value (in the first key's place); a number
    /// beyond the range of a double reads as `null` (`JSON.stringify(Infinity)`); an
    /// entry of a known type whose fields are missing or of other JSON types, or
    /// without a string `type`, is [`Entry::Unknown`] holding the whole object.
    ///
    /// The common case costs what [`Entry::parse`] costs; the fallbacks run only when
    /// the typed reading fails.
    ///
    /// ```
    /// use session_types::Entry;
    /// let e = Entry::read(r#"{"type":"thinking_level_change","id":"a","parentId":"x","parentId":null,"thinkingLevel":3}"#).unwrap();
    /// assert!(matches!(e, Entry::Unknown(_)));
    /// assert_eq!(e.entry_type(), Some("thinking_level_change"));
    /// assert_eq!(e.parent_id(), None);
    /// assert_eq!(e.js_property("thinkingLevel"), Some(serde_json::json!(3)));
    /// ```
    pub fn read(text: &str) -> Result<Entry, ParseError> {
        crate::json::read_deep(text, || Self::read_within_limit(text))
    }

    /// [`Entry::read`] within `serde_json`'s recursion limit (past it on the thread
    /// of [`crate::json::read_deep`]).
    fn read_within_limit(text: &str) -> Result<Entry, ParseError> {
        let text = crate::js::trim(text);
        // A message record read directly (what `Entry::parse` reads first) whose text
        // is certainly its own serialization prints as stored without comparing.
        if text.starts_with(MESSAGE_RECORD_START)
            && let Some(read) = crate::decode::message_record(text)
        {
            return Ok(if read.prints_as_read(text) {
                read.entry
            } else {
                as_stored(read.entry, text)
            });
        }
        let strict = match Entry::parse(text) {
            Ok(e) => return Ok(as_stored(e, text)),
            Err(e) => e,
        };
        if !matches!(
            strict.kind,
            ParseErrorKind::WrongShape | ParseErrorKind::Syntax
        ) {
            return Err(strict);
        }
        let view = crate::js::finite_view(text);
        if let std::borrow::Cow::Owned(v) = &view
            && let Ok(e) = Entry::parse(v)
        {
            return Ok(as_stored(e, v));
        }
        // `Value` keeps the last of repeated keys, as `JSON.parse` does (past 128
        // levels on `read_deep`'s thread).
        let value = crate::json::value_or(&view, &strict)?;
        let Value::Object(map) = value else {
            return Err(strict);
        };
        let known =
            matches!(map.get("type"), Some(Value::String(t)) if EntryType::from_name(t).is_some());
        if known
            && let Ok(e) = serde_json::from_value::<Entry>(Value::Object(map.clone()))
            && !matches!(e, Entry::Unknown(_))
        {
            return Ok(match e {
                Entry::Message(mut m) => {
                    if let Some(Value::Object(stored)) = map.get("message") {
                        keep_stored(&mut m.message, stored);
                    }
                    Entry::Message(m)
                }
                e => e,
            });
        }
        Ok(Entry::Unknown(map))
    }

    /// Parses one entry from JSON text strictly, for what we write and validate. A
    /// `type` this version does not know gives [`Entry::Unknown`]; a known `type` with
    /// missing or wrong-typed fields is an error. Readers use [`Entry::read`].
    pub fn parse(text: &str) -> Result<Entry, ParseError> {
        crate::json::read_deep(text, || Self::parse_within_limit(text))
    }

    /// [`Entry::parse`] within `serde_json`'s recursion limit (past it on the thread
    /// of [`crate::json::read_deep`]).
    fn parse_within_limit(text: &str) -> Result<Entry, ParseError> {
        let first = text.trim_start().as_bytes().first().copied();
        if first != Some(b'{') {
            // Still run the parser so a syntax error is located precisely.
            return Err(match crate::json::from_str::<Value>(text) {
                Err(e) => ParseError::from_serde(text, &e),
                Ok(v) => ParseError::new(
                    ParseErrorKind::NotAnObject,
                    1,
                    1,
                    format!("expected a JSON object, found {}", kind_name(&v)),
                ),
            });
        }
        // The modelled variants first (no copy of the record kept for a fallback),
        // a message of a modelled role first of all where the record starts as
        // messages do; the whole `Entry` (and its fallback) only where they do not
        // read it.
        if text.starts_with(MESSAGE_RECORD_START) {
            // Read directly where the tags come first (no buffered copy at all).
            if let Some(read) = crate::decode::message_record(text) {
                return Ok(read.entry);
            }
            if let Ok(typed) = crate::json::from_str::<crate::entry::TypedMessageRecord>(text) {
                return Ok(Entry::from(typed));
            }
        }
        if let Ok(typed) = crate::json::from_str::<crate::entry::TypedEntry>(text) {
            return Ok(Entry::from(typed));
        }
        let entry: Entry =
            crate::json::from_str(text).map_err(|e| ParseError::from_serde(text, &e))?;
        if let Entry::Unknown(map) = &entry {
            match map.get("type") {
                Some(Value::String(t)) if let Some(t) = EntryType::from_name(t) => {
                    // serde fell back to the untagged variant: a known type in the
                    // wrong shape. Re-read it as that type to name what was wrong.
                    return Err(known_type_error(text, t));
                }
                Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(ParseError::new(
                        ParseErrorKind::WrongShape,
                        1,
                        1,
                        format!("expected `type` to be a string, found {}", kind_name(other)),
                    ));
                }
                None => {
                    return Err(ParseError::new(
                        ParseErrorKind::WrongShape,
                        1,
                        1,
                        "missing field `type`".to_owned(),
                    ));
                }
            }
        }
        Ok(entry)
    }

    /// Compact JSON text, keys in the reference's order for the modelled fields
    /// (unmodelled fields follow in their original order).
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        // Writing to a vector cannot fail, and every key of these types is a string;
        // every byte written comes from a `str` or is ASCII.
        match self.write_json(&mut out) {
            Ok(()) => String::from_utf8(out).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }

    /// Writes the [`to_json`](Self::to_json) text to `out` (the same bytes, without
    /// building a `String`: an append serializes straight into its frame buffer).
    /// Fails only when `out` does.
    ///
    /// Both write exactly what `serde_json::to_string` / `to_writer` write, with a
    /// string escaper that tests sixteen bytes at a time (most of an entry's bytes
    /// are string contents, which serde_json escapes one byte at a time), and the
    /// shapes appends write most (a `message` entry with a user, assistant or
    /// tool-result message) written field by field, keys as constants, without
    /// serde's generic path.
    ///
    /// ```
    /// use session_types::{Entry, EntryBase, EntryId, Timestamp};
    /// let base = EntryBase::new(EntryId::new("a1"), None, Timestamp::new("2025-01-01T00:00:00.000Z"));
    /// let e = Entry::session_info(base, "n");
    /// let mut out = Vec::new();
    /// e.write_json(&mut out).unwrap();
    /// assert_eq!(out, e.to_json().into_bytes());
    /// ```
    pub fn write_json<W: std::io::Write>(&self, mut out: W) -> std::io::Result<()> {
        crate::write::entry(&mut out, self)
    }
}

/// An entry to write, borrowed: a whole [`Entry`], or a `message` entry whose message
/// its caller keeps (the seed's `appendMessage(message)` leaves the object with its
/// caller, so an append need not take it). Both write the bytes and give the index
/// the fields the owned entry would: [`EntryRef::Message`] is the [`MessageEntry`](crate::MessageEntry) of
/// that base and message with no unmodelled fields.
#[derive(Debug, Clone, Copy)]
pub enum EntryRef<'a> {
    /// A whole entry.
    Whole(&'a Entry),
    /// A `message` entry, in parts.
    Message {
        /// id, parentId, timestamp.
        base: &'a EntryBase,
        /// The stored message.
        message: &'a AgentMessage,
    },
}

impl<'a> From<&'a Entry> for EntryRef<'a> {
    fn from(entry: &'a Entry) -> Self {
        EntryRef::Whole(entry)
    }
}

impl EntryRef<'_> {
    /// The entry's id.
    pub fn id(&self) -> Option<&str> {
        match self {
            EntryRef::Whole(e) => e.id(),
            EntryRef::Message { base, .. } => base.id.as_ref().map(EntryId::as_str),
        }
    }

    /// Writes what the owned entry's [`Entry::write_json`] writes.
    ///
    /// ```
    /// use session_types::{AgentMessage, Entry, EntryBase, EntryId, EntryRef, Timestamp};
    /// let base = EntryBase::new(EntryId::new("a1"), None, Timestamp::new("2025-01-01T00:00:00.000Z"));
    /// let message: AgentMessage = serde_json::from_str(r#"{"role":"user","content":"hi","timestamp":1}"#).unwrap();
    /// let mut parts = Vec::new();
    /// EntryRef::Message { base: &base, message: &message }.write_json(&mut parts).unwrap();
    /// assert_eq!(parts, Entry::message(base, message).to_json().into_bytes());
    /// ```
    pub fn write_json<W: std::io::Write>(&self, mut out: W) -> std::io::Result<()> {
        match self {
            EntryRef::Whole(e) => crate::write::entry(&mut out, e),
            EntryRef::Message { base, message } => {
                crate::write::message_entry_parts(&mut out, base, message, None)
            }
        }
    }

    /// The [`write_json`](Self::write_json) text.
    pub fn to_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        match self.write_json(&mut out) {
            Ok(()) => String::from_utf8(out).unwrap_or_default(),
            Err(_) => String::new(),
        }
    }
}

impl From<AgentMessage> for std::borrow::Cow<'_, AgentMessage> {
    fn from(message: AgentMessage) -> Self {
        std::borrow::Cow::Owned(message)
    }
}

impl<'a> From<&'a AgentMessage> for std::borrow::Cow<'a, AgentMessage> {
    fn from(message: &'a AgentMessage) -> Self {
        std::borrow::Cow::Borrowed(message)
    }
}

/// How a `message` record starts when its tag comes first, as every writer writes it.
const MESSAGE_RECORD_START: &str = r#"{"type":"message","#;

/// `entry` (read from `text`), with a typed message that would not print as stored
/// replaced by the stored object, kept whole as [`AgentMessage::Unknown`].
///
/// The reference puts `entry.message` into the context as it is, so a message's JSON
/// is its stored JSON: keys in the stored order, a `null` the typed model would drop
/// (`"errorMessage":null`), no key the model would add (a `timestamp` the message
/// lacks), a role that is no string (serde would read a number as a variant index).
/// The typed message is kept only when it prints exactly as stored, which costs one
/// serialization; [`Entry::read`] skips it where the direct reading of a message
/// record already shows that the text is the entry's serialization (the common case:
/// an entry written as the reference and `bcs` write it).
pub(crate) fn as_stored(entry: Entry, text: &str) -> Entry {
    let typed =
        matches!(&entry, Entry::Message(m) if !matches!(m.message, AgentMessage::Unknown(_)));
    if !typed || crate::compact::serializes_to(&entry, text) {
        return entry;
    }
    let Entry::Message(mut m) = entry else {
        return entry;
    };
    if let Ok(Value::Object(mut record)) = crate::json::from_str::<Value>(text)
        && let Some(Value::Object(stored)) = record.remove("message")
    {
        keep_stored(&mut m.message, &stored);
    }
    Entry::Message(m)
}

/// Replaces `message` by `stored` when the typed message does not print as `stored`.
fn keep_stored(message: &mut AgentMessage, stored: &serde_json::Map<String, Value>) {
    if matches!(message, AgentMessage::Unknown(_)) {
        return;
    }
    let typed = serde_json::to_string(message).unwrap_or_default();
    if serde_json::to_string(stored).unwrap_or_default() != typed {
        *message = AgentMessage::Unknown(stored.clone());
    }
}

fn known_type_error(text: &str, entry_type: EntryType) -> ParseError {
    use crate::entry::*;
    fn err<T: serde::de::DeserializeOwned>(text: &str) -> Option<serde_json::Error> {
        crate::json::from_str::<T>(text).err()
    }
    // One arm per type and no wildcard: a new entry type does not compile until it
    // names its own model here.
    let e = match entry_type {
        EntryType::Message => err::<MessageEntry>(text),
        EntryType::ThinkingLevelChange => err::<ThinkingLevelChangeEntry>(text),
        EntryType::ModelChange => err::<ModelChangeEntry>(text),
        EntryType::ServiceTierChange => err::<ServiceTierChangeEntry>(text),
        EntryType::Compaction => err::<CompactionEntry>(text),
        EntryType::BranchSummary => err::<BranchSummaryEntry>(text),
        EntryType::Custom => err::<CustomEntry>(text),
        EntryType::ChildUsageAttributed => err::<ChildUsageAttributedEntry>(text),
        EntryType::CustomMessage => err::<CustomMessageEntry>(text),
        EntryType::Label => err::<LabelEntry>(text),
        EntryType::SessionInfo => err::<SessionInfoEntry>(text),
        EntryType::SessionState => err::<SessionStateEntry>(text),
        EntryType::AgentStatus => err::<AgentStatusEntry>(text),
        EntryType::GitState => err::<GitStateEntry>(text),
    };
    match e {
        Some(e) => {
            let mut pe = ParseError::from_serde(text, &e);
            pe.message = format!("`{entry_type}` entry: {}", pe.message);
            pe
        }
        None => ParseError::new(
            ParseErrorKind::WrongShape,
            1,
            1,
            format!("`{entry_type}` entry does not match its model"),
        ),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What was wrong with a record's JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// Not JSON text at all, or broken JSON.
    Syntax,
    /// The text ends in the middle of a value (a torn line).
    Truncated,
    /// Valid JSON, but not an object.
    NotAnObject,
    /// An object with missing or wrong-typed fields for its `type`.
    WrongShape,
    /// A lone UTF-16 surrogate escape such as `\ud83d`, which a Rust string cannot hold.
    LoneSurrogate,
}

/// A located error from parsing one record. Callers add the file and line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// The class of error.
    pub kind: ParseErrorKind,
    /// 1-based line within the record text (records are one line, so usually 1).
    pub line: usize,
    /// 1-based column (byte) within that line.
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at column {}", self.message, self.column)?;
        if self.line > 1 {
            write!(f, " of line {}", self.line)?;
        }
        Ok(())
    }
}

impl ParseError {
    fn new(kind: ParseErrorKind, line: usize, column: usize, message: String) -> Self {
        Self {
            kind,
            line,
            column,
            message,
        }
    }

    /// Classifies a `serde_json` error on `text`.
    pub fn from_serde(text: &str, e: &serde_json::Error) -> Self {
        use serde_json::error::Category;
        let mut message = e.to_string();
        // serde_json appends " at line L column C"; we report the location ourselves.
        if let Some(cut) = message.rfind(" at line ") {
            message.truncate(cut);
        }
        let kind = match e.classify() {
            Category::Eof => ParseErrorKind::Truncated,
            Category::Data => ParseErrorKind::WrongShape,
            Category::Syntax | Category::Io => {
                if message.contains("surrogate") || !find_lone_surrogates(text).is_empty() {
                    ParseErrorKind::LoneSurrogate
                } else {
                    ParseErrorKind::Syntax
                }
            }
        };
        if let (ParseErrorKind::LoneSurrogate, Some(s)) = (kind, find_lone_surrogates(text).first())
        {
            message = format!(
                "lone UTF-16 surrogate \\u{:04x} (not representable)",
                s.unit
            );
            let (line, column) = line_col(text, s.offset);
            return Self::new(kind, line, column, message);
        }
        Self::new(kind, e.line().max(1), e.column().max(1), message)
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}
