//! Compact JSON text, byte for byte what `serde_json::to_writer` writes, with a faster
//! string escaper.
//!
//! Entries are serialized on every append, and most of their bytes are string
//! contents (message text, tool output, code). `serde_json` escapes strings one byte
//! at a time through a lookup table and writes each run between escapes with its
//! own call; this serializer tests sixteen bytes at a time (two 64-bit words, each
//! byte's answer in its high bit) for the three things JSON must escape (`"`, `\`
//! and the controls below `0x20`), gathering the escaped text in fixed-size copies
//! on the stack ([`write_escaped`]). Everything else is serde_json's own output:
//! numbers are written by serde_json itself, and structure (`{`, `:`, `,`, `[`) is
//! the compact formatter's, which has no choices to make. The unit tests compare
//! the output with serde_json's over every character and the shapes serde derives.

use std::io;

use serde::ser::{self, Error as _, Impossible, Serialize};

/// What goes wrong: the writer's errors, and what JSON cannot hold (a key that is no
/// string, a raw JSON value).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The writer failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// serde_json refused a number (it never does for the types of this crate).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A value or key JSON text cannot hold, or a type's own `Serialize` error.
    #[error("{0}")]
    Custom(String),
}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error::Custom(msg.to_string())
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(e) => e,
            other => io::Error::other(other),
        }
    }
}

type Result<T = ()> = std::result::Result<T, Error>;

/// Writes `value` as compact JSON to `w`: the bytes `serde_json::to_writer(w, value)`
/// writes.
pub(crate) fn to_writer<W: io::Write, T: Serialize + ?Sized>(w: W, value: &T) -> Result {
    value.serialize(&mut Compact { w, js: false })
}

/// [`to_writer`] with every number spelled as JavaScript's `JSON.stringify` spells it
/// (`js::stringify::write_number`): the bytes `serde_json` writes with
/// `js::stringify::JsFormatter`, the strings escaped by [`write_escaped`].
pub(crate) fn to_writer_js<W: io::Write, T: Serialize + ?Sized>(w: W, value: &T) -> Result {
    value.serialize(&mut Compact { w, js: true })
}

/// `value` as compact JSON text: what `serde_json::to_string(value)` returns.
#[cfg(test)]
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    let mut out = Vec::with_capacity(128);
    to_writer(&mut out, value)?;
    String::from_utf8(out).map_err(Error::custom)
}

/// Whether `value` serializes to exactly `text` ([`to_string`]`(value) == text`),
/// found without building the text: the output is compared with `text` as it is
/// written, and writing stops at the first byte that differs.
pub(crate) fn serializes_to<T: Serialize + ?Sized>(value: &T, text: &str) -> bool {
    let mut rest = Matching(text.as_bytes());
    to_writer(&mut rest, value).is_ok() && rest.0.is_empty()
}

/// A writer that accepts only the bytes of its text, in order (what remains of it).
struct Matching<'t>(&'t [u8]);

