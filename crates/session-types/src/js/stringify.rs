//! JSON text with numbers spelled as `JSON.stringify` spells them.
//!
//! The reference prints its JSON with `JSON.stringify`, where every number is a
//! double written by `Number::toString`: `1.0` → `1`, `-0` → `0`, `1e-6` →
//! `0.000001`, `1e-7` → `1e-7`, `1e21` → `1e+21`, and integers past 2^53 as the double
//! they round to (`12345678901234567890` → `12345678901234567000`). serde_json writes
//! `1.0`, `-0.0`, `1e-6` and exact integers instead. [`JsFormatter`] is serde_json's
//! compact formatter with the number writes replaced, so any `Serialize` value (a
//! `serde_json::Value` read losslessly, or a typed struct) prints as the reference
//! would print it. Strings need nothing: serde_json escapes exactly the characters
//! `JSON.stringify` escapes, in the same spelling.
//!
//! Stored entries are not touched: the journal keeps their bytes as written. This is
//! for output only.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

/// serde_json's compact formatter, with numbers written as JavaScript writes them.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsFormatter;

/// Writes `x` as JavaScript's `Number::toString` does; `null` for `NaN` and the
/// infinities (what `JSON.stringify` writes for them).
pub fn write_number<W: ?Sized + io::Write>(w: &mut W, x: f64) -> io::Result<()> {
    if !x.is_finite() {
        return w.write_all(b"null");
    }
    // An integral double of the safe range (token counts, millisecond timestamps:
    // most numbers of a context) is spelled as its integer's decimal digits, `-0` as
    // `0`: the digits alone, without the shortest-digits search.
    if x.fract() == 0.0 && x.abs() <= MAX_SAFE_INTEGER {
        // In the safe range the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        return write_integer(w, x as i64);
    }
    let mut buf = ryu_js::Buffer::new();
    w.write_all(buf.format_finite(x).as_bytes())
}

/// 2^53 − 1 (`Number.MAX_SAFE_INTEGER`): every integer up to it is a double exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// `n`'s decimal digits, with a `-` when negative.
fn write_integer<W: ?Sized + io::Write>(w: &mut W, n: i64) -> io::Result<()> {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut m = n.unsigned_abs();
    loop {
        at -= 1;
        // A digit: `m % 10` is below 10.
        #[allow(clippy::cast_possible_truncation)]
        let digit = (m % 10) as u8;
        buf[at] = b'0' + digit;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    w.write_all(&buf[at..])
}

/// `x` as JavaScript's `Number::toString` spells it (`null` where not finite).
///
/// ```
/// use session_types::js::stringify::number;
/// assert_eq!(number(1.0), "1");
/// assert_eq!(number(-0.0), "0");
/// assert_eq!(number(1e-7), "1e-7");
/// assert_eq!(number(1e21), "1e+21");
/// assert_eq!(number(12345678901234567890u64 as f64), "12345678901234567000");
/// ```
pub fn number(x: f64) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = write_number(&mut out, x);
    String::from_utf8(out).unwrap_or_default()
}

// Integers are converted to the double JavaScript would hold (round to nearest, ties
// to even, as JSON.parse does for the same digits) before they are spelled.
#[allow(clippy::cast_precision_loss, clippy::cast_lossless)]
impl Formatter for JsFormatter {
    fn write_i8<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i8) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_i16<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i16) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_i32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        write_number(w, v as f64)
    }
    fn write_i128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        write_number(w, v as f64)
    }
    fn write_u8<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u8) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_u16<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u16) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_u32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u32) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        write_number(w, v as f64)
    }
    fn write_u128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        write_number(w, v as f64)
    }
    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        write_number(w, f64::from(v))
    }
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        write_number(w, v)
    }
    fn write_number_str<W: ?Sized + io::Write>(&mut self, w: &mut W, s: &str) -> io::Result<()> {
        // Arbitrary-precision numbers (not enabled here) arrive as text: read them as
        // JavaScript would.
        match s.parse::<f64>() {
            Ok(x) => write_number(w, x),
            Err(_) => w.write_all(s.as_bytes()),
        }
    }
}

/// Writes `value` as compact JSON text with JavaScript's number spelling.
pub fn to_writer<W: io::Write, T: ?Sized + Serialize>(w: W, value: &T) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, JsFormatter);
    value.serialize(&mut ser)
}

/// [`to_writer`]'s bytes, written by the crate's compact serializer, whose string
/// escaper tests sixteen bytes at a time (serde_json's tests one, and strings are
/// most of a context's bytes). A value holding a raw JSON fragment
/// (`serde_json::value::RawValue`) is refused rather than copied.
///
/// ```
/// use session_types::js::stringify::{to_string, write};
/// let v: serde_json::Value = serde_json::from_str(r#"{"a":1.0,"b":"x\"\u0001y","c":[1e21,-0.0]}"#).unwrap();
/// let mut out = Vec::new();
/// write(&mut out, &v).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), to_string(&v).unwrap());
/// ```
pub fn write<W: io::Write, T: ?Sized + Serialize>(w: W, value: &T) -> io::Result<()> {
    crate::compact::to_writer_js(w, value).map_err(io::Error::from)
}

/// `value` as compact JSON text with JavaScript's number spelling: what
/// `JSON.stringify(value)` prints for the value JavaScript would have read.
///
/// ```
/// use session_types::js::stringify::to_string;
/// let v: serde_json::Value = serde_json::from_str(r#"{"a":1.0,"b":-0.0,"c":1000.0,"d":1e-6}"#).unwrap();
/// assert_eq!(to_string(&v).unwrap(), r#"{"a":1,"b":0,"c":1000,"d":0.000001}"#);
/// ```
pub fn to_string<T: ?Sized + Serialize>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    to_writer(&mut out, value)?;
    // serde_json writes UTF-8 only.
    Ok(String::from_utf8(out).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::number;

    /// The integer spelling is ryu-js's (`Number::toString`) for every integral double
    /// of the safe range tried: small ones, powers of two and ten and their
    /// neighbours, the range's ends; and the first doubles past it still go to ryu-js.
    #[test]
    #[allow(clippy::cast_precision_loss)]
    fn integers_are_spelled_as_ryu_js_spells_them() {
        let ryu = |x: f64| ryu_js::Buffer::new().format_finite(x).to_owned();
        let mut xs: Vec<f64> = (-2000i64..2000).map(|n| n as f64).collect();
        for p in 0..64u32 {
            let b = 2f64.powi(i32::try_from(p).expect("small"));
            let t = 10f64.powi(i32::try_from(p % 23).expect("small"));
            xs.extend([
                b - 1.0,
                b,
                b + 1.0,
                t - 1.0,
                t,
                t + 1.0,
                1_767_225_600_000.0 + b,
            ]);
        }
        xs.extend([
            9_007_199_254_740_991.0,
            9_007_199_254_740_992.0,
            1e21,
            1e22,
            -0.0,
        ]);
        for x in xs.into_iter().flat_map(|x| [x, -x]) {
            assert_eq!(number(x), ryu(x), "{x:e}");
        }
    }
}
