//! How the reference reads one line: its envelope, lone surrogates, invalid UTF-8, and
//! the JavaScript whitespace `JSON.parse` refuses around the value.

use std::borrow::Cow;

use serde_json::{Map, Value};
use session_index::Scanned;
use session_types::json::{find_lone_surrogates, replace_lone_surrogates};
use session_types::{Envelope, ParseErrorKind};

use crate::lines::LineMeta;
use crate::outcome::IssueKind;

/// How a line reads as JSON.
// Read once per line and taken apart at once: boxing the line would cost an
// allocation per line to save a move of a few hundred bytes.
#[allow(clippy::large_enum_variant)]
pub(super) enum Parsed<'a> {
    Object(Line<'a>),
    Bad(IssueKind),
}

/// A line that reads as a JSON object, and what is odd about its bytes.
pub(super) struct Line<'a> {
    pub(super) env: Envelope<'a>,
    /// What the index reads from the line, when the envelope came from one pass that
    /// also read that ([`Scanned::parse`]: a line that is valid UTF-8 and reads plainly).
    pub(super) scanned: Option<Scanned>,
    /// Column of the first lone surrogate escape.
    pub(super) surrogate: Option<usize>,
    /// Column of the first invalid UTF-8 byte.
    pub(super) invalid_utf8: Option<usize>,
    /// JavaScript whitespace JSON refuses before the object (only allowed on the
    /// file's first record: the reference trims the whole file).
    pub(super) lead: bool,
    /// The same after the object (only allowed on the file's last record).
    pub(super) trail: bool,
}

/// Whether a line is blank to the reference (`!line.trim()`: JavaScript whitespace,
/// U+00A0 and U+3000 included).
pub(super) fn is_blank(buf: &[u8]) -> bool {
    match buf.iter().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(b) if b.is_ascii() && *b != 0x0b => false,
        Some(_) => session_types::js::is_blank(&String::from_utf8_lossy(buf)),
    }
}

fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Columns (1-based, in the decoded text) of JavaScript whitespace that JSON refuses
/// right before and right after the value.
fn odd_edges(text: &str) -> (Option<usize>, Option<usize>) {
    let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
    let core = text.trim_matches(is_json_whitespace);
    let js = session_types::js::is_whitespace;
    let lead = core.chars().next().filter(|c| js(*c)).map(|_| start + 1);
    let trail = core
        .chars()
        .next_back()
        .filter(|c| js(*c))
        .map(|c| start + core.len() - c.len_utf8() + 1);
    (lead, trail)
}

/// Whether a line ends in JavaScript whitespace that JSON refuses (cheap unless its
/// last non-blank byte is not ASCII).
pub(super) fn odd_trailing_whitespace(buf: &[u8]) -> bool {
    match buf.iter().rev().find(|b| !b.is_ascii_whitespace()) {
        Some(b) if !b.is_ascii() || *b == 0x0b => {
            odd_edges(&String::from_utf8_lossy(buf)).1.is_some()
        }
        _ => false,
    }
}

/// What a line followed by U+00A0 (or the like) and then more records is.
pub(super) fn trailing_whitespace_refused(buf: &[u8]) -> IssueKind {
    IssueKind::InvalidJson {
        column: odd_edges(&String::from_utf8_lossy(buf)).1.unwrap_or(1),
        message: "JavaScript whitespace after the value, and records after the line: JSON.parse refuses it (the reference skips the line)".to_owned(),
    }
}