impl io::Write for Matching<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.0.strip_prefix(buf) {
            Some(rest) => {
                self.0 = rest;
                Ok(())
            }
            None => Err(io::Error::other("differs from the text")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The struct name serde_json gives a `RawValue` (written verbatim by serde_json).
/// No type of this crate holds one; this serializer refuses it rather than quote it.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

struct Compact<W> {
    w: W,
    /// Numbers spelled as JavaScript spells them (else as serde_json does).
    js: bool,
}

impl<W: io::Write> Compact<W> {
    #[inline]
    fn raw(&mut self, bytes: &[u8]) -> Result {
        self.w.write_all(bytes).map_err(Error::Io)
    }

    /// A number, written by serde_json itself (its integer and float spelling), or
    /// as JavaScript writes the double `js` is (what `JsFormatter` writes).
    #[inline]
    fn number<T: Serialize>(&mut self, n: T, js: f64) -> Result {
        if self.js {
            return crate::js::stringify::write_number(&mut self.w, js).map_err(Error::Io);
        }
        Ok(serde_json::to_writer(&mut self.w, &n)?)
    }

    #[inline]
    fn string(&mut self, s: &str) -> Result {
        write_escaped(&mut self.w, s).map_err(Error::Io)
    }

    fn compound(&mut self, open: &'static [u8], close: &'static [u8]) -> Result<Compound<'_, W>> {
        self.raw(open)?;
        Ok(Compound {
            ser: self,
            first: true,
            close,
        })
    }

    /// `{"variant":` before a variant's content.
    fn variant_key(&mut self, variant: &str) -> Result {
        self.raw(b"{")?;
        self.string(variant)?;
        self.raw(b":")
    }
}

/// Whether JSON text must escape the byte (inside a string).
#[inline(always)]
fn must_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The escape serde_json writes for a byte [`must_escape`] holds, padded to six
/// bytes, and its length.
const fn escape_of(b: u8) -> ([u8; 6], usize) {
    const fn two(c: u8) -> ([u8; 6], usize) {
        ([b'\\', c, 0, 0, 0, 0], 2)
    }
    match b {
        b'"' => two(b'"'),
        b'\\' => two(b'\\'),
        0x08 => two(b'b'),
        0x09 => two(b't'),
        0x0a => two(b'n'),
        0x0c => two(b'f'),
        0x0d => two(b'r'),
        _ => (
            [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ],
            6,
        ),
    }
}

/// [`escape_of`] every byte up to `\` (0x5c, the largest [`must_escape`] holds),
/// padded to eight bytes, the last one its length (other bytes' rows are unused): an
/// escape is a table row copied whole, with no branch on its kind (a `match` there
/// is a jump the text's mix of newlines and quotes keeps mispredicting).
const ESCAPES: [[u8; 8]; 0x5d] = {
    let mut table = [[0u8; 8]; 0x5d];
    let mut b = 0;
    while b < table.len() {
        let (e, len) = escape_of(b as u8);
        table[b] = [e[0], e[1], e[2], e[3], e[4], e[5], 0, len as u8];
        b += 1;
    }
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// `b` in every byte of a word.
const fn splat(b: u8) -> u64 {
    ONES * b as u64
}

/// The high bit set of the lowest byte of the little-endian word `x` that must be
/// escaped, and of none below it; zero exactly when no byte must be escaped. Bytes
/// above the lowest may be marked too, so only the lowest mark is an answer.
///
/// Three zero-byte tests, each exact up to its first true byte: `b - 0x20` borrows
/// exactly when `b < 0x20` (the `& !x` drops the bytes of `0x80` and above), and
/// `b ^ '"'` (`b ^ '\\'`) is zero exactly on the character, where `- 1` borrows. A
/// borrow into the next byte starts only at a marked byte, so below the lowest mark
/// of the three every byte reads true.
#[inline(always)]
fn first_escape(x: u64) -> u64 {
    let control = x.wrapping_sub(splat(0x20)) & !x;
    let q = x ^ splat(b'"');
    let s = x ^ splat(b'\\');
    (control | (q.wrapping_sub(ONES) & !q) | (s.wrapping_sub(ONES) & !s)) & HIGH
}

/// The little-endian word at `b[at..at + 8]` (zero past the end: never, where used).
#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Whether any byte of `b`, shorter than 16 bytes, must be escaped: read as two
/// overlapping words (halves, or three single bytes for the shortest) straight from
/// the text, the missing bytes of a half filled with `a`.
#[inline(always)]
fn short_needs_escape(b: &[u8]) -> bool {
    let n = b.len();
    let (x, y) = if n >= 8 {
        (word(b, 0), word(b, n - 8))
    } else if n >= 4 {
        let half = |at: usize| {
            b.get(at..at + 4)
                .and_then(|h| <[u8; 4]>::try_from(h).ok())
                .map_or(0, |h| u64::from(u32::from_le_bytes(h)))
                | (splat(b'a') << 32)
        };
        (half(0), half(n - 4))
    } else if let (Some(&first), Some(&last)) = (b.first(), b.last()) {
        let mid = b.get(n / 2).copied().unwrap_or(first);
        let x = u64::from(first) | (u64::from(mid) << 8) | (u64::from(last) << 16);
        let x = x | (splat(b'a') << 24);
        (x, x)
    } else {
        return false;
    };
    first_escape(x) | first_escape(y) != 0
}

/// Writes the escape of `b` (a byte [`must_escape`] holds) at `out[o..]`, which has
/// room for eight bytes; returns its length (2 or 6).
#[inline(always)]
fn put_escape(out: &mut [u8; GATHER], o: usize, b: u8) -> usize {
    let row = ESCAPES.get(usize::from(b)).unwrap_or(&ESCAPES[0]);
    out[o..o + 8].copy_from_slice(row);
    usize::from(row[7])
}

/// How much escaped text is gathered before it is written.
const GATHER: usize = 512;

/// `s` as a JSON string, quotes included, escaped as serde_json escapes: `"`, `\`,
/// and the controls below `0x20` (`\b \t \n \f \r`, the rest `\u00XX` in lower-case
/// hex); everything else (DEL, every non-ASCII character) verbatim.
///
/// The text is gathered in a buffer on the stack and written in pieces of a few
/// hundred bytes. Each step copies a whole 16-byte block into it (a fixed-size copy),
/// tests the block two words at a time, and keeps the copy up to its first escape
/// (all of it when there is none); the escape follows (a row of [`ESCAPES`]) and the
/// next block starts after it. So an escape costs one step, not a copy call for the
/// run before it.
pub(crate) fn write_escaped<W: io::Write>(w: &mut W, s: &str) -> io::Result<()> {
    let bytes = s.as_bytes();
    if bytes.len() < 16 && !short_needs_escape(bytes) {
        // Keys and short values, most of an entry's strings: one write.
        let mut quoted = [b'"'; 17];
        quoted[1..=bytes.len()].copy_from_slice(bytes);
        return w.write_all(&quoted[..bytes.len() + 2]);
    }
    let mut out = [0u8; GATHER];
    out[0] = b'"';
    let mut o = 1;
    let mut pos = 0;
    while let Some(block) = bytes.get(pos..pos + 16) {
        // Room for the block's copy and an escape's row after at most 15 of its bytes.
        if o > GATHER - 24 {
            w.write_all(&out[..o])?;
            o = 0;
        }
        out[o..o + 16].copy_from_slice(block);
        let a = first_escape(word(block, 0));
        let b = first_escape(word(block, 8));
        let run = if a != 0 {
            a.trailing_zeros() as usize / 8
        } else if b != 0 {
            8 + b.trailing_zeros() as usize / 8
        } else {
            16
        };
        o += run;
        pos += run;
        if run < 16 {
            o += put_escape(&mut out, o, bytes[pos]);
            pos += 1;
        }
    }
    for &b in &bytes[pos..] {
        if o > GATHER - 9 {
            w.write_all(&out[..o])?;
            o = 0;
        }
        if must_escape(b) {
            o += put_escape(&mut out, o, b);
        } else {
            out[o] = b;
            o += 1;
        }
    }
    if o == GATHER {
        w.write_all(&out)?;
        o = 0;
    }
    out[o] = b'"';
    w.write_all(&out[..=o])
}

impl<'a, W: io::Write> ser::Serializer for &'a mut Compact<W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, W>;
    type SerializeTuple = Compound<'a, W>;
    type SerializeTupleStruct = Compound<'a, W>;
    type SerializeTupleVariant = Compound<'a, W>;
    type SerializeMap = Compound<'a, W>;
    type SerializeStruct = Compound<'a, W>;
    type SerializeStructVariant = Compound<'a, W>;

    fn serialize_bool(self, v: bool) -> Result {
        self.raw(if v { b"true" } else { b"false" })
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result {
        self.number(v, v as f64)
    }
    fn serialize_i128(self, v: i128) -> Result {
        self.number(v, v as f64)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result {
        self.number(v, v as f64)
    }
    fn serialize_u128(self, v: u128) -> Result {
        self.number(v, v as f64)
    }
    fn serialize_f32(self, v: f32) -> Result {
        self.number(v, f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result {
        self.number(v, v)
    }
    fn serialize_char(self, v: char) -> Result {
        self.string(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> Result {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        // serde_json writes bytes as an array of numbers.
        let mut seq = self.compound(b"[", b"]")?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result {
        self.raw(b"null")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.raw(b"null")
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.raw(b"null")
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> Result {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.variant_key(variant)?;
        value.serialize(&mut *self)?;
        self.raw(b"}")
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        self.compound(b"[", b"]")
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        self.compound(b"[", b"]")
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.compound(b"[", b"]")
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        self.variant_key(variant)?;
        self.compound(b"[", b"]}")
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        self.compound(b"{", b"}")
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        if name == RAW_VALUE_TOKEN {
            return Err(Error::custom("raw JSON values are not supported here"));
        }
        self.compound(b"{", b"}")
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        self.variant_key(variant)?;
        self.compound(b"{", b"}}")
    }
}

/// An array or object being written: commas between members, `close` at the end.
pub(crate) struct Compound<'a, W> {
    ser: &'a mut Compact<W>,
    first: bool,
    close: &'static [u8],
}

impl<W: io::Write> Compound<'_, W> {
    #[inline]
    fn comma(&mut self) -> Result {
        if self.first {
            self.first = false;
            Ok(())
        } else {
            self.ser.raw(b",")
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.comma()?;
        value.serialize(&mut *self.ser)
    }

    fn key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.comma()?;
        key.serialize(KeySerializer {
            ser: &mut *self.ser,
        })
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.ser.raw(b":")?;
        value.serialize(&mut *self.ser)
    }

    fn close(self) -> Result {
        self.ser.raw(self.close)
    }
}

impl<W: io::Write> ser::SerializeSeq for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl<W: io::Write> ser::SerializeTuple for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl<W: io::Write> ser::SerializeTupleStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl<W: io::Write> ser::SerializeTupleVariant for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.element(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl<W: io::Write> ser::SerializeMap for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result {
        self.key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result {
        self.value(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl<W: io::Write> ser::SerializeStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        self.comma()?;
        self.ser.string(key)?;
        self.value(value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

impl<W: io::Write> ser::SerializeStructVariant for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result {
        self.close()
    }
}

/// An object's key, as serde_json writes keys: strings; integers, booleans and finite
/// floats quoted; anything else refused.
struct KeySerializer<'a, W> {
    ser: &'a mut Compact<W>,
}

impl<W: io::Write> KeySerializer<'_, W> {
    fn quoted<T: Serialize>(self, n: T, js: f64) -> Result {
        self.ser.raw(b"\"")?;
        self.ser.number(n, js)?;
        self.ser.raw(b"\"")
    }
}

fn key_must_be_a_string() -> Error {
    Error::custom("key must be a string")
}

impl<W: io::Write> ser::Serializer for KeySerializer<'_, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result {
        self.ser.string(v)
    }
    fn serialize_char(self, v: char) -> Result {
        self.ser.string(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> Result {
        self.ser.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result {
        value.serialize(self)
    }
    fn serialize_bool(self, v: bool) -> Result {
        self.ser.raw(if v { b"\"true\"" } else { b"\"false\"" })
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.quoted(v, f64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.quoted(v, f64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.quoted(v, f64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result {
        self.quoted(v, v as f64)
    }
    fn serialize_i128(self, v: i128) -> Result {
        self.quoted(v, v as f64)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.quoted(v, f64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.quoted(v, f64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.quoted(v, f64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result {
        self.quoted(v, v as f64)
    }
    fn serialize_u128(self, v: u128) -> Result {
        self.quoted(v, v as f64)
    }
    fn serialize_f32(self, v: f32) -> Result {
        if !v.is_finite() {
            return Err(Error::custom(
                "float key must be finite (got NaN or +/-inf)",
            ));
        }
        self.quoted(v, f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result {
        if !v.is_finite() {
            return Err(Error::custom(
                "float key must be finite (got NaN or +/-inf)",
            ));
        }
        self.quoted(v, v)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_unit(self) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::{Value, json};

    use super::{
        first_escape, must_escape, serializes_to, short_needs_escape, to_string, to_writer,
    };

    /// Ours and serde_json's bytes for `value`, which must be equal.
    fn same<T: Serialize + ?Sized>(value: &T) {
        let theirs = serde_json::to_string(value).expect("serde_json writes it");
        let ours = to_string(value).expect("we write it");
        assert_eq!(ours, theirs);
    }

    /// The word test's lowest mark is the byte test's first escape, for every byte
    /// value at every position of a word, beside neighbours at every edge of the
    /// three tests (a borrow between bytes would show here), and the word reads zero
    /// exactly when no byte is an escape.
    #[test]
    fn the_word_test_marks_the_first_escape_of_every_word() {
        let edges = [
            0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80, 0xa0, 0xa2,
            0xdc, 0xff,
        ];
        for b in 0..=255u8 {
            for fill in edges {
                for pos in 0..8 {
                    for second in [None, Some(0x00), Some(0x22), Some(0x5c), Some(0x1f)] {
                        let mut word = [fill; 8];
                        word[pos] = b;
                        if let Some(c) = second {
                            word[(pos + 3) % 8] = c;
                        }
                        let first = word.iter().position(|&x| must_escape(x));
                        let marks = first_escape(u64::from_le_bytes(word));
                        let lowest = (marks != 0).then(|| marks.trailing_zeros() as usize / 8);
                        assert_eq!(lowest, first, "{word:02x?}");
                    }
                }
            }
        }
    }

    /// The short strings' test is the byte test, for every length below 16 with
    /// every byte value at every position among plain bytes and among escapes.
    #[test]
    fn the_short_test_is_the_byte_test_at_every_length() {
        for n in 0..16 {
            for fill in [b'a', b' ', 0x7f, 0xc3, b'"'] {
                for pos in 0..n {
                    for b in 0..=255u8 {
                        let mut s = vec![fill; n];
                        s[pos] = b;
                        let want = s.iter().any(|&x| must_escape(x));
                        assert_eq!(short_needs_escape(&s), want, "{s:02x?}");
                    }
                }
            }
            assert!(!short_needs_escape(&vec![b'x'; n]));
        }
    }

    /// `serializes_to` is `to_string(value) == text`, shorter, longer and differing
    /// texts included.
    #[test]
    fn serializes_to_is_equality_with_the_text() {
        let v = json!({"a": [1, 2.5, "x\"y"], "b": {"c": null, "d": "long enough to take the block path"}});
        let text = to_string(&v).expect("text");
        assert!(serializes_to(&v, &text));
        assert!(!serializes_to(&v, &text[..text.len() - 1]));
        assert!(!serializes_to(&v, &format!("{text} ")));
        assert!(!serializes_to(&v, &text.replace("2.5", "2.6")));
        assert!(!serializes_to(&v, &text.replace("block", "blocK")));
        assert!(!serializes_to(&v, ""));
        assert!(serializes_to("", r#""""#));
    }

    #[test]
    fn every_character_alone_and_in_every_block_position() {
        // Every Unicode scalar value, alone and at each position of a 16-byte block
        // (after 0..=16 bytes of plain text), so both the block path and the tail
        // path see each of them.
        let mut text = String::new();
        for c in (0..=0x10_ffff_u32).filter_map(char::from_u32) {
            same(&c);
            same(c.encode_utf8(&mut [0u8; 4]) as &str);
            text.push(c);
        }
        for pad in 0..=16 {
            let mut s = "x".repeat(pad);
            s.push_str(&text);
            same(&s);
        }
    }

    #[test]
    fn every_pair_of_ascii_bytes_across_a_block_boundary() {
        for a in 0u8..0x80 {
            for b in 0u8..0x80 {
                for pad in [0, 6, 7, 14, 15, 16, 30] {
                    let mut s = "y".repeat(pad);
                    s.push(char::from(a));
                    s.push(char::from(b));
                    same(&s);
                }
            }
        }
    }

    /// Every length up to past two gathered pieces, of text that is all escapes (the
    /// six-byte ones too) and of text that mixes them with plain and multi-byte
    /// characters: each flush point of the gathering buffer is crossed every way.
    #[test]
    fn every_length_across_the_gathering_buffer() {
        let patterns: [&[char]; 4] = [
            &['\u{1}'],
            &['\n'],
            &[
                'a', '\u{1f}', '"', 'é', 'b', 'c', '\\', 'd', 'e', 'f', 'g', '🎉',
            ],
            &['x'],
        ];
        for pattern in patterns {
            let mut s = String::new();
            for n in 0..1100 {
                same(&s);
                s.push(pattern[n % pattern.len()]);
            }
        }
    }

    #[test]
    fn runs_of_escapes_and_plain_text() {
        for s in [
            "",
            "\"",
            "\\",
            "\u{7f}",
            "a\"b\\c\nd\re\tf\u{8}g\u{c}h\u{0}i\u{1f}j",
            "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
            "fn main() {\n    println!(\"héllo, \\\"wörld\\\" 🎉\");\n}\n",
            &"0123456789abcdef".repeat(9),
            &"é\"🎉\\".repeat(13),
        ] {
            same(s);
        }
    }

    /// Random strings mixing every class of character the escaper tells apart, at
    /// random densities (from no escapes to nothing else) and lengths (across
    /// blocks, words and the gathering buffer's flushes): several escapes in one
    /// block or word, escapes next to each other and next to multi-byte characters.
    /// A fixed seed, so a failure repeats.
    #[test]
    fn random_strings_of_every_character_class() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let classes: [&[char]; 6] = [
            &[
                'a', 'Z', '0', ' ', '~', '\u{7f}', '!', '#', '[', ']', '{', '}', '/',
            ],
            &['\n', '"', '\\', '\t', '\r'],
            &[
                '\u{0}', '\u{1}', '\u{8}', '\u{b}', '\u{c}', '\u{e}', '\u{1b}', '\u{1f}',
            ],
            &['é', 'ß', '\u{80}', '\u{7ff}'],
            &['€', '\u{800}', '\u{fffd}', '\u{ffff}'],
            &['🎉', '\u{10000}', '\u{10ffff}'],
        ];
        for _ in 0..4000 {
            let len = (next() % 700) as usize;
            // The weight of the plain class, out of 16: all plain to none plain.
            let plain = next() % 17;
            let mut s = String::new();
            for _ in 0..len {
                let r = next();
                let class = if r % 16 < plain {
                    classes[0]
                } else {
                    classes[1 + (r >> 8) as usize % (classes.len() - 1)]
                };
                s.push(class[(r >> 16) as usize % class.len()]);
            }
            same(s.as_str());
        }
    }

    #[derive(Serialize)]
    #[serde(tag = "type", rename_all = "camelCase")]
    enum Tagged {
        Unit,
        Fields {
            a: u8,
            #[serde(skip_serializing_if = "Option::is_none")]
            b: Option<String>,
            #[serde(flatten)]
            extra: BTreeMap<String, Value>,
        },
    }

    #[derive(Serialize)]
    enum External {
        Unit,
        Newtype(i64),
        Tuple(u8, String),
        Struct { x: f64, y: Option<bool> },
    }

    #[derive(Serialize)]
    #[serde(untagged)]
    enum Untagged {
        Text(String),
        List(Vec<Untagged>),
    }

    #[derive(Serialize)]
    struct Shapes<'a> {
        unit: (),
        tuple: (i8, u128, i128, f32),
        bytes: &'a serde_bytes_like::Bytes,
        chars: [char; 3],
        empty_seq: Vec<u8>,
        empty_map: BTreeMap<String, u8>,
        int_keys: BTreeMap<i32, &'a str>,
        bool_keys: BTreeMap<bool, u8>,
        char_keys: BTreeMap<char, u8>,
        tagged: Vec<Tagged>,
        external: Vec<External>,
        untagged: Untagged,
        nested: Option<Box<Shapes<'a>>>,
    }

    /// `serialize_bytes` without a dependency: a slice that serializes as bytes.
    mod serde_bytes_like {
        pub(super) struct Bytes(pub(super) [u8; 4]);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    #[test]
    fn the_shapes_serde_derives() {
        let bytes = serde_bytes_like::Bytes([0, 1, 127, 255]);
        let leaf = Shapes {
            unit: (),
            tuple: (-8, u128::MAX, i128::MIN, 1.5),
            bytes: &bytes,
            chars: ['"', '\n', 'ß'],
            empty_seq: Vec::new(),
            empty_map: BTreeMap::new(),
            int_keys: [(-1, "a"), (7, "\"b\"")].into_iter().collect(),
            bool_keys: [(true, 1), (false, 0)].into_iter().collect(),
            char_keys: [('k', 1), ('\u{1}', 2)].into_iter().collect(),
            tagged: vec![
                Tagged::Unit,
                Tagged::Fields {
                    a: 1,
                    b: None,
                    extra: BTreeMap::new(),
                },
                Tagged::Fields {
                    a: 2,
                    b: Some("x\ty".into()),
                    extra: [("k\"".into(), json!({"n": [1, 2.5, null]}))]
                        .into_iter()
                        .collect(),
                },
            ],
            external: vec![
                External::Unit,
                External::Newtype(-3),
                External::Tuple(4, "t".into()),
                External::Struct { x: 0.1, y: None },
                External::Struct {
                    x: f64::NAN,
                    y: Some(true),
                },
            ],
            untagged: Untagged::List(vec![Untagged::Text("u".into()), Untagged::List(Vec::new())]),
            nested: None,
        };
        let mut outer = Shapes {
            nested: None,
            ..leaf
        };
        same(&outer);
        outer.nested = Some(Box::new(Shapes {
            unit: (),
            tuple: (0, 0, 0, f32::INFINITY),
            bytes: &bytes,
            chars: ['a', 'b', 'c'],
            empty_seq: vec![1],
            empty_map: [("".into(), 0)].into_iter().collect(),
            int_keys: BTreeMap::new(),
            bool_keys: BTreeMap::new(),
            char_keys: BTreeMap::new(),
            tagged: Vec::new(),
            external: Vec::new(),
            untagged: Untagged::Text(String::new()),
            nested: None,
        }));
        same(&outer);
    }

    #[test]
    fn values_with_every_kind_of_number() {
        let v: Value = serde_json::from_str(
            r#"{"z":0,"a":-0.0,"big":18446744073709551615,"neg":-9223372036854775808,
            "f":1e300,"g":5e-324,"h":0.1,"i":123456789.125,"arr":[[],{},[{}],"s",true,false,null],
            "\u0000key\"":"\ud83c\udf89"}"#,
        )
        .expect("valid JSON");
        same(&v);
    }

    /// With JavaScript's number spelling, the bytes serde_json writes with
    /// `JsFormatter`: numbers of every kind, as values and as keys.
    #[test]
    fn javascript_numbers_are_js_formatter_bytes() {
        let js = |value: &dyn erased::Ser| {
            let mut ours = Vec::new();
            value.ours(&mut ours);
            let theirs = value.theirs();
            assert_eq!(String::from_utf8(ours).expect("utf-8"), theirs);
        };
        let v: Value = serde_json::from_str(
            r#"{"z":0,"a":-0.0,"one":1.0,"big":18446744073709551615,"neg":-9223372036854775808,
            "f":1e300,"g":5e-324,"h":0.1,"i":123456789.125,"e21":1e21,"e-7":1e-7,"u":0.000001,
            "arr":[[],{},[{}],"s",true,false,null,12345678901234567890],"\u0000key\"":"\ud83c\udf89"}"#,
        )
        .expect("valid JSON");
        js(&v);
        let ints: BTreeMap<i64, u8> = [(-1, 1), (0, 2), (i64::MAX, 3)].into_iter().collect();
        js(&ints);
        let big: BTreeMap<u64, f32> = [(u64::MAX, 1.5), (7, -0.0)].into_iter().collect();
        js(&big);
        js(&(
            1u8,
            -2i16,
            3u32,
            -4i128,
            5u128,
            2.5f32,
            f64::NAN,
            f64::INFINITY,
        ));
    }

    /// Object-safe "serialize both ways" for the test above.
    mod erased {
        pub(super) trait Ser {
            fn ours(&self, out: &mut Vec<u8>);
            fn theirs(&self) -> String;
        }
        impl<T: serde::Serialize> Ser for T {
            fn ours(&self, out: &mut Vec<u8>) {
                super::super::to_writer_js(out, self).expect("we write it");
            }
            fn theirs(&self) -> String {
                crate::js::stringify::to_string(self).expect("serde_json writes it")
            }
        }
    }

    #[test]
    fn keys_no_json_object_can_hold_are_refused() {
        let map: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into_iter().collect();
        assert!(to_string(&map).is_err());
        assert!(serde_json::to_string(&map).is_err());
    }

    #[test]
    fn writes_to_any_writer() {
        let mut out = Vec::new();
        to_writer(&mut out, &json!({"a": "b\n"})).expect("a vector takes it");
        assert_eq!(out, br#"{"a":"b\n"}"#);
    }
}
