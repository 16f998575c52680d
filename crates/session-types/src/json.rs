//! JSON text helpers: JavaScript number semantics and lone UTF-16 surrogates.
//!
//! The reference implementation is JavaScript: it reads every number as an IEEE
//! double and can write lone surrogates (`"\ud83d"`), which a Rust `String`
//! cannot hold. These helpers make both explicit instead of silently lossy.

use serde_json::{Number, Value};

/// A JSON number with the value JavaScript would print for `x`: integral values
/// in the safe range become integers (`1.0` → `1`, `-0` → `0`); other finite values
/// stay floats. Non-finite values (which JSON cannot hold) become `0`.
pub fn js_number(x: f64) -> Number {
    if x == 0.0 {
        return Number::from(0u64);
    }
    if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_991.0 {
        // In the safe range the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        return Number::from(x as i64);
    }
    if x.fract() == 0.0 && x > 0.0 && x < 1e21 {
        // JavaScript prints integral doubles below 1e21 as their shortest
        // round-trip digits padded with zeros: 12345678901234567000.
        if let Some(n) = js_integer_digits(x).and_then(|d| d.parse::<u64>().ok()) {
            return Number::from(n);
        }
    }
    Number::from_f64(x).unwrap_or_else(|| Number::from(0u64))
}

fn js_integer_digits(x: f64) -> Option<String> {
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e')?;
    let exp: usize = exp.parse().ok()?;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let pad = (exp + 1).checked_sub(digits.len())?;
    Some(digits + &"0".repeat(pad))
}

