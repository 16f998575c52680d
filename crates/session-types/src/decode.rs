//! A direct reading of `message` records, without serde's buffered `Content`.
//!
//! [`Entry`], [`AgentMessage`] and [`ContentBlock`] are internally tagged enums with an
//! untagged fallback, and every struct flattens its unmodelled fields into `extra`:
//! serde's derived readers buffer each such object into a `Content` tree (a copy of
//! every string, and one more copy for each fallback level tried) before they read a
//! field. Records written by the reference and by us have the tag first (`type`,
//! then `role` in the message, then `type` in each content block), so
//! [`message_record`] reads them field by field from the parser: the tag, then each
//! modelled field straight into its type, every other field into `extra` in order.
//!
//! Anything else gives `None` and the caller reads the text as before: a tag that is
//! not the object's first key or not a string, a role this reading does not cover,
//! a repeated key, a field of another JSON type, a missing field. So wherever this
//! reading answers, it answers what the derived one does (tests compare the two on
//! every fixture line and on generated odd shapes).
//!
//! A field added to a message type, a content block or usage must be added here too
//! (and to the hand-written writer in `write`): this reading would keep it in
//! `extra` instead of the new field. The comparison tests catch the omission only
//! for a field some fixture or unit test carries: add one with the field.
//!
//! It also notes what the entry's own serialization would need to equal the text
//! ([`Read::prints_as_read`]): keys in the model's order, no modelled key the
//! serializer drops or adds, and, by one scan of the text, no whitespace, escapes and
//! numbers spelled as the serializer spells them, and as many keys as the entry
//! prints. A block's `text` and `thinking` (most of a message's bytes) are decoded
//! here from the string's text ([`Text`]), which checks their escapes as it goes: the
//! scan steps over them. Where all hold, [`Entry::read`](crate::Entry::read) skips its check that
//! a typed message prints as stored (serializing it to compare); where any fails,
//! the check decides. Tests compare the answer with the check's.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use crate::content::{
    ContentBlock, Extra, ImageContent, TextContent, ThinkingContent, ToolCall, UserContent,
};
use crate::entry::{Entry, EntryBase, MessageEntry};
use crate::ids::{EntryId, Timestamp};
use crate::message::{AgentMessage, AssistantMessage, Cost, ToolResultMessage, Usage, UserMessage};

/// A `message` record read directly, or `None` where the derived reading must decide.
pub(crate) fn message_record(text: &str) -> Option<Read> {
    crate::json::from_str::<Record>(text)
        .ok()
        .map(|Record(entry, shape)| Read { entry, shape })
}

/// A record read directly, with what was seen of its text's shape.
pub(crate) struct Read {
    pub(crate) entry: Entry,
    shape: Shape,
}

impl Read {
    /// Whether `text`, the text this was read from, is certainly the entry's compact
    /// serialization (`compact::serializes_to(&self.entry, text)`). `false` says
    /// nothing: the caller then compares.
    pub(crate) fn prints_as_read(&self, text: &str) -> bool {
        self.shape.plain && plain_key_count(text, &self.shape.spelled) == Some(self.shape.keys)
    }
}

/// What a direct reading saw of an object's text: how many keys the entry will print
/// for it (its own and those of every object inside it), and whether its keys came
/// in the order and number the serializer writes them (modelled keys in the model's
/// order, unmodelled ones after them, no optional string `null`, which reads as
/// absent and is not written).
#[derive(Debug, Clone)]
struct Shape {
    keys: usize,
    plain: bool,
    /// Strings of the text already read as spelled as the serializer spells them
    /// ([`Text`]): where each lies (its address and length, quotes included, inside
    /// the text read), so the scan of the text steps over them.
    spelled: Vec<(usize, usize)>,
}

impl Shape {
    /// The shape of an object whose first key (its tag) was read.
    fn tagged() -> Self {
        Shape {
            keys: 1,
            plain: true,
            spelled: Vec::new(),
        }
    }

    /// The shape of an object without a tag, or of a value that is no object.
    fn untagged() -> Self {
        Shape {
            keys: 0,
            plain: true,
            spelled: Vec::new(),
        }
    }

    fn add(&mut self, inner: Shape) {
        self.keys += inner.keys;
        self.plain &= inner.plain;
        self.spelled.extend(inner.spelled);
    }

    /// Notes a string read by [`Text`]: stepped over by the scan when spelled as the
    /// serializer spells it; otherwise the text is not the entry's serialization.
    fn add_text(&mut self, text: &Text) {
        match text.spelled {
            Some(span) => self.spelled.push(span),
            None => self.plain = false,
        }
    }

    /// Adds the keys a value read whole prints (every object key inside it; a
    /// repeated key of the text is read once, so the count then falls short).
    fn add_value(&mut self, v: &Value) {
        self.keys += object_keys(v);
    }
}

/// The number of object keys in `v`, walked without recursion.
fn object_keys(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                n += m.len();
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    n
}

