//! The session header: the first record, which decides the source's version (and
//! whether its ids must be assigned, v1) and is migrated to v3 when older.

use super::Run;
use super::parse::{Line, Parsed, describe, is_blank, parse_line, parse_map};
use crate::error::ImportError;
use crate::lines::{LineMeta, LineReader};
use crate::migrate::{V1State, header_version, migrate_header, to_js_json};
use crate::outcome::IssueKind;

/// The session header as read from the source.
pub(super) struct Header {
    pub(super) id: String,
    pub(super) version: u32,
    pub(super) line: LineMeta,
    pub(super) payload: Vec<u8>,
    pub(super) changed: bool,
    /// JavaScript whitespace after the header record: only the file's end may hold it.
    pub(super) trail: bool,
    /// The header record as it was before [`Header::assign_id`] gave it another id.
    pub(super) original: Option<Vec<u8>>,
}

impl Header {
    /// Makes `id` the header record's `id`: the import assigned the session this id
    /// because the header's own was taken or unsafe as a file name, and every surface
    /// (listings, `getSessionId()`, the journal's name) names a session by one id. The
    /// record is re-serialised as migration does (keys in place, numbers as JavaScript
    /// prints them); its previous bytes are kept in [`Header::original`] for the
    /// provenance, from which export restores them.
    pub(super) fn assign_id(&mut self, id: &str) {
        if id == self.id {
            return;
        }
        let rewritten = match splice_id(&self.payload, id) {
            Some(spliced) => spliced,
            None => {
                // The header record was read as an object before (`take_header`), so
                // it reads as one again; should it not, the original bytes stay as
                // the record.
                let Some(mut map) = parse_map(&self.payload) else {
                    return;
                };
                map.insert("id".to_owned(), serde_json::Value::from(id));
                to_js_json(map).into_bytes()
            }
        };
        self.original = Some(std::mem::replace(&mut self.payload, rewritten));
        self.changed = true;
    }
}

/// `payload` (a JSON object's text) with the value of its one top-level `id` key
/// replaced by `id` as a JSON string, every other byte as it was: a number beyond a
/// double's range stays one (a re-serialisation writes `null`, and the listing would
/// read the header's `timestamp` as 1970 where the reference reads an Invalid Date).
/// The value is found as the index's scan finds a field: serde_json reads the object
/// with each value borrowed raw from the text, whose place in it is the span.
/// `None` where that is not plain (the caller then re-serialises the record): no such
/// key, or more than one (repeated, or `id` spelled with escapes), or text serde_json
/// does not read as one object.
fn splice_id(payload: &[u8], id: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(payload).ok()?;
    // Read as the reference reads the line: JavaScript's trim (U+3000, U+FEFF…
    // around the object are whitespace to it, not to JSON); the bytes around stay.
    let TopKeys(keys) = serde_json::from_str(session_types::js::trim(text)).ok()?;
    let mut ids = keys.iter().filter(|(key, _)| key.is_id);
    let (key, raw) = ids.next()?;
    if ids.next().is_some() || !key.plain {
        return None;
    }
    let raw = raw.get();
    let start = (raw.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(raw.len())?;
    let mut out = Vec::with_capacity(payload.len() + id.len());
    out.extend_from_slice(payload.get(..start)?);
    out.extend_from_slice(serde_json::to_string(id).ok()?.as_bytes());
    out.extend_from_slice(payload.get(end..)?);
    Some(out)
}

/// A JSON object's top-level keys in order, repeats kept, each with its value raw
/// (borrowed from the text).
struct TopKeys<'a>(Vec<(Key, &'a serde_json::value::RawValue)>);

impl<'de> serde::Deserialize<'de> for TopKeys<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = TopKeys<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut keys = Vec::new();
                while let Some(key) = map.next_key()? {
                    keys.push((key, map.next_value()?));
                }
                Ok(TopKeys(keys))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Whether a key is `id`, and whether it is spelled without escapes.
struct Key {
    is_id: bool,
    plain: bool,
}

