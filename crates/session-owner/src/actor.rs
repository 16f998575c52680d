//! One performer of writes at a time per open session; syncs beside the writes,
//! pipelined; reads beside both.
//!
//! The session sits in a [`Shared`] cell behind a read-write lock, with a *gate*: the
//! writes queued, whether writes are being performed now, the batches written and
//! waiting for a sync, and whether the session's flusher runs.
//!
//! - **On the connection's task.** A write that finds no other being performed (and
//!   the write lock free) is performed at once on the connection's own task (no
//!   thread hand-off). It is answered there when it needs no sync and nothing waits
//!   ahead of it; a durable one with nothing waiting ahead is synced there too, on
//!   the connection's worker, when no other batch syncs on a worker.
//! - **Queued.** A write that finds another being performed is queued; the drain
//!   task performs the queue in batches (everything queued, up to `max_batch`).
//! - **The flusher.** A written batch that needs a sync, or waits behind one that
//!   does, joins the waiting batches; the flusher ([`Shared::flush`]) starts one sync
//!   covering every waiting batch ([`OwnedSession::start_sync`]: an instant under
//!   the write lock), runs the `fdatasync` with no lock held (on its worker, or
//!   with other sessions' syncs that meet it: [`Syncs`]), records it
//!   (`finish_sync`), answers those batches in order, and goes on while batches
//!   wait. The writes that arrive while a sync runs are performed during it and
//!   share the next one: the group commit is pipelined. An `fdatasync` covers what
//!   was written before it started, so no batch is answered before a sync that
//!   started after its writes.
//!
//! Answers go straight to the connection's outbox ([`Answer`]), in the order the
//! batches were performed; followers are notified of each acknowledged append in
//! journal order. A failed sync fails the durable appends it covers and poisons the
//! writer (the later ones fail with it). Closes and branched sessions wait until
//! nothing waits for a sync, then run whole on the blocking pool. Reads ([`read`])
//! do not enter the queue: the connection runs them on the blocking pool under the
//! read lock, through a capture of the session as it is then; they never wait for a
//! sync, only for a batch's writes.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{
    Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError,
};

use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use session_manager::{
    ContextOptions, DEFAULT_MAX_SOURCE_BYTES, DEFAULT_MAX_SOURCE_ENTRIES, Durability, EntryId,
    NodeEntry, OwnedSession, PendingSync, SyncDone, Together,
};
use session_protocol::{self as p, Error, Request, RequestId};
use session_types::Entry;
use tokio::runtime::RuntimeFlavor;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot};

use crate::errors::{append_error, open_error, read_error};
use crate::outbox::{Follower, Followers, Outbox, Topic};
use crate::syncs::Syncs;

/// What a call answers: the result's JSON, or an error.
pub(crate) type Reply = Result<Box<RawValue>, Error>;

/// What a write answers: the result's JSON, or an append's new entry id (its answer
/// line written by [`p::encode_appended`], no JSON value in between); or an error.
pub(crate) type Outcome = Result<Done, Error>;

/// A write's result.
#[derive(Debug)]
pub(crate) enum Done {
    /// The result's JSON.
    Json(Box<RawValue>),
    /// An append's: `{"entryId":…}`.
    Appended(EntryId),
}

/// A result's JSON as a write's outcome.
fn done<T: Serialize + ?Sized>(value: &T) -> Outcome {
    ok(value).map(Done::Json)
}

/// An open session, shared by the connections that write it (through its gate) and
/// read it.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The session; `None` once closed.
    session: RwLock<Option<OwnedSession>>,
    /// Its id, for errors and notifications (shared with each write's [`Answer`]).
    pub(crate) session_id: Arc<str>,
    /// Reads of this session running now (past the bound: `overloaded`).
    pub(crate) reads: Arc<Semaphore>,
    /// The writes waiting, and whether a batch runs.
    gate: Mutex<Gate>,
    /// The connections following the session (touched by the running batch only).
    followers: Mutex<Vec<Follower>>,
    /// The store's followers (`store/changed`).
    store: Arc<Followers>,
    /// The most calls queued; past this a call is answered `overloaded`.
    queue: usize,
    /// The most commands one batch carries.
    max_batch: usize,
    /// Woken when the flusher ends (nothing waits for a sync).
    flushed: Notify,
    /// Syncs running on a runtime worker itself now, the owner's sessions together
    /// (see [`WorkerSync`]).
    worker_syncs: Arc<AtomicUsize>,
    /// The owner's connections now (see [`Shared::wake_a_parked_worker`]).
    connections: Arc<AtomicUsize>,
    /// The owner's shared syncs (`None`: each sync is the journal's own).
    syncs: Option<Arc<Syncs>>,
}

/// The writes waiting for a session, and who performs them.
#[derive(Default)]
struct Gate {
    queue: VecDeque<Command>,
    /// Writes are being performed (on a connection's task or the drain task):
    /// others queue.
    running: bool,
    /// Batches written, waiting (in order) for the sync that covers them or behind
    /// batches that do; the flusher answers them.
    waiting: Vec<Performed>,
    /// The calls in `waiting`.
    waiting_calls: usize,
    /// The flusher runs (a task, or a connection's task syncing its own batch).
    flushing: bool,
    /// Closed (on request, or after the library panicked): nothing more is performed.
    closed: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("queued", &self.queue.len())
            .field("running", &self.running)
            .field("waiting", &self.waiting.len())
            .field("flushing", &self.flushing)
            .field("closed", &self.closed)
            .finish()
    }
}

/// What became of a submitted command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Submitted {
    /// Performed already, on the caller's task: its answer is in its reply channel.
    Done,
    /// Queued: its answer comes once its batch is performed.
    Queued,
    /// The queue is full: nothing was done (answer `overloaded`).
    Full,
    /// The session is closed: nothing was done.
    Closed,
}

