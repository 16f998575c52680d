//! Errors, one enum per operation.

use std::path::PathBuf;

use session_journal::{Offset, OpenError, ReadError, Seq};

/// How opening (or building) an index failed. A bad *index* never fails an open — it
/// is rebuilt and the reason reported; these are problems of the journal itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The journal could not be opened.
    #[error("opening journal: {0}")]
    Journal(#[from] OpenError),
    /// A journal frame could not be read.
    #[error("reading journal: {0}")]
    Read(#[from] ReadError),
    /// The journal is shorter than bytes the index saw durable (strict mode only).
    #[error("{path}: journal is {actual} bytes but its index covered {covered} durable bytes")]
    JournalRegressed {
        /// The journal.
        path: PathBuf,
        /// What the index covered.
        covered: u64,
        /// The journal's length now.
        actual: u64,
    },
}

/// How [`Index::observe`](crate::Index::observe) refused a frame.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObserveError {
    /// The frame does not follow the last one the index covers.
    #[error(
        "frame seq {found_seq} at offset {found_offset} does not follow the index's seq {expected_seq} ending at {expected_offset}"
    )]
    OutOfOrder {
        /// Seq the index expected.
        expected_seq: Seq,
        /// Offset the index expected.
        expected_offset: Offset,
        /// Seq of the frame offered.
        found_seq: Seq,
        /// Offset of the frame offered.
        found_offset: Offset,
    },
}

/// How [`Index::save`](crate::Index::save) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// The index covers bytes the capture does not show durable.
    #[error("{path}: index covers {covered} bytes but only {durable} are durable")]
    NotDurable {
        /// The sidecar.
        path: PathBuf,
        /// Bytes the index covers.
        covered: u64,
        /// Bytes the capture shows durable.
        durable: u64,
    },
    /// The capture belongs to another journal.
    #[error("{path}: capture belongs to another journal")]
    ForeignCapture {
        /// The sidecar.
        path: PathBuf,
    },
    /// Writing the sidecar failed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The operation.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

impl SaveError {
    /// `op` on `path` failed: for `map_err`.
    pub(crate) fn io(
        op: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io { path, op, source }
    }
}

/// How loading one entry through the index failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No entry has this id.
    #[error("entry {id} not found")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The frame could not be read or did not verify.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// The frame verified but is not the one the index recorded (the index is stale).
    #[error(
        "{path}: frame at offset {offset} has seq {found} and a different check, index expected seq {expected}"
    )]
    Stale {
        /// The journal.
        path: PathBuf,
        /// The offset read.
        offset: Offset,
        /// The seq the index recorded.
        expected: Seq,
        /// The seq found.
        found: Seq,
    },
    /// The payload is not a record.
    #[error("{path}: entry at offset {offset}: {source}")]
    Parse {
        /// The journal.
        path: PathBuf,
        /// The offset read.
        offset: Offset,
        /// Why.
        source: session_types::ParseError,
    },
}
