//! One pass over a record's JSON text that gives both what an import reads (the
//! record's [`Envelope`]) and what the index reads from it (the probe's fields, as
//! byte ranges of the text): an import then feeds its index
//! ([`Index::observe_scanned`](crate::Index::observe_scanned)) without the index
//! parsing each record a second time.
//!
//! The pass is strict where the two readings could differ: it declines (`None`) a
//! record with a repeated key the envelope or the probe reads, a number, object or
//! array where the envelope reads a string, a `message` that is neither an object
//! nor `null`, or anything else that does not read plainly. The caller then reads the
//! record the usual way ([`Envelope::parse`], [`Index::observe`](crate::Index::observe)),
//! so a declined record costs a second parse and never a different result.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use session_types::{Envelope, MessageEnvelope};

use crate::fields::{Content, Fields, Message, MessageFields};
use crate::probe::{self, NEITHER_STRING_NOR_ARRAY, NULL_BLOCK, Probe};

/// The top-level keys the probe reads besides `message`, in [`Scanned::fields`] order.
const KEYS: [&str; 9] = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "targetId",
    "label", // tidy: not an entry type (the `label` key)
    "name",
    "state",
    "status",
];
const TYPE: usize = 0;
const ID: usize = 1;
const PARENT: usize = 2;
const TIMESTAMP: usize = 3;

/// A byte range of the scanned text: start and length.
type Span = (u32, u32);

/// What the index reads from one entry record, as byte ranges of the record's JSON
/// text, from [`Scanned::parse`]: given with that same text to
/// [`Index::observe_scanned`](crate::Index::observe_scanned), the index records what
/// [`Index::observe`](crate::Index::observe) of the text records, without parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scanned {
    /// The raw value of each of [`KEYS`], where present.
    fields: [Option<Span>; 9],
    message: ScannedMessage,
}

/// An entry's `message` as scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScannedMessage {
    /// No `message` key, or `null`.
    Missing,
    /// An object: its `role` and `timestamp` raw values, and its `content`'s reading
    /// by `extractTextContent` (`Some(why)`: it throws; `None`: it does not).
    Object {
        role: Option<Span>,
        timestamp: Option<Span>,
        content: Option<Option<&'static str>>,
    },
}

impl Scanned {
    /// Reads the record `text` (one JSON object, JavaScript whitespace around it
    /// ignored) in one pass: its envelope, as [`Envelope::parse`] reads it, and what
    /// the index reads, as byte ranges of `text`. `None` when the record does not read
    /// plainly (see the module comment): read it the usual way.
    pub fn parse(text: &str) -> Option<(Envelope<'_>, Scanned)> {
        let trimmed = session_types::js::trim(text);
        if !trimmed.starts_with('{') {
            return None;
        }
        let mut de = serde_json::Deserializer::from_str(trimmed);
        let top = de.deserialize_map(TopVisitor).ok()?;
        de.end().ok()?;
        let field = |i: usize| top.fields[i].map_or(Some(None), env_str);
        let message = match &top.message {
            Msg::Missing => None,
            Msg::Object { role, .. } => Some(MessageEnvelope {
                role: role.map_or(Some(None), env_str)?,
            }),
        };
        let env = Envelope {
            entry_type: field(TYPE)?,
            id: field(ID)?,
            parent_id: field(PARENT)?,
            timestamp: field(TIMESTAMP)?,
            message,
        };
        let span = |r: Option<&RawValue>| -> Option<Option<Span>> {
            let Some(r) = r else { return Some(None) };
            let start = (r.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
            let len = r.get().len();
            if start.checked_add(len)? > text.len() {
                return None;
            }
            Some(Some((u32::try_from(start).ok()?, u32::try_from(len).ok()?)))
        };
        let mut fields = [None; 9];
        for (out, raw) in fields.iter_mut().zip(top.fields) {
            *out = span(raw)?;
        }
        let message = match top.message {
            Msg::Missing => ScannedMessage::Missing,
            Msg::Object {
                role,
                timestamp,
                content,
            } => ScannedMessage::Object {
                role: span(role)?,
                timestamp: span(timestamp)?,
                content,
            },
        };
        Some((env, Scanned { fields, message }))
    }

    /// The fields [`Fields::from_probe`] reads from `payload` (the text this scan
    /// read), from the scanned ranges: `None` if they do not fit it, or if the entry
    /// is a user message and `first_message_open` (its text may become the session's
    /// first message: only the probe's reading keeps an excerpt).
    pub(crate) fn fields<'p>(
        &self,
        payload: &'p [u8],
        first_message_open: bool,
    ) -> Option<Fields<'p>> {
        let raw = |s: Option<Span>| -> Option<Option<&'p RawValue>> {
            let Some((start, len)) = s else {
                return Some(None);
            };
            let (start, len) = (start as usize, len as usize);
            let bytes = payload.get(start..start.checked_add(len)?)?;
            let text = std::str::from_utf8(bytes).ok()?;
            serde_json::from_str::<&RawValue>(text).ok().map(Some)
        };
        let f = &self.fields;
        let p = Probe {
            entry_type: raw(f[0])?,
            id: raw(f[1])?,
            parent_id: raw(f[2])?,
            timestamp: raw(f[3])?,
            message: None,
            target_id: raw(f[4])?,
            label: raw(f[5])?,
            name: raw(f[6])?,
            state: raw(f[7])?,
            status: raw(f[8])?,
        };
        let mut fields = Fields::from_probe(&p);
        if let ScannedMessage::Object {
            role,
            timestamp,
            content,
        } = self.message
        {
            let role = probe::as_str(raw(role)?);
            if first_message_open && role.as_deref() == Some("user") {
                return None;
            }
            fields.message = Message::Object(MessageFields {
                role,
                timestamp: probe::as_number(raw(timestamp)?),
                content: content.map(Content::Read),
            });
        }
        Some(fields)
    }
}

