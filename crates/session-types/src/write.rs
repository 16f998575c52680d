//! An entry's JSON text written straight to its writer (an append's frame buffer): the shapes an append
//! writes most (a `message` entry holding a user, assistant or tool-result message,
//! their content blocks and usage) by hand, everything else by the serde serializer
//! of [`crate::compact`].
//!
//! The bytes are exactly what `serde_json::to_vec` writes for the same value (the unit
//! tests compare them over every fixture shape, with unmodelled fields, absent
//! options and unknown variants). What writing by hand saves is serde's generic
//! path for every field: a key is a constant copied with its quotes and colon
//! (serde escapes each key as a string, and every flattened struct goes through a
//! map serializer), and a struct's members need no state machine for their commas.
//! Strings are escaped by [`compact::write_escaped`] and numbers written by serde_json
//! (so the rules for those stay in one place); JSON values (`arguments`, `details`,
//! unmodelled fields) are walked here, and every other shape goes to the serde
//! serializer.
//!
//! A field added to a message type, a content block or usage must be added here too
//! (and to the direct reading in `decode`): the derives alone would not write it on
//! this path. The comparison tests catch the omission only for a field some
//! fixture or unit test sets: add one with the field.

use std::io;

use serde::Serialize;
use serde_json::{Number, Value};

use crate::compact;
use crate::content::{ContentBlock, Extra, UserContent};
use crate::entry::{Entry, EntryBase, MessageEntry};
use crate::message::{AgentMessage, Cost, Usage};

/// Appends `entry`'s compact JSON text to `out`.
pub(crate) fn entry<W: io::Write>(out: &mut W, entry: &Entry) -> io::Result<()> {
    match entry {
        Entry::Message(m) => message_entry(out, m),
        other => value(out, other),
    }
}

/// Any value, by the serde serializer.
#[inline]
fn value<W: io::Write, T: Serialize + ?Sized>(out: &mut W, v: &T) -> io::Result<()> {
    compact::to_writer(&mut *out, v).map_err(io::Error::from)
}

/// A JSON value (tool arguments, details, unmodelled fields): the serde serializer's
/// bytes, keys and strings escaped directly. Nested as deep as the value is, like
/// serde's own `Serialize` for it (a parsed value is bounded by the parser's depth
/// limit).
fn json<W: io::Write>(out: &mut W, v: &Value) -> io::Result<()> {
    match v {
        Value::Null => out.write_all(b"null"),
        Value::Bool(b) => out.write_all(if *b { b"true" } else { b"false" }),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                json(out, item)?;
            }
            out.write_all(b"]")
        }
        Value::Object(map) => {
            out.write_all(b"{")?;
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                string(out, k)?;
                out.write_all(b":")?;
                json(out, item)?;
            }
            out.write_all(b"}")
        }
    }
}

#[inline]
fn string<W: io::Write>(out: &mut W, s: &str) -> io::Result<()> {
    compact::write_escaped(out, s)
}

#[inline]
fn number<W: io::Write>(out: &mut W, n: &Number) -> io::Result<()> {
    serde_json::to_writer(&mut *out, n).map_err(io::Error::from)
}

#[inline]
fn count<W: io::Write>(out: &mut W, n: u64) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &n).map_err(io::Error::from)
}

/// A key with its comma, quotes and colon (`,"key":`), as a constant.
macro_rules! key {
    ($out:expr, $k:literal) => {
        $out.write_all(concat!(",\"", $k, "\":").as_bytes())?
    };
}

/// The unmodelled fields of a struct, after its own (serde's `flatten`).
fn extra<W: io::Write>(out: &mut W, extra: &Extra) -> io::Result<()> {
    for (k, v) in extra {
        out.write_all(b",")?;
        string(out, k)?;
        out.write_all(b":")?;
        json(out, v)?;
    }
    Ok(())
}

