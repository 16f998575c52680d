//! Queries of the index itself (what it covers, the witness it hands the writer) and
//! loading one entry's frame through it. The session's own queries (tree, labels,
//! name, …) are [`Derived`](crate::Derived)'s, which [`Index`] dereferences to.

use std::path::Path;

use session_journal::{Frame, JournalId, Offset, Reader, Seq};
use session_types::Record;

use super::Index;
use crate::derived::EntryIndex;
use crate::error::LoadError;

impl Index {
    /// The journal this index describes.
    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// The journal's id.
    pub fn journal_id(&self) -> JournalId {
        self.journal_id
    }

    /// Journal bytes covered (the end of the last indexed frame).
    pub fn covered_len(&self) -> Offset {
        Offset(self.derived.state.covered_len)
    }

    /// Seq of the last indexed frame (0: none).
    pub fn covered_seq(&self) -> Seq {
        Seq(self.derived.state.covered_seq)
    }

    /// The prefix this index covers, as a claim the journal's writer can check in
    /// O(1) and then verify only what follows (`session_journal::OpenOptions::trusted`).
    /// `None` when no entry frame is covered.
    pub fn witness(&self) -> Option<session_journal::Witness> {
        let (offset, check) = self.derived.state.last_frame?;
        Some(session_journal::Witness {
            frame: Offset(offset),
            seq: Seq(self.derived.state.covered_seq),
            body_check: session_journal::BodyCheck(check),
            end: Offset(self.derived.state.covered_len),
        })
    }

    /// Reads and verifies one entry's frame through `reader` and parses it.
    pub fn load(&self, reader: &Reader, i: EntryIndex) -> Result<Record, LoadError> {
        let r = self
            .derived
            .state
            .recs
            .get(i.0 as usize)
            .ok_or_else(|| LoadError::NotFound {
                id: format!("#{}", i.0),
            })?;
        let frame: Frame = reader.read_frame_at(Offset(r.offset))?;
        if frame.info.seq.0 != r.seq || frame.info.body_check.0 != r.body_check {
            return Err(LoadError::Stale {
                path: self.journal.clone(),
                offset: Offset(r.offset),
                expected: Seq(r.seq),
                found: frame.info.seq,
            });
        }
        Record::read_payload(&frame.payload).map_err(|source| LoadError::Parse {
            path: self.journal.clone(),
            offset: Offset(r.offset),
            source,
        })
    }
}
