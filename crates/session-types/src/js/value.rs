//! How the reference's JavaScript reads JSON values: whitespace, truthiness, dates.
//!
//! The reference (`@mariozechner/pi-coding-agent`) reads its files with
//! `content.trim().split("\n")` and `JSON.parse`, then reads fields by property
//! access, truthiness and `new Date(value)`. A field of another JSON type never makes
//! it refuse a file, so the layers above read odd fields through these functions
//! rather than through the typed model (`docs/context.md`, "Reading entries as the
//! reference does").

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;

/// Whether `c` is whitespace to `String.prototype.trim` (ECMAScript WhiteSpace and
/// LineTerminator): unlike Rust's `char::is_whitespace`, U+FEFF is and U+0085 is not.
pub fn is_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// `String.prototype.trim`.
///
/// ```
/// assert_eq!(session_types::js::trim("\u{feff} {} \u{3000}\n"), "{}");
/// ```
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_whitespace)
}

/// [`trim`] on the start of bytes that need not be valid UTF-8 as a whole.
pub fn trim_start_bytes(mut b: &[u8]) -> &[u8] {
    while let Some(n) = leading_whitespace_len(b) {
        b = &b[n..];
    }
    b
}

/// [`trim`] on the end of bytes that need not be valid UTF-8 as a whole.
pub fn trim_end_bytes(mut b: &[u8]) -> &[u8] {
    'outer: loop {
        // A whitespace character is 1 to 3 bytes long in UTF-8.
        for n in 1..=3.min(b.len()) {
            let tail = &b[b.len() - n..];
            if let Ok(t) = std::str::from_utf8(tail)
                && t.chars().count() == 1
                && t.chars().all(is_whitespace)
            {
                b = &b[..b.len() - n];
                continue 'outer;
            }
        }
        return b;
    }
}

fn leading_whitespace_len(b: &[u8]) -> Option<usize> {
    (1..=3.min(b.len())).find(|&n| {
        std::str::from_utf8(&b[..n])
            .is_ok_and(|t| t.chars().count() == 1 && t.chars().all(is_whitespace))
    })
}

/// Whether a line is blank to the reference (`!line.trim()`).
pub fn is_blank(s: &str) -> bool {
    trim(s).is_empty()
}

/// JavaScript truthiness of a property value (`None` is `undefined`): `undefined`,
/// `null`, `false`, `0`, `-0` and `""` are falsy; every object and array is truthy.
/// (NaN cannot come from JSON.)
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// The raw JSON text of a record's top-level field `key`, read as the reference reads
/// the record's line (`JSON.parse(line.trim())`: JavaScript's trim, the last of a
/// repeated key), for a value a typed reading cannot hold (`1e400`, D11; a string
/// holding a lone surrogate, D6, kept as written). `None` when the line is not a JSON
/// object or has no such field. Where a key holds a lone surrogate (no Rust string
/// holds it), the line is read with every lone surrogate replaced by U+FFFD.
///
/// ```
/// use session_types::js::raw_field;
/// let line = "\u{feff}{\"type\":\"compaction\",\"firstKeptEntryId\":1e400}\u{3000}";
/// assert_eq!(raw_field(line, "firstKeptEntryId").unwrap().get(), "1e400");
/// assert!(raw_field(line, "summary").is_none());
/// assert!(raw_field("[1]", "summary").is_none());
/// let lone = r#"{"id":"\ud800","\udc00":1}"#;
/// assert_eq!(raw_field(lone, "id").unwrap().get(), r#""\ufffd""#);
/// assert_eq!(raw_field(&lone.replace(r"\udc00", "k"), "id").unwrap().get(), r#""\ud800""#);
/// ```
pub fn raw_field(line: &str, key: &str) -> Option<Box<RawValue>> {
    type Fields<'a> = std::collections::HashMap<String, &'a RawValue>;
    let field = |fields: Fields<'_>| fields.get(key).map(|v| (*v).to_owned());
    if let Ok(fields) = serde_json::from_str::<Fields<'_>>(trim(line)) {
        return field(fields);
    }
    let (clean, found) = crate::json::replace_lone_surrogates(line);
    if found.is_empty() {
        return None;
    }
    field(serde_json::from_str(trim(&clean)).ok()?)
}

