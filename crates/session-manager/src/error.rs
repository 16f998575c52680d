//! One error type per kind of operation: opening (and creating, forking, deleting,
//! listing), appending, and reading. Every variant about a file names the path; every
//! variant about an entry names its id.

use std::path::PathBuf;

use session_journal::LockHolder;

use crate::layout::{InvalidSessionId, LayoutError};

/// How opening, creating, forking, importing or deleting a session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Another process (or another handle in this one) owns the session.
    #[error("{path}: session is owned by {holder} (holder record {})", crate::error::file_name(.lock_path))]
    Locked {
        /// The journal.
        path: PathBuf,
        /// The lock file.
        lock_path: PathBuf,
        /// Who holds it, as its lock file says.
        holder: LockHolder,
    },
    /// No session journal at the path.
    #[error("{path}: no such session")]
    NotFound {
        /// The journal path.
        path: PathBuf,
    },
    /// The file is plain legacy JSONL: it must be imported, never opened natively.
    #[error(
        "{path}: legacy JSONL session, not a native journal: import it (`Store::import`) instead"
    )]
    LegacyJsonl {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a native session journal (nor plain JSONL): `delete` refuses it
    /// rather than remove a file that is not a session.
    #[error("{path}: not a native session journal ({found}); refusing to delete it")]
    NotAJournal {
        /// The file.
        path: PathBuf,
        /// What its first bytes look like.
        found: String,
    },
    /// The path is not a journal of this store: `delete` removes only
    /// `<sessions>/<id>.jsonl` files, so no other file (or alias) is ever touched.
    #[error("{path}: {reason} (sessions directory {sessions_dir}); refusing to delete it")]
    NotInStore {
        /// The path as given.
        path: PathBuf,
        /// The store's sessions directory.
        sessions_dir: PathBuf,
        /// Why it is not one of its journals.
        reason: &'static str,
    },
    /// The journal was deleted or replaced while it was being opened (another process
    /// removed it or renamed a file over it); nothing was written.
    #[error(
        "{path}: the journal was deleted or replaced while it was being opened; nothing was written"
    )]
    Replaced {
        /// The journal.
        path: PathBuf,
    },
    /// The journal has no session header record (a crash inside `create`, before the
    /// header frame was acknowledged, leaves this; `Store::delete` removes it).
    #[error("{path}: journal has no session header record")]
    NoHeader {
        /// The journal.
        path: PathBuf,
    },
    /// The session header record is not a valid header.
    #[error("{path}: invalid session header record: {source}")]
    BadHeader {
        /// The journal.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: session_types::ParseError,
    },
    /// A session with this id already exists.
    #[error("{path}: a session with id {id} already exists")]
    Exists {
        /// The journal that exists.
        path: PathBuf,
        /// The id.
        id: String,
    },
    /// A caller-chosen session id is not a safe file name.
    #[error(transparent)]
    InvalidId(#[from] InvalidSessionId),
    /// The layout could not be resolved.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The journal could not be opened: corruption (with its offset and evidence), a
    /// torn tail in strict mode, an unsupported format version (found and supported),
    /// not a journal, an I/O error. Match the journal's own error for the case.
    #[error(transparent)]
    Journal(session_journal::OpenError),
    /// The journal could not be created.
    #[error(transparent)]
    Create(session_journal::CreateError),
    /// The derived index could not be opened or rebuilt.
    #[error(transparent)]
    Index(#[from] session_index::IndexError),
    /// The listing catalog could not forget a deleted session.
    #[error(transparent)]
    Catalog(#[from] session_index::ForgetError),
    /// The imports registry could not be rewritten.
    #[error(transparent)]
    Registry(#[from] session_import::registry::RegistryError),
    /// Writing the new session failed.
    #[error(transparent)]
    Append(#[from] Box<AppendError>),
    /// Reading the source session failed.
    #[error(transparent)]
    Read(#[from] Box<ReadError>),
    /// The legacy import failed.
    #[error(transparent)]
    Import(#[from] session_import::ImportError),
    /// Listing the sessions directory failed.
    #[error(transparent)]
    List(#[from] session_index::ListError),
    /// A file-system operation failed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

impl From<AppendError> for OpenError {
    fn from(e: AppendError) -> Self {
        OpenError::Append(Box::new(e))
    }
}

impl From<ReadError> for OpenError {
    fn from(e: ReadError) -> Self {
        OpenError::Read(Box::new(e))
    }
}

pub(crate) fn journal_open_error(e: session_journal::OpenError) -> OpenError {
    use session_journal::OpenError as J;
    match e {
        J::Locked {
            path,
            lock_path,
            holder,
        } => OpenError::Locked {
            path,
            lock_path,
            holder,
        },
        J::NotFound { path } => OpenError::NotFound { path },
        J::Replaced { path } => OpenError::Replaced { path },
        J::NotAJournal {
            path,
            legacy_jsonl: true,
            ..
        } => OpenError::LegacyJsonl { path },
        other => OpenError::Journal(other),
    }
}

pub(crate) fn io(
    path: impl Into<PathBuf>,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> OpenError {
    let path = path.into();
    move |source| OpenError::Io { path, op, source }
}

/// How an append (or a leaf move) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The entry named (a label target, a branch point) does not exist.
    #[error("{session}: entry {id} not found")]
    EntryNotFound {
        /// The session: its journal, or its id when it has none.
        session: String,
        /// The id.
        id: String,
    },
    /// The session is a read-only view of a journal.
    #[error("{path}: read-only view: appends are refused (open the session for writing)")]
    ReadOnly {
        /// The journal.
        path: PathBuf,
    },
    /// The entry could not be serialized or has an invalid shape.
    #[error("invalid entry: {reason}")]
    InvalidEntry {
        /// What is wrong.
        reason: String,
    },
    /// An entry of a known type does not fit its type's model (a `message` entry
    /// without its `message`): what is appended must be readable as its type.
    #[error("invalid entry: {source}")]
    WrongShape {
        /// How it does not fit.
        #[source]
        source: session_types::ParseError,
    },
    /// The journal refused the frame (the writer is then poisoned).
    #[error(transparent)]
    Journal(#[from] session_journal::AppendError),
    /// The index refused the frame (it no longer follows the journal).
    #[error(transparent)]
    Index(#[from] session_index::ObserveError),
}

/// Which read limit was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// `max_source_entries`
    SourceEntries,
    /// `max_source_bytes`
    SourceBytes,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limit::SourceEntries => "source entries",
            Limit::SourceBytes => "source bytes",
        })
    }
}

/// How a captured read of an owned session (or a read of a journal) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The read needs more source entries or bytes than its limits allow. Nothing is
    /// returned: a read is complete or fails.
    #[error("{session}: read limit exceeded: {limit} limit is {limit_value}, the read needs {}{needed}", if *.exact { "" } else { "at least " })]
    LimitExceeded {
        /// The session: its journal, or its id when it has none.
        session: String,
        /// Which limit.
        limit: Limit,
        /// The limit's value.
        limit_value: u64,
        /// What the read needs (exactly, or at least: see `exact`).
        needed: u64,
        /// Whether `needed` is the read's exact need (known from the index before
        /// reading) or a lower bound (the read stopped when it crossed the limit).
        exact: bool,
    },
    /// No entry with this id (in the read's capture).
    #[error("{session}: entry {id} not found")]
    EntryNotFound {
        /// The session: its journal, or its id when it has none.
        session: String,
        /// The id.
        id: String,
    },
    /// A frame could not be read or did not verify (corruption, with its offset).
    #[error(transparent)]
    Journal(#[from] session_journal::ReadError),
    /// A frame is not the one the index recorded at its offset.
    #[error(
        "{path}: frame at offset {offset} has seq {found_seq}, the index expected seq {expected_seq}"
    )]
    IndexMismatch {
        /// The journal.
        path: PathBuf,
        /// The frame offset.
        offset: u64,
        /// What the index recorded.
        expected_seq: u64,
        /// What the frame holds.
        found_seq: u64,
    },
    /// A record could not be parsed.
    #[error("{path}: entry at offset {offset}: {source}")]
    Parse {
        /// The journal.
        path: PathBuf,
        /// The frame offset.
        offset: u64,
        /// The parse error.
        #[source]
        source: session_types::ParseError,
    },
    /// An entry frame holds a session header record.
    #[error("{path}: entry at offset {offset}: a session header where an entry belongs")]
    NotAnEntry {
        /// The journal.
        path: PathBuf,
        /// The frame offset.
        offset: u64,
    },
    /// The parent links of the path form a cycle.
    #[error("parent cycle at entry {id}")]
    Cycle {
        /// An entry on the cycle.
        id: String,
    },
    /// Context building failed (for a reason other than a load error, which is
    /// returned as itself, or a cycle).
    #[error(transparent)]
    Context(Box<session_context::ContextError<ReadError>>),
    /// Provenance could not be read.
    #[error(transparent)]
    Retention(#[from] session_import::RetentionError),
}

/// A path's file name, for messages that already name its directory.
pub(crate) fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