impl Shared {
    fn write(&self) -> RwLockWriteGuard<'_, Option<OwnedSession>> {
        // A panic inside the library while writing poisons the lock; the session is
        // then taken out (see `perform_locked`), so readers see `None`.
        self.session.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn try_write(&self) -> Option<RwLockWriteGuard<'_, Option<OwnedSession>>> {
        match self.session.try_write() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The write lock, from a runtime task: at once when free, else waiting in
    /// `block_in_place` (a read holds it; the runtime's other tasks move on) or, on
    /// a current-thread runtime, in place (a read on the blocking pool ends alone).
    fn write_now(&self) -> RwLockWriteGuard<'_, Option<OwnedSession>> {
        if let Some(guard) = self.try_write() {
            return guard;
        }
        if multi_thread() {
            tokio::task::block_in_place(|| self.write())
        } else {
            self.write()
        }
    }

    fn read_guard(&self) -> RwLockReadGuard<'_, Option<OwnedSession>> {
        self.session.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn gate(&self) -> MutexGuard<'_, Gate> {
        // Plain data changed in single statements: a panic cannot leave it torn.
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a read (`session/read*`, `session/get*`, `buildSessionContext`) on the
    /// session as it is now, on the blocking pool: its answer as the whole line
    /// answering `id`, encoded there too. A context is serialized straight into the
    /// line (no JSON value tree, no copy of the result into the envelope), after the
    /// read lock is let go.
    pub(crate) fn read_line(&self, id: &RequestId, request: Request) -> String {
        let guard = self.read_guard();
        let Some(s) = guard.as_ref() else {
            return p::encode_error(Some(id), &gone(&self.session_id));
        };
        match request {
            Request::BuildSessionContext(q) => {
                match s.build_session_context_with(limits(q.limits), &ContextOptions::default()) {
                    Ok(c) => {
                        drop(guard);
                        context_line(id, &c)
                    }
                    Err(e) => p::encode_error(Some(id), &read_error(e)),
                }
            }
            other => match read(s, other) {
                Ok(raw) => p::encode_result(id, &raw),
                Err(e) => p::encode_error(Some(id), &e),
            },
        }
    }

    /// The session as `store/open` answers it now (for a client joining it).
    pub(crate) fn describe(&self) -> Reply {
        match self.read_guard().as_ref() {
            Some(s) => ok(&opened(s)),
            None => Err(gone(&self.session_id)),
        }
    }

    /// Whether the session was closed (nothing more is performed).
    pub(crate) fn is_closed(&self) -> bool {
        self.gate().closed
    }

    /// Takes the session out (closing it is the caller's).
    fn take(&self) -> Option<OwnedSession> {
        self.write().take()
    }

    /// Submits a write. When no other write is being performed and the write lock
    /// is free, `command` is performed at once on the caller's task; a durable one
    /// that no other batch waits ahead of is also synced there when `lifo_empty`
    /// (see [`WorkerSync`]: on the caller's worker, when no other batch syncs on a
    /// worker; else the flusher syncs it). Otherwise it is queued and
    /// the drain task performs it. A written batch that must wait — for its sync,
    /// or behind batches waiting for theirs — goes to the session's flusher. Its
    /// answer goes to its reply either way (`Done`: sent already); a refused command
    /// is answered `overloaded` (`Full`) or "no longer served" (`Closed`; a `Close`
    /// is answered as done, a branched session refused). `Unfollow` and
    /// `Close` are never refused for a full queue (a connection sends at most one of
    /// each per session).
    pub(crate) fn submit(self: &Arc<Self>, command: Command, lifo_empty: bool) -> Submitted {
        let mut gate = self.gate();
        if gate.closed {
            drop(gate);
            refuse_all(vec![command], &self.session_id);
            return Submitted::Closed;
        }
        // Queued and written-but-unanswered calls count against one bound.
        let bounded = matches!(command, Command::Call { .. } | Command::Follow { .. });
        if bounded && gate.queue.len() + gate.waiting_calls >= self.queue {
            drop(gate);
            if let Command::Call { reply, .. } | Command::Follow { reply, .. } = command {
                reply.send(Err(Error::Overloaded {
                    queue: format!("session {}", self.session_id),
                }));
            }
            return Submitted::Full;
        }
        if gate.running {
            gate.queue.push_back(command);
            return Submitted::Queued;
        }
        // Nothing is being written, so nothing is queued (the last writer emptied it).
        gate.running = true;
        let weight = weight(&command);
        let idle = gate.waiting.is_empty() && !gate.flushing;
        // Syncing here makes this task the flusher until its batch is answered.
        let claim = (weight == Weight::Sync && idle && lifo_empty)
            .then(|| self.claim_worker_sync())
            .flatten();
        gate.flushing |= claim.is_some();
        drop(gate);
        let guard = match weight {
            Weight::Blocking => None,
            Weight::Light | Weight::Sync => self.try_write(),
        };
        let Some(guard) = guard else {
            let mut gate = self.gate();
            if claim.is_some() {
                gate.flushing = false; // nothing was written meanwhile: we hold `running`
            }
            gate.queue.push_back(command);
            drop(gate);
            tokio::spawn(self.clone().drain());
            return Submitted::Queued;
        };
        let Some((performed, started)) = self.write_locked(guard, vec![command], claim.is_some())
        else {
            if claim.is_some() {
                self.gate().flushing = false; // nothing waits: we held `running`
            }
            self.close_gate();
            return Submitted::Done; // its answer was sent as dropped: the session is gone
        };
        let Some(claim) = claim else {
            let delivered = self.hand_over(performed);
            self.release();
            return if delivered {
                Submitted::Done
            } else {
                Submitted::Queued
            };
        };
        // The next writes may be performed while this one syncs.
        if self.release() {
            // The drain task just spawned waits in this worker's LIFO slot, where a
            // sync here would hold it: the flusher (a task of its own, polled with
            // the slot empty) starts a sync covering this batch instead.
            drop((claim, started));
            let mut gate = self.gate();
            gate.waiting_calls += performed.answers.len();
            gate.waiting.push(performed);
            drop(gate);
            tokio::spawn(self.clone().flush());
            return Submitted::Queued;
        }
        self.complete(vec![performed], started.unwrap_or(Ok(None)));
        drop(claim);
        let mut gate = self.gate();
        if gate.waiting.is_empty() {
            gate.flushing = false;
            drop(gate);
            self.flushed.notify_waiters();
        } else {
            drop(gate);
            tokio::spawn(self.clone().flush());
        }
        Submitted::Done
    }

    /// Ends a turn of performing writes: hands what was queued meanwhile to a drain
    /// task (`true`: spawned), or frees the gate.
    fn release(self: &Arc<Self>) -> bool {
        let mut gate = self.gate();
        if gate.queue.is_empty() {
            gate.running = false;
            false
        } else {
            drop(gate);
            tokio::spawn(self.clone().drain());
            true
        }
    }

    /// Performs a batch's writes under `guard` (no sync), and starts its sync when
    /// `start`; `None` when the session is gone (closed, or the library panicked:
    /// the session is let go).
    fn write_locked(
        &self,
        guard: RwLockWriteGuard<'_, Option<OwnedSession>>,
        batch: Vec<Command>,
        start: bool,
    ) -> Option<(Performed, Option<Started>)> {
        let written = catch_unwind(AssertUnwindSafe(|| {
            let mut guard = guard;
            let Some(s) = guard.as_mut() else {
                drop(guard);
                refuse_all(batch, &self.session_id);
                return None;
            };
            let Batch { performed, .. } = write_commands(self, s, batch);
            let started = (start && performed.sync).then(|| s.start_sync());
            Some((performed, started))
        }));
        written.unwrap_or_else(|_| {
            drop(self.take());
            None
        })
    }

    /// A written batch: answered now when it needs no sync and nothing waits ahead
    /// of it (`true`); else added to the batches waiting for the flusher, which is
    /// started when none runs.
    fn hand_over(self: &Arc<Self>, performed: Performed) -> bool {
        let mut gate = self.gate();
        if !performed.sync && gate.waiting.is_empty() && !gate.flushing {
            drop(gate);
            deliver(self, performed);
            return true;
        }
        gate.waiting_calls += performed.answers.len();
        gate.waiting.push(performed);
        if !gate.flushing {
            gate.flushing = true;
            drop(gate);
            tokio::spawn(self.clone().flush());
        }
        false
    }

    /// Runs a started sync here (the caller holds the right to sync on its worker),
    /// records it, and answers `batches` (their durable appends fail when it did).
    fn complete(&self, batches: Vec<Performed>, started: Started) {
        let finished = match started {
            Ok(None) => Ok(()),
            Err(e) => Err(append_error(e)),
            Ok(Some(pending)) => {
                let done = self.sync_on_worker(pending);
                self.finish_sync(done)
            }
        };
        for mut p in batches {
            if let Err(e) = &finished {
                p.fail_durable(e);
            }
            deliver(self, p);
        }
    }

    /// The right to sync on this worker ([`WorkerSync`]), unless the owner's shared
    /// syncs run a round now: a sync joins the next round then (one file-system sync
    /// for all that meet there) rather than run alone beside it.
    fn claim_worker_sync(&self) -> Option<WorkerSync> {
        if self.sharing().is_some_and(|s| s.is_running()) {
            return None;
        }
        WorkerSync::claim(&self.worker_syncs)
    }

    /// The owner's shared syncs, while they share.
    fn sharing(&self) -> Option<&Arc<Syncs>> {
        self.syncs.as_ref().filter(|s| s.is_sharing())
    }

    /// Runs a sync on this worker (the caller holds the [`WorkerSync`] claim); when
    /// the owner serves other connections, a parked worker is woken first to serve
    /// them (and poll the I/O driver) meanwhile.
    fn sync_on_worker(&self, pending: PendingSync) -> SyncDone {
        self.wake_a_parked_worker();
        pending.run()
    }

    /// Wakes a parked runtime worker, if any (none is searching for work already)
    /// and if another connection than the syncing one may need serving, so that it
    /// polls the I/O driver and runs what this worker's queue holds while this
    /// worker blocks. Tokio offers no call for it: a task spawned on a worker goes
    /// to its LIFO slot, and the one it displaces goes to the worker's stealable
    /// queue, which notifies a parked worker. So two empty tasks: the second
    /// displaces the first. (The woken worker steals the first, finds nothing else
    /// and parks on the driver, free meanwhile.) Waking an idle vCPU costs the
    /// waker tens of microseconds on a VM: one client's durable append, alone on
    /// the owner, is not charged with it.
    fn wake_a_parked_worker(&self) {
        if self.connections.load(Ordering::Relaxed) > 1 {
            drop(tokio::spawn(async {}));
            drop(tokio::spawn(async {}));
        }
    }

    fn finish_sync(&self, done: SyncDone) -> Result<(), Error> {
        match self.write_now().as_mut() {
            Some(s) => s.finish_sync(done).map_err(append_error),
            None => Err(gone(&self.session_id)),
        }
    }

    /// The flusher: while batches wait, syncs once for all of them (each was written
    /// before the sync starts; the batches written while it runs wait for the next)
    /// and answers them in order.
    async fn flush(self: Arc<Self>) {
        // This task answered batches (and so woke their connections' writers and
        // followers) since the runtime last polled it.
        let mut answered = false;
        loop {
            if std::mem::take(&mut answered) {
                // Let the answers go out before the next sync: the tasks they woke
                // wait in this worker's LIFO slot, which a sync on this worker would
                // hold (see `WorkerSync`). Polled again, the slot is empty.
                tokio::task::yield_now().await;
            }
            let batches = {
                let mut gate = self.gate();
                if gate.waiting.is_empty() {
                    gate.flushing = false;
                    drop(gate);
                    self.flushed.notify_waiters();
                    return;
                }
                gate.waiting_calls = 0;
                std::mem::take(&mut gate.waiting)
            };
            answered = true;
            if !batches.iter().any(|p| p.sync) {
                for p in batches {
                    deliver(&self, p);
                }
                continue;
            }
            let started = match self.write_now().as_mut() {
                Some(s) => s.start_sync(),
                None => {
                    let e = gone(&self.session_id);
                    for mut p in batches {
                        p.fail_durable(&e);
                        deliver(&self, p);
                    }
                    continue;
                }
            };
            let started = match started {
                Ok(Some(pending)) => {
                    // On its worker when no other sync holds one, else with the other
                    // sessions' syncs that meet it (`syncs`), else alone on the
                    // blocking pool: the flusher waits, the worker serves on
                    // (measured cheaper than `block_in_place` with 64 sessions
                    // syncing at once).
                    let done = if let Some(claim) = self.claim_worker_sync() {
                        let done = self.sync_on_worker(pending);
                        drop(claim);
                        Some(done)
                    } else if let Some(syncs) = self.sharing() {
                        match syncs.run(pending).await {
                            Some(Together::Synced(done)) => Some(done),
                            Some(Together::Alone(pending)) => {
                                tokio::task::spawn_blocking(|| pending.run()).await.ok()
                            }
                            None => None,
                        }
                    } else {
                        tokio::task::spawn_blocking(|| pending.run()).await.ok()
                    };
                    let Some(done) = done else {
                        let e = Error::Internal {
                            detail: format!(
                                "session {}: the sync's thread failed",
                                self.session_id
                            ),
                        };
                        for mut p in batches {
                            p.fail_durable(&e);
                            deliver(&self, p);
                        }
                        continue;
                    };
                    let finished = self.finish_sync(done);
                    for mut p in batches {
                        if let Err(e) = &finished {
                            p.fail_durable(e);
                        }
                        deliver(&self, p);
                    }
                    continue;
                }
                other => other,
            };
            self.complete(batches, started);
        }
    }

    /// The drain task: performs the queued writes batch by batch (everything
    /// queued, up to `max_batch`), handing each to the flusher, then frees the gate.
    async fn drain(self: Arc<Self>) {
        loop {
            let batch = {
                let mut gate = self.gate();
                if gate.queue.is_empty() {
                    gate.running = false;
                    return;
                }
                let n = gate.queue.len().min(self.max_batch);
                gate.queue.drain(..n).collect::<Vec<_>>()
            };
            let open = if batch.iter().any(|c| weight(c) == Weight::Blocking) {
                // Closes and branched sessions: once every batch before them is
                // synced and answered, performed whole.
                self.settle().await && self.perform(batch).await
            } else {
                match self.write_locked(self.write_now(), batch, false) {
                    Some((performed, _)) => {
                        self.hand_over(performed);
                        true
                    }
                    None => false,
                }
            };
            if !open {
                self.close_gate();
                return;
            }
            // Let the tasks this woke run first: their clients' next writes then
            // join the next batch.
            tokio::task::yield_now().await;
        }
    }

    /// Waits until no batch waits for the flusher.
    async fn settle(&self) -> bool {
        loop {
            let flushed = self.flushed.notified();
            tokio::pin!(flushed);
            flushed.as_mut().enable();
            {
                let gate = self.gate();
                if gate.waiting.is_empty() && !gate.flushing {
                    return true;
                }
            }
            flushed.await;
        }
    }

    /// The session is gone: every queued command is refused, and all that come later.
    fn close_gate(&self) {
        let rest = {
            let mut gate = self.gate();
            gate.closed = true;
            gate.running = false;
            std::mem::take(&mut gate.queue)
        };
        refuse_all(rest.into(), &self.session_id);
    }

    /// Performs one batch that holds a close or a branched session (the drain's only
    /// call, once every batch before it is synced and answered) whole on the
    /// blocking pool, its sync included; returns whether the session is still open.
    async fn perform(self: &Arc<Self>, batch: Vec<Command>) -> bool {
        let cell = self.clone();
        tokio::task::spawn_blocking(move || cell.perform_locked(cell.write(), batch))
            .await
            .unwrap_or(false)
    }

    /// Performs one batch under `guard`, its sync included. A panic in the library
    /// lets the session go (its lock with it): the batch's callers see their answers
    /// dropped, and the gate closes.
    fn perform_locked(
        &self,
        guard: RwLockWriteGuard<'_, Option<OwnedSession>>,
        batch: Vec<Command>,
    ) -> bool {
        match catch_unwind(AssertUnwindSafe(|| process(self, guard, batch))) {
            Ok(open) => open,
            Err(_) => {
                drop(self.take());
                false
            }
        }
    }
}

