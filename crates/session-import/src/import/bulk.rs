//! Imports in batches: every source of a batch is written to its temporary journal,
//! the temporaries are made durable together, then each is linked into place, the
//! directory synced once and the registry appended once.
//!
//! One import ([`super::import`]) is a batch of one; [`super::import_many`] fills
//! batches of up to [`BulkOptions::max_files`] sources. What a batch costs in syncs:
//! two rounds of `fdatasync` over its temporaries (the first after every frame is
//! written, the second after each journal's seal — a clean close, which covers every
//! frame before it, so damage to any frame of an imported journal is corruption, never
//! a torn tail: `docs/format.md` §2.8), run from a few threads so the file system can
//! commit them together, then one directory sync and one registry sync — instead of
//! about nine syncs per source.
//!
//! What holds at every point of a crash: nothing is linked into place before its bytes
//! are durable (both rounds completed for it); a linked journal's name becomes durable
//! with the directory sync, and until then the crash leaves either the journal or
//! nothing (plus a temporary, which `remove_leftover_imports` clears); the source is
//! only read; the registry is a shortcut written last, and a source whose journal is in
//! place is recognised from the journal itself, so a re-run converges.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use session_index::Index;
use session_journal::{AppendError, Capture, Writer};

use super::batch::{Batch, Out};
use super::publish::{self, Place, Published};
use super::{Destination, ImportOptions, Run, Source, already};
use crate::error::ImportError;
use crate::format::RegistryLine;
use crate::lines::{LineReader, SourceScan};
use crate::outcome::{ImportOutcome, SourceInfo};
use crate::registry::{self, Done, Known};

/// How [`import_many`](super::import_many) batches its sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkOptions {
    /// The most sources in one batch (each holds an open temporary journal until the
    /// batch is published). Default 256.
    pub max_files: usize,
    /// A batch is published once its sources hold this many bytes. Default 64 MiB.
    pub max_bytes: u64,
    /// Threads that sync a batch's temporaries (1: the calling thread alone). Default 8:
    /// concurrent `fdatasync`s share the file system's journal commits.
    pub sync_threads: usize,
}

impl Default for BulkOptions {
    fn default() -> Self {
        Self {
            max_files: 256,
            max_bytes: 64 << 20,
            sync_threads: 8,
        }
    }
}

/// One source written to its temporary journal, waiting for the batch's syncs.
struct Staged<'a> {
    index: usize,
    run: Run<'a>,
    info: SourceInfo,
    hash_hex: String,
    session_id: String,
    journal: PathBuf,
    tmp: PathBuf,
    writer: Writer,
    /// The journal's index, built as its frames were appended (`None`: building it
    /// failed; the first open rebuilds it).
    built: Option<Index>,
    /// The journal's last frame, written after the first sync.
    last: Batch,
    /// Lines read (errors name the last).
    lines: u64,
    /// The writer's durable capture after the second sync.
    durable: Option<Capture>,
}

/// A batch being filled and published, and what finished.
pub(super) struct Bulk<'a> {
    destination: Destination,
    dir: PathBuf,
    options: &'a ImportOptions,
    limits: BulkOptions,
    pub(super) known: Known,
    staged: Vec<Staged<'a>>,
    /// The journals the staged sources will be published as.
    claimed: HashSet<PathBuf>,
    staged_hashes: HashSet<String>,
    staged_bytes: u64,
    registry_lines: Vec<RegistryLine>,
    done: Vec<(usize, Result<ImportOutcome, ImportError>)>,
}

impl<'a> Bulk<'a> {
    pub(super) fn new(
        destination: Destination,
        options: &'a ImportOptions,
        limits: BulkOptions,
    ) -> Self {
        Self {
            dir: destination.dir(),
            destination,
            options,
            limits,
            known: Known::default(),
            staged: Vec::new(),
            claimed: HashSet::new(),
            staged_hashes: HashSet::new(),
            staged_bytes: 0,
            registry_lines: Vec::new(),
            done: Vec::new(),
        }
    }

    /// The directory the journals (and the registry) go to.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The results that finished since the last call, by source index.
    pub(super) fn take_done(&mut self) -> Vec<(usize, Result<ImportOutcome, ImportError>)> {
        std::mem::take(&mut self.done)
    }

    /// Takes source number `index` (`scan` is its scan): finished at once when its
    /// import is already in place, else written to a temporary journal and staged. A
    /// source whose content is already staged publishes the batch first (it then
    /// finds that import in place); a full batch is published.
    pub(super) fn add(&mut self, index: usize, source: &'a Path, scan: &SourceScan) {
        let hash_hex = scan.blake3.to_hex().to_string();
        if self.staged_hashes.contains(&hash_hex) {
            self.flush();
        }
        let src = Source::new(source, scan);
        if let Some(done) = self.known.find(&self.options.vfs, &self.dir, &hash_hex) {
            let version = done.version;
            self.done
                .push((index, Ok(already(done, src.info(version)))));
            return;
        }
        match self.stage(index, source, &src) {
            Ok(Some(staged)) => {
                self.claimed.insert(staged.journal.clone());
                self.staged_hashes.insert(hash_hex);
                self.staged_bytes += scan.bytes;
                self.staged.push(staged);
            }
            Ok(None) => {}
            Err(e) => self.done.push((index, Err(e))),
        }
        if self.staged.len() >= self.limits.max_files || self.staged_bytes >= self.limits.max_bytes
        {
            self.flush();
        }
    }

