//! Frames queued and appended together, the last one kept back until the caller
//! synced the rest, so that every entry frame is covered by a later frame's
//! `synced_to`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use session_index::{Index, Scanned};
use session_journal::vfs::{OpenMode, Vfs, VfsFile};
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
        /// The thread that syncs the temporary as it is written ([`EARLY_SYNC_BYTES`]),
        /// if it could start.
        syncer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
        tmp: PathBuf,
    },
}

/// How much a large import writes between two syncs of its temporary journal while it
/// writes it (on a thread of its own, through a second handle): the disk then writes
/// the journal back as the import goes, and the sync that makes it durable at the end
/// waits for the last few MiB instead of all of it (75 ms of a 100k import's 224 MB
/// otherwise). The journal's bytes and its frames are the same: the writer still
/// records only the final sync as its durable point.
const EARLY_SYNC_BYTES: u64 = 16 << 20;

/// Starts the thread that syncs the temporary `tmp` each time the writer reports
/// [`EARLY_SYNC_BYTES`] more written (the reports wait for no one: while a sync runs,
/// later reports replace each other). `None` if the second handle or the thread cannot
/// be had: the import then only syncs at its end, as before.
fn start_syncer(
    vfs: &Arc<dyn Vfs>,
    tmp: &Path,
) -> Option<(Syncer, std::thread::JoinHandle<std::io::Result<()>>)> {
    let file: Box<dyn VfsFile> = vfs.open(tmp, OpenMode::Read).ok()?;
    let (wake, rx) = mpsc::sync_channel::<()>(1);
    let written = Arc::new(AtomicU64::new(0));
    let seen = written.clone();
    let thread = std::thread::Builder::new()
        .name("import-sync".to_owned())
        .spawn(move || {
            let mut synced = 0u64;
            // A wake-up pending when the writer finishes is still taken: the last
            // report is always read.
            for () in rx {
                let end = seen.load(Ordering::Acquire);
                if end.saturating_sub(synced) >= EARLY_SYNC_BYTES {
                    file.sync_data()?;
                    synced = end;
                }
            }
            Ok(())
        })
        .ok()?;
    Some((Syncer { written, wake }, thread))
}

/// The writer's side of the syncer: how far it wrote, and a wake-up.
struct Syncer {
    written: Arc<AtomicU64>,
    wake: mpsc::SyncSender<()>,
}

impl Syncer {
    /// Reports that the journal's bytes end at `end` (never waits: a wake-up the
    /// syncer has not taken yet makes it read the latest report).
    fn report(&self, end: u64) {
        self.written.store(end, Ordering::Release);
        let _ = self.wake.try_send(());
    }
}

impl Sink {
    /// A sink for `out` (writing the temporary journal `tmp`): a writing thread of its
    /// own when `background`.
    pub(super) fn new(
        out: Out,
        tmp: &Path,
        background: bool,
        vfs: &Arc<dyn Vfs>,
    ) -> Result<Self, ImportError> {
        if !background {
            return Ok(Self::Inline(Some(Box::new(out))));
        }
        let Out { writer, index } = out;
        let (batches, rx) = mpsc::sync_channel::<(Batch, u64)>(1);
        let (give_back, written) = mpsc::channel::<(Batch, Vec<Appended>)>();
        let (to_sync, syncer) = start_syncer(vfs, tmp).unzip();
        let path = tmp.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("import-write".to_owned())
            .spawn(move || {
                let mut writer = writer;
                for (batch, line) in rx {
                    let n = batch.frames.len();
                    let appended =
                        batch.write(&mut writer, &path, line, 0..n, Durability::Buffered)?;
                    if let (Some(to_sync), Some(last)) = (&to_sync, appended.last()) {
                        to_sync.report(last.offset.0 + last.len);
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
            syncer,
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
                syncer,
                tmp,
            } => {
                drop(batches.take());
                let joined = thread.take().map(|t| t.join());
                // The writer is done (its reports to the syncer with it).
                let synced = syncer.take().map(|t| t.join());
                // Every batch it appended is back.
                observe_written(written.try_iter(), &mut *index);
                match synced {
                    // A failed sync of the temporary fails the import, as the final
                    // one would (its pending writes may be lost).
                    Some(Ok(Err(source))) => {
                        return Err(ImportError::Io {
                            path: tmp.clone(),
                            op: "sync",
                            source,
                        });
                    }
                    Some(Err(_)) => return Err(sink_gone(Some(tmp.as_path()))),
                    Some(Ok(Ok(()))) | None => {}
                }
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
            batches,
            thread,
            syncer,
            ..
        } = self
        {
            drop(batches.take());
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
            if let Some(t) = syncer.take() {
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