/// `value` with every number replaced by what JavaScript's `JSON.parse` would hold
/// (see [`js_number`]): large integers rounded to the nearest double, `-0` as `0`.
/// Used to compare our lossless values with the reference's output.
pub fn js_normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) => Value::Number(js_number(n.as_f64().unwrap_or(0.0))),
        Value::Array(items) => Value::Array(items.iter().map(js_normalized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), js_normalized(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A lone UTF-16 surrogate escape found in JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoneSurrogate {
    /// Byte offset of the `\u` escape in the text.
    pub offset: usize,
    /// The surrogate code unit, e.g. `0xD83D`.
    pub unit: u16,
}

/// Finds lone surrogate escapes (`\uD800`–`\uDFFF` not forming a valid pair) in
/// JSON text. Cheap when there are none: it only looks at backslashes.
pub fn find_lone_surrogates(text: &str) -> Vec<LoneSurrogate> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    // Every surrogate escape holds `\u` followed by `d` or `D`. Most texts have none
    // (JSON.stringify writes non-ASCII text raw), and looking for the pair skips the
    // many `\n` and `\"` escapes of message text that stop a search for backslashes.
    if !memchr::memmem::find_iter(b, b"\\u").any(|k| matches!(b.get(k + 2), Some(b'd' | b'D'))) {
        return found;
    }
    let mut i = 0;
    let hex_at = |i: usize| -> Option<u16> {
        let h = b.get(i..i + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    // Only backslashes matter: jump from one to the next (memchr tests many bytes at
    // a time; most payloads hold few escapes).
    while let Some(k) = b.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        i += k;
        // An escape: `\\` must be skipped as a pair so `\\ud83d` is not an escape.
        match b.get(i + 1) {
            Some(b'u') => {
                let Some(unit) = hex_at(i + 2) else {
                    i += 2;
                    continue;
                };
                if (0xD800..0xDC00).contains(&unit) {
                    let pair = (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                        .then(|| hex_at(i + 8))
                        .flatten()
                        .filter(|lo| (0xDC00..0xE000).contains(lo));
                    if pair.is_some() {
                        i += 12;
                        continue;
                    }
                    found.push(LoneSurrogate { offset: i, unit });
                } else if (0xDC00..0xE000).contains(&unit) {
                    found.push(LoneSurrogate { offset: i, unit });
                }
                i += 6;
            }
            Some(_) => i += 2,
            None => i += 1,
        }
    }
    found
}

/// JSON text with every lone surrogate escape replaced by `\ufffd`, and where the
/// replacements were. Returns the text unchanged (borrowed) when there are none.
///
/// Callers that keep the original bytes (the journal keeps every payload verbatim)
/// use this to obtain a typed *view* and must report the replacements.
///
/// ```
/// use session_types::json::replace_lone_surrogates;
/// let (text, found) = replace_lone_surrogates(r#""a\ud83db""#);
/// assert_eq!(text, r#""a\ufffdb""#);
/// assert_eq!(found.len(), 1);
/// ```
pub fn replace_lone_surrogates(text: &str) -> (std::borrow::Cow<'_, str>, Vec<LoneSurrogate>) {
    let found = find_lone_surrogates(text);
    if found.is_empty() {
        return (std::borrow::Cow::Borrowed(text), found);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for s in &found {
        out.push_str(&text[last..s.offset]);
        out.push_str("\\ufffd");
        last = s.offset + 6;
    }
    out.push_str(&text[last..]);
    (std::borrow::Cow::Owned(out), found)
}

/// JSON text with every lone surrogate escape *inside an object key* replaced by
/// `\ufffd` (the same length: every other byte stays where it was), values
/// untouched. Returns the text unchanged (borrowed) when no key holds one.
///
/// A reader whose struct fields are matched by key (a key is decoded to a string to
/// be compared) refuses a key no Rust string holds, though the key is none it reads;
/// this reading lets it read the record, while a value holding a lone surrogate (an
/// id the reference compares exactly, D6) keeps its text.
///
/// ```
/// use session_types::json::replace_lone_surrogates_in_keys;
/// let text = r#"{"id":"\ud800","\ud800x":"\udc00", "a" :{"\uDC00":1}}"#;
/// assert_eq!(
///     replace_lone_surrogates_in_keys(text),
///     r#"{"id":"\ud800","\ufffdx":"\udc00", "a" :{"\ufffd":1}}"#
/// );
/// ```
pub fn replace_lone_surrogates_in_keys(text: &str) -> std::borrow::Cow<'_, str> {
    let found = find_lone_surrogates(text);
    if found.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    // The strings that are keys: followed by `:`. Outside strings a `"` opens one.
    let b = text.as_bytes();
    let mut keys = Vec::new();
    let mut i = 0;
    while let Some(k) = b.get(i..).and_then(|rest| memchr::memchr(b'"', rest)) {
        let start = i + k;
        let end = string_end(b, start + 1);
        let next = b.get(end..).and_then(|rest| {
            rest.iter()
                .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        });
        if next.is_some_and(|n| b[end + n] == b':') {
            keys.push(start..end);
        }
        i = end;
    }
    // Both lists ascend: one pass over the two.
    let mut key = keys.iter().peekable();
    let mut in_key = |offset: usize| {
        while key.next_if(|k| k.end <= offset).is_some() {}
        key.peek().is_some_and(|k| k.contains(&offset))
    };
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for lone in found.iter().filter(|l| in_key(l.offset)) {
        out.push_str(&text[last..lone.offset]);
        out.push_str("\\ufffd");
        last = lone.offset + 6;
    }
    if last == 0 {
        return std::borrow::Cow::Borrowed(text);
    }
    out.push_str(&text[last..]);
    std::borrow::Cow::Owned(out)
}

/// A JSON string literal holding lone surrogates (`"a\uD800"`, which no Rust string
/// holds) as one canonical text: equal for literals that are the same JavaScript
/// string (the same UTF-16 code units), different otherwise. Between the lone
/// surrogates the text is decoded and written back as `serde_json` writes strings;
/// each lone surrogate is written `\udxxx` (lower case). `None` when `literal` is not
/// a JSON string literal or holds no lone surrogate.
///
/// What keys an `id` the reference compares exactly although a typed view reads it
/// with U+FFFD (`docs/context.md`, D6).
///
/// ```
/// use session_types::json::lone_surrogate_key;
/// assert_eq!(lone_surrogate_key(r#""a\uD800\u0062""#).as_deref(), Some(r#""a\ud800b""#));
/// assert_eq!(lone_surrogate_key(r#""\ud83d\ude80""#), None); // a pair: no lone one
/// assert_eq!(lone_surrogate_key(r#""\\ud800""#), None); // an escaped backslash
/// ```
pub fn lone_surrogate_key(literal: &str) -> Option<String> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    let found = find_lone_surrogates(inner);
    if found.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(literal.len());
    out.push('"');
    let mut last = 0;
    let part = |text: &str, out: &mut String| -> Option<()> {
        let s: String = serde_json::from_str(&format!("\"{text}\"")).ok()?;
        let written = serde_json::to_string(&s).ok()?;
        out.push_str(&written[1..written.len() - 1]);
        Some(())
    };
    for lone in &found {
        part(inner.get(last..lone.offset)?, &mut out)?;
        out.push_str(&format!("\\u{:04x}", lone.unit));
        last = lone.offset + 6;
    }
    part(inner.get(last..)?, &mut out)?;
    out.push('"');
    Some(out)
}

/// The deepest nesting of arrays and objects a stored record may have and still be
/// read. `serde_json` stops at 128 levels; node 20's `JSON.parse` has no limit, but
/// its `JSON.stringify` (what prints a session) fails between 2,000 and 5,000 levels
/// ("Maximum call stack size exceeded"), and the reference's answers for a record of
/// 5,000 never came. A record read here is printed, compared and dropped by
/// recursive code on its caller's thread (a 2 MiB runtime or test thread, a debug
/// build's frames near 1 KiB a level): 1,024 levels (the reference's tested 1,000 and
/// their record) fit there; deeper records stay errors ([`crate::Entry::read`]).
pub const MAX_READ_DEPTH: usize = 1024;

/// The stack of the thread that reads a record nested past `serde_json`'s limit:
/// reserved, not committed, and room for [`MAX_READ_DEPTH`] levels of the derived
/// readers in a debug build.
const DEEP_STACK: usize = 256 << 20;

thread_local! {
    /// This thread reads without `serde_json`'s recursion limit ([`read_deep`]).
    static UNLIMITED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `serde_json::from_str` for this crate's readers of stored records: with its
/// recursion limit, except on the thread [`read_deep`] runs them on.
pub(crate) fn from_str<'a, T: serde::Deserialize<'a>>(text: &'a str) -> serde_json::Result<T> {
    if !UNLIMITED.get() {
        return serde_json::from_str(text);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// The start of `serde_json`'s message when input nests past its recursion limit.
const RECURSION_LIMIT: &str = "recursion limit exceeded";

/// `text` read into a [`serde_json::Value`] (the last of repeated keys winning, as
/// `JSON.parse` keeps it) within this thread's depth limit ([`from_str`]): the
/// reading a lenient reader falls back to. When it stops at `serde_json`'s recursion
/// limit that error is returned, so [`read_deep`] reads again without the limit;
/// any other failure is `otherwise` (the caller's error from its stricter reading,
/// which says more).
pub(crate) fn value_or(
    text: &str,
    otherwise: &crate::ParseError,
) -> Result<serde_json::Value, crate::ParseError> {
    from_str(text).map_err(|e| {
        if e.to_string().starts_with(RECURSION_LIMIT) {
            crate::ParseError::from_serde(text, &e)
        } else {
            otherwise.clone()
        }
    })
}

/// `serde_json::from_str` of `text` with each lone surrogate escape read as U+FFFD
/// ([`replace_lone_surrogates`]; no copy when there is none): how a value that is
/// shown, never compared, is read from stored text (a label, a session name, a
/// header's fields), as every typed view reads it.
pub fn from_str_lossy<T: serde::de::DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    serde_json::from_str(&replace_lone_surrogates(text).0)
}

/// JSON text read into a [`serde_json::Value`] as the stored-record readers read it:
/// past `serde_json`'s 128 levels, up to [`MAX_READ_DEPTH`], on a thread of its own
/// (`read_deep`). `None` when it is no JSON or nests deeper. For a reader that must
/// see a record as `JSON.parse` does (the last of repeated keys) however deep it is.
pub fn value_deep(text: &str) -> Option<serde_json::Value> {
    read_deep(text, || {
        from_str::<serde_json::Value>(text).map_err(|e| crate::ParseError::from_serde(text, &e))
    })
    .ok()
}

/// Runs `read` (a reading of `text` through [`from_str`]); when it failed on
/// `serde_json`'s recursion limit and `text` nests no deeper than
/// [`MAX_READ_DEPTH`] ([`depth_past`]), runs it once more without the limit, on a
/// thread whose stack holds that many levels. A record nested deeper is refused
/// with the byte where it crosses the limit.
pub(crate) fn read_deep<T: Send>(
    text: &str,
    read: impl Fn() -> Result<T, crate::ParseError> + Sync,
) -> Result<T, crate::ParseError> {
    let first = read();
    match &first {
        Err(e) if e.message.starts_with(RECURSION_LIMIT) => {
            if let Some(offset) = depth_past(text.as_bytes(), MAX_READ_DEPTH) {
                return Err(crate::ParseError {
                    kind: e.kind,
                    line: 1,
                    column: offset + 1,
                    message: format!(
                        "arrays and objects nest deeper than the {MAX_READ_DEPTH} levels a record may have"
                    ),
                });
            }
            let again = std::thread::scope(|s| {
                std::thread::Builder::new()
                    .name("deep-record".to_owned())
                    .stack_size(DEEP_STACK)
                    .spawn_scoped(s, || {
                        UNLIMITED.set(true);
                        read()
                    })
                    .ok()
                    .and_then(|t| t.join().ok())
            });
            again.unwrap_or(first)
        }
        _ => first,
    }
}

/// The index just past the closing quote of the JSON string whose contents start at
/// `from` (just past its opening quote), escapes included; `b.len()` when the string
/// is not terminated. The contents are crossed from one `"` or `\` to the next
/// (`memchr2`), not byte by byte. The string scanner of the non-recursive passes over
/// JSON text ([`depth_past`], `js::map_numbers`).
pub fn string_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    loop {
        let Some(at) = b
            .get(i..)
            .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
        else {
            return b.len();
        };
        i += at;
        if b[i] == b'"' {
            return i + 1;
        }
        i += 2; // the backslash and the byte it escapes
    }
}

/// The byte offset of the bracket where arrays and objects in JSON text nest past
/// `limit` levels (brackets in strings skipped), or `None` when they never do: one
/// pass, without recursion or allocation, and without validating anything else.
/// What a reader checks before parsing text a recursive parser would go too deep in
/// (the owner's request lines, `session_protocol::check_line`; a stored record read
/// past `serde_json`'s limit).
pub fn depth_past(b: &[u8], limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        i += 1;
        match c {
            b'"' => i = string_end(b, i),
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i - 1);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record nested past serde_json's 128 levels and up to [`MAX_READ_DEPTH`] is
    /// read (on a thread of its own), whole; one level deeper is a located error, as
    /// is every record serde_json refuses for another reason; brackets inside strings
    /// do not count.
    #[test]
    fn records_are_read_as_deep_as_the_reference_reads_them() {
        let record = |levels: usize| {
            // The record and its `data` object are two levels.
            let nested = format!("{}{}", "[".repeat(levels - 2), "]".repeat(levels - 2));
            format!(
                r#"{{"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-21T12:03:30.446Z","customType":"x","data":{{"a":{nested},"s":"[[[[{{{{"}}}}"#
            )
        };
        for levels in [129, 1000, MAX_READ_DEPTH] {
            let text = record(levels);
            assert_eq!(depth_past(text.as_bytes(), levels), None);
            assert!(depth_past(text.as_bytes(), levels - 1).is_some());
            let entry = crate::Entry::read(&text).unwrap_or_else(|e| panic!("{levels}: {e}"));
            let printed = entry.to_json();
            assert!(printed.contains(&"[".repeat(levels - 2)), "{levels}");
            assert!(printed.contains(r#""s":"[[[[{{""#), "{levels}");
            assert_eq!(printed.len(), text.len(), "{levels}");
            assert!(crate::Entry::parse(&text).is_ok(), "{levels}");
        }
        let too_deep = record(MAX_READ_DEPTH + 1);
        let e = crate::Entry::read(&too_deep).expect_err("past the limit");
        assert!(
            e.message.contains("nest deeper than the 1024 levels"),
            "{e}"
        );
        // The bracket that opens level 1,025: the record's `{`, `data`'s `{`, then
        // `"a":` and 1,022 more brackets.
        let crossing = too_deep.find(r#""a":"#).expect("a") + 4 + MAX_READ_DEPTH - 2;
        assert_eq!(e.column, crossing + 1, "{e}");
        assert_eq!(&too_deep[crossing..=crossing], "[");
        assert!(
            crate::Entry::read(&record(1000)[..500]).is_err(),
            "truncated"
        );
    }

    /// A record nested past 128 levels that also repeats a key (read as `JSON.parse`
    /// reads it, the last value winning, through a `Value`) is read whole, by the
    /// entry reader and the envelope reader alike: before, the strict reading's
    /// "duplicate field" ended both, and the import dropped the line.
    #[test]
    fn a_deep_record_repeating_a_key_is_read() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let text = format!(
            r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-21T12:01:30.446Z","message":{{"role":"assistant","content":[{{"type":"text","text":"t","x":{deep}}}],"role":"user","timestamp":1}}}}"#
        );
        let entry = crate::Entry::read(&text).expect("read");
        assert_eq!(
            entry
                .js_property("message")
                .and_then(|m| m.get("role").cloned()),
            Some(serde_json::Value::from("user"))
        );
        let env = crate::Envelope::parse(&text).expect("envelope");
        assert_eq!(env.role(), Some("user"));
        assert_eq!(
            value_deep(&text).and_then(|v| v["message"]["role"].as_str().map(str::to_owned)),
            Some("user".to_owned())
        );
        let custom = format!(
            r#"{{"type":"custom","id":"c1","parentId":null,"timestamp":"2026-01-21T12:01:30.446Z","customType":"a","data":{deep},"customType":"b"}}"#
        );
        let entry = crate::Entry::read(&custom).expect("read");
        assert_eq!(
            entry.js_property("customType"),
            Some(serde_json::Value::from("b"))
        );
    }

    #[test]
    fn js_numbers() {
        assert_eq!(js_number(1.0).to_string(), "1");
        assert_eq!(js_number(-0.0).to_string(), "0");
        assert_eq!(js_number(0.1).to_string(), "0.1");
        assert_eq!(
            js_number(12345678901234567890.0).to_string(),
            "12345678901234567000"
        );
        assert_eq!(js_number(1e300).to_string(), "1e+300");
    }

    #[test]
    fn surrogates() {
        assert!(find_lone_surrogates(r#""\ud83d\ude80""#).is_empty());
        assert_eq!(find_lone_surrogates(r#""\ude80""#).len(), 1);
        assert!(find_lone_surrogates(r#""\\ud83d""#).is_empty());
        assert_eq!(find_lone_surrogates(r#""\ud83d\u0041""#).len(), 1);
        // Upper-case hex, after other escapes and an escaped backslash.
        assert_eq!(find_lone_surrogates(r#""a\nb\\\uDC00\u0041""#).len(), 1);
        assert_eq!(find_lone_surrogates(r#""\u0041\n\uD83D""#).len(), 1);
        assert!(find_lone_surrogates(r#""\\u0064\\uD83D\n""#).is_empty());
        assert_eq!(
            find_lone_surrogates(r#""\ud83d""#)[0],
            LoneSurrogate {
                offset: 1,
                unit: 0xD83D
            }
        );
    }
}
