//! The logical data model of Base Context sessions.
//!
//! Layer 0 of the workspace: everything else (journal framing aside) speaks these
//! types. This crate knows JSON and nothing about files, bytes on disk, clocks or
//! randomness.
//!
//! A tour:
//! - [`Record`] is one JSON record: a [`SessionHeader`] or an [`Entry`].
//! - [`Entry`] has one variant per entry type of the seed (`message`, `compaction`,
//!   `label`, …) plus [`Entry::Unknown`], which keeps entries of future types whole.
//!   [`EntryType`] names those types (the workspace's only spelling of them) and
//!   [`EntryTypeMap`] maps every type to a value; the three come from one table, so a
//!   new type is one row there and a compile error wherever a crate must decide on it.
//! - [`AgentMessage`] (`role` tag) and [`ContentBlock`] (`type` tag) are modelled the
//!   same way, with `Unknown` variants; every struct keeps unmodelled fields in `extra`.
//! - Constructors such as [`Entry::label`] build entries with the reference
//!   implementation's key order.
//! - [`Envelope`] reads just the tree fields (`type`, `id`, `parentId`, `timestamp`,
//!   `message.role`) without building the entry.
//! - [`json`] holds the JavaScript-number and lone-surrogate helpers.
//! - [`js`] repeats what the reference gets from its engine (`Date.parse`,
//!   `Array.prototype.sort`, `JSON.stringify`'s number spelling) and how its code reads
//!   JSON values (whitespace, truthiness, dates).
//! - [`Record::parse`] and [`Entry::read`] read any JSON object: a known `type` whose
//!   fields are missing or of other JSON types is kept whole as [`Entry::Unknown`];
//!   [`Entry::parse`] is the strict reading, for what we write.
//!
//! Round trips are by value: `parse → to_json → parse` gives an equal value. Byte
//! exactness is the journal's job (it keeps payloads verbatim).
//!
//! ```
//! use session_types::{Entry, EntryBase, EntryId, Record, Timestamp};
//!
//! let base = EntryBase::new(EntryId::new("a1b2c3d4"), None, Timestamp::new("2025-01-01T00:00:00.000Z"));
//! let entry = Entry::thinking_level_change(base, "high");
//! let json = entry.to_json();
//! assert_eq!(
//!     json,
//!     r#"{"type":"thinking_level_change","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","thinkingLevel":"high"}"#
//! );
//! assert_eq!(Record::parse(&json).unwrap(), Record::Entry(entry));
//! ```

mod build;
mod compact;
pub mod construct;
pub mod content;
mod decode;
pub mod entry;
pub mod envelope;
pub mod header;
pub mod ids;
pub mod js;
pub mod json;
pub mod message;
pub mod record;
mod write;

pub use content::{
    ContentBlock, Extra, ImageContent, TextContent, ThinkingContent, ToolCall, UserContent,
};
pub use entry::*;
pub use envelope::{Envelope, MessageEnvelope};
pub use header::{CURRENT_VERSION, SessionHeader};
pub use ids::{EntryId, SessionId, Timestamp, parse_js_date};
pub use message::*;
pub use record::{EntryRef, ParseError, ParseErrorKind, Record};
