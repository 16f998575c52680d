//! Explicit, offline import of legacy plain JSONL sessions into native journals, and
//! export back to v3 plain JSONL.
//!
//! Layer 4 of Base Context sessions. It depends on `session-types` (the records) and
//! `session-journal` (the bytes). Nothing else opens legacy files: a native open of
//! plain JSONL is an error that says to import it.
//!
//! Tour:
//! - [`import()`] streams a v1, v2 or v3 file into a new journal at a
//!   [`Destination`], migrating like the reference (`legacy-pi-behaviour.md` §1.7) but
//!   with deterministic v1 ids, and returns an [`ImportOutcome`] that lists every line
//!   not taken or changed ([`LineIssue`], [`IssueKind`]). Refusals are
//!   [`ImportError`]s and write nothing. The source is only ever read.
//!   [`import_many`] imports many sources in batches ([`BulkOptions`]) whose
//!   journals are synced together and published with one directory sync.
//! - [`retention()`] returns where an imported entry came from ([`Retention`]: source
//!   path, BLAKE3, line, version); [`import_source()`] the journal's source record.
//! - [`export()`] writes a journal back as v3 JSONL; v3-sourced records come out byte
//!   for byte.
//! - [`registry`] owns the imports registry (never trusted: each line is checked
//!   against its journal); [`leftover_imports`] and [`remove_leftover_imports`] find
//!   and clear what killed imports left.
//! - [`format`](mod@format) holds the frame kinds and provenance payloads (`docs/format.md` §4).
//!
//! ```
//! use session_import::{Destination, ImportOptions, export, import, retention};
//!
//! let dir = tempfile::tempdir()?;
//! let legacy = dir.path().join("legacy.jsonl");
//! std::fs::write(&legacy, concat!(
//!     r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#, "\n",
//!     r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#, "\n",
//!     "not json\n",
//! ))?;
//! let sessions = dir.path().join("sessions");
//! let outcome = import(&legacy, &Destination::Dir(sessions.clone()), &ImportOptions::default())?;
//! assert_eq!(outcome.session_id, "s1");
//! assert_eq!(outcome.entries, 1);
//! assert_eq!(outcome.issues[0].line, 3); // "not json": skipped and reported
//!
//! let r = retention(&outcome.journal, "a1")?.expect("an imported entry");
//! assert_eq!((r.line, r.source_version), (2, 3));
//!
//! // Importing the same bytes again creates nothing.
//! let again = import(&legacy, &Destination::Dir(sessions), &ImportOptions::default())?;
//! assert!(again.already_imported);
//!
//! let out = dir.path().join("out.jsonl");
//! export(&outcome.journal, &out)?;
//! let text = std::fs::read_to_string(&out)?;
//! assert_eq!(text.lines().count(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod export;
pub mod format;
mod import;
mod lines;
mod migrate;
mod outcome;
pub mod registry;
mod retention;
mod table;
mod tree_check;

pub use error::{ExportError, ImportError, RetentionError};
pub use export::{ExportOutcome, export, export_in, export_to, export_to_in};
pub use import::{
    BulkOptions, Destination, ImportOptions, import, import_many, is_safe_session_id,
    leftover_imports, remove_leftover_imports,
};
pub use outcome::{Disposition, ImportOutcome, IssueKind, LineIssue, SourceInfo};
pub use retention::{
    Retention, import_source, import_source_in, retention, retention_in, retention_of,
};
