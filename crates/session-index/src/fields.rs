//! The fields of one entry the index reads, taken either from the entry's JSON text
//! (a replay of the journal) or from the typed entry that text was just serialized
//! from (an append, which then parses nothing).
//!
//! Both sources must give the same fields for the same entry, or a live index would
//! differ from the one a rebuild produces. The typed source therefore declines
//! ([`Fields::from_entry`] returns `None`, and the caller parses the text) wherever
//! the text would read differently from the types: unknown entries and messages
//! (arbitrary JSON), and `extra` keys that repeat a key the probe reads (the
//! serialized object then has a duplicate key, which the probe refuses).

use std::borrow::Cow;

use serde_json::value::RawValue;
use session_types::{
    AgentMessage, ContentBlock, Entry, EntryBase, EntryRef, EntryType, Extra, UserContent,
};

use crate::probe::{self, Excerpt, MessageProbe, Probe, Text};

/// The top-level keys [`Probe`] reads.
const ENTRY_KEYS: [&str; 10] = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "message", // tidy: not an entry type (the `message` key)
    "targetId",
    "label", // tidy: not an entry type (the `label` key)
    "name",
    "state",
    "status",
];

/// The message keys [`MessageProbe`] reads.
const MESSAGE_KEYS: [&str; 3] = ["role", "content", "timestamp"];

/// The keys a text block probe reads.
const BLOCK_KEYS: [&str; 2] = ["type", "text"];

/// What the index reads from an entry record.
#[derive(Debug, Default)]
pub(crate) struct Fields<'a> {
    /// `type`, if a string.
    pub(crate) entry_type: Option<Cow<'a, str>>,
    /// `type` as canonical JSON text when it is present but not a string (the
    /// reference's tree shows it as is).
    pub(crate) type_json: Option<String>,
    /// `id`, if a string.
    pub(crate) id: Option<Cow<'a, str>>,
    /// `id` as canonical JSON text ([`canonical`]) when it is present but not a
    /// string (`5`, `false`, `null`, `{…}`) or a string holding a lone surrogate:
    /// the reference's maps are keyed by it.
    pub(crate) id_json: Option<String>,
    /// `parentId`, if a string.
    pub(crate) parent_id: Option<Cow<'a, str>>,
    /// No `parentId` key (`undefined` to the reference, unlike `null`).
    pub(crate) parent_absent: bool,
    /// `parentId` as compact JSON text when it is present but neither `null` nor a
    /// non-empty string (`""`, `5`, `{…}`): the reference shows it as is in the tree,
    /// and it names no parent.
    pub(crate) parent_json: Option<String>,
    /// `timestamp`, if a string.
    pub(crate) timestamp: Option<Cow<'a, str>>,
    /// `Date.parse(timestamp)` when the appender knows it without parsing (it
    /// formatted `timestamp` from these milliseconds): taken instead of parsing.
    pub(crate) timestamp_ms: Option<i64>,
    /// `new Date(timestamp).getTime()` when `timestamp` is present but not a string
    /// (`null` is 0, `true` 1, a number itself; NaN as `None`): the tree sorts by it.
    pub(crate) timestamp_other: Option<i64>,
    /// `targetId`, if a string.
    pub(crate) target_id: Option<Cow<'a, str>>,
    /// `targetId` when it is not a string: canonical JSON text, or `undefined` when
    /// absent (the reference's label map is keyed by the raw value).
    pub(crate) target_json: Option<String>,
    /// `label`, if a non-empty string.
    pub(crate) label: Option<Cow<'a, str>>,
    /// `label` as compact JSON text when it is truthy but not a string (`42`, `{…}`):
    /// the reference's `if (entry.label)` takes it.
    pub(crate) label_json: Option<String>,
    /// `name`, if a string (untrimmed).
    pub(crate) name: Option<Cow<'a, str>>,
    /// `state`, if a string.
    pub(crate) state: Option<Cow<'a, str>>,
    /// `status`, as JSON text (an `agent_status` entry's value).
    pub(crate) status: Option<&'a RawValue>,
    /// `message`.
    pub(crate) message: Message<'a>,
}