/// The number a raw JSON value holds, if it is a JSON number, as `JSON.parse` reads
/// it: beyond a double's range (`1e400`, which serde refuses) it is `±Infinity`.
pub fn raw_number(v: &RawValue) -> Option<f64> {
    let first = *v.get().as_bytes().first()?;
    if !(first.is_ascii_digit() || first == b'-') {
        return None;
    }
    // A raw value is valid JSON: a number serde refuses is out of range.
    Some(
        serde_json::from_str::<f64>(v.get()).unwrap_or(if first == b'-' {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
    )
}

/// [`truthy`] of a raw JSON value as the reference holds it after `JSON.parse`
/// (`None` is `undefined`): where the parsed value cannot say it, a number beyond a
/// double's range (`1e400`) is `±Infinity`, truthy, though serde reads it as `null`
/// (D11).
///
/// ```
/// use serde_json::value::RawValue;
/// use session_types::js::raw_truthy;
/// let raw = |t: &str| RawValue::from_string(t.to_owned()).unwrap();
/// assert!(!raw_truthy(Some(&raw("-0"))));
/// assert!(!raw_truthy(None));
/// assert!(raw_truthy(Some(&raw("1e400"))));
/// assert!(raw_truthy(Some(&raw("\"0\""))));
/// assert!(!raw_truthy(Some(&raw("\"\""))));
/// ```
pub fn raw_truthy(v: Option<&RawValue>) -> bool {
    match v.map(RawValue::get) {
        None | Some("null" | "false" | "\"\"") => false,
        Some(s) if s.starts_with('"') => true,
        Some(_) => v.and_then(raw_number).is_none_or(|n| n != 0.0),
    }
}

/// A raw JSON value as a key text, equal for values the reference's `===` and
/// `Map` keys hold equal (for numbers, booleans and `null`): compact, numbers as
/// JavaScript holds them (`1.0` is `1`, `-0` is `0`, digits past 2^53 rounded), a
/// number beyond a double's range `Infinity` or `-Infinity` (`JSON.parse` reads
/// `1e400` so). A string is its JSON text; one holding a lone surrogate is
/// [`crate::json::lone_surrogate_key`]'s text, equal for equal JavaScript strings.
/// `None` for text that is not JSON.
///
/// ```
/// use serde_json::value::RawValue;
/// use session_types::js::raw_key;
/// let raw = |t: &str| RawValue::from_string(t.to_owned()).unwrap();
/// assert_eq!(raw_key(&raw("1e400")).as_deref(), Some("Infinity"));
/// assert_eq!(raw_key(&raw("-1e400")).as_deref(), Some("-Infinity"));
/// assert_eq!(raw_key(&raw("1.0")).as_deref(), Some("1"));
/// assert_eq!(raw_key(&raw("true")).as_deref(), Some("true"));
/// // A lone surrogate, which the reference compares exactly (`docs/context.md`, D6).
/// assert_eq!(raw_key(&raw(r#""\uD800""#)).as_deref(), Some(r#""\ud800""#));
/// ```
pub fn raw_key(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Some(crate::json::js_normalized(&v).to_string()),
        // A string holding a lone surrogate, which no Rust string holds.
        Err(_) if text.starts_with('"') => crate::json::lone_surrogate_key(text),
        // An object or array holding one: keyed by itself wherever it is a key, its
        // text is what it shows, read as every typed view reads it (U+FFFD).
        Err(_) if text.starts_with(['{', '[']) => {
            let v: Value = crate::json::from_str_lossy(text).ok()?;
            Some(crate::json::js_normalized(&v).to_string())
        }
        Err(_) => match text.parse::<f64>() {
            Ok(x) if x == f64::INFINITY => Some("Infinity".to_owned()),
            Ok(x) if x == f64::NEG_INFINITY => Some("-Infinity".to_owned()),
            _ => None,
        },
    }
}

/// `new Date(value).getTime()` for a property value (`None` is `undefined`), in
/// milliseconds; `None` where JavaScript gives NaN.
///
/// - a string: `Date.parse` ([`crate::parse_js_date`]);
/// - a number: TimeClip (NaN beyond ±8.64e15 ms, otherwise truncated to an integer);
/// - `null` → 0, `false` → 0, `true` → 1 (ToNumber);
/// - an array: `Date.parse` of `Array.prototype.join(",")` (`["2025-01-01"]` parses,
///   `[]` is `""`, NaN);
/// - an object: `"[object Object]"`, NaN (an object with its own `toString` or
///   `valueOf` key makes the reference throw instead);
/// - `undefined`: NaN.
///
/// ```
/// use serde_json::json;
/// use session_types::js::date_of;
/// assert_eq!(date_of(Some(&json!(null))), Some(0));
/// assert_eq!(date_of(Some(&json!(true))), Some(1));
/// assert_eq!(date_of(Some(&json!(1.9))), Some(1));
/// assert_eq!(date_of(Some(&json!(["1970-01-01T00:00:01.000Z"]))), Some(1000));
/// assert_eq!(date_of(Some(&json!({}))), None);
/// assert_eq!(date_of(None), None);
/// ```
pub fn date_of(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Null => Some(0),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::Number(n) => time_clip(n.as_f64()?),
        Value::String(s) => super::date::parse(s),
        a @ Value::Array(_) => super::date::parse(&array_to_string(a)),
        Value::Object(_) => None,
    }
}

