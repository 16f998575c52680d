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

#[cfg(test)]
mod tests {
    use super::*;

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