fn multi_thread() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

/// The right to sync on a runtime worker itself: one sync at a time per owner, so
/// the other workers keep serving while it syncs.
///
/// Only a task that woke no other task since the runtime polled it syncs on its
/// worker. A task woken (or spawned) by a task running on a worker goes to that
/// worker's LIFO slot, which the other workers cannot take (tokio-rs/tokio#4941):
/// a sync blocking the worker would hold it — an answer, a follower's notification,
/// a drain task — for up to one `fdatasync` although another worker is idle. When
/// a task starts a poll its worker's slot is empty (the runtime runs it, or moves
/// it to the stealable queue, after each poll), so the connection's task syncs its
/// durable append only when it is the first line the task handles in this poll, and
/// the flusher yields (running what it woke) before a sync after answering.
///
/// And the sync wakes a parked worker first ([`Shared::sync_on_worker`]) when the
/// owner serves other connections: the worker that syncs is often the one that
/// polled the I/O driver and found the request, while the other sleeps off the
/// driver; nobody would read the sockets (another connection's request) until the
/// sync ends.
struct WorkerSync(Arc<AtomicUsize>);

impl WorkerSync {
    /// The right, when no other sync of the owner holds it and the runtime has
    /// other workers.
    fn claim(count: &Arc<AtomicUsize>) -> Option<WorkerSync> {
        if !multi_thread() {
            return None;
        }
        if count.fetch_add(1, Ordering::AcqRel) == 0 {
            Some(WorkerSync(count.clone()))
        } else {
            count.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for WorkerSync {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A sync started under the write lock (none when nothing is left to sync).
type Started = Result<Option<PendingSync>, session_manager::AppendError>;

/// Where a command may be performed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Weight {
    /// No sync: on the caller's task.
    Light,
    /// One sync of the journal: on a worker, or on the blocking pool.
    Sync,
    /// Opens or closes files (a branched session, a close): on the blocking pool.
    Blocking,
}

fn weight(command: &Command) -> Weight {
    match command {
        Command::Call { request, .. } if asks_sync(request) => Weight::Sync,
        Command::Call { .. } | Command::Follow { .. } | Command::Unfollow { .. } => Weight::Light,
        Command::Branched { .. } | Command::Close { .. } => Weight::Blocking,
    }
}

/// Whether a write asks for a sync before its answer (a durable append, `sync`).
fn asks_sync(request: &Request) -> bool {
    use Request as R;
    let durability = match request {
        R::AppendMessage(q) => q.durability,
        R::AppendThinkingLevelChange(q) => q.durability,
        R::AppendServiceTierChange(q) => q.durability,
        R::AppendModelChange(q) => q.durability,
        R::AppendCompaction(q) => q.durability,
        R::AppendCustomEntry(q) => q.durability,
        R::AppendChildUsageAttribution(q) => q.durability,
        R::AppendSessionInfo(q) => q.durability,
        R::AppendSessionState(q) => q.durability,
        R::AppendAgentStatus(q) => q.durability,
        R::AppendGitState(q) => q.durability,
        R::AppendCustomMessageEntry(q) => q.durability,
        R::AppendLabelChange(q) => q.durability,
        R::AppendEntry(q) => q.durability,
        R::BranchWithSummary(q) => q.durability,
        R::SessionSync(_) => return true,
        _ => return false,
    };
    durability.unwrap_or_default() == p::Durability::Durable
}

/// Where a write's answer goes: a connection's outbox, as the line answering its
/// request (queued in order without waiting, see [`Outbox::answer`]), or a channel
/// an internal caller waits on. An answer dropped unsent (the library panicked, the
/// runtime shuts down) is sent as "no longer served".
pub(crate) struct Answer(Option<To>);

enum To {
    #[cfg(test)]
    Channel(oneshot::Sender<Outcome>),
    Line {
        out: Arc<Outbox>,
        id: RequestId,
        /// The connection's in-flight permit, released once the answer is queued.
        permit: OwnedSemaphorePermit,
        session_id: Arc<str>,
    },
}

impl Answer {
    /// To a channel.
    #[cfg(test)]
    pub(crate) fn channel(tx: oneshot::Sender<Outcome>) -> Answer {
        Answer(Some(To::Channel(tx)))
    }

    /// As the line answering `id` in `out`.
    pub(crate) fn line(
        out: Arc<Outbox>,
        id: RequestId,
        permit: OwnedSemaphorePermit,
        session_id: Arc<str>,
    ) -> Answer {
        Answer(Some(To::Line {
            out,
            id,
            permit,
            session_id,
        }))
    }

    pub(crate) fn send(mut self, reply: Outcome) {
        if let Some(to) = self.0.take() {
            to.send(reply);
        }
    }
}

impl To {
    fn send(self, reply: Outcome) {
        match self {
            // A caller that went away does not need its answer.
            #[cfg(test)]
            To::Channel(tx) => drop(tx.send(reply)),
            To::Line {
                out, id, permit, ..
            } => {
                let line = match reply {
                    Ok(Done::Appended(entry_id)) => p::encode_appended(&id, &entry_id),
                    Ok(Done::Json(raw)) => p::encode_result(&id, &raw),
                    Err(e) => p::encode_error(Some(&id), &e),
                };
                out.answer(line, permit);
            }
        }
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(to) = self.0.take() {
            let e = match &to {
                To::Line { session_id, .. } => gone(session_id),
                #[cfg(test)]
                To::Channel(_) => return, // the receiver sees the channel closed
            };
            to.send(Err(e));
        }
    }
}

/// What a session's writer is asked to do.
pub(crate) enum Command {
    /// A `session/*` write: an append, `session/branch`, `session/sync`.
    Call {
        request: Box<Request>,
        reply: Answer,
    },
    /// `createBranchedSession(leaf)`: a new session, for the registry to adopt.
    Branched {
        leaf: String,
        reply: oneshot::Sender<Result<OwnedSession, Error>>,
    },
    /// `session/follow`: `outbox` gets a notification for each append after this.
    Follow { outbox: Arc<Outbox>, reply: Answer },
    /// `session/unfollow` (answered when `reply` is given) or a connection's end.
    Unfollow { outbox: u64, reply: Option<Answer> },
    /// Sync and release the session; nothing after this is performed.
    Close {
        done: oneshot::Sender<Result<(), Error>>,
    },
}

/// The bounds and the store's followers a session needs.
pub(crate) struct Setup {
    pub(crate) queue: usize,
    pub(crate) max_batch: usize,
    pub(crate) max_reads: usize,
    pub(crate) store: Arc<Followers>,
    /// The owner's count of syncs running on a worker.
    pub(crate) worker_syncs: Arc<AtomicUsize>,
    /// The owner's count of connections served.
    pub(crate) connections: Arc<AtomicUsize>,
    /// The owner's shared syncs, if any.
    pub(crate) syncs: Option<Arc<Syncs>>,
}

/// The shared cell of `session`, its gate free.
pub(crate) fn start(session: OwnedSession, setup: Setup) -> Arc<Shared> {
    Arc::new(Shared {
        session_id: session.session_id().into(),
        session: RwLock::new(Some(session)),
        reads: Arc::new(Semaphore::new(setup.max_reads.max(1))),
        gate: Mutex::new(Gate::default()),
        followers: Mutex::new(Vec::new()),
        store: setup.store,
        queue: setup.queue.max(1),
        max_batch: setup.max_batch.max(1),
        flushed: Notify::new(),
        worker_syncs: setup.worker_syncs,
        connections: setup.connections,
        syncs: setup.syncs,
    })
}

/// A notification to send once its append is acknowledged.
struct Note {
    /// The append's answer (in the batch's list).
    answer: usize,
    /// `session/appended`, and the followers at the time of the append.
    session: Option<(String, Vec<Follower>)>,
    /// `store/changed`.
    store: Option<String>,
}

/// A batch whose writes were performed: its answers and notifications, sent once
/// the sync that covers it (when it needs one) is done.
struct Performed {
    /// Each call's answer, and whether it waits for a sync.
    answers: Vec<(Answer, Outcome, bool)>,
    notes: Vec<Note>,
    /// A durable append or `session/sync` of the batch needs a sync.
    sync: bool,
}

impl Performed {
    /// The sync that would cover this batch failed: nothing that asked for
    /// durability is acknowledged.
    fn fail_durable(&mut self, e: &Error) {
        for (_, r, durable) in &mut self.answers {
            if *durable && r.is_ok() {
                *r = Err(e.clone());
            }
        }
    }
}

/// A branched session's answer.
type BranchedReply = (
    oneshot::Sender<Result<OwnedSession, Error>>,
    Result<OwnedSession, Error>,
);

/// What performing a batch's writes left to do.
struct Batch {
    performed: Performed,
    branched: Vec<BranchedReply>,
    close: Option<oneshot::Sender<Result<(), Error>>>,
}

/// Performs the commands of a batch in order (appends written, not synced).
fn write_commands(shared: &Shared, s: &mut OwnedSession, batch: Vec<Command>) -> Batch {
    let store = &*shared.store;
    let mut followers = shared
        .followers
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let followers = &mut *followers;
    let mut performed = Performed {
        answers: Vec::with_capacity(batch.len()),
        notes: Vec::new(),
        sync: false,
    };
    let mut branched = Vec::new();
    let mut close = None;
    // Every append is written at once and synced by the batch that carries it.
    s.set_durability(Durability::Buffered);
    for command in batch {
        let answers = &mut performed.answers;
        match command {
            _ if close.is_some() => {
                let closed = Error::SessionNotOpen {
                    session_id: s.session_id().to_owned(),
                };
                match command {
                    Command::Call { reply, .. } | Command::Follow { reply, .. } => {
                        answers.push((reply, Err(closed), false));
                    }
                    Command::Unfollow { reply, .. } => {
                        if let Some(reply) = reply {
                            answers.push((reply, Err(closed), false));
                        }
                    }
                    Command::Branched { reply, .. } => branched.push((reply, Err(closed))),
                    Command::Close { .. } => {}
                }
            }
            Command::Call { request, reply } => {
                let changes_store = may_change_store(&request);
                let (r, durable) = apply(s, *request);
                if let Ok(Done::Appended(id)) = &r {
                    let note = note(s, id, followers, changes_store && !store.is_empty());
                    performed.notes.push(Note {
                        answer: answers.len(),
                        ..note
                    });
                }
                performed.sync |= durable && r.is_ok();
                answers.push((reply, r, durable));
            }
            Command::Branched { leaf, reply } => {
                let r = s
                    .create_branched_session(&leaf)
                    .map_err(|e| open_error("session/createBranchedSession", e));
                branched.push((reply, r));
            }
            Command::Follow { outbox, reply } => {
                if !followers.iter().any(|f| f.id == outbox.id) {
                    followers.push(Follower::of(&outbox));
                }
                let followed = p::Followed {
                    last_entry_id: s.last_entry_id().map(str::to_owned),
                };
                answers.push((reply, done(&followed), false));
            }
            Command::Unfollow { outbox, reply } => {
                followers.retain(|f| f.id != outbox);
                if let Some(reply) = reply {
                    answers.push((reply, done(&p::Empty {}), false));
                }
            }
            Command::Close { done } => close = Some(done),
        }
    }
    followers.retain(|f| !f.is_gone());
    Batch {
        performed,
        branched,
        close,
    }
}

/// Notifies the followers of each acknowledged append of a batch, then answers
/// every command, in order.
fn deliver(shared: &Shared, performed: Performed) {
    let Performed { answers, notes, .. } = performed;
    if !notes.is_empty() {
        let session_topic = Topic::Session(shared.session_id.to_string());
        for note in notes {
            if !answers.get(note.answer).is_some_and(|(_, r, _)| r.is_ok()) {
                continue; // not acknowledged: not announced
            }
            if let Some((line, to)) = note.session {
                for f in to {
                    f.notify(&session_topic, line.clone());
                }
            }
            if let Some(line) = note.store {
                shared.store.notify(&Topic::Store, line);
            }
        }
    }
    for (reply, r, _) in answers {
        reply.send(r);
    }
}

/// Performs one whole batch under `guard`: the writes in order, one sync if any
/// asked for it (run with no lock held: reads go on), then the answers and
/// notifications in order. Returns whether the session is still open.
fn process(
    shared: &Shared,
    mut guard: RwLockWriteGuard<'_, Option<OwnedSession>>,
    batch: Vec<Command>,
) -> bool {
    let Some(s) = guard.as_mut() else {
        drop(guard);
        refuse_all(batch, &shared.session_id);
        return false;
    };
    let Batch {
        mut performed,
        branched,
        close,
    } = write_commands(shared, s, batch);
    let started = performed.sync.then(|| s.start_sync());
    drop(guard);
    let finished = match started {
        None | Some(Ok(None)) => Ok(()),
        Some(Err(e)) => Err(e),
        Some(Ok(Some(pending))) => {
            let done = pending.run();
            match shared.write().as_mut() {
                Some(s) => s.finish_sync(done),
                None => Ok(()), // closed meanwhile: nothing to record
            }
        }
    };
    if let Err(e) = finished {
        performed.fail_durable(&append_error(e));
    }
    deliver(shared, performed);
    for (reply, r) in branched {
        let _ = reply.send(r); // unclaimed, the new session is closed on drop
    }
    match close {
        None => true,
        Some(done) => {
            let closed = shared.take().map(OwnedSession::close);
            let _ = done.send(closed.unwrap_or(Ok(())).map_err(append_error));
            false
        }
    }
}

/// Answers every command of a batch that met a closed session.
fn refuse_all(batch: Vec<Command>, session_id: &str) {
    for command in batch {
        match command {
            Command::Call { reply, .. }
            | Command::Follow { reply, .. }
            | Command::Unfollow {
                reply: Some(reply), ..
            } => reply.send(Err(gone(session_id))),
            Command::Branched { reply, .. } => {
                let _ = reply.send(Err(gone(session_id)));
            }
            Command::Close { done } => {
                let _ = done.send(Ok(()));
            }
            Command::Unfollow { reply: None, .. } => {}
        }
    }
}

/// Whether a write may change what the agents view shows (name, state, status).
fn may_change_store(request: &Request) -> bool {
    match request {
        Request::AppendSessionInfo(_)
        | Request::AppendSessionState(_)
        | Request::AppendAgentStatus(_) => true,
        Request::AppendEntry(q) => matches!(
            q.entry,
            Entry::SessionInfo(_) | Entry::SessionState(_) | Entry::AgentStatus(_)
        ),
        _ => false,
    }
}

/// The notifications an append makes: the entry, read back once, for the session's
/// followers; the change, for the store's.
fn note(s: &OwnedSession, id: &EntryId, followers: &[Follower], for_store: bool) -> Note {
    let mut out = Note {
        answer: 0,
        session: None,
        store: None,
    };
    if followers.is_empty() && !for_store {
        return out;
    }
    let Ok(entry) = s.read_entry(id.as_str(), session_manager::ReadLimits::default()) else {
        return out; // read back what was just written: cannot fail but on I/O errors
    };
    if for_store {
        let change = match &entry {
            Entry::SessionInfo(_) => Some(p::StoreChange::Renamed {
                name: s.session_name().map(str::to_owned),
            }),
            Entry::SessionState(e) => Some(p::StoreChange::State {
                state: e.state.clone(),
            }),
            Entry::AgentStatus(e) => Some(p::StoreChange::AgentStatus {
                status: e.status.clone(),
            }),
            _ => None,
        };
        out.store = change.map(|change| store_line(s, change));
    }
    if !followers.is_empty() {
        let line =
            p::encode_notification(&p::Notification::Appended(Box::new(p::AppendedParams {
                session_id: s.session_id().to_owned(),
                entry,
            })));
        out.session = Some((line, followers.to_vec()));
    }
    out
}

/// A `store/changed` line about `s`.
pub(crate) fn store_line(s: &OwnedSession, change: p::StoreChange) -> String {
    store_change_line(s.session_id(), &opened(s).session_file, change)
}

/// A `store/changed` line.
pub(crate) fn store_change_line(session_id: &str, file: &str, change: p::StoreChange) -> String {
    p::encode_notification(&p::Notification::StoreChanged(p::StoreChangedParams {
        session_id: session_id.to_owned(),
        session_file: file.to_owned(),
        change,
    }))
}

/// The answer to `store/open` for this session now.
pub(crate) fn opened(s: &OwnedSession) -> p::SessionOpened {
    p::SessionOpened {
        session_id: s.session_id().to_owned(),
        session_file: s
            .session_file()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        header: s.header().clone(),
        leaf_id: s.get_leaf_id().cloned(),
    }
}

pub(crate) fn gone(session_id: &str) -> Error {
    Error::Internal {
        detail: format!("session {session_id} is no longer served (it was closed)"),
    }
}

pub(crate) fn ok<T: Serialize + ?Sized>(value: &T) -> Reply {
    serde_json::value::to_raw_value(value).map_err(|e| Error::Internal {
        detail: format!("serializing a result: {e}"),
    })
}

/// A write's outcome, and whether its answer waits for the batch's sync.
type Written = (Outcome, bool);

fn appended(
    r: Result<EntryId, session_manager::AppendError>,
    durability: Option<p::Durability>,
) -> Written {
    let durable = durability.unwrap_or_default() == p::Durability::Durable;
    (r.map(Done::Appended).map_err(append_error), durable)
}

fn limits(l: Option<p::ReadLimits>) -> session_manager::ReadLimits {
    let l = l.unwrap_or_default();
    session_manager::ReadLimits {
        max_source_entries: l.max_source_entries.unwrap_or(DEFAULT_MAX_SOURCE_ENTRIES),
        max_source_bytes: l.max_source_bytes.unwrap_or(DEFAULT_MAX_SOURCE_BYTES),
    }
}

/// Whether a `session/*` request only reads (served beside the writes, never queued).
pub(crate) fn is_read(request: &Request) -> bool {
    matches!(
        request,
        Request::ReadLeafEntry(_)
            | Request::ReadEntry(_)
            | Request::ReadLabel(_)
            | Request::ReadBranch(_)
            | Request::ReadBranches(_)
            | Request::ReadEntries(_)
            | Request::ReadTree(_)
            | Request::ReadEntryRetention(_)
            | Request::BuildSessionContext(_)
            | Request::GetHeader(_)
            | Request::GetMetadata(_)
            | Request::GetArtifactDir(_)
    )
}

/// Performs one `session/*` write: its outcome (an append's: the new entry's id), and
/// whether the answer waits for the batch's sync.
fn apply(s: &mut OwnedSession, request: Request) -> Written {
    use Request as R;
    match request {
        R::AppendMessage(q) => appended(s.append_message(q.message), q.durability),
        R::AppendThinkingLevelChange(q) => appended(
            s.append_thinking_level_change(&q.thinking_level),
            q.durability,
        ),
        R::AppendServiceTierChange(q) => {
            appended(s.append_service_tier_change(&q.service_tier), q.durability)
        }
        R::AppendModelChange(q) => appended(
            s.append_model_change(&q.provider, &q.model_id),
            q.durability,
        ),
        R::AppendCompaction(q) => appended(
            s.append_compaction(
                &q.summary,
                &q.first_kept_entry_id,
                q.tokens_before,
                q.details,
                q.from_hook,
            ),
            q.durability,
        ),
        R::AppendCustomEntry(q) => {
            appended(s.append_custom_entry(&q.custom_type, q.data), q.durability)
        }
        R::AppendChildUsageAttribution(q) => appended(
            s.append_child_usage_attribution(&q.target_id, q.child_usage, q.aggregate_usage),
            q.durability,
        ),
        R::AppendSessionInfo(q) => appended(s.append_session_info(&q.name), q.durability),
        R::AppendSessionState(q) => appended(s.append_session_state(q.state), q.durability),
        R::AppendAgentStatus(q) => appended(s.append_agent_status(q.status), q.durability),
        R::AppendGitState(q) => appended(s.append_git_state(q.git), q.durability),
        R::AppendCustomMessageEntry(q) => appended(
            s.append_custom_message_entry(&q.custom_type, q.content, q.display, q.details),
            q.durability,
        ),
        R::AppendLabelChange(q) => appended(
            s.append_label_change(&q.target_id, q.label.as_deref()),
            q.durability,
        ),
        R::AppendEntry(q) => appended(s.append_entry(q.entry), q.durability),
        R::BranchWithSummary(q) => appended(
            s.branch_with_summary(
                q.from_id.as_ref().map(|i| i.as_str()),
                &q.summary,
                q.details,
                q.from_hook,
            ),
            q.durability,
        ),
        R::Branch(q) => (
            s.branch_to(q.entry_id.as_ref().map(|i| i.as_str()))
                .map_err(append_error)
                .and_then(|()| done(&p::Empty {})),
            false,
        ),
        R::SessionSync(_) => (done(&p::Empty {}), true),
        // A read sent as a write (`is_read` sends none) is answered all the same.
        other if is_read(&other) => (read(s, other).map(Done::Json), false),
        other => (
            Err(Error::MethodNotFound {
                method: other.method().as_str().to_owned(),
            }),
            false,
        ),
    }
}

/// Performs one read of `s` as it is now: through a capture of what is written, so
/// nothing appended later is seen and no sync is waited for.
pub(crate) fn read(s: &OwnedSession, request: Request) -> Reply {
    use Request as R;
    match request {
        R::ReadLeafEntry(q) => s
            .read_leaf_entry(limits(q.limits))
            .map_err(read_error)
            .and_then(|entry| ok(&p::MaybeEntry { entry })),
        R::ReadEntry(q) => s
            .read_entry(&q.entry_id, limits(q.limits))
            .map_err(read_error)
            .and_then(|entry| ok(&p::OneEntry { entry })),
        R::ReadLabel(q) => s
            .read_label(&q.entry_id, limits(q.limits))
            .map_err(read_error)
            .and_then(|label| ok(&p::Label { label })),
        R::ReadBranch(q) => s
            .read_branch(q.from_id.as_deref(), limits(q.limits))
            .map_err(read_error)
            .and_then(|entries| ok(&p::Entries { entries })),
        R::ReadBranches(q) => {
            let ids: Vec<&str> = q.leaf_ids.iter().map(String::as_str).collect();
            s.read_branches(&ids, limits(q.limits))
                .map_err(read_error)
                .and_then(|branches| ok(&p::Branches { branches }))
        }
        R::ReadEntries(q) => s
            .read_entries(limits(q.limits))
            .map_err(read_error)
            .and_then(|entries| ok(&p::Entries { entries })),
        R::ReadTree(q) => s
            .read_tree(limits(q.limits))
            .map_err(read_error)
            .and_then(|t| ok(&tree(t))),
        R::ReadEntryRetention(q) => s
            .read_entry_retention(&q.entry_id)
            .map_err(read_error)
            .and_then(|r| {
                let retention = r.map(|r| {
                    let mut v = json!({
                        "path": r.path.to_string_lossy(),
                        "blake3": r.blake3,
                        "line": r.line,
                        "sourceVersion": r.source_version,
                        "changed": r.changed,
                    });
                    if let Some(id) = r.original_session_id {
                        v["originalSessionId"] = id.into();
                    }
                    v
                });
                ok(&p::RetentionResult { retention })
            }),
        // In JavaScript's number spelling, as `context_line` answers it.
        R::BuildSessionContext(q) => s
            .build_session_context_with(limits(q.limits), &ContextOptions::default())
            .map_err(read_error)
            .and_then(|c| {
                session_types::js::stringify::to_string(&ContextResult(&c))
                    .and_then(RawValue::from_string)
                    .map_err(|e| Error::Internal {
                        detail: format!("serializing a context: {e}"),
                    })
            }),
        R::GetHeader(_) => ok(&p::HeaderResult {
            header: s.header().clone(),
        }),
        R::GetMetadata(_) => ok(&p::Metadata {
            session_id: s.session_id().to_owned(),
            session_file: opened(s).session_file,
            session_dir: s.session_dir().to_string_lossy().into_owned(),
            cwd: s.cwd().to_owned(),
            session_name: s.session_name().map(str::to_owned),
            leaf_id: s.get_leaf_id().cloned(),
        }),
        R::GetArtifactDir(_) => match s.session_artifact_dir() {
            Ok(path) => ok(&p::PathResult {
                path: path.to_string_lossy().into_owned(),
            }),
            Err(e) => Err(Error::Store {
                detail: format!("session {}: artifact directory: {e}", s.session_id()),
            }),
        },
        other => Err(Error::MethodNotFound {
            method: other.method().as_str().to_owned(),
        }),
    }
}

/// A context as the protocol's `SessionContext`: the library's
/// [`SessionContext::to_json`](session_manager::SessionContext::to_json) (the
/// reference's shape plus `serviceTier`, keys in that order), serialized straight
/// from the messages instead of through a JSON value tree. The same text: the
/// messages are the library's own `Serialize` (what `to_json` turns into values).
struct ContextResult<'a, 's>(&'a session_manager::SessionContext<'s>);

impl Serialize for ContextResult<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (c, settings) = (self.0, &self.0.settings);
        let mut m = serializer.serialize_map(Some(
            2 + usize::from(settings.thinking_level.is_some())
                + usize::from(settings.service_tier.is_some()),
        ))?;
        m.serialize_entry("messages", &c.messages)?;
        if let Some(level) = &settings.thinking_level {
            m.serialize_entry("thinkingLevel", level)?;
        }
        m.serialize_entry("model", &settings.model)?;
        if let Some(tier) = &settings.service_tier {
            m.serialize_entry("serviceTier", tier)?;
        }
        m.end()
    }
}

/// The line answering `id` with the context `c`: what `encode_result` writes, the
/// result written straight into the line by the compact serializer with the
/// reference's number spelling (as `bcs context --json` prints it: the bytes of the
/// reference's `JSON.stringify`).
fn context_line(id: &RequestId, c: &session_manager::SessionContext<'_>) -> String {
    let mut line = Vec::with_capacity(64 << 10);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    let written = serde_json::to_writer(&mut line, id)
        .map_err(std::io::Error::from)
        .and_then(|()| {
            line.extend_from_slice(br#","result":"#);
            session_types::js::stringify::write(&mut line, &ContextResult(c))
        });
    if let Err(e) = written {
        let e = Error::Internal {
            detail: format!("serializing a context: {e}"),
        };
        return p::encode_error(Some(id), &e);
    }
    line.push(b'}');
    String::from_utf8(line).unwrap_or_else(|e| {
        let e = Error::Internal {
            detail: format!(
                "a serialized context is not utf-8 at byte {}",
                e.utf8_error().valid_up_to()
            ),
        };
        p::encode_error(Some(id), &e)
    })
}

fn tree(t: session_manager::SessionTree<'static>) -> p::Tree {
    let to_u32 = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
    p::Tree {
        nodes: t
            .nodes
            .into_iter()
            .map(|n| p::TreeNode {
                entry: match n.entry {
                    NodeEntry::Owned(e) => *e,
                    NodeEntry::Borrowed(e) => e.clone(),
                },
                label: n.label,
                label_timestamp: n.label_timestamp,
                depth: n.depth,
                children: n.children.into_iter().map(to_u32).collect(),
            })
            .collect(),
        roots: t.roots.into_iter().map(to_u32).collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use session_manager::{Layout, Sources, Store};
    use session_testkit::sim::SimFs;

    use super::*;

    fn append(
        session_id: &str,
        durability: p::Durability,
    ) -> (Command, oneshot::Receiver<Outcome>) {
        let (reply, answer) = oneshot::channel();
        let message = serde_json::from_value(json!({"role":"user","content":"x","timestamp":1}))
            .expect("a message");
        let request = Request::AppendMessage(p::AppendMessageParams {
            session_id: session_id.to_owned(),
            message,
            durability: Some(durability),
        });
        let command = Command::Call {
            request: Box::new(request),
            reply: Answer::channel(reply),
        };
        (command, answer)
    }

    /// A new session of a store on `fs` (deterministic clock and ids).
    fn session_on(fs: &SimFs) -> OwnedSession {
        Store::new(Layout::with_root("/sim").expect("absolute"))
            .with_sources(Sources::deterministic(1, 1))
            .with_vfs(Arc::new(fs.clone()))
            .create("/w")
            .expect("create")
    }

    /// The syncs one batch of `n` appends costs.
    fn syncs_of_a_batch(n: usize, durability: p::Durability) -> u64 {
        let fs = SimFs::new();
        let s = session_on(&fs);
        let id = s.session_id().to_owned();
        let (batch, answers): (Vec<_>, Vec<_>) = (0..n).map(|_| append(&id, durability)).unzip();
        let before = fs.stats().syncs;
        let shared = cell(s);
        assert!(process(&shared, shared.write(), batch));
        let after = fs.stats().syncs;
        for mut a in answers {
            assert!(
                matches!(a.try_recv(), Ok(Ok(_))),
                "every append is acknowledged"
            );
        }
        drop(shared);
        after - before
    }

    fn cell(s: OwnedSession) -> Arc<Shared> {
        start(
            s,
            Setup {
                queue: 16,
                max_batch: 16,
                max_reads: 1,
                store: Arc::default(),
                worker_syncs: Arc::default(),
                connections: Arc::default(),
                syncs: None,
            },
        )
    }

    #[test]
    fn a_batch_of_durable_appends_shares_one_sync() {
        let one = syncs_of_a_batch(1, p::Durability::Durable);
        assert!(one >= 1, "a durable append is synced");
        assert_eq!(syncs_of_a_batch(32, p::Durability::Durable), one);
        assert_eq!(syncs_of_a_batch(32, p::Durability::Buffered), 0);
    }

    #[test]
    fn answers_wait_for_the_sync_and_a_failed_sync_acknowledges_nothing_durable() {
        let fs = SimFs::new();
        let s = session_on(&fs);
        let id = s.session_id().to_owned();
        let (d, durable) = append(&id, p::Durability::Durable);
        let (b, buffered) = append(&id, p::Durability::Buffered);
        fs.fail_sync_after(1);
        let shared = cell(s);
        let _ = process(&shared, shared.write(), vec![b, d]);
        let (mut durable, mut buffered) = (durable, buffered);
        assert!(
            matches!(buffered.try_recv(), Ok(Ok(_))),
            "written is all a buffered append asks"
        );
        assert!(
            matches!(durable.try_recv(), Ok(Err(Error::Store { .. }))),
            "a durable append whose sync failed is not acknowledged"
        );
    }

    /// A context read among a batch's writes (`read`) is answered as a read on its
    /// own (`read_line`) is: in JavaScript's number spelling (`0.000001`, not serde's
    /// `1e-6`), byte for byte.
    #[test]
    fn a_context_is_spelled_alike_however_it_is_read() {
        let fs = SimFs::new();
        let mut s = session_on(&fs);
        let message = session_manager::AgentMessage::parse_json(
            r#"{"role":"user","content":"x","timestamp":1,"w":[1e21,0.000001,1.5e300,123456789012345680000]}"#,
        )
        .expect("a message");
        s.append_message(message).expect("appended");
        let id = s.session_id().to_owned();
        let request = || {
            Request::BuildSessionContext(p::ReadParams {
                session_id: id.clone(),
                limits: None,
            })
        };
        let shared = cell(s);
        let line = shared.read_line(&RequestId::Number(7), request());
        let guard = shared.read_guard();
        let raw = read(guard.as_ref().expect("open"), request()).expect("read");
        assert!(
            raw.get()
                .contains("[1e+21,0.000001,1.5e+300,123456789012345680000]"),
            "{}",
            raw.get()
        );
        let expected = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{}}}"#, raw.get());
        assert_eq!(line, expected);
    }
}
