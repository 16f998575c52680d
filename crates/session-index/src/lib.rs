//! Derived, disposable indexes over session journals.
//!
//! Layer 2 of Base Context sessions (depends on `session-types` and
//! `session-journal`): everything derived from a journal, so that opening a session,
//! tree queries and listing cost what the answer needs, not what the journal holds.
//! It never interprets context semantics; it reads each record's envelope (`type`,
//! `id`, `parentId`, `timestamp`, `message.role`) and the few fields labels, names,
//! lifecycle state and the listing summary need. Byte formats: `docs/format.md` §3.
//!
//! Tour:
//!
//! - [`kinds`] — the frame kinds of a session journal ([`kinds::SESSION_HEADER`],
//!   [`kinds::ENTRY`]) and the entry-id [`kinds::id_tag`].
//! - [`Derived`] — what a replay of a session's records derives, and the one
//!   implementation of its rules: [`Derived::find`], [`Derived::info`],
//!   [`Derived::parent`], [`Derived::leaf`], [`Derived::labels`], [`Derived::name`],
//!   [`Derived::lifecycle_state`], [`Derived::summary`]; tree queries
//!   ([`Derived::children`], [`Derived::path_to_root`], [`Derived::tree`]) in the
//!   reference's `getTree()` order, iterative, cycles reported ([`TreeReport`]).
//!   Fed without a journal ([`Derived::push_payload`], [`Derived::push_entry`]) it
//!   serves sessions held in memory with the same answers.
//! - [`Index`] — one session journal's index (dereferences to its [`Derived`]):
//!   [`Index::open_or_rebuild`] validates the sidecar `<journal>.idx` in O(1),
//!   catches up the tail or rebuilds, and reports which ([`IndexReport`],
//!   [`RebuildReason`]); [`Index::observe`] (or, from the typed entry without
//!   parsing, [`Index::observe_entry`]) and [`Index::save`] keep it current while
//!   appending; [`Index::load`] reads one verified frame, parsed.
//! - [`list_sessions`] / [`list_all`] — listing through the per-directory catalog;
//!   a fresh catalog opens no journal (a record is used when the journal's `lstat`
//!   — device, inode, length, change time — matches it and is not racy; otherwise
//!   it is checked against the journal's id and last frame, O(1) bytes); [`note`]
//!   appends a closed session's record (O(1)); [`forget`] drops a deleted
//!   session's record.
//!
//! Test support (a counting `Vfs`, a writer of native journals from legacy JSONL text,
//! a simulated file system) is in the `session-testkit` crate, not here.
//!
//! ```
//! use std::{path::Path, sync::Arc};
//! use session_index::{Index, IndexStatus, OpenIndexOptions};
//! # use session_testkit::{legacy, sim::SimFs};
//!
//! # let fs = Arc::new(SimFs::new());
//! # let path = Path::new("/s/a.jsonl");
//! # let text = concat!(
//! #     r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#, "\n",
//! #     r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#, "\n",
//! #     r#"{"type":"label","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","targetId":"a","label":"start"}"#, "\n",
//! # );
//! # legacy::write_journal_from_jsonl(path, legacy::fixture_journal_id("a"), text, fs.clone())?;
//! // `path` is a session journal (a header and three entries), `fs` the file system.
//! let opts = || OpenIndexOptions { vfs: fs.clone(), ..OpenIndexOptions::default() };
//! let (index, report) = Index::open_or_rebuild(path, opts())?;
//! assert!(matches!(report.status, IndexStatus::Rebuilt { .. }));
//! assert_eq!(index.label("a"), Some("start"));
//! assert_eq!(index.summary().first_message, "hi");
//! let (_, report) = Index::open_or_rebuild(path, opts())?;
//! assert_eq!(report.status, IndexStatus::Fresh);
//! # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
//! ```

mod catalog;
mod derived;
mod error;
mod fields;
mod ids;
mod index;
pub mod kinds;
mod marks;
mod probe;
mod scan;
mod sidecar;
mod state;
mod store;
mod summary;
mod tree;

pub use catalog::{
    CATALOG_FILE, CatalogStatus, ForgetError, ListError, ListOptions, ListReport, SessionInfo,
    forget, list_all, list_sessions, note,
};

/// A catalog record with every field set, as the JSON text `docs/format.md` §3
/// reproduces verbatim (a test ties the two: renaming or adding a field of the
/// catalog's wire format without the spec fails it).
pub fn catalog_record_example() -> String {
    catalog::wire::example_record()
}
/// The listing catalog's format version (`docs/format.md` §3): a catalog of any other
/// version is rebuilt, never read.
pub const CATALOG_VERSION: u32 = catalog::wire::VERSION;
pub use derived::{Counts, Derived, EntryIndex, EntryInfo, PathMarks};
pub use error::{IndexError, LoadError, ObserveError, SaveError};
pub use index::{
    Index, IndexReport, IndexStatus, OnRegression, OpenIndexOptions, PreparedSave, RebuildReason,
    sidecar_path,
};
pub use probe::FIRST_MESSAGE_MAX_BYTES;
pub use scan::Scanned;

/// The derived files' constants as the `text` block `docs/format.md` §3 reproduces
/// verbatim (a test ties the two: changing a constant without the spec fails it).
pub fn constants_table() -> String {
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let rows = [
        (
            "kind_session_header",
            format!("0x{:02x}", kinds::SESSION_HEADER.get()),
        ),
        ("kind_entry", format!("0x{:02x}", kinds::ENTRY.get())),
        ("sidecar_magic", hex(&sidecar::MAGIC)),
        ("sidecar_version", sidecar::VERSION.to_string()),
        ("sidecar_header_len", sidecar::HEADER_LEN.to_string()),
        ("sidecar_record_len", sidecar::REC_LEN.to_string()),
        ("sidecar_trailer_len", sidecar::TRAILER_LEN.to_string()),
        ("catalog_file", format!("{CATALOG_FILE:?}")),
        ("catalog_magic", hex(&catalog::wire::MAGIC)),
        ("catalog_version", catalog::wire::VERSION.to_string()),
        ("catalog_header_len", catalog::wire::HEADER_LEN.to_string()),
        (
            "catalog_frame_prefix",
            catalog::wire::FRAME_PREFIX_LEN.to_string(),
        ),
        ("catalog_record_max", catalog::wire::RECORD_MAX.to_string()),
        (
            "catalog_racy_window",
            format!("{} ns", catalog::wire::RACY_WINDOW_NS),
        ),
        ("first_message_max", FIRST_MESSAGE_MAX_BYTES.to_string()),
    ];
    rows.iter()
        .map(|(k, v)| format!("{k:<20} = {v}\n"))
        .collect()
}
pub use sidecar::{
    HEADER_LEN as SIDECAR_HEADER_LEN, MAGIC as SIDECAR_MAGIC, TRAILER_LEN as SIDECAR_TRAILER_LEN,
    VERSION as SIDECAR_VERSION, layout_table as sidecar_layout_table, reseal as sidecar_reseal,
    trailer as sidecar_trailer,
};
pub use summary::{Modified, SessionSummary, iso};
pub use tree::{PathToRoot, REPEAT_LIMIT, Tree, TreeNode, TreeReport};
