//! Frames queued and appended together, the last one kept back until the caller
//! synced the rest, so that every entry frame is covered by a later frame's
//! `synced_to`.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use session_index::{Index, Scanned};
use session_journal::{Appended, Durability, FrameKind, NewFrame, Tag, Writer};

use crate::error::ImportError;

/// Frames waiting to be appended together (one write; the sync comes at the end).
#[derive(Default)]
pub(super) struct Batch {
    pub(super) bytes: Vec<u8>,
    frames: Vec<Queued>,
}

/// One queued frame: its kind and tag, its payload's range of the batch's bytes, and
/// the scan of the payload's text when the import read it in one pass (the index
/// then reads the scan instead of parsing the payload again).
#[derive(Clone, Copy)]
struct Queued {
    kind: FrameKind,
    tag: Tag,
    start: usize,
    end: usize,
    scanned: Option<Scanned>,
}

impl Batch {
    pub(super) fn push(&mut self, kind: FrameKind, tag: Tag, payload: &[u8]) {
        self.push_scanned(kind, tag, payload, None);
    }

    /// [`push`](Self::push) of a payload whose text `scanned` read.
    pub(super) fn push_scanned(
        &mut self,
        kind: FrameKind,
        tag: Tag,
        payload: &[u8],
        scanned: Option<Scanned>,
    ) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        self.frames.push(Queued {
            kind,
            tag,
            start,
            end: self.bytes.len(),
            scanned,
        });
    }

    /// Frames queued.
    pub(super) fn len(&self) -> usize {
        self.frames.len()
    }

    /// Appends the frames `range` of the batch with one write, and feeds them to the
    /// journal's index as appended (an index that cannot take them is dropped: no
    /// sidecar is saved, and the first open rebuilds it).
    fn append(
        &self,
        out: &mut Out,
        tmp: &Path,
        line: u64,
        range: std::ops::Range<usize>,
        durability: Durability,
    ) -> Result<(), ImportError> {
        let appended = self.write(&mut out.writer, tmp, line, range.clone(), durability)?;
        self.observe(&mut out.index, range, &appended);
        Ok(())
    }

    /// Appends the frames `range` of the batch with one write: where each went.
    fn write(
        &self,
        writer: &mut Writer,
        tmp: &Path,
        line: u64,
        range: std::ops::Range<usize>,
        durability: Durability,
    ) -> Result<Vec<Appended>, ImportError> {
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let frames: Vec<NewFrame<'_>> = self.frames[range]
            .iter()
            .map(|q| NewFrame::new(q.kind, &self.bytes[q.start..q.end]).with_tag(q.tag))
            .collect();
        writer
            .append_batch(&frames, durability)
            .map_err(|source| ImportError::Append {
                path: tmp.to_path_buf(),
                line,
                source,
            })
    }

    /// Feeds the frames `range` of the batch, appended as `appended` says, to the
    /// journal's index (dropped if it cannot take them).
    fn observe(
        &self,
        index: &mut Option<Index>,
        range: std::ops::Range<usize>,
        appended: &[Appended],
    ) {
        let Some(ix) = index else {
            return;
        };
        let observed = self.frames[range]
            .iter()
            .zip(appended)
            .try_for_each(|(q, a)| {
                let payload = &self.bytes[q.start..q.end];
                match &q.scanned {
                    Some(scanned) => ix.observe_scanned(q.kind, a, payload, scanned),
                    None => ix.observe(q.kind, a, payload),
                }
            });
        if observed.is_err() {
            *index = None;
        }
    }

    /// Writes every queued frame but the last, which stays queued: the journal's last
    /// frame must be written after a sync (see [`Batch::finish`]).
    pub(super) fn flush_all_but_last(
        &mut self,
        out: &mut Out,
        tmp: &Path,
        line: u64,
    ) -> Result<(), ImportError> {
        let Some(&last) = self.frames.last() else {
            return Ok(());
        };
        self.append(
            out,
            tmp,
            line,
            0..self.frames.len() - 1,
            Durability::Buffered,
        )?;
        let payload = self.bytes[last.start..last.end].to_vec();
        self.bytes.clear();
        self.frames.clear();
        self.push_scanned(last.kind, last.tag, &payload, last.scanned);
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
        out: &mut Out,
        tmp: &Path,
        line: u64,
    ) -> Result<(), ImportError> {
        let n = self.frames.len();
        self.append(out, tmp, line, 0..n, Durability::Buffered)?;
        self.bytes.clear();
        self.frames.clear();
        Ok(())
    }
}

/// A temporary journal's writer, and the index built from the frames as they are
/// appended (`None` once building it failed).
pub(super) struct Out {
    pub(super) writer: Writer,
    pub(super) index: Option<Index>,
}

/// Where full batches go: appended on this thread, or — for a large source — handed to
/// a thread that owns the writer, so that the frames' checks and the kernel's copy of
/// the bytes overlap the parse of the next batch (at most two batches in flight to
/// it). The writing thread hands each batch back with where its frames went, and this
/// thread feeds them to the index before it reuses the batch: the index (which no
/// longer parses the records the import read) takes the parse's idle time while it
/// waits for the writer, never the writer's. Either way one writer appends the
/// batches in order: the same writes as on one thread, and the same index.
pub(super) enum Sink {
    /// The writer (taken by [`Sink::finish`]).
    Inline(Option<Box<Out>>),
    Thread {
        batches: Option<mpsc::SyncSender<(Batch, u64)>>,
        /// Batches appended, with where their frames went, in order (as many as are
        /// in flight at most: a new batch is made only when none came back).
        written: mpsc::Receiver<(Batch, Vec<Appended>)>,
        index: Box<Option<Index>>,
        thread: Option<std::thread::JoinHandle<Result<Writer, ImportError>>>,
        tmp: PathBuf,
    },
}