impl<'de> serde::Deserialize<'de> for Key {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            // serde_json lends the text's own bytes only for a key without escapes.
            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key, E> {
                Ok(Key {
                    is_id: key == "id",
                    plain: true,
                })
            }
            fn visit_str<E>(self, key: &str) -> Result<Key, E> {
                Ok(Key {
                    is_id: key == "id",
                    plain: false,
                })
            }
        }
        d.deserialize_str(Visit)
    }
}

impl Run<'_> {
    /// Reads lines up to and including the header; refuses what is not a session.
    pub(super) fn read_header(
        &mut self,
        reader: &mut LineReader<'_>,
    ) -> Result<Header, ImportError> {
        let mut first_bad: Option<(u64, String)> = None;
        loop {
            let Some((meta, buf)) = reader.next_line()? else {
                let (line, reason) = first_bad.unwrap_or((0, "no content".to_owned()));
                return Err(ImportError::NotJsonl {
                    path: self.path.to_path_buf(),
                    line,
                    reason,
                });
            };
            if is_blank(buf) {
                self.count_blank(meta);
                continue;
            }
            if meta.crlf {
                self.crlf_lines += 1;
            }
            match parse_line(buf, meta, first_bad.is_none()) {
                Parsed::Bad(kind) => {
                    first_bad.get_or_insert((meta.number, kind.to_string()));
                    self.issue(meta.number, kind);
                }
                Parsed::Object(line) => return self.take_header(buf, meta, line),
            }
        }
    }

    /// Takes the first line that reads as an object: a session header with a string
    /// id, or the import is refused.
    fn take_header(
        &mut self,
        buf: &[u8],
        meta: LineMeta,
        line: Line<'_>,
    ) -> Result<Header, ImportError> {
        let Line {
            env,
            scanned: _,
            surrogate,
            invalid_utf8,
            lead,
            trail,
        } = line;
        let found = describe(&env);
        let header_id = match (env.is_header(), env.id.as_deref()) {
            (true, Some(id)) => id.to_owned(),
            _ => {
                return Err(ImportError::NoHeader {
                    path: self.path.to_path_buf(),
                    line: meta.number,
                    found,
                });
            }
        };
        drop(env);
        if lead {
            self.issue(meta.number, IssueKind::OuterWhitespace { place: "before" });
        }
        if let Some(column) = invalid_utf8 {
            self.issue(meta.number, IssueKind::InvalidUtf8 { column });
        }
        let Some(mut map) = parse_map(buf) else {
            return Err(ImportError::NoHeader {
                path: self.path.to_path_buf(),
                line: meta.number,
                found: "a session header nested too deeply to read".to_owned(),
            });
        };
        let (version, odd) = header_version(&map, buf);
        if let Some(found) = odd {
            self.issue(
                meta.number,
                IssueKind::HeaderVersionRead {
                    found,
                    read_as: version,
                },
            );
        }
        self.version = version;
        let (payload, changed) = if version < 3 {
            migrate_header(&mut map);
            self.issue(meta.number, IssueKind::HeaderVersionSet { from: version });
            if let Some(column) = surrogate {
                self.issue(meta.number, IssueKind::LoneSurrogateReplaced { column });
            }
            (to_js_json(map).into_bytes(), true)
        } else {
            if let Some(column) = surrogate {
                self.issue(meta.number, IssueKind::LoneSurrogate { column });
            }
            (buf.to_vec(), false)
        };
        if version == 1 {
            self.v1 = Some(V1State::new(*self.scan_hash.as_bytes()));
        }
        Ok(Header {
            id: header_id,
            version,
            line: meta,
            payload,
            changed,
            trail,
            original: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::splice_id;

    fn spliced(text: &str) -> Option<String> {
        splice_id(text.as_bytes(), "legacy-1").map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn the_id_is_replaced_and_every_other_byte_kept() {
        let cases = [
            (
                r#"{"type":"session","version":3,"id":"","timestamp":1e400,"cwd":"/x"}"#,
                r#"{"type":"session","version":3,"id":"legacy-1","timestamp":1e400,"cwd":"/x"}"#,
            ),
            (
                r#" { "id" : "../a" , "n" : [ {"id":"inner"} , "}\"" ] , "v":3.0 } "#,
                r#" { "id" : "legacy-1" , "n" : [ {"id":"inner"} , "}\"" ] , "v":3.0 } "#,
            ),
            (
                r#"{"a":{"id":{"id":[1,2]}},"id":null}"#,
                r#"{"a":{"id":{"id":[1,2]}},"id":"legacy-1"}"#,
            ),
            (r#"{"id":12,"x":-1e999}"#, r#"{"id":"legacy-1","x":-1e999}"#),
            (
                r#"{"\u0074ype":"session","id":"x"}"#,
                r#"{"\u0074ype":"session","id":"legacy-1"}"#,
            ),
            (
                r#"{"s":"a\\","id":"a b"}"#,
                r#"{"s":"a\\","id":"legacy-1"}"#,
            ),
            (
                "\u{feff}{\"id\":\"\",\"timestamp\":1e400}\u{3000}",
                "\u{feff}{\"id\":\"legacy-1\",\"timestamp\":1e400}\u{3000}",
            ),
        ];
        for (from, to) in cases {
            assert_eq!(spliced(from).as_deref(), Some(to), "{from}");
        }
    }

    /// Random objects (nested values, strings with quotes, backslashes, braces and
    /// controls, odd spacing between every token), with and without an `id` key: a
    /// splice reads back as the object with only `id` replaced, and declines only
    /// an object without one.
    #[test]
    fn random_objects_read_back_with_only_the_id_replaced() {
        use serde_json::{Map, Value, json};
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        fn value(next: &mut dyn FnMut(u64) -> u64, depth: u32) -> Value {
            let strings = ["", "id", "a\"b", "}{][", "\\", "line\nbreak", "é🎉", ":,"];
            match next(if depth > 3 { 5 } else { 7 }) {
                0 => Value::Null,
                1 => json!(next(2) == 0),
                2 => json!(next(1000) as f64 / 7.0),
                3 => json!(-(next(1_000_000) as i64)),
                4 => json!(strings[next(strings.len() as u64) as usize]),
                5 => Value::Array((0..next(4)).map(|_| value(next, depth + 1)).collect()),
                _ => {
                    let mut m = Map::new();
                    for _ in 0..next(4) {
                        let k = strings[next(strings.len() as u64) as usize];
                        m.insert(k.to_owned(), value(next, depth + 1));
                    }
                    Value::Object(m)
                }
            }
        }
        for round in 0..2000 {
            let mut m = Map::new();
            for k in ["type", "version", "id", "timestamp", "cwd", "extra"] {
                if next(3) != 0 {
                    m.insert(k.to_owned(), value(&mut next, 0));
                }
            }
            // Spacing between tokens: re-spaced copies of serde's text.
            let compact = Value::Object(m.clone()).to_string();
            let mut text = String::new();
            let mut in_string = false;
            let mut escaped = false;
            for c in compact.chars() {
                text.push(c);
                if in_string {
                    match (escaped, c) {
                        (true, _) => escaped = false,
                        (false, '\\') => escaped = true,
                        (false, '"') => in_string = false,
                        _ => {}
                    }
                } else if c == '"' {
                    in_string = true;
                } else if matches!(c, '{' | '}' | '[' | ']' | ',' | ':') && next(3) == 0 {
                    text.push_str([" ", "\n", "\t ", "\r\n"][next(4) as usize]);
                }
            }
            match splice_id(text.as_bytes(), "legacy-1") {
                Some(out) => {
                    let read: Map<String, Value> = serde_json::from_slice(&out).unwrap();
                    let mut want = m.clone();
                    want.insert("id".to_owned(), json!("legacy-1"));
                    assert_eq!(read, want, "round {round}: {text}");
                }
                None => assert!(!m.contains_key("id"), "round {round}: {text}"),
            }
        }
    }

    #[test]
    fn what_is_not_plain_is_left_to_the_rewrite() {
        for text in [
            r#"{"type":"session"}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"\u0069d":"a"}"#,
            r#"{"id":"a","\u0069d":"b"}"#,
            r#"["id"]"#,
            r#"{"id":}"#,
            r#"{"id":"a""#,
            r#"{"id" "a"}"#,
            "",
        ] {
            assert_eq!(spliced(text), None, "{text}");
        }
    }
}
