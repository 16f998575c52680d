//! Errors, one type per operation. Every refusal leaves the file system as it was.

use std::path::PathBuf;

/// Why an import was refused or failed. Nothing is written in any of these cases
/// (a temporary journal, if one was started, is removed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// Reading or writing a file failed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The source has no bytes, or only whitespace.
    #[error("{path}: empty file: expected a legacy session header on the first line")]
    Empty {
        /// The source.
        path: PathBuf,
    },
    /// No line of the source is a JSON value.
    #[error("{path}: not a JSONL file: no line is JSON text (first bad line {line}: {reason})")]
    NotJsonl {
        /// The source.
        path: PathBuf,
        /// The first non-blank line.
        line: u64,
        /// Why it is not JSON.
        reason: String,
    },
    /// The first JSON line is not a session header with a string id.
    #[error(
        "{path}: no session header: line {line} is the first JSON line and it is {found}, expected {{\"type\":\"session\",\"id\":\"…\"}}"
    )]
    NoHeader {
        /// The source.
        path: PathBuf,
        /// The first JSON line.
        line: u64,
        /// What it is instead.
        found: String,
    },
    /// The source is a native journal.
    #[error(
        "{path}: this is already a native journal (signature at offset 0), not legacy JSONL: open it natively"
    )]
    NativeJournal {
        /// The source.
        path: PathBuf,
    },
    /// A line longer than [`MAX_LINE_LEN`](crate::format::MAX_LINE_LEN).
    #[error("{path}: line {line} is longer than {max} bytes; refusing to import")]
    LineTooLong {
        /// The source.
        path: PathBuf,
        /// The line.
        line: u64,
        /// The limit.
        max: u64,
    },
    /// The source changed while it was being imported.
    #[error(
        "{path}: the source changed during the import (blake3 {expected} before, {found} after)"
    )]
    SourceChanged {
        /// The source.
        path: PathBuf,
        /// Hash of the first pass.
        expected: String,
        /// Hash of the second pass.
        found: String,
    },
    /// Something else is at the destination.
    #[error("{path}: destination exists and is not an import of this source")]
    DestinationExists {
        /// The destination journal.
        path: PathBuf,
    },
    /// Creating the journal failed.
    #[error("{path}: cannot create the journal: {source}")]
    Create {
        /// The temporary journal path.
        path: PathBuf,
        /// The journal's error.
        source: session_journal::CreateError,
    },
    /// Appending to the journal failed.
    #[error("{path}: cannot append line {line}: {source}")]
    Append {
        /// The temporary journal path.
        path: PathBuf,
        /// The last source line of the failed batch.
        line: u64,
        /// The journal's error.
        source: session_journal::AppendError,
    },
}

/// Why an export failed. Nothing is left at the destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The journal could not be opened.
    #[error("cannot open the journal: {0}")]
    Open(#[from] session_journal::OpenError),
    /// A frame could not be read.
    #[error("cannot read the journal: {0}")]
    Read(#[from] session_journal::ReadError),
    /// The journal's first record is not a session header.
    #[error("{path}: first record at offset {offset} is not a session header: {found}")]
    NoHeader {
        /// The journal.
        path: PathBuf,
        /// The frame offset.
        offset: u64,
        /// What was found.
        found: String,
    },
    /// A record payload is not single-line JSON text and cannot be made so.
    #[error("{path}: record at offset {offset} is not valid JSON text: {source}")]
    BadRecord {
        /// The journal.
        path: PathBuf,
        /// The frame offset.
        offset: u64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Writing the destination failed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Why a retention lookup failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RetentionError {
    /// The journal could not be opened.
    #[error("cannot open the journal: {0}")]
    Open(#[from] session_journal::OpenError),
    /// A frame could not be read.
    #[error("cannot read the journal: {0}")]
    Read(#[from] session_journal::ReadError),
    /// A provenance frame does not hold what §4 of the format says.
    #[error("{path}: provenance frame at offset {offset} is malformed: {source}")]
    Malformed {
        /// The journal.
        path: PathBuf,
        /// The frame offset.
        offset: u64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A retention table breaks a rule of its encoding (`docs/format.md` §4).
    #[error("{path}: retention table at offset {offset} is malformed: {reason}")]
    Table {
        /// The journal.
        path: PathBuf,
        /// The table frame's offset.
        offset: u64,
        /// Which rule.
        reason: &'static str,
    },
    /// A retention frame with no import-source frame before it.
    #[error("{path}: retention frame at offset {offset} has no import-source frame before it")]
    Orphaned {
        /// The journal.
        path: PathBuf,
        /// The retention frame's offset.
        offset: u64,
    },
}