/// `EntryBase`'s fields as its `Serialize` writes them, each after a comma.
fn base<W: io::Write>(out: &mut W, b: &EntryBase) -> io::Result<()> {
    if let Some(id) = &b.id {
        key!(out, "id");
        string(out, id.as_str())?;
    }
    if b.id.is_some() || b.parent_id.is_some() {
        key!(out, "parentId");
        match &b.parent_id {
            Some(p) => string(out, p.as_str())?,
            None => out.write_all(b"null")?,
        }
    }
    if let Some(ts) = &b.timestamp {
        key!(out, "timestamp");
        string(out, ts.as_str())?;
    }
    Ok(())
}

fn message_entry<W: io::Write>(out: &mut W, m: &MessageEntry) -> io::Result<()> {
    message_entry_parts(out, &m.base, &m.message, Some(&m.extra))
}

/// A `message` entry of these parts (`extra`: its unmodelled fields, if any).
pub(crate) fn message_entry_parts<W: io::Write>(
    out: &mut W,
    b: &EntryBase,
    m: &AgentMessage,
    more: Option<&Extra>,
) -> io::Result<()> {
    out.write_all(b"{\"type\":\"message\"")?;
    base(out, b)?;
    key!(out, "message");
    message(out, m)?;
    if let Some(more) = more {
        extra(out, more)?;
    }
    out.write_all(b"}")?;
    Ok(())
}

fn message<W: io::Write>(out: &mut W, m: &AgentMessage) -> io::Result<()> {
    match m {
        AgentMessage::User(u) => {
            out.write_all(b"{\"role\":\"user\"")?;
            key!(out, "content");
            user_content(out, &u.content)?;
            key!(out, "timestamp");
            number(out, &u.timestamp)?;
            extra(out, &u.extra)?;
        }
        AgentMessage::Assistant(a) => {
            out.write_all(b"{\"role\":\"assistant\"")?;
            key!(out, "content");
            blocks(out, &a.content)?;
            key!(out, "api");
            string(out, &a.api)?;
            key!(out, "provider");
            string(out, &a.provider)?;
            key!(out, "model");
            string(out, &a.model)?;
            if let Some(r) = &a.response_id {
                key!(out, "responseId");
                string(out, r)?;
            }
            key!(out, "usage");
            usage(out, &a.usage)?;
            key!(out, "stopReason");
            string(out, &a.stop_reason)?;
            if let Some(e) = &a.error_message {
                key!(out, "errorMessage");
                string(out, e)?;
            }
            key!(out, "timestamp");
            number(out, &a.timestamp)?;
            extra(out, &a.extra)?;
        }
        AgentMessage::ToolResult(t) => {
            out.write_all(b"{\"role\":\"toolResult\"")?;
            key!(out, "toolCallId");
            string(out, &t.tool_call_id)?;
            key!(out, "toolName");
            string(out, &t.tool_name)?;
            key!(out, "content");
            blocks(out, &t.content)?;
            if let Some(d) = &t.details {
                key!(out, "details");
                json(out, d)?;
            }
            key!(out, "isError");
            out.write_all(if t.is_error { b"true" } else { b"false" })?;
            key!(out, "timestamp");
            number(out, &t.timestamp)?;
            extra(out, &t.extra)?;
        }
        other => return value(out, other),
    }
    out.write_all(b"}")?;
    Ok(())
}

fn user_content<W: io::Write>(out: &mut W, c: &UserContent) -> io::Result<()> {
    match c {
        UserContent::Text(s) => string(out, s),
        UserContent::Blocks(b) => blocks(out, b),
    }
}

fn blocks<W: io::Write>(out: &mut W, blocks: &[ContentBlock]) -> io::Result<()> {
    out.write_all(b"[")?;
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        block(out, b)?;
    }
    out.write_all(b"]")?;
    Ok(())
}

