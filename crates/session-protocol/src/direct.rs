//! The params of the two appends that carry a tagged model type (`appendMessage`,
//! `appendEntry`) read without serde's derived reader of the whole params.
//!
//! The derived reading of [`AppendMessageParams`] reads its `message` through
//! [`AgentMessage`]'s derived reader, an internally tagged enum with an untagged
//! fallback, which buffers the whole message (a copy of every string) before it
//! reads a field. Here the params object is read key by key, the body (`message` or
//! `entry`) kept as the text it is, then read by the model's own direct reading
//! ([`AgentMessage::parse_json`], [`Entry::parse`]), which reads the common shapes
//! field by field.
//!
//! Anything this reading does not cover gives `None` and the caller reads the params
//! as before (so every refusal, and its message, is the derived reading's): a key
//! other than `sessionId`, the body and `durability` (the derived reading refuses
//! unknown keys), a repeated or escaped key, params that are no object, a body its
//! direct reading leaves to serde. Where this reading answers, it answers what the
//! derived one does: `tests` compares the two on every fixture message and record
//! and on odd shapes made from them.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use session_types::{AgentMessage, Entry};

use crate::methods::{AppendEntryParams, AppendMessageParams};
use crate::types::Durability;

/// The key of `appendMessage`'s message in its params.
// tidy: not an entry type (a params key: the appended message)
const MESSAGE: &str = "message";

/// `session/appendMessage`'s params read directly, or `None` where the derived
/// reading must decide.
pub(crate) fn append_message(text: &str) -> Option<AppendMessageParams> {
    let f = fields(text, MESSAGE)?;
    Some(AppendMessageParams {
        message: AgentMessage::parse_json(f.body?.get()).ok()?,
        session_id: f.session_id?,
        durability: f.durability.flatten(),
    })
}

/// `session/appendEntry`'s params read directly, or `None` where the derived
/// reading must decide. [`Entry::parse`] answers the derived entry where it
/// answers (it refuses a known type in another shape, which the derived reading
/// keeps whole: left to it).
pub(crate) fn append_entry(text: &str) -> Option<AppendEntryParams> {
    let f = fields(text, "entry")?;
    Some(AppendEntryParams {
        entry: Entry::parse(f.body?.get()).ok()?,
        session_id: f.session_id?,
        durability: f.durability.flatten(),
    })
}

/// The members of an append's params: each at most once, the body as its text.
#[derive(Default)]
struct Fields<'de> {
    session_id: Option<String>,
    body: Option<&'de RawValue>,
    /// Present (`Some`), perhaps `null` (`Some(None)`).
    durability: Option<Option<Durability>>,
}

/// Reads the params object `text`: `sessionId`, `body` and `durability`, nothing
/// else, each once.
fn fields<'de>(text: &'de str, body: &str) -> Option<Fields<'de>> {
    let mut d = serde_json::Deserializer::from_str(text);
    let f = Members { body }.deserialize(&mut d).ok()?;
    d.end().ok()?;
    Some(f)
}

struct Members<'k> {
    body: &'k str,
}