/// An entry's `message` value.
#[derive(Debug, Default)]
pub(crate) enum Message<'a> {
    /// No `message` key, or `null`.
    #[default]
    Missing,
    /// Present but not an object the probe reads.
    Unreadable,
    /// A message object.
    Object(MessageFields<'a>),
}

/// What the index reads from a message object.
#[derive(Debug)]
pub(crate) struct MessageFields<'a> {
    /// `role`, if a string.
    pub(crate) role: Option<Cow<'a, str>>,
    /// `timestamp`, if a number.
    pub(crate) timestamp: Option<f64>,
    /// `content`, if present.
    pub(crate) content: Option<Content<'a>>,
}

/// A message's `content`.
#[derive(Debug)]
pub(crate) enum Content<'a> {
    /// As JSON text.
    Json(&'a RawValue),
    /// As JSON text read anew as `JSON.parse` reads it (a message whose object repeats
    /// a key: the last value wins).
    Owned(Box<RawValue>),
    /// Typed user-style content (a string or blocks).
    User(&'a UserContent),
    /// Typed blocks.
    Blocks(&'a [ContentBlock]),
    /// Read by [`Scanned::parse`](crate::Scanned::parse), which keeps no text: whether
    /// `extractTextContent` throws (`Some(why)`). Only asked without keeping text
    /// (`limit` 0; [`Scanned`](crate::Scanned) declines a user message that may be the first).
    Read(Option<&'static str>),
}

impl Content<'_> {
    /// The reference's `extractTextContent`, kept to at most `limit` bytes (0: only
    /// whether it throws and whether it is empty). Typed content can never make it
    /// throw, so when the caller keeps no text it is not looked at.
    pub(crate) fn extract_text(&self, limit: usize) -> Text {
        let mut out = Excerpt::new(limit);
        match self {
            Content::Json(raw) => return probe::extract_text(raw, limit),
            Content::Owned(raw) => return probe::extract_text(raw, limit),
            Content::Read(Some(why)) => return Text::Throws(why),
            Content::Read(None) => {}
            _ if limit == 0 => {}
            Content::User(UserContent::Text(s)) => out.push(s),
            Content::User(UserContent::Blocks(b)) => joined_text(b, &mut out),
            Content::Blocks(b) => joined_text(b, &mut out),
        }
        Text::Ok(out)
    }

    /// The typed blocks, if the content is typed blocks.
    fn blocks(&self) -> &[ContentBlock] {
        match self {
            Content::User(UserContent::Blocks(b)) => b,
            Content::Blocks(b) => b,
            _ => &[],
        }
    }
}

/// The text blocks' text joined with one space (what `extractTextContent` gives for
/// blocks whose JSON reads as their types say), appended to `out`.
fn joined_text(blocks: &[ContentBlock], out: &mut Excerpt) {
    for (k, t) in blocks.iter().filter_map(ContentBlock::as_text).enumerate() {
        if k > 0 {
            out.push(" ");
        }
        out.push(t);
    }
}

impl<'a> Fields<'a> {
    /// The fields as the probe read them from an entry's JSON text.
    pub(crate) fn from_probe(p: &Probe<'a>) -> Self {
        let message = match p.message {
            None => Message::Missing,
            Some(m) if m.get() == "null" => Message::Missing,
            Some(m) if !probe::is_object(m) => Message::Unreadable,
            Some(m) => match serde_json::from_str::<MessageProbe<'a>>(m.get()) {
                Ok(m) => Message::Object(MessageFields {
                    role: probe::as_str(m.role),
                    timestamp: probe::as_number(m.timestamp),
                    content: m.content.map(Content::Json),
                }),
                // A repeated key (a message object's `role` twice): read the object as
                // `JSON.parse` does, the last value of each key winning.
                Err(_) => crate::state::reread_as_javascript(m.get())
                    .and_then(|text| {
                        let m = serde_json::from_str::<MessageProbe<'_>>(&text).ok()?;
                        Some(MessageFields {
                            role: probe::as_str(m.role).map(|r| Cow::Owned(r.into_owned())),
                            timestamp: probe::as_number(m.timestamp),
                            content: m.content.map(|c| Content::Owned(c.to_owned())),
                        })
                    })
                    .map_or(Message::Unreadable, Message::Object),
            },
        };
        // A value that is no string the index holds: not a string, or a string
        // holding a lone surrogate (keyed by its canonical text, D6).
        let other = |r: Option<&RawValue>| {
            r.filter(|r| !r.get().starts_with('"') || probe::is_unreadable_str(r))
                .and_then(canonical)
        };
        Fields {
            entry_type: probe::as_str(p.entry_type),
            type_json: other(p.entry_type),
            id: probe::as_str(p.id),
            id_json: other(p.id),
            parent_id: probe::as_str(p.parent_id),
            parent_absent: p.parent_id.is_none(),
            parent_json: p
                .parent_id
                .filter(|r| r.get() != "null")
                .filter(|_| probe::as_str(p.parent_id).is_none_or(|s| s.is_empty()))
                .and_then(canonical),
            label_json: p
                .label
                .filter(|r| !r.get().starts_with('"') && !probe::is_falsy(Some(r)))
                .and_then(canonical),
            timestamp: probe::as_str(p.timestamp),
            timestamp_ms: None,
            timestamp_other: p
                .timestamp
                .filter(|r| !r.get().starts_with('"'))
                .and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok())
                .and_then(|v| session_types::js::date_of(Some(&v))),
            target_id: probe::as_str(p.target_id),
            target_json: match p.target_id {
                None => Some(UNDEFINED.to_owned()),
                r => other(r),
            },
            label: probe::as_str_lossy(p.label)
                .filter(|l| !l.is_empty() && !probe::is_falsy(p.label)),
            name: probe::as_str_lossy(p.name),
            state: probe::as_str_lossy(p.state),
            status: p.status,
            message,
        }
    }

    /// The fields the entry's JSON text has, read from the typed entry it was
    /// serialized from; `None` where only parsing the text gives them exactly (see the
    /// module comment).
    pub(crate) fn from_entry(entry: EntryRef<'a>) -> Option<Self> {
        let entry = match entry {
            EntryRef::Whole(e) => e,
            // A message entry in parts has no unmodelled fields to repeat a key.
            EntryRef::Message { base, message } => {
                let mut f = Self::of_base(Some(EntryType::Message.as_str()), base);
                f.message = Message::Object(message_fields(message)?);
                return Some(f);
            }
        };
        let (base, extra) = match entry {
            Entry::Message(e) => (&e.base, &e.extra),
            Entry::ThinkingLevelChange(e) => (&e.base, &e.extra),
            Entry::ModelChange(e) => (&e.base, &e.extra),
            Entry::ServiceTierChange(e) => (&e.base, &e.extra),
            Entry::Compaction(e) => (&e.base, &e.extra),
            Entry::BranchSummary(e) => (&e.base, &e.extra),
            Entry::Custom(e) => (&e.base, &e.extra),
            Entry::ChildUsageAttributed(e) => (&e.base, &e.extra),
            Entry::CustomMessage(e) => (&e.base, &e.extra),
            Entry::Label(e) => (&e.base, &e.extra),
            Entry::SessionInfo(e) => (&e.base, &e.extra),
            Entry::SessionState(e) => (&e.base, &e.extra),
            Entry::GitState(e) => (&e.base, &e.extra),
            // An agent status is read from its text: its value is kept as JSON, and
            // only the text says exactly which.
            Entry::AgentStatus(_) => return None,
            // Unknown entries are arbitrary JSON (and future variants unknown here).
            _ => return None,
        };
        if repeats_any(extra, &ENTRY_KEYS) {
            return None;
        }
        let s = |s: &'a str| Some(Cow::Borrowed(s));
        let mut f = Self::of_base(entry.entry_type(), base);
        match entry {
            Entry::Message(e) => f.message = Message::Object(message_fields(&e.message)?),
            Entry::Label(e) => {
                f.target_id = s(e.target_id.as_str());
                f.label = e.label.as_deref().filter(|l| !l.is_empty()).and_then(s);
            }
            Entry::SessionInfo(e) => f.name = e.name.as_deref().and_then(s),
            Entry::SessionState(e) => f.state = s(e.state.as_str()),
            Entry::ChildUsageAttributed(e) => f.target_id = s(e.target_id.as_str()),
            _ => {}
        }
        Some(f)
    }

    /// The fields of an entry of this type and base, before its own.
    fn of_base(entry_type: Option<&'a str>, base: &'a EntryBase) -> Self {
        let s = |s: &'a str| Some(Cow::Borrowed(s));
        let mut f = Fields {
            entry_type: entry_type.and_then(s),
            id: base.id.as_ref().and_then(|i| s(i.as_str())),
            parent_id: base.parent_id.as_ref().and_then(|i| s(i.as_str())),
            // `EntryBase` writes `parentId` whenever there is an id or a parent.
            parent_absent: base.id.is_none() && base.parent_id.is_none(),
            timestamp: base.timestamp.as_ref().and_then(|t| s(t.as_str())),
            ..Fields::default()
        };
        if f.parent_id.as_deref() == Some("") {
            f.parent_json = Some("\"\"".to_owned());
        }
        f
    }
}

