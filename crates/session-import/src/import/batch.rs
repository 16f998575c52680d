//! Frames queued and appended together, the last one kept back until the caller
//! synced the rest, so that every entry frame is covered by a later frame's
//! `synced_to`.

use std::path::Path;

use session_journal::{Durability, FrameKind, NewFrame, Tag, Writer};

use crate::error::ImportError;

/// Frames waiting to be appended together (one write; the sync comes at the end).
#[derive(Default)]
pub(super) struct Batch {
    pub(super) bytes: Vec<u8>,
    frames: Vec<(FrameKind, Tag, usize, usize)>,
}

impl Batch {
    pub(super) fn push(&mut self, kind: FrameKind, tag: Tag, payload: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        self.frames.push((kind, tag, start, self.bytes.len()));
    }

    /// Frames queued.
    pub(super) fn len(&self) -> usize {
        self.frames.len()
    }

    /// Appends the frames `range` of the batch with one write.
    fn append(
        &self,
        writer: &mut Writer,
        tmp: &Path,
        line: u64,
        range: std::ops::Range<usize>,
        durability: Durability,
    ) -> Result<(), ImportError> {
        if range.is_empty() {
            return Ok(());
        }
        let frames: Vec<NewFrame<'_>> = self.frames[range]
            .iter()
            .map(|&(kind, tag, s, e)| NewFrame::new(kind, &self.bytes[s..e]).with_tag(tag))
            .collect();
        writer
            .append_batch(&frames, durability)
            .map_err(|source| ImportError::Append {
                path: tmp.to_path_buf(),
                line,
                source,
            })?;
        Ok(())
    }

    /// Writes every queued frame but the last, which stays queued: the journal's last
    /// frame must be written after a sync (see [`Batch::finish`]).
    pub(super) fn flush_all_but_last(
        &mut self,
        writer: &mut Writer,
        tmp: &Path,
        line: u64,
    ) -> Result<(), ImportError> {
        let Some(&(kind, tag, s, e)) = self.frames.last() else {
            return Ok(());
        };
        self.append(
            writer,
            tmp,
            line,
            0..self.frames.len() - 1,
            Durability::Buffered,
        )?;
        let last = self.bytes[s..e].to_vec();
        self.bytes.clear();
        self.frames.clear();
        self.push(kind, tag, &last);
        Ok(())
    }

    /// Writes the frame [`Batch::flush_all_but_last`] kept back (without syncing it:
    /// the caller syncs, then seals the journal).
    ///
    /// Why every frame needs a later one: a frame's `synced_to` records what a
    /// completed sync covered, and recovery treats damage as corruption of durable
    /// data (never as a torn tail to cut) only when a later frame's `synced_to` covers
    /// it (`docs/format.md` §2.5). Written in one batch and synced once, every frame of
    /// an import would be covered by none, so one flipped bit in its first entry would
    /// make the next open cut the whole session as a "torn tail". The journal's seal,
    /// written after the sync, covers every frame, the last one included (§2.8).
    pub(super) fn write_last(
        &mut self,
        writer: &mut Writer,
        tmp: &Path,
        line: u64,
    ) -> Result<(), ImportError> {
        let n = self.frames.len();
        self.append(writer, tmp, line, 0..n, Durability::Buffered)?;
        self.bytes.clear();
        self.frames.clear();
        Ok(())
    }
}
