//! Many journals made durable by one file-system sync.
//!
//! An `fdatasync` ends with a flush of the device's cache, and on a small machine its
//! cost is mostly that flush and the kernel's work around it (≈ 40 µs of CPU and
//! 100 µs on the VM of `docs/benchmarks.md`): 64 journals synced one by one cost 64
//! of them. `syncfs(2)` writes back every file of the file system and flushes once:
//! 64 journals for ≈ 1/12 of the time there. [`SharedSync`] does that for the syncs
//! that meet at one time (the owner's sessions, each with its own group commit),
//! and keeps every guarantee of a journal's own sync:
//!
//! - **What it covers.** Every byte written to the file system before the call
//!   started; each [`PendingSync`] was started after its journal's bytes were written.
//! - **Twice.** Linux's `syncfs` flushes the device's cache *before* it writes the
//!   block device's own buffers (`fs/sync.c`: `sync_fs(sb, 1)`, then
//!   `sync_blockdev`), where a file system without a journal (ext2, ext4 without one)
//!   keeps an inode's size; the second call's flush covers them. A journaling file
//!   system commits its journal in the first.
//! - **Failures (fsyncgate).** `syncfs` reports a write-back failure anywhere on the
//!   file system since its handle was opened, once, without saying where. On a
//!   failure every journal of the call is handed back to sync on its own (its own
//!   `fdatasync` reports its own file's failure), and sharing stops for good: the
//!   handle's report is spent, and a failed page of a journal outside this call must
//!   still be reported to that journal's next sync, which only its own `fdatasync`
//!   does. One file-system sync runs at a time, so the call that hears of a failure
//!   is known before another call's success counts. The handle is opened before the
//!   journals it covers are written (the caller's part), so no failure on them
//!   predates it.
//! - **Only what is cheap.** A single sync, a journal on another device, or every
//!   one while the system's write-back backlog is large (a `syncfs` writes
//!   everyone's dirty pages: [`DEFAULT_BACKLOG_LIMIT`]) is handed back to sync on
//!   its own, as before; a large backlog is meanwhile written out by a file-system
//!   sync on a thread of its own, which answers nobody (and whose failure ends
//!   sharing as any other's), started at most once per
//!   [`DEFAULT_DRAIN_INTERVAL`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::append::{PendingSync, SyncDone};
use crate::vfs::VfsFileSystem;

/// The write-back backlog (dirty bytes, system-wide) past which syncs are not shared:
/// a `syncfs` would first write all of it, whoever wrote it.
pub const DEFAULT_BACKLOG_LIMIT: u64 = 64 << 20;

/// The least time between two starts of the backlog's own file-system sync: under a
/// writer that keeps the backlog over the limit, the file system is not made to
/// write back eagerly without pause (rounds then sync their journals each on its
/// own, as the kernel writes the backlog back in its own time).
pub const DEFAULT_DRAIN_INTERVAL: Duration = Duration::from_secs(1);

/// Syncs journals of one file system together: see the module's documentation.
#[derive(Debug)]
pub struct SharedSync {
    handle: Arc<Handle>,
    backlog_limit: u64,
    drain_interval: Duration,
}

/// The file-system handle and what its syncs found, shared with a backlog's thread.
#[derive(Debug)]
struct Handle {
    fs: Arc<dyn VfsFileSystem>,
    /// One file-system sync at a time: the handle hears of a failure once, so the
    /// call that hears it must be known before another call's success counts.
    syncing: Mutex<()>,
    /// A file-system sync failed: every journal syncs on its own from then on.
    failed: AtomicBool,
    /// The backlog's own file-system sync: whether one runs now, and when the last
    /// one started.
    drain: Mutex<Drain>,
}

#[derive(Debug, Default)]
struct Drain {
    running: bool,
    started: Option<Instant>,
}

impl Handle {
    fn drain(&self) -> std::sync::MutexGuard<'_, Drain> {
        self.drain.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Two file-system syncs, one caller at a time; a failure ends sharing.
    fn sync(&self, times: usize) -> bool {
        let _one = self.syncing.lock().unwrap_or_else(PoisonError::into_inner);
        if self.failed.load(Ordering::Acquire) {
            return false;
        }
        let synced = (0..times).try_for_each(|_| self.fs.sync());
        if synced.is_err() {
            self.failed.store(true, Ordering::Release);
        }
        synced.is_ok()
    }
}