/// An envelope field from its raw value, as `lenient_str` reads it: a string, or
/// `None` for `null` and booleans; anything else is declined (`None`), since the
/// envelope's strict reading may refuse it (a number beyond a double's range).
fn env_str(raw: &RawValue) -> Option<Option<Cow<'_, str>>> {
    let t = raw.get();
    match t.as_bytes().first() {
        Some(b'"') => str_value(t).map(Some),
        _ if matches!(t, "null" | "true" | "false") => Some(None),
        _ => None,
    }
}

/// The string a JSON string literal holds: borrowed when it has no escape.
fn str_value(literal: &str) -> Option<Cow<'_, str>> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(literal).ok().map(Cow::Owned)
}

/// The top-level object as the scan reads it.
struct Top<'de> {
    fields: [Option<&'de RawValue>; 9],
    message: Msg<'de>,
}

enum Msg<'de> {
    Missing,
    Object {
        role: Option<&'de RawValue>,
        timestamp: Option<&'de RawValue>,
        content: Option<Option<&'static str>>,
    },
}

/// A key of an object the scan reads: which of `names` it is (`None`: another).
struct KeySeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|k| *k == s))
    }
}

/// The top-level keys: [`KEYS`], then `message`.
const TOP_KEYS: [&str; 10] = [
    KEYS[0], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8],
    "message", // tidy: not an entry type (the `message` key)
];
const MESSAGE: usize = 9;

/// The message keys the probe reads.
const MESSAGE_KEYS: [&str; 3] = ["role", "timestamp", "content"];

fn repeated<E: de::Error>() -> E {
    E::custom("a repeated key")
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut top = Top {
            fields: [None; 9],
            message: Msg::Missing,
        };
        let mut message_seen = false;
        while let Some(key) = map.next_key_seed(KeySeed(&TOP_KEYS))? {
            match key {
                Some(MESSAGE) => {
                    if std::mem::replace(&mut message_seen, true) {
                        return Err(repeated());
                    }
                    top.message = map.next_value_seed(MessageSeed)?;
                }
                Some(i) => {
                    let slot = top.fields.get_mut(i).ok_or_else(repeated)?;
                    if slot.is_some() {
                        return Err(repeated());
                    }
                    *slot = Some(map.next_value::<&'de RawValue>()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(top)
    }
}

/// A `message` value: an object or `null` (anything else is declined).
struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Msg<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed {
    type Value = Msg<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Msg::Missing)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut role = None;
        let mut timestamp = None;
        let mut content = None;
        while let Some(key) = map.next_key_seed(KeySeed(&MESSAGE_KEYS))? {
            match key {
                Some(0) if role.is_none() => role = Some(map.next_value::<&'de RawValue>()?),
                Some(1) if timestamp.is_none() => {
                    timestamp = Some(map.next_value::<&'de RawValue>()?);
                }
                Some(2) if content.is_none() => content = Some(map.next_value_seed(ContentSeed)?),
                Some(_) => return Err(repeated()),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Msg::Object {
            role,
            timestamp,
            content,
        })
    }
}

/// A message's `content`, as `extractTextContent` (without keeping text) reads it:
/// `Some(why)` where it throws.
struct ContentSeed;

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = Option<&'static str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentSeed {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut throws = None;
        while let Some(null) = seq.next_element_seed(NullSeed)? {
            if null {
                throws = Some(NULL_BLOCK);
            }
        }
        Ok(throws)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Some(NEITHER_STRING_NOR_ARRAY))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Some(NEITHER_STRING_NOR_ARRAY))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Some(NEITHER_STRING_NOR_ARRAY))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Some(NEITHER_STRING_NOR_ARRAY))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Some(NEITHER_STRING_NOR_ARRAY))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Some(NEITHER_STRING_NOR_ARRAY))
    }
}

/// One element of a content array: whether it is `null`.
struct NullSeed;

impl<'de> DeserializeSeed<'de> for NullSeed {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NullSeed {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(true)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}