/// The number of object keys in `text` if every token of it is spelled as
/// `serde_json` (and so `compact`) writes it, `None` otherwise: no whitespace
/// between tokens; in strings only the escapes `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
/// `\t` and `\u00xx` (lower-case hex) for the other control characters; integers
/// that read as a 64-bit integer (not `-0`), other numbers as `ryu` writes the double
/// they read as. `text` is JSON text that was read.
///
/// `spelled` names strings of `text` already found spelled so (their address and
/// length, quotes included): the scan steps over each where it starts. A span that
/// does not start at a string of `text` is never met, and changes nothing.
fn plain_key_count(text: &str, spelled: &[(usize, usize)]) -> Option<usize> {
    let b = text.as_bytes();
    let base = b.as_ptr() as usize;
    let mut skips: Vec<(usize, usize)> = spelled
        .iter()
        .filter_map(|&(at, len)| Some((at.checked_sub(base)?, len)))
        .filter(|&(at, len)| at.checked_add(len).is_some_and(|end| end <= b.len()))
        .collect();
    skips.sort_unstable();
    let mut skips = skips.into_iter().peekable();
    let mut keys = 0;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'"' => {
                while skips.next_if(|&(at, _)| at < i).is_some() {}
                if let Some((_, len)) = skips.next_if(|&(at, _)| at == i) {
                    i += len;
                    if b.get(i) == Some(&b':') {
                        keys += 1;
                    }
                    continue;
                }
                i += 1;
                loop {
                    i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
                    if b[i] == b'"' {
                        i += 1;
                        break;
                    }
                    i += match *b.get(i + 1)? {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' => {
                            let hex = b.get(i + 2..i + 6)?;
                            let digit = |h: u8| match h {
                                b'0'..=b'9' => Some(h - b'0'),
                                b'a'..=b'f' => Some(h - b'a' + 10),
                                _ => None,
                            };
                            let unit = digit(hex[2])? * 16 + digit(hex[3])?;
                            let short = matches!(unit, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                            if &hex[..2] != b"00" || unit >= 0x20 || short {
                                return None;
                            }
                            6
                        }
                        _ => return None,
                    };
                }
                if b.get(i) == Some(&b':') {
                    keys += 1;
                }
            }
            b'{' | b'}' | b'[' | b']' | b',' | b':' => i += 1,
            b't' | b'f' | b'n' => {
                let word: &[u8] = match c {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                if !b[i..].starts_with(word) {
                    return None;
                }
                i += word.len();
            }
            b'-' | b'0'..=b'9' => {
                let len = b[i..]
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(b.len() - i);
                if !plain_number(&text[i..i + len]) {
                    return None;
                }
                i += len;
            }
            _ => return None,
        }
    }
    Some(keys)
}

/// Whether `serde_json` writes the number it reads from `token` as `token`.
fn plain_number(token: &str) -> bool {
    if token.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
        // An integer token reads as a 64-bit integer when it fits (written back by
        // its digits); `-0` and larger ones read as doubles.
        return if token.starts_with('-') {
            token != "-0" && token.parse::<i64>().is_ok()
        } else {
            token.parse::<u64>().is_ok()
        };
    }
    token
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
        .is_some_and(|n| n.to_string() == token)
}

/// The reason a direct reading gave up; never shown (the caller falls back).
fn give_up<E: de::Error>() -> E {
    E::custom("not read directly")
}

/// An object key, borrowed from the text when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string field read from its text as the parser found it (quotes and escapes,
/// checked by the parser), decoded here into a string of its exact length: one copy,
/// without the parser's scratch buffer, which grows anew for every record. Decoding
/// it notes whether it is spelled as the serializer spells it, which spares
/// [`Read::prints_as_read`]'s scan its bytes: most of a message's text is in such
/// strings (a block's `text` or `thinking`).
struct Text {
    text: String,
    /// Where the string lies (address and length, quotes included) when it is spelled
    /// as the serializer spells it.
    spelled: Option<(usize, usize)>,
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de serde_json::value::RawValue>::deserialize(d)?.get();
        let (text, plain) = unescape(raw).ok_or_else(give_up)?;
        Ok(Text {
            text,
            spelled: plain.then_some((raw.as_ptr() as usize, raw.len())),
        })
    }
}

/// The string a JSON string token (quotes included, its escapes checked by the
/// parser) spells, as `serde_json` reads it, and whether the token is spelled as
/// `serde_json` writes that string: only the escapes `\"`, `\\`, `\b`, `\f`, `\n`,
/// `\r`, `\t`, and `\u00xx` (lower-case hex) for the other control characters. `None`
/// for a token that is not a string, or whose escapes this does not decode (an
/// unpaired surrogate, which `serde_json` refuses): the caller gives up.
fn unescape(raw: &str) -> Option<(String, bool)> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let b = inner.as_bytes();
    // Escapes only shorten: the token's length bounds the string's.
    let mut out = String::with_capacity(inner.len());
    let mut plain = true;
    let mut i = 0;
    while let Some(k) = memchr::memchr(b'\\', b.get(i..)?) {
        out.push_str(inner.get(i..i + k)?);
        i += k;
        let c = *b.get(i + 1)?;
        i += 2;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => {
                plain = false;
                '/'
            }
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = b.get(i..i + 4)?;
                i += 4;
                let unit = hex_unit(hex)?;
                let short = matches!(unit, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d);
                plain &= unit < 0x20
                    && !short
                    && hex[..2] == *b"00"
                    && !hex[2..].iter().any(u8::is_ascii_uppercase);
                match unit {
                    0xd800..=0xdbff => {
                        if b.get(i..i + 2)? != b"\\u" {
                            return None;
                        }
                        let low = hex_unit(b.get(i + 2..i + 6)?)?;
                        if !(0xdc00..=0xdfff).contains(&low) {
                            return None;
                        }
                        i += 6;
                        char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00))?
                    }
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        };
        out.push(ch);
    }
    out.push_str(inner.get(i..)?);
    Some((out, plain))
}

