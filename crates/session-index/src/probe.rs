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
    let v = v?;
    if !v.get().starts_with('"') {
        return None;
    }
    serde_json::from_str::<Cow<'_, str>>(v.get()).ok()
}

/// The number a raw value holds, if it is a JSON number.
pub(crate) fn as_number(v: Option<&RawValue>) -> Option<f64> {
    let v = v?;
    let first = v.get().as_bytes().first()?;
    if !(first.is_ascii_digit() || *first == b'-') {
        return None;
    }
    serde_json::from_str::<f64>(v.get()).ok()
}

/// Whether a raw value is JavaScript-falsy (`null`, `false`, `0`, `""`; absent too).
pub(crate) fn is_falsy(v: Option<&RawValue>) -> bool {
    match v.map(RawValue::get) {
        None | Some("null") | Some("false") | Some("\"\"") => true,
        Some(s) => as_number(v).is_some_and(|n| n == 0.0) && !s.starts_with('"'),
    }
}

/// JavaScript's `String.prototype.trim` (its whitespace set differs from Rust's:
/// U+FEFF is whitespace, U+0085 is not).
pub(crate) fn js_trim(s: &str) -> &str {
    fn ws(c: char) -> bool {
        matches!(
            c,
            '\u{9}'
                | '\u{a}'
                | '\u{b}'
                | '\u{c}'
                | '\u{d}'
                | ' '
                | '\u{a0}'
                | '\u{1680}'
                | '\u{2000}'
                ..='\u{200a}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202f}'
                    | '\u{205f}'
                    | '\u{3000}'
                    | '\u{feff}'
        )
    }
    s.trim_matches(ws)
}

/// The outcome of the reference's `extractTextContent` on a message's `content`.
pub(crate) enum Text {
    /// The extracted text (possibly empty).
    Ok(String),
    /// The reference would throw here (and drop the session from listings).
    Throws(&'static str),
}

/// `extractTextContent`: the string content, or the `text` of `type == "text"` blocks
/// joined with one space.
pub(crate) fn extract_text(content: &RawValue) -> Text {
    let raw = content.get();
    if raw.starts_with('"') {
        return match serde_json::from_str::<String>(raw) {
            Ok(s) => Text::Ok(s),
            Err(_) => Text::Throws("content is not a valid string"),
        };
    }
    if !raw.starts_with('[') {
        return Text::Throws("content is neither a string nor an array");
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
    let mut parts: Vec<String> = Vec::new();
    for b in blocks {
        let s = b.get();
        if s == "null" {
            return Text::Throws("a content block is null");
        }
        if !s.starts_with('{') {
            continue;
        }
        let Ok(block) = serde_json::from_str::<Block<'_>>(s) else {
            continue;
        };
        if as_str(block.t).as_deref() != Some("text") {
            continue;
        }
        parts.push(js_string(block.text, 0));
    }
    Text::Ok(parts.join(" "))
}

/// How deep [`js_string`] follows nested arrays; deeper ones join as `""`. (JSON this
/// deep is hostile: serde_json refuses to parse values nested past 128 levels, and
/// the reference's `join` throws a RangeError long before our stack would overflow.)
const MAX_JOIN_DEPTH: usize = 128;

/// `Array.prototype.join`'s view of one element: `""` for null/undefined, the string
/// itself, JavaScript number text, `true`/`false`, `[object Object]`. `depth` counts
/// the arrays around it.
fn js_string(v: Option<&RawValue>, depth: usize) -> String {
    let Some(raw) = v else {
        return String::new();
    };
    let s = raw.get();
    match s.as_bytes().first() {
        None => String::new(),
        Some(b'n') => String::new(),
        Some(b'"') => as_str(v).map(Cow::into_owned).unwrap_or_default(),
        Some(b'{') => "[object Object]".to_owned(),
        Some(b't') => "true".to_owned(),
        Some(b'f') => "false".to_owned(),
        Some(b'[') if depth >= MAX_JOIN_DEPTH => String::new(),
        Some(b'[') => {
            // Arrays join their elements with ","; nested values follow the same rules.
            let items: Vec<&RawValue> = serde_json::from_str(s).unwrap_or_default();
            items
                .into_iter()
                .map(|i| js_string(Some(i), depth + 1))
                .collect::<Vec<_>>()
                .join(",")
        }
        Some(_) => as_number(v)
            .map(|x| session_types::json::js_number(x).to_string())
            .unwrap_or_default(),
    }
}