/// ECMAScript TimeClip: NaN (here `None`) for non-finite values and beyond
/// ±8.64e15 ms, otherwise the value truncated toward zero (`-0` is `0`).
fn time_clip(x: f64) -> Option<i64> {
    if !x.is_finite() || x.abs() > 8.64e15 {
        return None;
    }
    // |x| ≤ 8.64e15 < 2^63: the cast is exact after truncation.
    #[allow(clippy::cast_possible_truncation)]
    Some(x.trunc() as i64)
}

/// `String(value)` of a JSON array: `Array.prototype.join(",")`, where `null` becomes
/// `""`, nested arrays join in place and objects are `"[object Object]"`. Iterative,
/// so a deeply nested array cannot overflow the stack.
fn array_to_string(v: &Value) -> String {
    enum Step<'a> {
        Value(&'a Value),
        Comma,
    }
    let mut out = String::new();
    let mut stack = vec![Step::Value(v)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Comma => out.push(','),
            Step::Value(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Comma);
                    }
                }
            }
            Step::Value(Value::Null) => {}
            Step::Value(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
            Step::Value(Value::Number(n)) => {
                out.push_str(&crate::json::js_number(n.as_f64().unwrap_or(0.0)).to_string());
            }
            Step::Value(Value::String(s)) => out.push_str(s),
            Step::Value(Value::Object(_)) => out.push_str("[object Object]"),
        }
    }
    out
}

/// JSON text in which every number beyond the range of a double (`1e400`, `-1e999`)
/// is replaced by `null`, or the text unchanged (borrowed) when there is none.
///
/// `JSON.parse` reads such a number as `±Infinity`, which `JSON.stringify` writes as
/// `null`; `serde_json` refuses it ("number out of range"). Readers that keep the
/// original bytes use this to obtain a value view: a stored message then prints as
/// the reference prints it. (Where the reference reads the value itself rather than
/// printing it, `Infinity` and `null` can differ: see `docs/context.md`.)
///
/// ```
/// use session_types::js::finite_view;
/// assert_eq!(finite_view(r#"{"a":1e400,"b":"1e400","c":[-1e999,2]}"#), r#"{"a":null,"b":"1e400","c":[null,2]}"#);
/// ```
pub fn finite_view(text: &str) -> Cow<'_, str> {
    map_numbers(text, |x| x.is_infinite().then_some("null"))
}