/// What [`SharedSync::share`] did with one sync.
#[derive(Debug)]
pub enum Together {
    /// Run: its outcome (made durable with the others, or by its own sync where the
    /// caller ran it), for [`Writer::finish_sync`](crate::Writer::finish_sync).
    Synced(SyncDone),
    /// Not shared: the caller runs it on its own ([`PendingSync::run`]), on whichever
    /// thread it likes (several at once, say).
    Alone(PendingSync),
}

impl SharedSync {
    /// Shares syncs through `fs`, a handle opened before any journal it will cover
    /// was written.
    pub fn new(fs: Arc<dyn VfsFileSystem>) -> Self {
        Self {
            handle: Arc::new(Handle {
                fs,
                syncing: Mutex::new(()),
                failed: AtomicBool::new(false),
                drain: Mutex::new(Drain::default()),
            }),
            backlog_limit: DEFAULT_BACKLOG_LIMIT,
            drain_interval: DEFAULT_DRAIN_INTERVAL,
        }
    }

    /// This, with another backlog limit (bytes).
    pub fn with_backlog_limit(mut self, bytes: u64) -> Self {
        self.backlog_limit = bytes;
        self
    }

    /// This, with another least time between two starts of the backlog's own sync.
    pub fn with_drain_interval(mut self, interval: Duration) -> Self {
        self.drain_interval = interval;
        self
    }

    /// Whether syncs are still shared (no file-system sync has failed).
    pub fn is_sharing(&self) -> bool {
        !self.handle.failed.load(Ordering::Acquire)
    }

    /// Makes the syncs of two or more journals on the handle's file system durable
    /// with one file-system sync (called twice; blocking), and hands back the others:
    /// a journal on another device, or every one when fewer than two are on it, when
    /// a file-system sync has failed, or when the write-back backlog is over the
    /// limit (then a file-system sync of its own starts on a thread, answering
    /// nobody, so that the next calls find the backlog written). The results come in
    /// the order of `syncs`.
    pub fn share(&self, syncs: Vec<PendingSync>) -> Vec<Together> {
        let device = self.handle.fs.device();
        let on_it: Vec<bool> = if syncs.len() < 2 || !self.is_sharing() {
            vec![false; syncs.len()]
        } else {
            syncs.iter().map(|s| s.device == Some(device)).collect()
        };
        let synced = on_it.iter().filter(|s| **s).count() >= 2
            && self.backlog_is_small()
            && self.handle.sync(2);
        syncs
            .into_iter()
            .zip(on_it)
            .map(|(sync, on_it)| {
                if synced && on_it {
                    Together::Synced(SyncDone {
                        sync,
                        outcome: Ok(()),
                    })
                } else {
                    Together::Alone(sync)
                }
            })
            .collect()
    }

    /// [`share`](Self::share), then runs each sync handed back on its own, one
    /// after another: every outcome, in the order of `syncs`.
    pub fn run(&self, syncs: Vec<PendingSync>) -> Vec<SyncDone> {
        self.share(syncs)
            .into_iter()
            .map(|t| match t {
                Together::Synced(done) => done,
                Together::Alone(sync) => sync.run(),
            })
            .collect()
    }

    /// Whether the write-back backlog is under the limit (or unknown); when it is
    /// not, starts writing it out with a file-system sync on a thread of its own (one
    /// at a time, at most one start per drain interval): a shared sync would wait
    /// for all of it.
    fn backlog_is_small(&self) -> bool {
        let small = self
            .handle
            .fs
            .backlog()
            .is_none_or(|bytes| bytes <= self.backlog_limit);
        if !small {
            self.drain();
        }
        small
    }

    /// Starts the backlog's own file-system sync, unless one runs or one started
    /// less than the drain interval ago.
    fn drain(&self) {
        let mut drain = self.handle.drain();
        let now = Instant::now();
        if drain.running
            || drain
                .started
                .is_some_and(|t| now.saturating_duration_since(t) < self.drain_interval)
        {
            return;
        }
        let handle = self.handle.clone();
        let spawned = std::thread::Builder::new()
            .name("backlog-sync".into())
            .spawn(move || {
                handle.sync(1);
                handle.drain().running = false;
            });
        if spawned.is_ok() {
            *drain = Drain {
                running: true,
                started: Some(now),
            };
        }
    }
}