/// The code unit four hex digits (either case) spell.
fn hex_unit(hex: &[u8]) -> Option<u32> {
    hex.iter().try_fold(0u32, |n, &h| {
        let d = match h {
            b'0'..=b'9' => h - b'0',
            b'a'..=b'f' => h - b'a' + 10,
            b'A'..=b'F' => h - b'A' + 10,
            _ => return None,
        };
        Some(n * 16 + u32::from(d))
    })
}

/// Reads the value of a modelled field into its slot; a second value is a repeated
/// key, which the derived reading refuses (`duplicate field`).
fn put<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    slot: &mut Option<T>,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(give_up());
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// A required field's value.
fn need<T, E: de::Error>(slot: Option<T>) -> Result<T, E> {
    slot.ok_or_else(give_up)
}

/// Reads the rest of an object whose tag (`tag`, if it has one) was its first key: `field` reads the
/// value of a modelled key and returns `true`, or returns `false` for an unmodelled
/// one, whose value goes to `extra` in order. The tag again is a repeated tag, which
/// the derived reading refuses; so is any repeated unmodelled key here (the derived
/// reading would keep its last value: left to it).
///
/// `order` lists the modelled keys in the order the serializer writes them; `shape`
/// counts every key read and notes one out of that order (or a modelled key after an
/// unmodelled one, which the serializer writes last).
fn fields<'de, A: MapAccess<'de>>(
    map: &mut A,
    tag: Option<&str>,
    extra: &mut Extra,
    order: &[&str],
    shape: &mut Shape,
    mut field: impl FnMut(&str, &mut A) -> Result<bool, A::Error>,
) -> Result<(), A::Error> {
    let mut next = 0;
    let mut unmodelled = false;
    while let Some(key) = map.next_key::<Key<'de>>()? {
        let k = key.as_str();
        if Some(k) == tag {
            return Err(give_up());
        }
        shape.keys += 1;
        if field(k, map)? {
            match order.iter().position(|o| *o == k) {
                Some(at) if !unmodelled && at >= next => next = at + 1,
                _ => shape.plain = false,
            }
            continue;
        }
        unmodelled = true;
        let value: Value = map.next_value()?;
        shape.add_value(&value);
        if extra.insert(key.into_string(), value).is_some() {
            return Err(give_up());
        }
    }
    Ok(())
}

/// The value of an object's first key when that key is `tag` (`None` otherwise).
fn first_tag<'de, A: MapAccess<'de>>(map: &mut A, tag: &str) -> Result<Key<'de>, A::Error> {
    match map.next_key::<Key<'de>>()? {
        Some(k) if k.as_str() == tag => map.next_value::<Key<'de>>(),
        _ => Err(give_up()),
    }
}