/// Whether JSON text may hold a number beyond the range of a double (`1e400`), a
/// necessary condition for [`finite_view`] to change it, checked at memory speed
/// (`finite_view` tokenizes every byte): such a number has an exponent of three
/// digits or more, or at least 210 integer digits (with an exponent of at most two
/// digits, below `1.8e308` needs fewer), where a number token may start. Strings
/// are not told apart: a `true` asks [`finite_view`].
///
/// ```
/// use session_types::js::may_hold_infinite_number;
/// assert!(may_hold_infinite_number(br#"{"summary":1e400}"#));
/// assert!(!may_hold_infinite_number(br#"{"text":"the e100 one","n":1e99}"#));
/// ```
pub fn may_hold_infinite_number(text: &[u8]) -> bool {
    // An exponent of three digits or more, after digits (and a point) that follow
    // what may precede a number token (not a letter or a quote: `"2183e475"`, an
    // id, is not one).
    for e in memchr::memchr2_iter(b'e', b'E', text) {
        let start = text[..e]
            .iter()
            .rposition(|b| !(b.is_ascii_digit() || *b == b'.'))
            .map_or(0, |p| p + 1);
        if start == e
            || start.checked_sub(1).is_some_and(|p| {
                !matches!(
                    text[p],
                    b':' | b',' | b'[' | b'-' | b' ' | b'\t' | b'\n' | b'\r'
                )
            })
        {
            continue;
        }
        let mut i = e + 1;
        if matches!(text.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if text
            .get(i..i + 3)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
        {
            return true;
        }
    }
    // A run of `LONG_RUN` digits or more holds a multiple of `LONG_RUN / 2`.
    const LONG_RUN: usize = 210;
    (LONG_RUN / 2..text.len())
        .step_by(LONG_RUN / 2)
        .filter(|&p| text[p].is_ascii_digit())
        .any(|p| {
            // At most `LONG_RUN` each way: a text of digits costs linear time.
            let before = text[..p].iter().rev().take(LONG_RUN);
            let after = text[p..].iter().take(LONG_RUN);
            before.take_while(|b| b.is_ascii_digit()).count()
                + after.take_while(|b| b.is_ascii_digit()).count()
                >= LONG_RUN
        })
}

/// `text` (JSON) with each number token outside strings for which `f` gives a
/// replacement replaced by it; `f` sees the token as a double (a token beyond a
/// double's range as `±Infinity`). The one scanner of number tokens that readers of
/// odd numbers share ([`finite_view`], the index's re-reading of repeated keys).
pub fn map_numbers(text: &str, mut f: impl FnMut(f64) -> Option<&'static str>) -> Cow<'_, str> {
    let b = text.as_bytes();
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = crate::json::string_end(b, i + 1),
            c if c == b'-' || c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                if let Some(r) = text[start..i].parse::<f64>().ok().and_then(&mut f) {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                    o.push_str(&text[last..start]);
                    o.push_str(r);
                    last = i;
                }
            }
            _ => i += 1,
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[last..]);
            Cow::Owned(o)
        }
    }
}

/// `Number(value)` for a property value (`None` is `undefined`): what a relational
/// comparison such as `version < 3` compares. NaN where JavaScript gives NaN.
///
/// - `undefined` → NaN, `null` → 0, `false` → 0, `true` → 1, a number → itself;
/// - a string: `StringToNumber` ([`string_to_number`]);
/// - an array: `StringToNumber` of `Array.prototype.join(",")` (`[2]` is 2, `[]` 0,
///   `[1,2]` NaN);
/// - an object: `"[object Object]"`, NaN.
///
/// ```
/// use serde_json::json;
/// use session_types::js::to_number;
/// assert_eq!(to_number(Some(&json!("3"))), 3.0);
/// assert_eq!(to_number(Some(&json!([2]))), 2.0);
/// assert_eq!(to_number(Some(&json!(true))), 1.0);
/// assert!(to_number(Some(&json!("v2"))).is_nan());
/// assert!(to_number(None).is_nan());
/// ```
pub fn to_number(v: Option<&Value>) -> f64 {
    match v {
        None | Some(Value::Object(_)) => f64::NAN,
        Some(Value::Null) => 0.0,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(Value::String(s)) => string_to_number(s),
        Some(a @ Value::Array(_)) => string_to_number(&array_to_string(a)),
    }
}

