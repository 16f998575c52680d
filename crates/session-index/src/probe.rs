//! Reading the few fields the index needs from one record's JSON, without building it.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Always `Some(raw)` when the key is present (even for `null`), `None` when absent.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(d).map(Some)
}

/// The fields of an entry the index reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Probe<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    pub(crate) entry_type: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) id: Option<&'a RawValue>,
    #[serde(rename = "parentId", default, borrow, deserialize_with = "present")]
    pub(crate) parent_id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) timestamp: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) message: Option<&'a RawValue>,
    #[serde(rename = "targetId", default, borrow, deserialize_with = "present")]
    pub(crate) target_id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) label: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) name: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) state: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) status: Option<&'a RawValue>,
}

/// The fields of a stored message the listing summary reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageProbe<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) role: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) content: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) timestamp: Option<&'a RawValue>,
}

/// The JSON type of a raw value, by its first byte.
pub(crate) fn is_object(v: &RawValue) -> bool {
    v.get().starts_with('{')
}

/// The string a raw value holds, if it is a JSON string.
pub(crate) fn as_str(v: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let raw = v?.get();
    let inner = raw.strip_prefix('"')?;
    // A literal without an escape is its own text (a raw value is valid JSON: no
    // control character in it): borrowed, where serde's `Cow` would copy it.
    if let Some(text) = inner.strip_suffix('"')
        && !text.contains('\\')
    {
        return Some(Cow::Borrowed(text));
    }
    serde_json::from_str::<Cow<'_, str>>(raw).ok()
}

/// The string a raw value holds, if it is a JSON string, with every lone surrogate
/// (which [`as_str`] refuses) read as U+FFFD, as every typed view reads it: for a
/// field that is shown, never compared (a label, a name).
pub(crate) fn as_str_lossy(v: Option<&RawValue>) -> Option<Cow<'_, str>> {
    as_str(v).or_else(|| {
        let raw = v?.get();
        raw.starts_with('"').then_some(())?;
        session_types::json::from_str_lossy::<String>(raw)
            .ok()
            .map(Cow::Owned)
    })
}

/// Whether a raw value is a JSON string that [`as_str`] cannot read
/// (it holds a lone surrogate).
pub(crate) fn is_unreadable_str(v: &RawValue) -> bool {
    v.get().starts_with('"') && as_str(Some(v)).is_none()
}

/// The number a raw value holds, if it is a JSON number, as `JSON.parse` reads it
/// (`session_types::js::raw_number`: `1e400` is `±Infinity`).
pub(crate) fn as_number(v: Option<&RawValue>) -> Option<f64> {
    session_types::js::raw_number(v?)
}

/// Whether a raw value is JavaScript-falsy (`null`, `false`, `0`, `""`; absent too):
/// `session_types::js::raw_truthy`, the one reading of it.
pub(crate) fn is_falsy(v: Option<&RawValue>) -> bool {
    !session_types::js::raw_truthy(v)
}

/// The most text of the first user message the index keeps (UTF-8 bytes, cut on a
/// char boundary): the listing shows a prefix, and a whole message (hundreds of MB
/// in the wild) would make every sidecar and catalog write, and every command that
/// loads them, cost that much.
pub const FIRST_MESSAGE_MAX_BYTES: usize = 4096;

/// JSON string literals longer than this are decoded only as far as the excerpt
/// needs (shorter ones are decoded whole, as before: at most this much memory).
const WHOLE_DECODE_MAX: usize = 64 * 1024;

/// A bounded prefix of an extracted text: what the reference's `extractTextContent`
/// would return, cut to `limit` bytes, plus whether the whole text is non-empty.
#[derive(Debug, Default)]
pub(crate) struct Excerpt {
    pub(crate) text: String,
    limit: usize,
    /// Whether the whole text has at least one character.
    pub(crate) nonempty: bool,
    /// Whether the whole text is longer than `text`.
    pub(crate) truncated: bool,
}

impl Excerpt {
    /// An empty excerpt keeping at most `limit` bytes (0: only track emptiness).
    pub(crate) fn new(limit: usize) -> Self {
        Excerpt {
            limit,
            ..Excerpt::default()
        }
    }