/// The key text of `undefined` (an absent `targetId`): no JSON text spells it.
pub(crate) const UNDEFINED: &str = "undefined";

/// A raw JSON value as compact text with numbers as JavaScript holds them, a number
/// beyond a double's range `Infinity` or `-Infinity`: equal texts are equal `Map`
/// keys for numbers, booleans and `null` (`session_types::js::raw_key`, the one
/// reading of it). `Infinity` is a key of its own, truthy, and `null` where it is
/// shown ([`value_of`]).
pub(crate) fn canonical(raw: &RawValue) -> Option<String> {
    session_types::js::raw_key(raw)
}

/// The value a [`canonical`] text stands for, as `JSON.stringify` writes it
/// (`Infinity` as `null`).
pub(crate) fn value_of(text: &str) -> serde_json::Value {
    // A string holding a lone surrogate is shown as every typed view reads it.
    session_types::json::from_str_lossy(text).unwrap_or(serde_json::Value::Null)
}

fn message_fields(m: &AgentMessage) -> Option<MessageFields<'_>> {
    let (extra, timestamp, content) = match m {
        AgentMessage::User(u) => (
            &u.extra,
            Some(&u.timestamp),
            Some(Content::User(&u.content)),
        ),
        AgentMessage::Assistant(a) => (
            &a.extra,
            Some(&a.timestamp),
            Some(Content::Blocks(&a.content)),
        ),
        AgentMessage::ToolResult(t) => (
            &t.extra,
            Some(&t.timestamp),
            Some(Content::Blocks(&t.content)),
        ),
        AgentMessage::BashExecution(b) => (&b.extra, Some(&b.timestamp), None),
        AgentMessage::Custom(c) => (
            &c.extra,
            c.timestamp.as_ref(),
            Some(Content::User(&c.content)),
        ),
        AgentMessage::BranchSummary(b) => (&b.extra, b.timestamp.as_ref(), None),
        AgentMessage::CompactionSummary(c) => (&c.extra, c.timestamp.as_ref(), None),
        _ => return None,
    };
    if repeats_any(extra, &MESSAGE_KEYS) {
        return None;
    }
    let role = m.role()?;
    if role == "user" || role == "assistant" {
        // Their text is extracted: every block must read as its type says.
        let blocks = content.as_ref().map_or(&[][..], Content::blocks);
        if !blocks.iter().all(plain_block) {
            return None;
        }
    }
    Some(MessageFields {
        role: Some(Cow::Borrowed(role)),
        timestamp: timestamp.and_then(serde_json::Number::as_f64),
        content,
    })
}

/// Whether a block's text (or its absence) is what its variant says: a text block
/// whose JSON has no repeated `type`/`text` key, or a modelled non-text block.
fn plain_block(b: &ContentBlock) -> bool {
    match b {
        ContentBlock::Text(t) => !repeats_any(&t.extra, &BLOCK_KEYS),
        ContentBlock::Image(_) | ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => true,
        _ => false,
    }
}

/// Whether an `extra` map (flattened into its parent object) repeats one of `keys`.
fn repeats_any(extra: &Extra, keys: &[&str]) -> bool {
    !extra.is_empty() && keys.iter().any(|k| extra.contains_key(*k))
}
