//! One error type per operation; every variant about a file names the path and, where
//! it applies, the byte offset and what was expected versus found.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::types::{JournalId, Offset, Seq};

/// Why the bytes at an offset are not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameFault {
    /// Fewer bytes remain than the frame needs.
    Truncated {
        /// Bytes the frame needs from its offset.
        needed: u64,
        /// Bytes available from its offset.
        available: u64,
    },
    /// The first 4 bytes are not the frame magic (zeros, garbage, or a torn write).
    BadMagic {
        /// The bytes found.
        found: [u8; 4],
    },
    /// The header check does not match (damaged header, or a frame from another
    /// journal or another offset).
    HeaderCheck {
        /// Computed from the bytes at this offset.
        expected: [u8; 4],
        /// Stored in the frame.
        found: [u8; 4],
    },
    /// A valid header of a frame version this reader does not know.
    UnsupportedVersion {
        /// The version byte found.
        found: u8,
    },
    /// A valid header with flag bits this reader does not know.
    UnknownFlags {
        /// The flags found.
        found: u16,
    },
    /// A valid header with a kind reserved to a newer journal version.
    ReservedKind {
        /// The kind byte found.
        found: u8,
    },
    /// A header frame (kind 1) where an entry belongs, or an entry where the header
    /// frame belongs.
    MisplacedKind {
        /// The kind byte found.
        found: u8,
    },
    /// A payload length of zero (never written by this crate).
    ZeroLength,
    /// A payload length above the journal's maximum, rejected before allocating.
    TooLong {
        /// The length claimed.
        len: u32,
        /// The journal's maximum.
        max: u32,
    },
    /// The body check does not match (damaged payload or header fields).
    BodyCheck {
        /// Computed from the bytes at this offset.
        expected: [u8; 8],
        /// Stored in the frame.
        found: [u8; 8],
    },
    /// The padding after the payload is not zero.
    NonZeroPadding,
    /// A valid frame whose sequence number breaks the +1 rule.
    SeqOutOfOrder {
        /// The sequence number that should follow.
        expected: Seq,
        /// The one found.
        found: Seq,
    },
    /// A valid frame whose `synced_to` is past its own offset or below its
    /// predecessor's (a seal's must equal its own offset).
    BadSyncedTo {
        /// The value found.
        found: Offset,
    },
    /// A seal with valid checks that is not the seal belonging at its offset (its time,
    /// tag or payload does not match the frames before it).
    SealMismatch,
    /// The file ends with a seal-sized tail that is the seal expected there with a few
    /// bits flipped: a synced seal damaged in place, not a torn write.
    DamagedSeal {
        /// How many bits differ from the expected seal.
        bits: u32,
    },
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl fmt::Display for FrameFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameFault::Truncated { needed, available } => {
                write!(f, "frame needs {needed} bytes, {available} remain")
            }
            FrameFault::BadMagic { found } => {
                write!(f, "expected frame magic 894a4631, found {}", hex(found))
            }
            FrameFault::HeaderCheck { expected, found } => write!(
                f,
                "header check mismatch: expected {}, found {}",
                hex(expected),
                hex(found)
            ),
            FrameFault::UnsupportedVersion { found } => {
                write!(f, "frame version {found} is not supported (supported: 1)")
            }
            FrameFault::UnknownFlags { found } => {
                write!(f, "unknown frame flags {found:#06x} (supported: 0x0000)")
            }
            FrameFault::ReservedKind { found } => {
                write!(
                    f,
                    "frame kind {found:#04x} is reserved to a newer journal version"
                )
            }
            FrameFault::MisplacedKind { found } => {
                write!(f, "frame kind {found:#04x} is not allowed at this position")
            }
            FrameFault::ZeroLength => write!(f, "payload length 0 is never written"),
            FrameFault::TooLong { len, max } => {
                write!(f, "payload length {len} exceeds the maximum {max}")
            }
            FrameFault::BodyCheck { expected, found } => write!(
                f,
                "body check mismatch: expected {}, found {}",
                hex(expected),
                hex(found)
            ),
            FrameFault::NonZeroPadding => write!(f, "padding after the payload is not zero"),
            FrameFault::SeqOutOfOrder { expected, found } => {
                write!(f, "expected seq {expected}, found {found}")
            }
            FrameFault::BadSyncedTo { found } => {
                write!(
                    f,
                    "synced_to {found} is inconsistent with the frame's position"
                )
            }
            FrameFault::SealMismatch => write!(
                f,
                "seal frame does not match the frames before it (time, tag or payload)"
            ),
            FrameFault::DamagedSeal { bits } => write!(
                f,
                "the journal's closing seal has {bits} flipped bit(s) (damaged after it was synced)"
            ),
        }
    }
}