impl<'de> DeserializeSeed<'de> for Members<'_> {
    type Value = Fields<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Fields<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Members<'_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an append's params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut f = Fields::default();
        // A key with escapes is no borrowed `&str`: an error, left to the derived
        // reading like every other shape this one does not cover.
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "sessionId" if f.session_id.is_none() => f.session_id = Some(map.next_value()?),
                "durability" if f.durability.is_none() => f.durability = Some(map.next_value()?),
                k if k == self.body && f.body.is_none() => f.body = Some(map.next_value()?),
                _ => return Err(de::Error::custom("left to the derived reading")),
            }
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    //! The direct readings against the derived ones
    //! (`serde_json::from_str::<AppendMessageParams>`, `…<AppendEntryParams>`):
    //! wherever the direct reading answers it answers the same params, on every
    //! message and record of the fixtures and on odd shapes of the params.

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    fn fixtures() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
    }

    /// Every record of the corpus, the leniency fixtures and the generated session,
    /// as written there (the entries), and the `message` of each message record.
    fn fixture_bodies() -> (Vec<String>, Vec<String>) {
        #[derive(Deserialize)]
        struct Record<'a> {
            #[serde(borrow)]
            message: Option<&'a RawValue>,
        }
        let mut files = Vec::new();
        for dir in ["legacy", "edge", "leniency", "generated"] {
            for e in std::fs::read_dir(fixtures().join(dir)).expect("fixture directory") {
                let p = e.expect("directory entry").path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    files.push(p);
                }
            }
        }
        files.sort();
        let (mut entries, mut messages) = (Vec::new(), Vec::new());
        for p in files {
            let text = String::from_utf8_lossy(&std::fs::read(&p).expect("fixture")).into_owned();
            for line in text.lines() {
                if serde_json::from_str::<&RawValue>(line).is_err() {
                    continue; // not JSON: no params can carry it
                }
                if line.contains(r#""type":"message""#)
                    && let Ok(Record { message: Some(m) }) = serde_json::from_str(line)
                {
                    messages.push(m.get().to_owned());
                }
                entries.push(line.to_owned());
            }
        }
        (entries, messages)
    }

    /// The params texts of one body: as a client writes them, and odd shapes.
    fn shapes(key: &str, body: &str) -> Vec<String> {
        let sid = r#""sessionId":"0195f3a0-7b7c-7000-8000-000000000001""#;
        let mut out = vec![
            format!(r#"{{{sid},"{key}":{body}}}"#),
            format!(r#"{{{sid},"{key}":{body},"durability":"durable"}}"#),
            format!(r#"{{"durability":"buffered","{key}":{body},{sid}}}"#),
            format!(r#"{{{sid},"{key}":{body},"durability":null}}"#),
            format!(r#"{{ {sid} , "{key}" : {body} }}"#),
        ];
        let odd = [
            // Unknown keys, missing and repeated members, wrong types.
            format!(r#"{{{sid},"{key}":{body},"zz":1}}"#),
            format!(r#"{{"zz":1,{sid},"{key}":{body}}}"#),
            format!(r#"{{"{key}":{body}}}"#),
            format!(r#"{{{sid}}}"#),
            format!(r#"{{{sid},"{key}":{body},{sid}}}"#),
            format!(r#"{{{sid},"{key}":{body},"{key}":{body}}}"#),
            format!(r#"{{{sid},"{key}":{body},"durability":"Durable"}}"#),
            format!(r#"{{{sid},"{key}":{body},"durability":1}}"#),
            format!(r#"{{{sid},"{key}":{body},"durability":"buffered","durability":"durable"}}"#),
            format!(r#"{{"sessionId":1,"{key}":{body}}}"#),
            format!(r#"{{"sessionId":null,"{key}":{body}}}"#),
            // An escaped key, positional params, no object.
            format!(r#"{{"s\u0065ssionId":"s","{key}":{body}}}"#),
            format!(r#"["s",{body}]"#),
            format!(r#"["s",{body},"buffered"]"#),
            body.to_owned(),
        ];
        out.extend(odd);
        out
    }

    /// Whether `direct` read `text`; where it did, it read what serde's derived
    /// reading reads (which must not fail there).
    fn check<T>(text: &str, direct: impl Fn(&str) -> Option<T>) -> bool
    where
        T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let derived = serde_json::from_str::<T>(text);
        let direct = direct(text);
        if let Some(d) = &direct {
            match &derived {
                Ok(p) => assert_eq!(d, p, "the readings differ: {text}"),
                Err(e) => panic!("read directly where the derived reading fails ({e}): {text}"),
            }
        }
        direct.is_some()
    }

    fn check_message(text: &str) -> bool {
        check::<AppendMessageParams>(text, append_message)
    }

    fn check_entry(text: &str) -> bool {
        check::<AppendEntryParams>(text, append_entry)
    }

    #[test]
    fn direct_params_are_the_derived_params_on_fixtures_and_odd_shapes() {
        let (entries, messages) = fixture_bodies();
        assert!(messages.len() > 1000, "{} fixture messages", messages.len());
        let mut plain = Vec::new();
        for m in &messages {
            for (i, p) in shapes(MESSAGE, m).iter().enumerate() {
                let direct = check_message(p);
                if i == 0 {
                    plain.push(direct);
                }
            }
        }
        // Messages of every shape the fixtures hold, and the odd ones of a message.
        let m = r#"{"role":"user","content":"x","timestamp":1}"#;
        for odd in [
            "null",
            "1",
            r#""x""#,
            "[]",
            "{}",
            r#"{"role":"hook","x":1}"#,
            r#"{"content":"x","role":"user","timestamp":1}"#,
            r#"{"role":"user","content":1,"timestamp":1}"#,
        ] {
            for p in shapes(MESSAGE, odd) {
                check_message(&p);
            }
        }
        let huge = json!({"role":"user","content":"é".repeat(1 << 20),"timestamp":1});
        assert!(check_message(&shapes(MESSAGE, &huge.to_string())[0]));
        let deep = format!(
            r#"{{"role":"user","content":"x","timestamp":1,"zz":{}1{}}}"#,
            "[".repeat(60),
            "]".repeat(60)
        );
        assert!(check_message(&shapes(MESSAGE, &deep)[0]));
        let read = plain.iter().filter(|d| **d).count();
        assert!(
            read * 10 > plain.len() * 9,
            "only {read} of {} fixture messages read directly",
            plain.len()
        );
        // As a client writes it, the common message is read directly.
        assert!(check_message(&shapes(MESSAGE, m)[0]));

        let mut read_entries = 0;
        for e in &entries {
            for (i, p) in shapes("entry", e).iter().enumerate() {
                let direct = check_entry(p);
                if i == 0 {
                    read_entries += usize::from(direct);
                }
            }
        }
        for odd in [
            "null",
            "{}",
            r#"{"type":"label","id":"a"}"#,
            r#"{"type":"video","x":1}"#,
            r#"{"type":"message","message":"x"}"#,
        ] {
            for p in shapes("entry", odd) {
                check_entry(&p);
            }
        }
        assert!(
            read_entries * 10 > entries.len() * 9,
            "only {read_entries} of {} fixture records read directly",
            entries.len()
        );
    }

    #[test]
    fn what_the_direct_reading_leaves_is_refused_as_before() {
        let m = r#"{"role":"user","content":"x","timestamp":1}"#;
        for p in [
            format!(r#"{{"sessionId":"s","message":{m},"zz":1}}"#),
            format!(r#"{{"sessionId":"s","message":{m},"sessionId":"t"}}"#),
            r#"{"sessionId":"s","message":"x"}"#.to_owned(),
        ] {
            assert_eq!(append_message(&p), None, "{p}");
            assert!(serde_json::from_str::<AppendMessageParams>(&p).is_err());
        }
    }
}