    /// Finishes source number `index` with `error` (its scan refused it).
    pub(super) fn refuse(&mut self, index: usize, error: ImportError) {
        self.done.push((index, Err(error)));
    }

    /// Reads the header, chooses the journal and writes the temporary journal (all but
    /// its last frame, nothing synced). `None` when the source's import turned out to
    /// be in place already (finished).
    fn stage(
        &mut self,
        index: usize,
        source: &'a Path,
        src: &Source<'_>,
    ) -> Result<Option<Staged<'a>>, ImportError> {
        let vfs = &self.options.vfs;
        let mut reader = LineReader::open(vfs.as_ref(), source, src.scan.bytes)?;
        let mut run = Run::new(source, src.scan, self.options);
        let mut header = run.read_header(&mut reader)?;
        let place = publish::place(
            vfs,
            &self.destination,
            &mut run,
            &header,
            src,
            &self.claimed,
        )?;
        let (session_id, journal) = match place {
            Place::New {
                session_id,
                journal,
            } => (session_id, journal),
            Place::Imported(done) => {
                let info = src.info(header.version);
                self.converged(index, done, &src.hash_hex, info);
                return Ok(None);
            }
        };
        header.assign_id(&session_id);
        let (tmp, writer) = publish::create_temp(&journal, &session_id, src.scan, self.options)?;
        let mut built = Index::for_new_journal(
            &journal,
            writer.journal_id(),
            writer.data_start(),
            vfs.clone(),
        );
        built.reserve(records_hint(src.scan));
        let out = Out {
            writer,
            index: Some(built),
        };
        let written = run.write_all(&mut reader, out, &tmp, header, &src.shown, &src.hash_hex);
        let (
            Out {
                writer,
                index: built,
            },
            last,
        ) = match written {
            Ok(w) => w,
            Err(e) => {
                publish::discard(vfs.as_ref(), &tmp, None);
                return Err(e);
            }
        };
        Ok(Some(Staged {
            index,
            info: src.info(run.version),
            run,
            hash_hex: src.hash_hex.clone(),
            session_id,
            journal,
            tmp,
            writer,
            built,
            last,
            lines: reader.lines(),
            durable: None,
        }))
    }

    /// An import of this source already in place (found another way than the
    /// registry): recorded in the registry with the batch, and finished.
    fn converged(&mut self, index: usize, done: Done, hash_hex: &str, info: SourceInfo) {
        self.record(&done, hash_hex);
        self.done.push((index, Ok(already(done, info))));
    }

    fn record(&mut self, done: &Done, hash_hex: &str) {
        if let Some(line) = registry::line_of(done, hash_hex) {
            self.known.add(line.clone());
            self.registry_lines.push(line);
        }
    }

    fn fail(&mut self, staged: Staged<'a>, error: ImportError) {
        publish::discard(self.options.vfs.as_ref(), &staged.tmp, Some(staged.writer));
        self.done.push((staged.index, Err(error)));
    }

    /// Publishes the batch: the last frames, first sync of every temporary, the
    /// journals' seals and a second sync (`Writer::seal`, one sync each since
    /// everything before the seal is synced already), links into place, one directory
    /// sync, one registry append.
    pub(super) fn flush(&mut self) {
        let staged = std::mem::take(&mut self.staged);
        self.claimed.clear();
        self.staged_hashes.clear();
        self.staged_bytes = 0;
        let mut ready = Vec::with_capacity(staged.len());
        for s in staged {
            let Staged {
                writer,
                built,
                mut last,
                ..
            } = s;
            let mut out = Out {
                writer,
                index: built,
            };
            let written = last.write_last(&mut out, &s.tmp, s.lines);
            let s = Staged {
                writer: out.writer,
                built: out.index,
                last,
                ..s
            };
            match written {
                Ok(()) => ready.push(s),
                Err(e) => self.fail(s, e),
            }
        }
        let staged = self.sync_all(ready, false);
        let staged = self.sync_all(staged, true);
        let vfs = self.options.vfs.clone();
        let mut linked = Vec::with_capacity(staged.len());
        for s in staged {
            let Staged {
                index,
                run,
                info,
                hash_hex,
                session_id,
                journal,
                tmp,
                writer,
                built,
                durable,
                ..
            } = s;
            // The seal the second round wrote: the index covers the journal to its end.
            let built = built.filter(|_| writer.is_sealed()).and_then(|mut ix| {
                let seal = writer.last_frame()?;
                ix.observe_seal(&seal).ok().map(|()| ix)
            });
            match publish::link(vfs.as_ref(), &tmp, &journal, writer) {
                Ok(Published::Linked) => {
                    linked.push((
                        index, run, info, hash_hex, session_id, journal, durable, built,
                    ));
                }
                // Another import of the same source (or another session of that id) got
                // there first: concurrent imports of one source converge on one journal.
                Ok(Published::Raced) => match registry::check_journal(&vfs, &journal, &hash_hex) {
                    Some(done) => self.converged(index, done, &hash_hex, info),
                    None => self
                        .done
                        .push((index, Err(ImportError::DestinationExists { path: journal }))),
                },
                Err(e) => self.done.push((index, Err(e))),
            }
        }
        let synced = if linked.is_empty() {
            Ok(())
        } else {
            publish::sync_dir(vfs.as_ref(), &self.dir)
        };
        for (index, run, info, hash_hex, session_id, journal, durable, built) in linked {
            if let Err(e) = &synced {
                self.done.push((index, Err(same_error(e))));
                continue;
            }
            // The sidecar a rebuild from the journal would write, unsynced (derived
            // data: a crash that loses it costs one rebuild), claiming only what the
            // import made durable. Any failure leaves no sidecar: the first open
            // rebuilds it.
            let indexed = match (built, durable) {
                (Some(ix), Some(d)) => ix.save_unsynced(d).is_ok(),
                _ => false,
            };
            let done = Done {
                session_id: session_id.clone(),
                journal: journal.clone(),
                version: run.version,
            };
            self.record(&done, &hash_hex);
            let mut outcome = run.outcome(session_id, journal, info);
            outcome.durable = durable;
            outcome.indexed = indexed;
            self.done.push((index, Ok(outcome)));
        }
        // Best effort: the registry is only a shortcut, checked before every use.
        let lines = std::mem::take(&mut self.registry_lines);
        let _ = registry::append_all(vfs.as_ref(), &self.dir, &lines);
    }

    /// Syncs (or seals: `seal`) every staged writer (from up to `sync_threads`
    /// threads); those whose sync fails are discarded with their error, the rest
    /// returned with their durable capture.
    fn sync_all(&mut self, mut staged: Vec<Staged<'a>>, seal: bool) -> Vec<Staged<'a>> {
        let results = {
            let mut writers: Vec<&mut Writer> = staged.iter_mut().map(|s| &mut s.writer).collect();
            sync_writers(&mut writers, self.limits.sync_threads, seal)
        };
        let mut kept = Vec::with_capacity(staged.len());
        for (mut s, r) in staged.into_iter().zip(results) {
            match r {
                Ok(capture) => {
                    s.durable = Some(capture);
                    kept.push(s);
                }
                Err(source) => {
                    let error = ImportError::Append {
                        path: s.tmp.clone(),
                        line: s.lines,
                        source,
                    };
                    self.fail(s, error);
                }
            }
        }
        kept
    }
}