    fn room(&self) -> usize {
        if self.truncated {
            0
        } else {
            self.limit.saturating_sub(self.text.len())
        }
    }

    /// Appends `s`, keeping at most the limit (a piece that does not fit ends the
    /// excerpt, so it stays a true prefix).
    pub(crate) fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.nonempty = true;
        let room = self.room();
        if s.len() <= room {
            self.text.push_str(s);
        } else {
            self.text.push_str(&s[..floor_char_boundary(s, room)]);
            self.truncated = true;
        }
    }

    /// Appends the value of the JSON string literal `raw` (quotes included), decoding
    /// no more of it than the excerpt can keep, each lone surrogate (which no Rust
    /// string holds) as U+FFFD, as every typed view reads it. `false` if it does not
    /// decode.
    fn push_json_str(&mut self, raw: &str) -> bool {
        // Same length: `\uD800` becomes `\ufffd`.
        let (replaced, _) = session_types::json::replace_lone_surrogates(raw);
        let raw = &*replaced;
        if raw.len() <= 2 {
            return serde_json::from_str::<Cow<'_, str>>(raw).is_ok();
        }
        if raw.len() <= WHOLE_DECODE_MAX {
            return match serde_json::from_str::<Cow<'_, str>>(raw) {
                Ok(s) => {
                    self.push(&s);
                    true
                }
                Err(_) => false,
            };
        }
        // A literal longer than the decode bound: decode a prefix long enough for the
        // room left (an escape is at most 6 bytes per decoded byte; the margin covers
        // the escape or pair the cut backs off from), so the excerpt is the same as
        // from the whole text. The cut splits no escape and no surrogate pair.
        let room = self.room();
        let cut = literal_cut(raw, room.saturating_mul(6).saturating_add(32));
        let mut prefix = String::with_capacity(cut + 1);
        prefix.push_str(&raw[..cut]);
        prefix.push('"');
        match serde_json::from_str::<String>(&prefix) {
            Ok(s) => {
                self.push(&s);
                // A literal has a character; it goes on past the cut.
                self.nonempty = true;
                self.truncated = true;
                true
            }
            Err(_) => false,
        }
    }
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut i = at.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A cut of the JSON string literal `raw` at or below `target` bytes (at least 1, the
/// opening quote) that splits no escape, no UTF-8 character and no `\uD8xx\uDCxx`
/// pair, and never includes the closing quote.
fn literal_cut(raw: &str, target: usize) -> usize {
    let b = raw.as_bytes();
    let end = b.len().saturating_sub(1).min(target.max(1));
    let mut i = 1;
    let mut last_good = 1;
    while i < end {
        if b[i] == b'\\' {
            let len = if b.get(i + 1) == Some(&b'u') { 6 } else { 2 };
            if i + len > end {
                break;
            }
            let high = len == 6
                && raw
                    .get(i + 2..i + 6)
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
                    .is_some_and(|u| (0xD800..0xDC00).contains(&u));
            i += len;
            if !high {
                last_good = i;
            }
        } else {
            i += 1;
            if raw.is_char_boundary(i) {
                last_good = i;
            }
        }
    }
    last_good
}

/// Why `extractTextContent` throws on a `content` that is neither a string nor an array.
pub(crate) const NEITHER_STRING_NOR_ARRAY: &str = "content is neither a string nor an array";

/// Why `extractTextContent` throws on a content array holding `null`.
pub(crate) const NULL_BLOCK: &str = "a content block is null";

/// The outcome of the reference's `extractTextContent` on a message's `content`.
pub(crate) enum Text {
    /// The extracted text's excerpt (possibly empty).
    Ok(Excerpt),
    /// The reference would throw here (and drop the session from listings).
    Throws(&'static str),
}

/// `extractTextContent`: the string content, or the `text` of `type == "text"` blocks
/// joined with one space, kept to at most `limit` bytes.
pub(crate) fn extract_text(content: &RawValue, limit: usize) -> Text {
    let raw = content.get();
    let mut out = Excerpt::new(limit);
    if raw.starts_with('"') {
        return if out.push_json_str(raw) {
            Text::Ok(out)
        } else {
            Text::Throws("content is not a valid string")
        };
    }
    if !raw.starts_with('[') {
        return Text::Throws(NEITHER_STRING_NOR_ARRAY);
    }
    let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(raw) else {
        return Text::Throws("content is not a valid array");
    };
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(rename = "type", default, borrow, deserialize_with = "present")]
        t: Option<&'a RawValue>,
        #[serde(default, borrow, deserialize_with = "present")]
        text: Option<&'a RawValue>,
    }
    let mut first = true;
    for b in blocks {
        let s = b.get();
        if s == "null" {
            return Text::Throws(NULL_BLOCK);
        }
        if !s.starts_with('{') {
            continue;
        }
        // A block repeating a key (`type` twice) is read as `JSON.parse` reads it: the
        // last value wins.
        let reread;
        let block = match serde_json::from_str::<Block<'_>>(s) {
            Ok(block) => block,
            Err(_) => {
                let Some(text) = crate::state::reread_as_javascript(s) else {
                    continue;
                };
                reread = text;
                let Ok(block) = serde_json::from_str::<Block<'_>>(&reread) else {
                    continue;
                };
                block
            }
        };
        if as_str(block.t).as_deref() != Some("text") {
            continue;
        }
        if !first {
            out.push(" ");
        }
        first = false;
        js_string(block.text, 0, &mut out);
    }
    Text::Ok(out)
}

