//! Captures: a committed length (and sequence number) a reader is bounded by.

use crate::types::{JournalId, Offset, Seq};

/// A committed prefix of a journal: every frame below `len` was completely written when
/// the capture was taken, so a reader bounded by it sees a consistent prefix — never a
/// later frame, never a partial one — however the owner keeps appending.
///
/// [`Writer::capture`](crate::Writer::capture) covers everything written (which
/// survives a process crash); [`Writer::durable_capture`](crate::Writer::durable_capture)
/// covers only what a sync made durable (what an index may claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capture {
    /// The journal the capture belongs to.
    pub journal_id: JournalId,
    /// The end of the last captured frame.
    pub len: Offset,
    /// The seq of the last captured frame (0: no entries).
    pub last_seq: Seq,
}