impl FrameFault {
    /// True for a well-formed frame written by a newer version of this crate.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self,
            FrameFault::UnsupportedVersion { .. }
                | FrameFault::UnknownFlags { .. }
                | FrameFault::ReservedKind { .. }
        )
    }

    /// True for a frame that passed both checks yet breaks a sequencing rule: a torn
    /// write cannot produce one, so it is corruption (or tampering) outright.
    pub fn is_sequencing(&self) -> bool {
        matches!(
            self,
            FrameFault::SeqOutOfOrder { .. }
                | FrameFault::BadSyncedTo { .. }
                | FrameFault::SealMismatch
        )
    }
}

/// Who holds a writer lock, as recorded in the lock file (diagnostics only).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockHolder {
    /// The holder's process id, if recorded.
    pub pid: Option<u32>,
    /// The holder's host name, if recorded.
    pub host: Option<String>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.pid, &self.host) {
            (Some(pid), Some(host)) => write!(f, "pid {pid} on {host}"),
            (Some(pid), None) => write!(f, "pid {pid} on an unknown host"),
            (None, Some(host)) => write!(f, "an unknown process on {host}"),
            (None, None) => write!(f, "an unknown process"),
        }
    }
}

/// How [`Writer::create`](crate::Writer::create) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CreateError {
    /// Another writer holds the lock.
    #[error("{path}: locked by {holder} (holder record {})", crate::error::file_name(.lock_path))]
    Locked {
        /// The journal.
        path: PathBuf,
        /// The lock file.
        lock_path: PathBuf,
        /// What the lock file says about the holder.
        holder: LockHolder,
    },
    /// A file already exists at the path.
    #[error("{path}: a file already exists")]
    Exists {
        /// The journal.
        path: PathBuf,
    },
    /// The options are out of range.
    #[error("{path}: {reason}")]
    InvalidOptions {
        /// The journal.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An I/O error.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The operation that failed.
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

/// How opening a journal (for writing or reading) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Another writer holds the lock.
    #[error("{path}: locked by {holder} (holder record {})", crate::error::file_name(.lock_path))]
    Locked {
        /// The journal.
        path: PathBuf,
        /// The lock file.
        lock_path: PathBuf,
        /// What the lock file says about the holder.
        holder: LockHolder,
    },
    /// No file at the path.
    #[error("{path}: no such journal")]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The path stopped naming the journal while it was being locked: the file was
    /// deleted, or another file was renamed over it. Nothing was written; opening
    /// again takes whatever the path names now.
    #[error(
        "{path}: the journal was deleted or replaced while it was being opened; nothing was written"
    )]
    Replaced {
        /// The journal.
        path: PathBuf,
    },
    /// The file does not start with the journal signature.
    #[error("{path}: not a native journal: expected signature 894a4e4c0d0a1a0a at offset 0, found {found}{}", if *.legacy_jsonl { " (looks like legacy JSONL: import it instead)" } else { "" })]
    NotAJournal {
        /// The path.
        path: PathBuf,
        /// The first bytes found, in hex.
        found: String,
        /// The file starts like JSON text (`{` or whitespace): a legacy session that must
        /// be imported, never opened natively.
        legacy_jsonl: bool,
    },
    /// A crash during creation left a journal without a complete header frame and with
    /// nothing after it; no entry can have been acknowledged.
    #[error("{path}: uninitialised journal ({len} bytes, no complete header frame)")]
    Uninitialized {
        /// The path.
        path: PathBuf,
        /// The file's length.
        len: u64,
    },
    /// Written by a newer format version.
    #[error(
        "{path}: at offset {offset}: format version {found} is not supported (supported: {supported})"
    )]
    UnsupportedVersion {
        /// The path.
        path: PathBuf,
        /// Where the version was found.
        offset: Offset,
        /// The version found.
        found: String,
        /// The versions this crate reads.
        supported: String,
    },
    /// The header frame's payload is not a valid journal header.
    #[error("{path}: at offset {offset}: invalid journal header: {reason}")]
    BadHeader {
        /// The path.
        path: PathBuf,
        /// The header frame's offset.
        offset: Offset,
        /// What is wrong.
        reason: String,
    },
    /// Durable data is damaged: an invalid frame is followed by a valid later frame
    /// that proves the damaged bytes had been synced. Nothing is repaired; use
    /// [`salvage`](crate::salvage()) to export the intact frames.
    #[error("{path}: corrupt frame at offset {offset} (after seq {last_good_seq}): {fault}{}", match .evidence { Some((o, s)) => format!("; frame seq {s} at offset {o} proves it was durable"), None => String::new() })]
    Corrupt {
        /// The path.
        path: PathBuf,
        /// The damaged frame's offset.
        offset: Offset,
        /// The last valid frame's seq before it.
        last_good_seq: Seq,
        /// Why the frame is invalid.
        fault: FrameFault,
        /// A later valid frame (offset, seq) that proves durability, if one was found.
        evidence: Option<(Offset, Seq)>,
    },
    /// Bytes of another journal follow the valid prefix (e.g. `cat a b > c`).
    #[error(
        "{path}: at offset {offset}: foreign journal data follows the valid frames (found the journal signature at offset {signature_at})"
    )]
    ForeignData {
        /// The path.
        path: PathBuf,
        /// Where the valid prefix ends.
        offset: Offset,
        /// Where a journal signature was found.
        signature_at: Offset,
    },
    /// The invalid tail is longer than any torn write could be and is not all zeros;
    /// it is not truncated automatically.
    #[error(
        "{path}: at offset {offset}: {len} bytes of invalid non-zero tail exceed the repair limit {limit}"
    )]
    SuspiciousTail {
        /// The path.
        path: PathBuf,
        /// Where the valid prefix ends.
        offset: Offset,
        /// Invalid bytes after it.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// In [`RecoveryMode::Strict`](crate::RecoveryMode::Strict): the file has an
    /// invalid tail.
    #[error(
        "{path}: at offset {offset}: invalid tail of {len} bytes ({fault}); strict mode repairs nothing"
    )]
    TornTail {
        /// The path.
        path: PathBuf,
        /// Where the valid prefix ends.
        offset: Offset,
        /// Invalid bytes after it.
        len: u64,
        /// Why the frame there is invalid.
        fault: FrameFault,
    },
    /// A valid frame that this version cannot interpret (written by a newer writer);
    /// the journal is not modified.
    #[error("{path}: at offset {offset}: {fault}")]
    Unsupported {
        /// The path.
        path: PathBuf,
        /// The frame's offset.
        offset: Offset,
        /// What is not supported.
        fault: FrameFault,
    },
    /// An I/O error.
    #[error("{path}: {op} failed{}: {source}", match .offset { Some(o) => format!(" at offset {o}"), None => String::new() })]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The operation that failed.
        op: &'static str,
        /// The offset, if the operation had one.
        offset: Option<Offset>,
        /// The OS error.
        source: io::Error,
    },
}