/// How deep [`js_string`] follows nested arrays; deeper ones join as `""`. (JSON this
/// deep is hostile: serde_json refuses to parse values nested past 128 levels, and
/// the reference's `join` throws a RangeError long before our stack would overflow.)
const MAX_JOIN_DEPTH: usize = 128;

/// Appends `Array.prototype.join`'s view of one element to `out`: `""` for
/// null/undefined, the string itself, JavaScript number text, `true`/`false`,
/// `[object Object]`. `depth` counts the arrays around it.
fn js_string(v: Option<&RawValue>, depth: usize, out: &mut Excerpt) {
    let Some(raw) = v else {
        return;
    };
    let s = raw.get();
    match s.as_bytes().first() {
        None => {}
        Some(b'n') => {}
        Some(b'"') => {
            // A literal the probe accepted; one that does not decode joins as "".
            let _ = out.push_json_str(s);
        }
        Some(b'{') => out.push("[object Object]"),
        Some(b't') => out.push("true"),
        Some(b'f') => out.push("false"),
        Some(b'[') if depth >= MAX_JOIN_DEPTH => {}
        Some(b'[') => {
            // Arrays join their elements with ","; nested values follow the same rules.
            let items: Vec<&RawValue> = serde_json::from_str(s).unwrap_or_default();
            for (k, item) in items.into_iter().enumerate() {
                if k > 0 {
                    out.push(",");
                }
                js_string(Some(item), depth + 1, out);
            }
        }
        Some(_) => match as_number(v) {
            Some(x) if x.is_infinite() => {
                out.push(if x > 0.0 { "Infinity" } else { "-Infinity" });
            }
            Some(x) => out.push(&session_types::json::js_number(x).to_string()),
            None => {}
        },
    }
}

#[cfg(test)]
mod as_str_tests {
    use super::*;

    #[test]
    fn a_literal_reads_as_serde_decodes_it_borrowed_when_it_can_be() {
        for raw in [
            r#""""#,
            r#""abc""#,
            r#""é ü""#,
            r#""a\"b""#,
            r#""\u0041\n""#,
            r#""\\""#,
        ] {
            let v: &RawValue = serde_json::from_str(raw).unwrap();
            let want: String = serde_json::from_str(raw).unwrap();
            let got = as_str(Some(v)).unwrap();
            assert_eq!(got, want, "{raw}");
            assert_eq!(
                matches!(got, Cow::Borrowed(_)),
                !raw.contains('\\'),
                "{raw}"
            );
        }
        for raw in ["5", "null", "true", "[\"a\"]", "{}"] {
            let v: &RawValue = serde_json::from_str(raw).unwrap();
            assert_eq!(as_str(Some(v)), None, "{raw}");
        }
    }
}