fn block<W: io::Write>(out: &mut W, b: &ContentBlock) -> io::Result<()> {
    match b {
        ContentBlock::Text(t) => {
            out.write_all(b"{\"type\":\"text\"")?;
            key!(out, "text");
            string(out, &t.text)?;
            extra(out, &t.extra)?;
        }
        ContentBlock::Thinking(t) => {
            out.write_all(b"{\"type\":\"thinking\"")?;
            key!(out, "thinking");
            string(out, &t.thinking)?;
            extra(out, &t.extra)?;
        }
        ContentBlock::ToolCall(t) => {
            out.write_all(b"{\"type\":\"toolCall\"")?;
            key!(out, "id");
            string(out, &t.id)?;
            key!(out, "name");
            string(out, &t.name)?;
            key!(out, "arguments");
            json(out, &t.arguments)?;
            extra(out, &t.extra)?;
        }
        ContentBlock::Image(i) => {
            out.write_all(b"{\"type\":\"image\"")?;
            key!(out, "data");
            string(out, &i.data)?;
            key!(out, "mimeType");
            string(out, &i.mime_type)?;
            extra(out, &i.extra)?;
        }
        other => return value(out, other),
    }
    out.write_all(b"}")?;
    Ok(())
}

fn usage<W: io::Write>(out: &mut W, u: &Usage) -> io::Result<()> {
    out.write_all(b"{\"input\":")?;
    count(out, u.input)?;
    key!(out, "output");
    count(out, u.output)?;
    key!(out, "cacheRead");
    count(out, u.cache_read)?;
    key!(out, "cacheWrite");
    count(out, u.cache_write)?;
    key!(out, "totalTokens");
    count(out, u.total_tokens)?;
    key!(out, "cost");
    cost(out, &u.cost)?;
    extra(out, &u.extra)?;
    out.write_all(b"}")?;
    Ok(())
}