/// How much a large import writes between two syncs of its temporary journal while it
/// writes it (the writer's own background sync, `Writer::sync_in_background`): the
/// disk then writes the journal back as the import goes, and the sync that makes it
/// durable at the end waits for the last few MiB instead of all of it (75 ms of a 100k
/// import's 224 MB otherwise). The journal's bytes and its frames are the same; a
/// failed background sync poisons the writer, so the next append or the final sync
/// fails the import with that sync's error.
const EARLY_SYNC_BYTES: u64 = 16 << 20;

impl Sink {
    /// A sink for `out` (writing the temporary journal `tmp`): a writing thread of its
    /// own when `background`.
    pub(super) fn new(out: Out, tmp: &Path, background: bool) -> Result<Self, ImportError> {
        if !background {
            return Ok(Self::Inline(Some(Box::new(out))));
        }
        let Out { writer, index } = out;
        let (batches, rx) = mpsc::sync_channel::<(Batch, u64)>(1);
        let (give_back, written) = mpsc::channel::<(Batch, Vec<Appended>)>();
        let path = tmp.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("import-write".to_owned())
            .spawn(move || {
                let mut writer = writer;
                let mut synced_to = 0u64;
                for (batch, line) in rx {
                    let n = batch.frames.len();
                    let appended =
                        batch.write(&mut writer, &path, line, 0..n, Durability::Buffered)?;
                    let end = appended.last().map_or(0, |last| last.offset.0 + last.len);
                    // At most one runs at a time: one still running is not waited for,
                    // the next batch asks again.
                    if end.saturating_sub(synced_to) >= EARLY_SYNC_BYTES
                        && writer
                            .sync_in_background()
                            .map_err(|source| ImportError::Append {
                                path: path.clone(),
                                line,
                                source,
                            })?
                    {
                        synced_to = end;
                    }
                    // The parse may be gone (an error): the batch is then just dropped.
                    let _ = give_back.send((batch, appended));
                }
                Ok(writer)
            })
            .map_err(|source| ImportError::Io {
                path: tmp.to_path_buf(),
                op: "start the writing thread",
                source,
            })?;
        Ok(Self::Thread {
            batches: Some(batches),
            written,
            index: Box::new(index),
            thread: Some(thread),
            tmp: tmp.to_path_buf(),
        })
    }

    /// [`Batch::flush_all_but_last`] through the sink: every frame of `batch` but the
    /// last is appended (here or by the writing thread); the last stays in `batch`.
    pub(super) fn flush_all_but_last(
        &mut self,
        batch: &mut Batch,
        tmp: &Path,
        line: u64,
    ) -> Result<(), ImportError> {
        match self {
            Self::Inline(Some(out)) => batch.flush_all_but_last(out, tmp, line),
            Self::Inline(None) => Err(sink_gone(Some(tmp))),
            Self::Thread {
                batches,
                written,
                index,
                ..
            } => {
                let Some(&last) = batch.frames.last() else {
                    return Ok(());
                };
                let mut next = observe_written(written.try_iter(), &mut *index).unwrap_or_default();
                next.push_scanned(
                    last.kind,
                    last.tag,
                    &batch.bytes[last.start..last.end],
                    last.scanned,
                );
                let mut full = std::mem::replace(batch, next);
                full.frames.pop();
                let sent = batches.as_ref().map(|b| b.send((full, line)));
                match sent {
                    Some(Ok(())) => Ok(()),
                    // The thread stopped: its error says why.
                    _ => self.finish().map(drop),
                }
            }
        }
    }

    /// The writer back, and the index fed every batch, once every batch handed over is
    /// appended; the first append error otherwise.
    pub(super) fn finish(&mut self) -> Result<Out, ImportError> {
        match self {
            Self::Inline(out) => out.take().map(|o| *o).ok_or_else(|| sink_gone(None)),
            Self::Thread {
                batches,
                written,
                index,
                thread,
                tmp,
            } => {
                drop(batches.take());
                let joined = thread.take().map(|t| t.join());
                // Every batch it appended is back.
                observe_written(written.try_iter(), &mut *index);
                match joined {
                    Some(Ok(result)) => result.map(|writer| Out {
                        writer,
                        index: index.take(),
                    }),
                    _ => Err(sink_gone(Some(tmp.as_path()))),
                }
            }
        }
    }
}

/// Feeds the batches the writing thread appended to the index, in order; the last one
/// back, emptied, for reuse.
fn observe_written(
    written: impl Iterator<Item = (Batch, Vec<Appended>)>,
    index: &mut Option<Index>,
) -> Option<Batch> {
    let mut spare = None;
    for (mut batch, appended) in written {
        let n = batch.frames.len();
        batch.observe(index, 0..n, &appended);
        batch.bytes.clear();
        batch.frames.clear();
        spare = Some(batch);
    }
    spare
}

impl Drop for Sink {
    /// An import that fails leaves no thread writing behind it.
    fn drop(&mut self) {
        if let Self::Thread {
            batches, thread, ..
        } = self
        {
            drop(batches.take());
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
    }
}

fn sink_gone(tmp: Option<&Path>) -> ImportError {
    ImportError::Io {
        path: tmp.map(Path::to_path_buf).unwrap_or_default(),
        op: "append",
        source: std::io::Error::other("the writing thread stopped"),
    }
}