/// `sync()` (or `seal()`: `seal`) of every writer, results in the writers' order,
/// from up to `threads` threads taking writers from one queue (this thread among them,
/// so every writer is synced even if no other thread can be started).
fn sync_writers(
    writers: &mut [&mut Writer],
    threads: usize,
    seal: bool,
) -> Vec<Result<Capture, AppendError>> {
    let threads = threads.clamp(1, writers.len().max(1));
    let one = |w: &mut Writer| if seal { w.seal() } else { w.sync() };
    if threads == 1 {
        return writers.iter_mut().map(|w| one(w)).collect();
    }
    let n = writers.len();
    let queue = Mutex::new(writers.iter_mut().enumerate().collect::<Vec<_>>());
    let results = Mutex::new(Vec::with_capacity(n));
    let work = || {
        loop {
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some((i, w)) = next else { break };
            let r = one(w);
            results
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((i, r));
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            // A thread that cannot be started leaves its share to the others.
            let _ = std::thread::Builder::new().spawn_scoped(scope, work);
        }
        work();
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The directory sync's error, for each journal it leaves unpublished.
fn same_error(e: &ImportError) -> ImportError {
    match e {
        ImportError::Io { path, op, source } => ImportError::Io {
            path: path.clone(),
            op,
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        other => ImportError::Io {
            path: PathBuf::new(),
            op: "sync directory",
            source: std::io::Error::other(other.to_string()),
        },
    }
}

/// How many records the index of a source will likely hold, for
/// [`Index::reserve`]: its lines, but no more than one per 128 bytes nor a million
/// (a hint must not let a file of short lines make the index take its memory early).
fn records_hint(scan: &crate::lines::SourceScan) -> usize {
    let lines = scan.lines.min(scan.bytes / 128).min(1 << 20);
    usize::try_from(lines).unwrap_or(0)
}