fn cost<W: io::Write>(out: &mut W, c: &Cost) -> io::Result<()> {
    out.write_all(b"{\"input\":")?;
    number(out, &c.input)?;
    key!(out, "output");
    number(out, &c.output)?;
    key!(out, "cacheRead");
    number(out, &c.cache_read)?;
    key!(out, "cacheWrite");
    number(out, &c.cache_write)?;
    key!(out, "total");
    number(out, &c.total)?;
    extra(out, &c.extra)?;
    out.write_all(b"}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::content::{ContentBlock, Extra, UserContent};
    use crate::entry::{Entry, EntryBase, MessageEntry};
    use crate::ids::{EntryId, Timestamp};
    use crate::message::{AgentMessage, UserMessage};

    /// Ours and serde_json's bytes for `e`, which must be equal.
    fn same(e: &Entry) {
        let theirs = serde_json::to_string(e).expect("serde_json writes it");
        let mut ours = Vec::new();
        super::entry(&mut ours, e).expect("a vector takes it");
        assert_eq!(String::from_utf8(ours).expect("utf-8"), theirs);
    }

    fn typed(text: &str) -> Entry {
        let e = Entry::parse(text).expect("a typed entry");
        assert!(
            matches!(&e, Entry::Message(m) if !matches!(m.message, AgentMessage::Unknown(_))),
            "{text} reads as a typed message"
        );
        e
    }

    /// Every hand-written shape with and without its optional fields, with unmodelled
    /// fields at every level (a key repeating a modelled one included), and strings
    /// that need escapes.
    #[test]
    fn the_hand_written_shapes_are_serde_json_bytes() {
        let usage = r#"{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":0.30000000000000004,"cacheRead":0,"cacheWrite":1e-7,"total":12345678.5,"cx":[1]},"ux":null}"#;
        let texts = [
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi \"there\"\n\u0001","timestamp":1}}"#.to_owned(),
            r#"{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"x","textSignature":"s"},{"type":"image","data":"AAAA","mimeType":"image/png","ix":2}],"timestamp":-5,"ux":{"k":[true]}},"ex":"after"}"#.to_owned(),
            format!(
                r#"{{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"hm\\\\","thinkingSignature":"sig"}},{{"type":"text","text":"ok"}},{{"type":"toolCall","id":"c1","name":"read","arguments":{{"path":"/a\"b","n":[1,2.5,null]}},"tx":1}},{{"type":"future","z":1}}],"api":"anthropic-messages","provider":"anthropic","model":"m","responseId":"r","usage":{usage},"stopReason":"toolUse","errorMessage":"e","timestamp":2,"ax":"y"}}}}"#
            ),
            format!(
                r#"{{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{usage},"stopReason":"stop","timestamp":1.5}}}}"#
            ),
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"out\ttabs"}],"details":{"diff":"-a\n+b"},"isError":false,"timestamp":3}}"#.to_owned(),
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[],"details":null,"isError":true,"timestamp":3,"toolName2":1}}"#.to_owned(),
            r#"{"type":"message","id":"c","parentId":"b","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[],"isError":true,"timestamp":18446744073709551615}}"#.to_owned(),
            // Every kind of number and nesting in a JSON value (arguments, details).
            r#"{"type":"message","id":"d","parentId":"c","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"n","arguments":{"z":0,"a":-0.0,"big":18446744073709551615,"neg":-9223372036854775808,"f":1e300,"g":5e-324,"h":0.1,"i":123456789.125,"arr":[[],{},[{}],"s",true,false,null],"\u0000key\"":"\ud83c\udf89"}}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}}"#.to_owned(),
            r#"{"type":"message","id":"e","parentId":"d","timestamp":"t","message":{"role":"toolResult","toolCallId":"c2","toolName":"n","content":[],"details":[1.5e-7,-3,"x\ny",{"deep":[[[{"k":null}]]]}],"isError":false,"timestamp":1}}"#.to_owned(),
        ];
        for t in &texts {
            same(&typed(t));
        }
    }

    /// The shapes left to serde (other roles, unknown messages and blocks, other
    /// entry types) and every combination of the base fields.
    #[test]
    fn the_rest_goes_through_serde_with_the_same_bytes() {
        let user = |content: UserContent, extra: Extra| {
            AgentMessage::User(UserMessage {
                content,
                timestamp: 7.into(),
                extra,
            })
        };
        let mut extra = Extra::new();
        extra.insert("role".into(), json!("again"));
        extra.insert("content".into(), json!({"a": "b"}));
        let messages = [
            user(UserContent::Text("t".into()), Extra::new()),
            user(UserContent::Text("t".into()), extra.clone()),
            user(
                UserContent::Blocks(vec![
                    ContentBlock::text("a"),
                    ContentBlock::Unknown(extra.clone()),
                ]),
                Extra::new(),
            ),
            AgentMessage::Unknown(extra.clone()),
            AgentMessage::NotAnObject(json!("just text")),
            AgentMessage::NotAnObject(json!([1, {"x": null}])),
        ];
        let bases = [
            EntryBase::default(),
            EntryBase::new(EntryId::new("i"), None, Timestamp::new("ts")),
            EntryBase::new(
                EntryId::new("i"),
                Some(EntryId::new("p")),
                Timestamp::new("ts"),
            ),
            EntryBase {
                id: None,
                parent_id: Some(EntryId::new("p")),
                timestamp: None,
            },
            EntryBase {
                id: Some(EntryId::new("i\"q")),
                parent_id: None,
                timestamp: None,
            },
        ];
        for base in &bases {
            for message in &messages {
                for extra in [Extra::new(), extra.clone()] {
                    same(&Entry::Message(MessageEntry {
                        base: base.clone(),
                        message: message.clone(),
                        extra,
                    }));
                }
            }
            same(&Entry::session_info(base.clone(), "name \"n\""));
            same(&Entry::label(base.clone(), EntryId::new("t"), None));
        }
        same(&Entry::Unknown(extra));
    }
}