/// ECMAScript `StringToNumber`: surrounding whitespace ignored ([`trim`]), the empty
/// string is 0, `0x`/`0o`/`0b` integers, `Infinity` with an optional sign, decimal
/// literals with an optional sign, fraction and exponent (`1.`, `.5`, `1e3`); anything
/// else (`1_000`, `inf`, `3px`) is NaN.
///
/// ```
/// use session_types::js::string_to_number;
/// assert_eq!(string_to_number(" 2.5\n"), 2.5);
/// assert_eq!(string_to_number(""), 0.0);
/// assert_eq!(string_to_number("0x1F"), 31.0);
/// assert_eq!(string_to_number("-Infinity"), f64::NEG_INFINITY);
/// assert!(string_to_number("inf").is_nan());
/// assert!(string_to_number("-0x1").is_nan());
/// ```
pub fn string_to_number(s: &str) -> f64 {
    let t = trim(s);
    if t.is_empty() {
        return 0.0;
    }
    let b = t.as_bytes();
    if b.len() > 2 && b[0] == b'0' {
        let radix = match b[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            let mut x = 0.0f64;
            for c in t[2..].chars() {
                match c.to_digit(radix) {
                    Some(d) => x = x * f64::from(radix) + f64::from(d),
                    None => return f64::NAN,
                }
            }
            return x;
        }
    }
    let (sign, rest) = match b[0] {
        b'-' => (-1.0, &t[1..]),
        b'+' => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    if rest == "Infinity" {
        return sign * f64::INFINITY;
    }
    if !is_decimal_literal(rest.as_bytes()) {
        return f64::NAN;
    }
    rest.parse::<f64>().map_or(f64::NAN, |x| sign * x)
}

/// `StrUnsignedDecimalLiteral` without `Infinity`: digits, an optional fraction (at
/// least one digit before or after the point) and an optional exponent.
fn is_decimal_literal(b: &[u8]) -> bool {
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int = digits(0);
    let mut i = int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        frac = digits(i + 1);
        i += 1 + frac;
    }
    if int + frac == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = digits(i);
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whitespace_is_javascripts() {
        for c in [
            '\u{feff}', '\u{a0}', '\u{3000}', '\u{2028}', '\u{2029}', '\u{b}',
        ] {
            assert!(is_whitespace(c), "{c:?}");
        }
        assert!(!is_whitespace('\u{85}'));
        assert!(!is_whitespace('\u{200b}'));
        assert!(is_blank("\u{a0}\u{3000} \t"));
    }

    #[test]
    fn trimming_bytes() {
        let b = "\u{feff} {\"a\":\"\u{a0}\"}\u{3000}\u{2028}\n".as_bytes();
        assert_eq!(
            trim_end_bytes(trim_start_bytes(b)),
            "{\"a\":\"\u{a0}\"}".as_bytes()
        );
        assert_eq!(trim_end_bytes(b"{\xff}\xe3\x80"), b"{\xff}\xe3\x80");
        assert_eq!(trim_start_bytes(b""), b"");
    }

    #[test]
    fn truthiness() {
        for v in [json!(null), json!(false), json!(0), json!(-0.0), json!("")] {
            assert!(!truthy(Some(&v)), "{v}");
        }
        for v in [json!(true), json!(7), json!("0"), json!([]), json!({})] {
            assert!(truthy(Some(&v)), "{v}");
        }
        assert!(!truthy(None));
    }

    #[test]
    fn dates_of_every_json_type() {
        assert_eq!(date_of(Some(&json!(false))), Some(0));
        assert_eq!(date_of(Some(&json!(-1.5))), Some(-1));
        assert_eq!(date_of(Some(&json!(8.64e15))), Some(8_640_000_000_000_000));
        assert_eq!(date_of(Some(&json!(8.64e15 + 1.0))), None);
        assert_eq!(date_of(Some(&json!([]))), None);
        assert_eq!(date_of(Some(&json!([[null]]))), None);
        assert_eq!(
            date_of(Some(&json!("2025-01-01T00:00:00.000Z"))),
            Some(1_735_689_600_000)
        );
        assert_eq!(
            array_to_string(&json!([1, [2, [null, "a"]], {}, true])),
            "1,2,,a,[object Object],true"
        );
    }

    #[test]
    fn deep_arrays_do_not_recurse() {
        let mut v = json!([]);
        for _ in 0..100_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(array_to_string(&v), "");
        // Dropping a deep Value recurses inside serde_json: unwind it by hand.
        let mut cur = v;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn finite_view_leaves_strings_and_small_numbers() {
        assert!(matches!(
            finite_view(r#"{"a":"\"1e400","b":1e308}"#),
            Cow::Borrowed(_)
        ));
        assert_eq!(finite_view("[1E+400]"), "[null]");
    }

    /// Every number [`finite_view`] replaces is one [`may_hold_infinite_number`] says
    /// may be there: exponents of every length, long mantissas with short exponents,
    /// at every offset of the long-run sampling.
    #[test]
    fn the_cheap_check_misses_no_infinite_number() {
        let mut numbers: Vec<String> = [
            "1e400",
            "-1e999",
            "1E+309",
            "1.8e308",
            "1.7976931348623159e308",
            "10e308",
            "100e307",
            "1e0400",
            "0.5e310",
            "1e308",
            "9e99",
            "1e-400",
            "1.5",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        for digits in [208, 209, 210, 250, 308, 309, 400] {
            numbers.push(format!("1{}", "0".repeat(digits)));
            numbers.push(format!("1{}e99", "0".repeat(digits)));
            numbers.push(format!("-9{}.5e9", "9".repeat(digits)));
        }
        let mut infinite = 0;
        for n in &numbers {
            for pad in 0..110 {
                let text = format!(r#"{{"a":"{}","n":{n}}}"#, "x".repeat(pad));
                if matches!(finite_view(&text), Cow::Owned(_)) {
                    infinite += 1;
                    assert!(may_hold_infinite_number(text.as_bytes()), "{n} at {pad}");
                }
            }
        }
        assert!(infinite > 1000, "{infinite}");
        assert!(!may_hold_infinite_number(
            br#"{"n":1e99,"m":12345,"t":"e400"}"#
        ));
    }

    /// Untrusted text of any shape is checked in linear time: 2 MiB of digits, of
    /// points and digits, and of `1e` pairs (a guard: a rescan from each `e` or each
    /// sampled digit would not end).
    #[test]
    fn the_cheap_check_is_linear_on_hostile_text() {
        let n = 2 << 20;
        assert!(may_hold_infinite_number(&vec![b'7'; n]));
        let points: Vec<u8> = (0..n)
            .map(|i| if i % 2 == 0 { b'.' } else { b'1' })
            .collect();
        assert!(!may_hold_infinite_number(&points));
        let mut pairs = b":".to_vec();
        pairs.extend((0..n / 2).flat_map(|_| *b"1e"));
        assert!(!may_hold_infinite_number(&pairs));
        pairs.extend(b",1e400");
        assert!(may_hold_infinite_number(&pairs));
    }

    /// A raw value's truthiness is the parsed value's wherever serde can hold it, and
    /// `Infinity`'s (truthy) where it cannot.
    #[test]
    fn raw_truthiness_is_the_parsed_values() {
        for text in [
            "null",
            "false",
            "true",
            "0",
            "-0",
            "0.0",
            "-0e5",
            "1",
            "-1",
            "0.5",
            "1e-400",
            "\"\"",
            "\"0\"",
            "\"false\"",
            "\" \"",
            "[]",
            "[0]",
            "{}",
            "{\"a\":0}",
        ] {
            let raw = RawValue::from_string(text.to_owned()).expect("json");
            let parsed: Value = serde_json::from_str(text).expect("json");
            assert_eq!(raw_truthy(Some(&raw)), truthy(Some(&parsed)), "{text}");
        }
        for text in ["1e400", "-1e400", "[1e400]"] {
            let raw = RawValue::from_string(text.to_owned()).expect("json");
            assert!(raw_truthy(Some(&raw)), "{text}");
        }
        assert!(!raw_truthy(None));
    }

    #[test]
    fn numbers_of_strings_and_values() {
        // Expected values: node 20, `Number(s)`.
        for (s, x) in [
            (" 2.5\n", 2.5),
            ("", 0.0),
            ("0x1F", 31.0),
            ("1.", 1.0),
            ("1.e5", 100_000.0),
            (".5", 0.5),
            ("+.5e-3", 0.0005),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("\u{a0}3\u{3000}", 3.0),
            ("Infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("00012", 12.0),
        ] {
            assert_eq!(string_to_number(s), x, "{s:?}");
        }
        for s in [
            "inf", "infinity", "-0x1", "1e", "1_000", "3px", ".", "+", "e5", "v2",
        ] {
            assert!(string_to_number(s).is_nan(), "{s:?}");
        }
        assert!(string_to_number("-0").is_sign_negative());
        assert_eq!(to_number(Some(&json!(null))), 0.0);
        assert_eq!(to_number(Some(&json!(false))), 0.0);
        assert_eq!(to_number(Some(&json!([]))), 0.0);
        assert_eq!(to_number(Some(&json!([[" 2 "]]))), 2.0);
        assert!(to_number(Some(&json!([1, 2]))).is_nan());
        assert!(to_number(Some(&json!({}))).is_nan());
    }
}