/// Implements `Deserialize` for a wrapper through a map visitor.
macro_rules! map_reader {
    ($wrapper:ident, $what:literal, |$map:ident| $body:block) => {
        impl<'de> Deserialize<'de> for $wrapper {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $wrapper;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut $map: A,
                    ) -> Result<$wrapper, A::Error> {
                        let $map = &mut $map;
                        $body
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

/// A whole `message` record.
struct Record(Entry, Shape);

map_reader!(Record, "a message record", |map| {
    if first_tag(map, "type")?.as_str() != "message" {
        return Err(give_up());
    }
    let (mut id, mut parent_id, mut timestamp, mut message) = (None, None, None, None);
    let mut extra = Extra::new();
    let mut shape = Shape::tagged();
    let order = ["id", "parentId", "timestamp", "message"];
    fields(
        map,
        Some("type"),
        &mut extra,
        &order,
        &mut shape,
        |k, map| {
            match k {
                // `EntryBase`: a present `id` and `timestamp` must be strings.
                "id" => put::<_, EntryId>(&mut id, map)?,
                "parentId" => put::<_, Option<EntryId>>(&mut parent_id, map)?,
                "timestamp" => put::<_, Timestamp>(&mut timestamp, map)?,
                "message" => put::<_, Message>(&mut message, map)?,
                _ => return Ok(false),
            }
            Ok(true)
        },
    )?;
    let message = need::<Message, _>(message)?;
    shape.add(message.1);
    // `parentId` is written (`null` for none) when there is an `id` or a parent.
    let written = id.is_some() || matches!(parent_id, Some(Some(_)));
    shape.plain &= written == parent_id.is_some();
    Ok(Record(
        Entry::Message(MessageEntry {
            base: EntryBase {
                id,
                parent_id: parent_id.flatten(),
                timestamp,
            },
            message: message.0,
            extra,
        }),
        shape,
    ))
});

/// A message read directly (a `message` record's `message`, or an owner request's),
/// or `None` where the derived reading must decide.
pub(crate) fn message(text: &str) -> Option<AgentMessage> {
    crate::json::from_str::<Message>(text).ok().map(|m| m.0)
}

/// A message of a role read directly.
struct Message(AgentMessage, Shape);

map_reader!(Message, "a message", |map| {
    let role = first_tag(map, "role")?;
    let mut extra = Extra::new();
    let mut shape = Shape::tagged();
    let tag = Some("role");
    let message = match role.as_str() {
        "user" => {
            let (mut content, mut timestamp) = (None, None);
            let order = ["content", "timestamp"];
            fields(map, tag, &mut extra, &order, &mut shape, |k, map| {
                match k {
                    "content" => put::<_, Content>(&mut content, map)?,
                    "timestamp" => put::<_, Number>(&mut timestamp, map)?,
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            let content = need::<Content, _>(content)?;
            shape.add(content.1);
            AgentMessage::User(UserMessage {
                content: content.0,
                timestamp: need(timestamp)?,
                extra,
            })
        }
        "assistant" => {
            let (mut content, mut api, mut provider, mut model) = (None, None, None, None);
            let (mut response_id, mut usage, mut stop_reason) = (None, None, None);
            let (mut error_message, mut timestamp) = (None, None);
            let order = [
                "content",
                "api",
                "provider",
                "model",
                "responseId",
                "usage",
                "stopReason",
                "errorMessage",
                "timestamp",
            ];
            fields(map, tag, &mut extra, &order, &mut shape, |k, map| {
                match k {
                    "content" => put::<_, Blocks>(&mut content, map)?,
                    "api" => put::<_, String>(&mut api, map)?,
                    "provider" => put::<_, String>(&mut provider, map)?,
                    "model" => put::<_, String>(&mut model, map)?,
                    "responseId" => put::<_, Option<String>>(&mut response_id, map)?,
                    "usage" => put::<_, UsageOf>(&mut usage, map)?,
                    "stopReason" => put::<_, String>(&mut stop_reason, map)?,
                    "errorMessage" => put::<_, Option<String>>(&mut error_message, map)?,
                    "timestamp" => put::<_, Number>(&mut timestamp, map)?,
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            // A `null` optional string reads as absent, which is not written.
            shape.plain &=
                !matches!(response_id, Some(None)) && !matches!(error_message, Some(None));
            let content = need::<Blocks, _>(content)?;
            let usage = need::<UsageOf, _>(usage)?;
            shape.add(content.1);
            shape.add(usage.1);
            AgentMessage::Assistant(AssistantMessage {
                content: content.0,
                api: need(api)?,
                provider: need(provider)?,
                model: need(model)?,
                response_id: response_id.flatten(),
                usage: usage.0,
                stop_reason: need(stop_reason)?,
                error_message: error_message.flatten(),
                timestamp: need(timestamp)?,
                extra,
            })
        }
        "toolResult" => {
            let (mut tool_call_id, mut tool_name, mut content) = (None, None, None);
            let (mut details, mut is_error, mut timestamp) = (None, None, None);
            let order = [
                "toolCallId",
                "toolName",
                "content",
                "details",
                "isError",
                "timestamp",
            ];
            fields(map, tag, &mut extra, &order, &mut shape, |k, map| {
                match k {
                    "toolCallId" => put::<_, String>(&mut tool_call_id, map)?,
                    "toolName" => put::<_, String>(&mut tool_name, map)?,
                    "content" => put::<_, Blocks>(&mut content, map)?,
                    // Present, `null` included: `Some(Value::Null)`.
                    "details" => put::<_, Value>(&mut details, map)?,
                    "isError" => put::<_, bool>(&mut is_error, map)?,
                    "timestamp" => put::<_, Number>(&mut timestamp, map)?,
                    _ => return Ok(false),
                }
                Ok(true)
            })?;
            let content = need::<Blocks, _>(content)?;
            shape.add(content.1);
            if let Some(d) = &details {
                shape.add_value(d);
            }
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: need(tool_call_id)?,
                tool_name: need(tool_name)?,
                content: content.0,
                details,
                is_error: need(is_error)?,
                timestamp: need(timestamp)?,
                extra,
            })
        }
        _ => return Err(give_up()),
    };
    Ok(Message(message, shape))
});

/// [`Usage`] read directly.
struct UsageOf(Usage, Shape);

map_reader!(UsageOf, "a usage object", |map| {
    let (mut input, mut output, mut cache_read, mut cache_write) = (None, None, None, None);
    let (mut total_tokens, mut cost) = (None, None);
    let mut extra = Extra::new();
    let mut shape = Shape::untagged();
    let order = [
        "input",
        "output",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "cost",
    ];
    fields(map, None, &mut extra, &order, &mut shape, |k, map| {
        match k {
            "input" => put::<_, u64>(&mut input, map)?,
            "output" => put::<_, u64>(&mut output, map)?,
            "cacheRead" => put::<_, u64>(&mut cache_read, map)?,
            "cacheWrite" => put::<_, u64>(&mut cache_write, map)?,
            "totalTokens" => put::<_, u64>(&mut total_tokens, map)?,
            "cost" => put::<_, CostOf>(&mut cost, map)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    let cost = need::<CostOf, _>(cost)?;
    shape.add(cost.1);
    Ok(UsageOf(
        Usage {
            input: need(input)?,
            output: need(output)?,
            cache_read: need(cache_read)?,
            cache_write: need(cache_write)?,
            total_tokens: need(total_tokens)?,
            cost: cost.0,
            extra,
        },
        shape,
    ))
});

/// [`Cost`] read directly.
struct CostOf(Cost, Shape);

map_reader!(CostOf, "a cost object", |map| {
    let (mut input, mut output, mut cache_read, mut cache_write) = (None, None, None, None);
    let mut total = None;
    let mut extra = Extra::new();
    let mut shape = Shape::untagged();
    let order = ["input", "output", "cacheRead", "cacheWrite", "total"];
    fields(map, None, &mut extra, &order, &mut shape, |k, map| {
        match k {
            "input" => put::<_, Number>(&mut input, map)?,
            "output" => put::<_, Number>(&mut output, map)?,
            "cacheRead" => put::<_, Number>(&mut cache_read, map)?,
            "cacheWrite" => put::<_, Number>(&mut cache_write, map)?,
            "total" => put::<_, Number>(&mut total, map)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(CostOf(
        Cost {
            input: need(input)?,
            output: need(output)?,
            cache_read: need(cache_read)?,
            cache_write: need(cache_write)?,
            total: need(total)?,
            extra,
        },
        shape,
    ))
});

/// [`UserContent`] read directly: a string, or an array of blocks read directly.
struct Content(UserContent, Shape);

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content(UserContent::Text(v.to_owned()), Shape::untagged()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content(UserContent::Text(v), Shape::untagged()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
                BlocksVisitor
                    .visit_seq(seq)
                    .map(|b| Content(UserContent::Blocks(b.0), b.1))
            }
        }
        d.deserialize_any(V)
    }
}

/// An array of [`ContentBlock`]s read directly.
struct Blocks(Vec<ContentBlock>, Shape);

struct BlocksVisitor;

impl<'de> Visitor<'de> for BlocksVisitor {
    type Value = Blocks;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of content blocks")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
        // The hint is the parser's, bounded by serde_json (no allocation from input).
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        let mut shape = Shape::untagged();
        while let Some((b, s)) = seq.next_element_seed(BlockSeed)? {
            out.push(b);
            shape.add(s);
        }
        // A block is about 200 bytes and the vector grows to 4 of them at its first
        // push: a message of one block would keep room for three more. Shrinking
        // gives the tail back in place, for the strings read next.
        out.shrink_to_fit();
        Ok(Blocks(out, shape))
    }
}

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(BlocksVisitor)
    }
}

/// One [`ContentBlock`] read directly.
struct BlockSeed;

impl<'de> DeserializeSeed<'de> for BlockSeed {
    type Value = (ContentBlock, Shape);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BlockSeed {
    type Value = (ContentBlock, Shape);
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content block")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let map = &mut map;
        let kind = first_tag(map, "type")?;
        let mut extra = Extra::new();
        let mut shape = Shape::tagged();
        let tag = Some("type");
        let block = match kind.as_str() {
            "text" => {
                let mut text = None;
                fields(map, tag, &mut extra, &["text"], &mut shape, |k, map| {
                    if k != "text" {
                        return Ok(false);
                    }
                    put::<_, Text>(&mut text, map).map(|()| true)
                })?;
                let text: Text = need(text)?;
                shape.add_text(&text);
                ContentBlock::Text(TextContent {
                    text: text.text,
                    extra,
                })
            }
            "thinking" => {
                let mut thinking = None;
                fields(map, tag, &mut extra, &["thinking"], &mut shape, |k, map| {
                    if k != "thinking" {
                        return Ok(false);
                    }
                    put::<_, Text>(&mut thinking, map).map(|()| true)
                })?;
                let thinking: Text = need(thinking)?;
                shape.add_text(&thinking);
                ContentBlock::Thinking(ThinkingContent {
                    thinking: thinking.text,
                    extra,
                })
            }
            "toolCall" => {
                let (mut id, mut name, mut arguments) = (None, None, None);
                let order = ["id", "name", "arguments"];
                fields(map, tag, &mut extra, &order, &mut shape, |k, map| {
                    match k {
                        "id" => put::<_, String>(&mut id, map)?,
                        "name" => put::<_, String>(&mut name, map)?,
                        "arguments" => put::<_, Value>(&mut arguments, map)?,
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?;
                let arguments: Value = need(arguments)?;
                shape.add_value(&arguments);
                ContentBlock::ToolCall(ToolCall {
                    id: need(id)?,
                    name: need(name)?,
                    arguments,
                    extra,
                })
            }
            "image" => {
                let (mut data, mut mime_type) = (None, None);
                let order = ["data", "mimeType"];
                fields(map, tag, &mut extra, &order, &mut shape, |k, map| {
                    match k {
                        "data" => put::<_, String>(&mut data, map)?,
                        "mimeType" => put::<_, String>(&mut mime_type, map)?,
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?;
                ContentBlock::Image(ImageContent {
                    data: need(data)?,
                    mime_type: need(mime_type)?,
                    extra,
                })
            }
            // A block of a kind this version does not model: kept whole, its tag first
            // (and written back so).
            _ => {
                extra.insert("type".to_owned(), Value::String(kind.into_string()));
                fields(map, tag, &mut extra, &[], &mut shape, |_, _| Ok(false))?;
                ContentBlock::Unknown(extra)
            }
        };
        Ok((block, shape))
    }
}

#[cfg(test)]
mod tests {
    //! The direct reading against the derived one (`serde_json::from_str::<Entry>`):
    //! wherever the direct reading answers, it must answer the same entry, on every
    //! message record of the fixtures and on odd shapes made from them (a key removed,
    //! repeated, moved first or last, its value of another JSON type; unmodelled
    //! keys and block types; whitespace).

    use serde_json::{Map, Value, json};

    use super::message_record;
    use crate::Entry;

    /// Checks one text; returns whether the direct reading answered.
    fn check(text: &str) -> bool {
        let read = message_record(text);
        let direct = read.as_ref().map(|r| &r.entry);
        let derived = serde_json::from_str::<Entry>(text);
        if let Some(d) = direct {
            match &derived {
                Ok(e) => assert_eq!(d, e, "direct and derived readings differ: {text}"),
                Err(e) => panic!("direct reading answered where the derived fails ({e}): {text}"),
            }
        }
        // Where the reading says the text is the entry's serialization, it is; and
        // `Entry::read` gives what the check would have kept.
        if let Some(r) = &read {
            let prints = crate::compact::serializes_to(&r.entry, text);
            assert!(
                !r.prints_as_read(text) || prints,
                "said to print as read but does not: {text}"
            );
            let checked = crate::record::as_stored(r.entry.clone(), text);
            assert_eq!(Entry::read(text).ok(), Some(checked), "Entry::read: {text}");
        }
        // And `Entry::parse`, which tries the direct reading first, still gives what
        // the derived reading gives (its errors stand for the untagged fallback).
        match (&derived, Entry::parse(text)) {
            (Ok(a), Ok(b)) => assert_eq!(a, &b, "Entry::parse differs: {text}"),
            (Ok(Entry::Unknown(_)), Err(_)) | (Err(_), Err(_)) => {}
            (a, b) => panic!("Entry::parse: derived {a:?}, parse {b:?}: {text}"),
        }
        direct.is_some()
    }

    fn fixtures() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
    }

    /// Message records of the corpus, the leniency fixtures and the first records of
    /// the generated 1k session.
    fn message_lines() -> Vec<String> {
        let mut files = Vec::new();
        for dir in ["legacy", "edge", "leniency"] {
            for e in std::fs::read_dir(fixtures().join(dir)).expect("fixture directory") {
                let p = e.expect("directory entry").path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let mut lines = Vec::new();
        for p in files {
            let text = String::from_utf8_lossy(&std::fs::read(&p).expect("fixture")).into_owned();
            lines.extend(
                text.lines()
                    .filter(|l| l.contains(r#""type":"message""#))
                    .map(str::to_owned),
            );
        }
        let generated = std::fs::read_to_string(fixtures().join("generated/1k.jsonl"))
            .expect("generated fixture");
        lines.extend(
            generated
                .lines()
                .filter(|l| l.starts_with(r#"{"type":"message","#))
                .take(40)
                .map(str::to_owned),
        );
        lines
    }

    #[derive(Clone, Copy)]
    enum Step {
        Key(&'static str),
        Index(usize),
    }

    fn node<'a>(mut v: &'a mut Value, path: &[Step]) -> Option<&'a mut Map<String, Value>> {
        for step in path {
            v = match step {
                Step::Key(k) => v.get_mut(*k)?,
                Step::Index(i) => v.get_mut(*i)?,
            };
        }
        v.as_object_mut()
    }

    /// The objects of a message record the direct reading reads field by field.
    fn object_paths(record: &Value) -> Vec<Vec<Step>> {
        use Step::{Index, Key};
        let mut paths = vec![
            vec![],
            vec![Key("message")],
            vec![Key("message"), Key("usage")],
            vec![Key("message"), Key("usage"), Key("cost")],
        ];
        let blocks = record["message"]["content"].as_array().map_or(0, Vec::len);
        paths.extend((0..blocks.min(4)).map(|i| vec![Key("message"), Key("content"), Index(i)]));
        paths
    }

    /// `record` with the object at `path` written by hand with `key` twice (the
    /// second time with `again`), which a `Value` cannot hold.
    fn repeated(record: &Value, path: &[Step], key: &str, again: &Value) -> Option<String> {
        let mut v = record.clone();
        let obj = node(&mut v, path)?.clone();
        let mut text = String::from("{");
        for (k, x) in &obj {
            text.push_str(&format!("{}:{},", json!(k), x));
        }
        text.push_str(&format!("{}:{}}}", json!(key), again));
        if path.is_empty() {
            return Some(text);
        }
        let placeholder = "\u{1}repeated\u{1}";
        let mut slot = &mut v;
        for step in path {
            slot = match step {
                Step::Key(k) => slot.get_mut(*k)?,
                Step::Index(i) => slot.get_mut(*i)?,
            };
        }
        *slot = Value::String(placeholder.to_owned());
        Some(
            v.to_string()
                .replace(&json!(placeholder).to_string(), &text),
        )
    }

    #[test]
    fn direct_reading_gives_the_derived_entry_on_fixtures_and_odd_shapes() {
        let odd = [
            Value::Null,
            json!(-1),
            json!(1.5),
            json!("s"),
            json!(true),
            json!([]),
            json!({}),
            json!([{"type": "text"}]),
        ];
        let (mut checked, mut direct) = (0usize, 0usize);
        let mut run = |text: &str| {
            checked += 1;
            direct += usize::from(check(text));
        };
        let lines = message_lines();
        let mut read_whole = 0;
        for line in &lines {
            let Ok(record) = serde_json::from_str::<Value>(line) else {
                check(line);
                continue;
            };
            read_whole += usize::from(check(line));
            run(&serde_json::to_string_pretty(&record).expect("a value"));
            for path in object_paths(&record) {
                let mut base = record.clone();
                let Some(obj) = node(&mut base, &path) else {
                    continue;
                };
                let keys: Vec<String> = obj.keys().cloned().collect();
                for extra in [true, false] {
                    // An unmodelled key first or last.
                    let mut v = record.clone();
                    let o = node(&mut v, &path).expect("object");
                    let mut m = Map::new();
                    if extra {
                        m.insert("zz".to_owned(), json!({"a": [1, 2.5]}));
                    }
                    m.extend(std::mem::take(o));
                    if !extra {
                        m.insert("zz".to_owned(), json!(null));
                    }
                    *o = m;
                    run(&v.to_string());
                }
                for k in &keys {
                    let mut v = record.clone();
                    node(&mut v, &path).expect("object").shift_remove(k);
                    run(&v.to_string());
                    for x in &odd {
                        let mut v = record.clone();
                        node(&mut v, &path).expect("object")[k] = x.clone();
                        run(&v.to_string());
                    }
                    for first in [true, false] {
                        let mut v = record.clone();
                        let o = node(&mut v, &path).expect("object");
                        let x = o.shift_remove(k).expect("present");
                        let mut m = Map::new();
                        if first {
                            m.insert(k.clone(), x.clone());
                        }
                        m.extend(std::mem::take(o));
                        if !first {
                            m.insert(k.clone(), x);
                        }
                        *o = m;
                        run(&v.to_string());
                    }
                    let same = node(&mut record.clone(), &path).expect("object")[k].clone();
                    for again in [same, json!("other")] {
                        if let Some(text) = repeated(&record, &path, k, &again) {
                            run(&text);
                        }
                    }
                }
            }
        }
        // Spellings the serializer would not write (whitespace, escapes, numbers), and
        // repeated keys inside a value read whole, in the fixtures' records.
        let respell: [(&str, &str); 17] = [
            (r#"":"#, r#"": "#),
            (r#","#, r#", "#),
            (r#"\n"#, r#"\u000a"#),
            (r#"\n"#, r#"\u000A"#),
            (r#"\t"#, r#"\u0009"#),
            (r#"\""#, r#"\u0022"#),
            ("/", r#"\/"#),
            ("é", r#"\u00e9"#),
            ("Ω", r#"\u03a9"#),
            (r#""timestamp":1"#, r#""timestamp":1.0e0"#),
            (r#""input":0"#, r#""input":-0"#),
            (r#""total":0"#, r#""total":0.0"#),
            (r#""total":0"#, r#""total":-0"#),
            (r#""arguments":{""#, r#""arguments":{"k":1,"k":2,""#),
            (r#""details":{""#, r#""details":{"k":[1],"k":[2],""#),
            (r#","model":"#, r#","responseId":null,"model":"#),
            (r#""stopReason":"#, r#""errorMessage":null,"stopReason":"#),
        ];
        let (mut plain, mut whole) = (0, 0);
        for line in &lines {
            if let Some(r) = message_record(line) {
                whole += 1;
                plain += usize::from(r.prints_as_read(line));
            }
            for (from, to) in respell {
                if line.contains(from) {
                    run(&line.replacen(from, to, 1));
                }
            }
        }
        assert!(
            plain * 4 > whole * 3,
            "only {plain} of {whole} records read directly print as read"
        );
        // A block of an unmodelled kind, and a modelled kind's name in another case.
        for kind in ["video", "Text", ""] {
            run(&format!(
                r#"{{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{{"role":"assistant","content":[{{"type":"{kind}","text":"x","n":[1]}}],"api":"a","provider":"p","model":"m","usage":{{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{{"input":0,"output":0.5,"cacheRead":0,"cacheWrite":0,"total":0.5}}}},"stopReason":"stop","timestamp":1}}}}"#
            ));
        }
        // Escaped keys and tags read as their unescaped text, as serde reads them.
        run(
            r#"{"type":"mess\u0061ge","i\u0064":"a","parentId":null,"timestamp":"t","message":{"r\u006fle":"us\u0065r","content":"x","timestamp":1}}"#,
        );
        // Every record of the generated session (as the reference writes them) is read
        // directly; the fixtures' odd records (other roles, repeated keys, fields of
        // other types) are left to the derived reading.
        let generated = std::fs::read_to_string(fixtures().join("generated/1k.jsonl"))
            .expect("generated fixture");
        for line in generated
            .lines()
            .filter(|l| l.contains(r#""type":"message""#))
        {
            assert!(check(line), "not read directly: {line}");
            let read = message_record(line).expect("read directly");
            assert!(
                read.prints_as_read(line),
                "not said to print as read: {line}"
            );
        }
        assert!(
            read_whole > 180,
            "only {read_whole} fixture records read directly"
        );
        assert!(checked > 20_000, "{checked} odd shapes checked");
        assert!(
            direct > checked / 10,
            "only {direct} of {checked} read directly"
        );
    }

    /// `unescape` reads every string token as `serde_json` reads it, and says it is
    /// spelled as the serializer writes it exactly when `serde_json` writes the string
    /// back as the token.
    #[test]
    fn unescape_reads_string_tokens_as_serde_json_does() {
        let pieces = [
            "",
            "a",
            "é",
            "Ω",
            "😀",
            " ",
            "/",
            r"\/",
            r"\n",
            r"\r",
            r"\t",
            r"\b",
            r"\f",
            r#"\""#,
            r"\\",
            r"\u0000",
            r"\u001f",
            r"\u001F",
            r"\u000a",
            r"\u000A",
            r"\u0008",
            r"\u0009",
            r"\u000c",
            r"\u000d",
            r"\u0020",
            r"\u0041",
            r"\u00e9",
            r"\u00E9",
            r"\u03a9",
            r"\ud83d\ude00",
            r"\uD83D\uDE00",
            r"\ud83d",
            r"\ude00",
            r"\ud83d\u0041",
            r"\ud83dx",
            r"\u007f",
            "\u{7f}",
            r"\u2028",
            "\u{2028}",
        ];
        let mut tokens = Vec::new();
        for a in pieces {
            for b in pieces {
                tokens.push(format!("\"{a}{b}\""));
                tokens.push(format!("\"x{a}yy{b}zzz\""));
            }
        }
        tokens.push(format!("\"{}\"", r"line\n".repeat(300)));
        let mut read = 0;
        for token in &tokens {
            let serde = serde_json::from_str::<String>(token);
            match (super::unescape(token), &serde) {
                (Some((text, plain)), Ok(expected)) => {
                    read += 1;
                    assert_eq!(&text, expected, "{token}");
                    let written = serde_json::to_string(expected).expect("a string");
                    assert_eq!(plain, written == *token, "{token}");
                }
                (Some(got), Err(e)) => panic!("{token}: read {got:?} where serde_json fails: {e}"),
                // Unpaired surrogates, which serde_json refuses too.
                (None, Ok(s)) => panic!("{token}: not read, serde_json reads {s:?}"),
                (None, Err(_)) => {}
            }
        }
        assert!(read * 10 > tokens.len() * 8, "{read} of {}", tokens.len());
        // Not string tokens.
        for token in ["1", "null", "[\"a\"]", "\"", ""] {
            assert_eq!(super::unescape(token), None, "{token}");
        }
    }

    /// The scan steps over the strings the reading found spelled as the serializer
    /// spells them (here one it would refuse, to show it is not scanned), and a span
    /// that is no string of the text changes nothing.
    #[test]
    fn the_plain_scan_steps_over_strings_already_read() {
        let text = r#"{"a":"x\/y","b":[1,"\u0041"]}"#;
        assert_eq!(super::plain_key_count(text, &[]), None);
        let at = |s: &str| {
            let start = text.find(s).expect("in the text");
            (text.as_ptr() as usize + start, s.len())
        };
        let (x, u) = (at(r#""x\/y""#), at(r#""\u0041""#));
        assert_eq!(super::plain_key_count(text, &[x]), None);
        assert_eq!(super::plain_key_count(text, &[u, x]), Some(2));
        let elsewhere = "\"x\\/y\"".to_owned();
        let outside = (elsewhere.as_ptr() as usize, elsewhere.len());
        assert_eq!(super::plain_key_count(text, &[outside, u]), None);
        // A span that starts inside a string is never met.
        assert_eq!(super::plain_key_count(text, &[(x.0 + 1, 3), u]), None);
    }

    /// A message's blocks take the room they need, not the vector's growth (four
    /// blocks of about 200 bytes from the first push).
    #[test]
    fn blocks_keep_no_spare_room() {
        let text = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1}}"#;
        let read = message_record(text).expect("read directly");
        let crate::Entry::Message(m) = &read.entry else {
            panic!("a message: {:?}", read.entry);
        };
        let crate::AgentMessage::ToolResult(r) = &m.message else {
            panic!("a tool result: {:?}", m.message);
        };
        assert_eq!((r.content.len(), r.content.capacity()), (1, 1));
    }
}
