//! What [`Index::open_or_rebuild`](super::Index::open_or_rebuild) reports: fresh,
//! caught up or rebuilt, and why.

use std::fmt;

use session_journal::{JournalId, Offset};

/// Why an index was rebuilt from the whole journal.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebuildReason {
    /// No sidecar exists.
    Missing,
    /// The sidecar could not be read.
    Unreadable {
        /// The I/O error.
        detail: String,
    },
    /// The sidecar is damaged (truncated, bit-flipped, inconsistent).
    Corrupt {
        /// What check failed.
        detail: String,
    },
    /// The sidecar has a format version this build does not read.
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// The version supported.
        supported: u32,
    },
    /// The sidecar belongs to another journal.
    ForeignJournal {
        /// This journal's id.
        expected: JournalId,
        /// The sidecar's journal id.
        found: JournalId,
    },
    /// The journal is shorter than the bytes the sidecar covered.
    JournalShorter {
        /// Bytes the sidecar covered.
        covered: u64,
        /// The journal's length.
        actual: u64,
    },
    /// The last covered frame does not match the sidecar's witness (journal rewritten
    /// or replaced).
    WitnessMismatch {
        /// The frame offset checked.
        offset: u64,
        /// What differed.
        detail: String,
    },
}

impl fmt::Display for RebuildReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("index missing"),
            Self::Unreadable { detail } => write!(f, "index unreadable: {detail}"),
            Self::Corrupt { detail } => write!(f, "index corrupt: {detail}"),
            Self::UnsupportedVersion { found, supported } => {
                write!(
                    f,
                    "index version {found} unsupported (supported: {supported})"
                )
            }
            Self::ForeignJournal { expected, found } => {
                write!(f, "index belongs to journal {found}, expected {expected}")
            }
            Self::JournalShorter { covered, actual } => {
                write!(f, "journal is {actual} bytes, index covered {covered}")
            }
            Self::WitnessMismatch { offset, detail } => {
                write!(f, "last covered frame at offset {offset} differs: {detail}")
            }
        }
    }
}

/// How the index was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexStatus {
    /// The sidecar was valid and covered the whole journal.
    Fresh,
    /// The sidecar was valid; the tail after it was read.
    CaughtUp {
        /// Journal bytes of the tail that were decoded.
        bytes_read: u64,
        /// Frames added.
        frames: u64,
    },
    /// The sidecar was unusable; the whole journal was read.
    Rebuilt {
        /// Why.
        reason: RebuildReason,
    },
}

/// What [`Index::open_or_rebuild`](super::Index::open_or_rebuild) did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexReport {
    /// Fresh, caught up or rebuilt.
    pub status: IndexStatus,
    /// Journal bytes the saved sidecar now covers (`None`: nothing was saved).
    pub saved_coverage: Option<u64>,
    /// Why saving the sidecar failed, if it did (the index is still usable).
    pub save_error: Option<String>,
    /// Where an invalid frame ended the readable journal early, if one did.
    pub tail_stop: Option<Offset>,
    /// The sidecar's last covered frame as this open verified it (a usable sidecar
    /// covering at least one frame): what a writer's open of the same file need not
    /// read again (`session_journal::Known::with_verified_frame`).
    pub witness_frame: Option<session_journal::FrameInfo>,
}