/// How an append (or a sync) failed. After any I/O error the writer is poisoned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// An earlier I/O error poisoned the writer; reopen it to recover.
    #[error(
        "{path}: writer is poisoned by an earlier i/o error at offset {offset}; reopen to recover"
    )]
    Poisoned {
        /// The journal.
        path: PathBuf,
        /// Where the failed write or sync was.
        offset: Offset,
    },
    /// The payload exceeds the journal's maximum.
    #[error("{path}: payload of {len} bytes exceeds the maximum {max}")]
    TooLarge {
        /// The journal.
        path: PathBuf,
        /// The payload's length.
        len: u64,
        /// The journal's maximum.
        max: u32,
    },
    /// The kind is reserved to the journal (below `0x10`, e.g. the seal): callers
    /// append only their own kinds.
    #[error("{path}: frame kind {kind:#04x} is reserved to the journal")]
    ReservedKind {
        /// The journal.
        path: PathBuf,
        /// The kind asked for.
        kind: u8,
    },
    /// Empty payloads are not allowed (a zero length never parses as a frame).
    #[error("{path}: empty payload (a payload needs at least 1 byte)")]
    Empty {
        /// The journal.
        path: PathBuf,
    },
    /// The write or sync failed; the writer is now poisoned and nothing of this call
    /// counts as written.
    #[error("{path}: {op} failed at offset {offset}: {source}")]
    Io {
        /// The journal.
        path: PathBuf,
        /// The operation that failed.
        op: &'static str,
        /// Where it was writing.
        offset: Offset,
        /// The OS error.
        source: io::Error,
    },
}

/// How reading a frame failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The bytes at the offset are not a valid frame of this journal.
    #[error("{path}: invalid frame at offset {offset}: {fault}")]
    Invalid {
        /// The journal.
        path: PathBuf,
        /// The offset read.
        offset: Offset,
        /// Why.
        fault: FrameFault,
    },
    /// The offset is outside the readable range (before the first entry, past the
    /// bound, or not 8-byte aligned).
    #[error(
        "{path}: offset {offset} is outside the readable range [{start}, {bound}) or misaligned"
    )]
    OutOfRange {
        /// The journal.
        path: PathBuf,
        /// The offset asked for.
        offset: Offset,
        /// The first entry offset.
        start: Offset,
        /// The bound.
        bound: Offset,
    },
    /// The capture bounding an iteration belongs to another journal.
    #[error("{path}: capture of journal {found} used on journal {expected}")]
    ForeignCapture {
        /// The journal.
        path: PathBuf,
        /// This journal's id.
        expected: JournalId,
        /// The capture's journal id.
        found: JournalId,
    },
    /// An I/O error.
    #[error("{path}: read failed at offset {offset}: {source}")]
    Io {
        /// The journal.
        path: PathBuf,
        /// The offset read.
        offset: Offset,
        /// The OS error.
        source: io::Error,
    },
}

/// A path's file name, for messages that already name its directory.
pub(crate) fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}
