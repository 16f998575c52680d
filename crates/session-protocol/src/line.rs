//! One message per line: the size limit and the nesting-depth check that run before a
//! line is parsed.
//!
//! `serde_json` refuses input nested deeper than 128 levels, but by then it has
//! recursed 128 frames deep, and a `serde_json::Value` built from such input is also
//! dropped recursively. The owner refuses deep input before any parser sees it, with
//! an explicit bound ([`LineLimits::max_depth`], 64 by default) well below serde's.

/// Bounds on one incoming line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineLimits {
    /// The longest line accepted, in bytes, without its `\n` (default 64 MiB: a request
    /// carries at most one message, and the seed's reads allow 64 MiB of source data).
    pub max_line_bytes: usize,
    /// The deepest nesting of arrays and objects accepted (default [`MAX_DEPTH`]).
    pub max_depth: usize,
}

/// The default nesting bound: the envelope takes two levels, an entry or a message
/// one more, so content keeps 61 levels of its own.
pub const MAX_DEPTH: usize = 64;

/// The default line size limit (64 MiB).
pub const MAX_LINE_BYTES: usize = 64 << 20;

impl Default for LineLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: MAX_LINE_BYTES,
            max_depth: MAX_DEPTH,
        }
    }
}

/// Why a line was refused before parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line is longer than the limit.
    #[error("line of {len} bytes exceeds the limit of {limit} bytes")]
    TooLong {
        /// The line's length (or a lower bound of it, when it was not read whole).
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Arrays and objects nest deeper than the limit.
    #[error("json nests deeper than {limit} levels at byte {offset}")]
    TooDeep {
        /// The limit.
        limit: usize,
        /// The byte where the nesting crossed it.
        offset: usize,
    },
}

/// Checks a line's length and nesting depth in one pass without recursion or
/// allocation (`session_types::json::depth_past`: brackets inside strings are
/// skipped, a string's contents crossed from one `"` or `\` to the next, so a line
/// that is mostly text costs little). The bytes are otherwise not validated: that is
/// the parser's job once the line is known to be shallow.
pub fn check_line(line: &[u8], limits: LineLimits) -> Result<(), LineError> {
    if line.len() > limits.max_line_bytes {
        return Err(LineError::TooLong {
            len: line.len(),
            limit: limits.max_line_bytes,
        });
    }
    match session_types::json::depth_past(line, limits.max_depth) {
        Some(offset) => Err(LineError::TooDeep {
            limit: limits.max_depth,
            offset,
        }),
        None => Ok(()),
    }
}

/// A line with every lone surrogate escape (`\ud800` not paired; JSON allows it,
/// JavaScript strings hold it, e.g. one cut in the middle of an emoji, and
/// `JSON.stringify` writes it so) replaced by `\ufffd`, which is what a UTF-8
/// encoder (`TextEncoder`) writes for one: no Rust string holds it, and refusing
/// the request would lose a message its client could not have spelled otherwise.
/// The same length as `line`, so offsets in it stay true. Borrowed when it has none
/// (or is not UTF-8: the parser refuses it then). What the owner reads every line
/// through, before [`crate::Incoming::parse`].
pub fn read_lone_surrogates(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let Ok(text) = std::str::from_utf8(line) else {
        return std::borrow::Cow::Borrowed(line);
    };
    match session_types::json::replace_lone_surrogates(text).0 {
        std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(line),
        std::borrow::Cow::Owned(s) => std::borrow::Cow::Owned(s.into_bytes()),
    }
}
