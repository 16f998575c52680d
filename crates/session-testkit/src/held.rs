//! [`HeldSyncs`]: an [`Interpose`] that sees every `sync_data` of the files opened
//! through it — which thread made it, on which file — and, once armed, holds the next
//! one until the test releases it: for tests of work that must not wait for a sync
//! (a writer's background sync) or must wait for one (a durable append).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Duration;

use session_journal::vfs::VfsFile;

use crate::interpose::{Interpose, SyncHook, on_sync};

/// How long a held sync waits to be released before it goes on by itself (and
/// [`HeldSyncs::timed_out`] says so): a test that waits for a held sync fails instead
/// of hanging.
const HOLD: Duration = Duration::from_secs(120);
/// How long [`HeldSyncs::wait_holding`] waits for a sync to be held.
const WAIT: Duration = Duration::from_secs(60);

/// Syncs seen and held; clones share them. Wrap a file system with
/// `Interposed::wrap(inner, held.clone())`.
#[derive(Debug, Clone, Default)]
pub struct HeldSyncs(Arc<Gate>);

#[derive(Debug, Default)]
struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    armed: bool,
    holding: bool,
    released: bool,
    timed_out: bool,
    /// Every `sync_data` that returned: the file and the thread that called it.
    done: Vec<(PathBuf, ThreadId)>,
}

impl HeldSyncs {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds the next `sync_data` (of any file) until [`release`](Self::release).
    pub fn arm(&self) {
        let mut s = self.lock();
        s.armed = true;
        s.holding = false;
        s.released = false;
    }

    /// Waits (at most a minute) until a sync is held; whether one is.
    pub fn wait_holding(&self) -> bool {
        let s = self.lock();
        let (s, _) = self
            .0
            .changed
            .wait_timeout_while(s, WAIT, |s| !s.holding)
            .unwrap_or_else(|e| e.into_inner());
        s.holding
    }

    /// Whether a sync is being held now.
    pub fn holding(&self) -> bool {
        self.lock().holding
    }

    /// Lets the held sync (if any) go on.
    pub fn release(&self) {
        let mut s = self.lock();
        s.released = true;
        self.0.changed.notify_all();
    }

    /// Whether a held sync went on by itself, unreleased, after its timeout: what a
    /// test that should never have waited for it asserts is false.
    pub fn timed_out(&self) -> bool {
        self.lock().timed_out
    }

    /// Every `sync_data` that returned so far: the file and the calling thread.
    pub fn done(&self) -> Vec<(PathBuf, ThreadId)> {
        self.lock().done.clone()
    }

    /// In `sync_data`, before the real one: hold when armed.
    fn pass(&self) {
        let mut s = self.lock();
        if !s.armed {
            return;
        }
        s.armed = false;
        s.holding = true;
        self.0.changed.notify_all();
        let (mut s, timeout) = self
            .0
            .changed
            .wait_timeout_while(s, HOLD, |s| !s.released)
            .unwrap_or_else(|e| e.into_inner());
        s.timed_out |= timeout.timed_out();
        s.holding = false;
    }

    fn returned(&self, path: &Path) {
        self.lock()
            .done
            .push((path.to_path_buf(), std::thread::current().id()));
    }
}

impl SyncHook for HeldSyncs {
    fn before(&self, _: &Path) {
        self.pass();
    }
    fn after(&self, path: &Path) {
        self.returned(path);
    }
}

impl Interpose for HeldSyncs {
    fn opened(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        on_sync(path, inner, self.clone())
    }
    fn created(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        self.opened(path, inner)
    }
}