/// Reads a line's envelope as the reference reads the line: invalid UTF-8 decoded
/// as U+FFFD, lone surrogates read through their U+FFFD view. JavaScript whitespace
/// JSON refuses is accepted before the object only on the file's `first` record
/// (and after it only on the last, which the caller decides).
pub(super) fn parse_line(buf: &[u8], meta: LineMeta, first: bool) -> Parsed<'_> {
    let torn = !meta.newline;
    // `from_utf8` first: its ASCII fast path is several times quicker than the lossy
    // decoder's, which only invalid UTF-8 needs.
    let valid = std::str::from_utf8(buf);
    let (decoded, invalid_utf8) = match valid {
        Ok(text) => (Cow::Borrowed(text), None),
        Err(e) => (String::from_utf8_lossy(buf), Some(e.valid_up_to() + 1)),
    };
    let bad = |e: session_types::ParseError| match e.kind {
        ParseErrorKind::NotAnObject => IssueKind::NotAnObject,
        _ if torn => IssueKind::TornLastLine { bytes: buf.len() },
        _ => IssueKind::InvalidJson {
            column: e.column,
            message: match invalid_utf8 {
                Some(c) => format!("{} (and invalid UTF-8 at column {c})", e.message),
                None => e.message,
            },
        },
    };
    let (lead, trail) = odd_edges(&decoded);
    if let Some(column) = lead
        && !first
    {
        return Parsed::Bad(IssueKind::InvalidJson {
            column,
            message: "JavaScript whitespace before the value: JSON.parse refuses it (only the file's start is trimmed)".to_owned(),
        });
    }
    let line = |env, surrogate, scanned| {
        Parsed::Object(Line {
            env,
            scanned,
            surrogate,
            invalid_utf8,
            lead: lead.is_some(),
            trail: trail.is_some(),
        })
    };
    // Most lines: valid UTF-8, no surrogate escape, read in one pass that gives the
    // envelope and what the index reads (so the index does not parse the line again).
    if let Ok(text) = valid
        && !may_hold_surrogate(buf)
        && let Some((env, scanned)) = Scanned::parse(text)
    {
        return line(env, None, Some(scanned));
    }
    let text: &str = &decoded;
    let parsed = match Envelope::parse(text) {
        // The envelope skips most of the line without decoding its strings: look for
        // lone surrogates only where a surrogate escape (`\uD800`–`\uDFFF`) may be.
        Ok(env) if may_hold_surrogate(buf) => {
            let column = find_lone_surrogates(text).first().map(|s| s.offset + 1);
            Ok((owned(env), column))
        }
        Ok(env) => Ok((owned(env), None)),
        Err(e) if e.kind == ParseErrorKind::LoneSurrogate => {
            let column = find_lone_surrogates(text)
                .first()
                .map_or(1, |s| s.offset + 1);
            let (view, _) = replace_lone_surrogates(text);
            match Envelope::parse(&view) {
                Ok(env) => Ok((owned(env), Some(column))),
                Err(e) => Err(bad(e)),
            }
        }
        Err(e) => Err(bad(e)),
    };
    match parsed {
        Ok((env, surrogate)) => line(env, surrogate, None),
        Err(kind) => Parsed::Bad(kind),
    }
}

/// Whether `buf` holds `\ud` or `\uD`, the start of every surrogate escape (most
/// `\u` escapes in sessions are control characters, `\u001b` and the like).
fn may_hold_surrogate(buf: &[u8]) -> bool {
    memchr::memmem::find_iter(buf, b"\\u").any(|at| matches!(buf.get(at + 2), Some(b'd' | b'D')))
}

fn owned(e: Envelope<'_>) -> Envelope<'static> {
    fn o(c: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
        c.map(|c| Cow::Owned(c.into_owned()))
    }
    Envelope {
        entry_type: o(e.entry_type),
        id: o(e.id),
        parent_id: o(e.parent_id),
        timestamp: o(e.timestamp),
        message: e
            .message
            .map(|m| session_types::MessageEnvelope { role: o(m.role) }),
    }
}

/// The object of a line whose envelope parsed, as `JSON.parse` reads it: invalid
/// UTF-8 and lone surrogates as U+FFFD, surrounding JavaScript whitespace ignored,
/// the last of repeated keys, numbers beyond a double's range as `null`.
pub(super) fn parse_map(buf: &[u8]) -> Option<Map<String, Value>> {
    let text = String::from_utf8_lossy(buf);
    let (view, _) = replace_lone_surrogates(session_types::js::trim(&text));
    // As deep as a stored record is read (past serde_json's 128 levels, up to
    // `session_types::json::MAX_READ_DEPTH`, on a thread of its own): the reference
    // migrates such a line.
    match session_types::json::value_deep(&session_types::js::finite_view(&view))? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

pub(super) fn session_state(buf: &[u8]) -> Option<String> {
    parse_map(buf).and_then(|m| match m.get("state") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
        None => None,
    })
}

pub(super) fn describe(env: &Envelope<'_>) -> String {
    match (env.entry_type.as_deref(), env.id.as_deref()) {
        (Some(_), None) if env.is_header() => "a session header without a string id".to_owned(),
        (Some(t), _) => format!("a {t:?} record"),
        (None, _) => "an object without a string type".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::may_hold_surrogate;

    #[test]
    fn only_surrogate_escapes_are_looked_into() {
        assert!(may_hold_surrogate(br#"{"a":"\ud83d"}"#));
        assert!(may_hold_surrogate(br#"{"a":"\u001b \uDE00"}"#));
        assert!(!may_hold_surrogate(br#"{"a":"\u001b\u00e9"}"#));
        assert!(!may_hold_surrogate(br#"{"a":"d\u"}"#));
    }
}
