//! Reads are served beside the session's actor, from a capture: a read is answered
//! while a durable batch's sync is in progress.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use session_journal::vfs::VfsFile;
use session_manager::{Layout, Sources, Store};
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;
use session_testkit::sim::SimFs;
use session_testkit::{Interpose, Interposed, SyncHook, on_sync};

use crate::support::*;

/// How long the test waits for an answer.
const DEADLINE: Duration = Duration::from_secs(60);
/// How long a held sync waits to be released: longer, so that a read stuck behind it
/// fails the test at `DEADLINE` instead of being freed by the gate's timeout.
const HOLD: Duration = Duration::from_secs(600);

/// Holds the next `sync_data` (once armed) until released.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    armed: bool,
    holding: bool,
    released: bool,
    /// `sync_data` calls that passed the gate, held or not.
    syncs: u64,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().expect("gate")
    }

    pub(crate) fn arm(&self) {
        let mut s = self.lock();
        *s = GateState {
            armed: true,
            syncs: s.syncs,
            ..GateState::default()
        };
    }

    /// In `sync_data`: when armed, wait (bounded) until released.
    fn pass(&self) {
        let mut s = self.lock();
        s.syncs += 1;
        if !s.armed {
            return;
        }
        s.armed = false;
        s.holding = true;
        self.changed.notify_all();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, HOLD, |s| !s.released)
            .expect("gate");
        drop(s);
    }

    /// Waits (bounded) until a sync is held.
    pub(crate) fn wait_holding(&self) {
        let s = self.lock();
        let (s, timeout) = self
            .changed
            .wait_timeout_while(s, DEADLINE, |s| !s.holding)
            .expect("gate");
        assert!(!timeout.timed_out() || s.holding, "no sync began");
    }

    pub(crate) fn release(&self) {
        self.lock().released = true;
        self.changed.notify_all();
    }

    /// The `sync_data` calls so far.
    pub(crate) fn syncs(&self) -> u64 {
        self.lock().syncs
    }
}

/// A store on a simulated file system whose syncs pass through `gate`.
pub(crate) fn gated_store(gate: &Arc<Gate>) -> Store {
    let vfs = Interposed::wrap(Arc::new(SimFs::new()), Gated(gate.clone()));
    Store::new(Layout::with_root("/sim").expect("absolute"))
        .with_sources(Sources::deterministic(T0, 7))
        .with_vfs(Arc::new(vfs))
}

/// Hands every file's syncs to the gate.
#[derive(Debug, Clone)]
struct Gated(Arc<Gate>);

impl SyncHook for Gated {
    fn before(&self, _: &Path) {
        self.0.pass();
    }
}

impl Interpose for Gated {
    fn opened(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        on_sync(path, inner, self.clone())
    }
    fn created(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        self.opened(path, inner)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_is_answered_while_a_durable_batch_is_syncing() {
    let gate = Arc::new(Gate::default());
    let store = gated_store(&gate);
    let owner = Owner::new(store, OwnerOptions::default());
    let mut writer = Client::ready(&owner).await;
    let s = writer.create().await;
    let sid = s.session_id.clone();
    let first = writer
        .call::<call::AppendMessage>(append(&sid, "acknowledged", None))
        .await
        .expect("append");

    // The next durable append's sync is held.
    gate.arm();
    let held = writer
        .send::<call::AppendMessage>(append(&sid, "syncing", None))
        .await;
    let g = gate.clone();
    tokio::task::spawn_blocking(move || g.wait_holding())
        .await
        .expect("the gate");

    // Another client reads meanwhile: answered, seeing at least what was
    // acknowledged before it asked.
    let mut reader = Client::joined(&owner, &sid).await;
    let entries = tokio::time::timeout(DEADLINE, reader.branch(&sid))
        .await
        .expect("a read during the sync is answered")
        .entries;
    assert!(
        entries
            .iter()
            .any(|e| e.id() == Some(first.entry_id.as_str()))
    );
    let ctx = tokio::time::timeout(
        DEADLINE,
        reader.call::<call::BuildSessionContext>(ReadParams {
            session_id: sid.clone(),
            limits: None,
        }),
    )
    .await
    .expect("a context during the sync is answered")
    .expect("context");
    assert!(!ctx.messages.is_empty());

    // The durable append is answered only once its sync is released.
    gate.release();
    let answer = tokio::time::timeout(DEADLINE, writer.recv())
        .await
        .expect("the append is answered after the sync");
    assert_eq!(answer["id"], serde_json::to_value(&held).expect("id"));
    assert!(answer["result"]["entryId"].is_string(), "{answer}");
}
