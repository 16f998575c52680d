//! One writer at a time per open session, fed by a bounded queue; reads go beside it.
//!
//! The session sits in a [`Shared`] cell behind a read-write lock, with a *gate*: the
//! queue of writes not yet performed and whether a batch is being performed now.
//! Whoever finds the gate free performs; everyone else queues behind:
//!
//! - **Inline.** A write that finds nothing queued and nothing running, and needs no
//!   sync (a buffered append, `branch`, `follow`, `unfollow`), is performed at once on
//!   the connection's own task, under the write lock if it is free (no thread
//!   hand-off: the answer goes out on the same thread that read the request).
//! - **Lead.** A write that finds the gate free but cannot run inline (it asks for a
//!   sync, or a read holds the lock) is queued first and its connection spawns one
//!   task ([`Lead::run`]) that performs the batch (everything queued by then) and
//!   then sends the answer itself: one task on one thread, no second wake-up.
//! - **Drain.** A write that finds others queued or a batch running is queued; when
//!   a batch ends with writes queued meanwhile, a *drain* task performs batches until
//!   the queue is empty. A batch is everything queued (up to `max_batch` commands).
//!
//! A batch, wherever it runs:
//!
//! 1. under the write lock, performs the writes in order with the journal in
//!    buffered mode (each append is written when performed);
//! 2. if any of them asked for durability, syncs once under the *read* lock
//!    ([`OwnedSession::sync_journal_shared`]), so reads go on during the sync;
//! 3. answers each command in order, and notifies the session's followers of each
//!    acknowledged append (and the store's followers of names, states and statuses).
//!
//! A batch that syncs runs on the drain task's worker thread itself when no other
//! batch is syncing on a worker (the answer then leaves from the thread that synced:
//! no wake-up of another thread on the way), otherwise in `block_in_place` (the
//! runtime moves its other tasks to another thread, so syncs of many sessions run at
//! once); on a current-thread runtime, and for closes and branched sessions, on the
//! blocking pool. Appends that arrive while a batch runs share the next batch's sync,
//! and none is acknowledged as durable before it is. Only one batch of a session runs
//! at a time and batches are taken in queue order, so writes stay serialized and
//! notifications in journal order. Reads ([`read`]) do not enter the queue: the
//! connection runs them on the blocking pool under the read lock, through a capture
//! of the session as it is then. They never wait for a sync, only for a batch's writes.

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
    NodeEntry, OwnedSession,
};
use session_protocol::{self as p, Error, Request};
use session_types::Entry;
use tokio::runtime::RuntimeFlavor;
use tokio::sync::{Semaphore, oneshot};

use crate::errors::{append_error, open_error, read_error};
use crate::outbox::{Follower, Followers, Outbox, Topic};

/// What a call answers: the result's JSON, or an error.
pub(crate) type Reply = Result<Box<RawValue>, Error>;

/// Batches syncing on a runtime worker itself now (not in `block_in_place`): at most
/// one, so the other workers keep serving while it syncs.
static SYNCING_ON_A_WORKER: AtomicUsize = AtomicUsize::new(0);

/// An open session, shared by the connections that write it (through its gate) and
/// read it.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The session; `None` once closed.
    session: RwLock<Option<OwnedSession>>,
    /// Its id, for errors and notifications.
    pub(crate) session_id: String,
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
}

/// The writes waiting for a session, and who performs them.
#[derive(Default)]
struct Gate {
    queue: VecDeque<Command>,
    /// A batch is being performed (inline or by the drain task): others queue.
    running: bool,
    /// Closed (on request, or after the library panicked): nothing more is performed.
    closed: bool,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("queued", &self.queue.len())
            .field("running", &self.running)
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

    fn read_guard(&self) -> RwLockReadGuard<'_, Option<OwnedSession>> {
        self.session.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn gate(&self) -> MutexGuard<'_, Gate> {
        // Plain data changed in single statements: a panic cannot leave it torn.
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a read (`session/read*`, `session/get*`, `buildSessionContext`) on the
    /// session as it is now; called on the blocking pool.
    pub(crate) fn read(&self, request: Request) -> Reply {
        match self.read_guard().as_ref() {
            Some(s) => read(s, request),
            None => Err(gone(&self.session_id)),
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

    /// Performs `command` now, on the caller's task, when nothing is queued or
    /// running, it needs no sync and the write lock is free; otherwise queues it (and
    /// starts the drain task when none runs). Its answer goes to its reply channel
    /// either way; a refused command (`Full`, `Closed`) is dropped unanswered.
    /// `Unfollow` and `Close` are never refused for a full queue (a connection sends
    /// at most one of each per session).
    pub(crate) fn submit(self: &Arc<Self>, command: Command) -> Submitted {
        match self.enter(command) {
            Entered::Lead(lead) => {
                tokio::spawn(lead.run());
                Submitted::Queued
            }
            Entered::Was(submitted) => submitted,
        }
    }

    /// As [`Shared::submit`], but when the command starts a batch that cannot run
    /// inline (it syncs, say) the caller gets the [`Lead`]: it runs that batch on a
    /// task of its own, which then answers from the same thread (no second task to
    /// wake for the answer).
    pub(crate) fn enter(self: &Arc<Self>, command: Command) -> Entered {
        let mut gate = self.gate();
        if gate.closed {
            return Entered::Was(Submitted::Closed);
        }
        if gate.running {
            let bounded = matches!(command, Command::Call { .. } | Command::Follow { .. });
            if bounded && gate.queue.len() >= self.queue {
                return Entered::Was(Submitted::Full);
            }
            gate.queue.push_back(command);
            return Entered::Was(Submitted::Queued);
        }
        // Nothing runs, so nothing is queued (the last batch's runner emptied it).
        gate.running = true;
        let inline = match weight(&command) {
            Weight::Light => self.try_write(),
            Weight::Sync | Weight::Blocking => None,
        };
        let Some(guard) = inline else {
            gate.queue.push_back(command);
            return Entered::Lead(Lead(Some(self.clone())));
        };
        drop(gate);
        let open = self.perform_locked(guard, vec![command]);
        self.finish(open);
        Entered::Was(Submitted::Done)
    }

    /// After a batch performed outside the drain task: hands what was queued
    /// meanwhile to a drain task, or frees the gate.
    fn finish(self: &Arc<Self>, open: bool) {
        if !open {
            self.close_gate();
            return;
        }
        let mut gate = self.gate();
        if gate.queue.is_empty() {
            gate.running = false;
        } else {
            drop(gate);
            tokio::spawn(self.clone().drain());
        }
    }

    /// Performs the queued batches until none is left, then frees the gate.
    async fn drain(self: Arc<Self>) {
        let mut first = true;
        loop {
            if !first {
                // Let the tasks the last batch woke (its answers) run first: their
                // clients' next writes then join the next batch.
                tokio::task::yield_now().await;
            }
            first = false;
            let batch = self.take_batch();
            if batch.is_empty() {
                return; // the gate is free
            }
            if !self.perform(batch).await {
                self.close_gate();
                return;
            }
        }
    }

    /// The next batch: everything queued, up to `max_batch` commands; none (and the
    /// gate freed) when nothing is queued.
    fn take_batch(&self) -> Vec<Command> {
        let mut gate = self.gate();
        if gate.queue.is_empty() {
            gate.running = false;
            return Vec::new();
        }
        let n = gate.queue.len().min(self.max_batch);
        gate.queue.drain(..n).collect()
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

    /// Performs one batch where its weight says (see the module's text); returns
    /// whether the session is still open.
    async fn perform(self: &Arc<Self>, batch: Vec<Command>) -> bool {
        let weight = batch.iter().map(weight).max().unwrap_or(Weight::Light);
        if weight == Weight::Light
            && let Some(guard) = self.try_write()
        {
            return self.perform_locked(guard, batch);
        }
        let multi =
            tokio::runtime::Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread;
        if multi && weight != Weight::Blocking {
            if SYNCING_ON_A_WORKER.fetch_add(1, Ordering::AcqRel) == 0
                && let Some(guard) = self.try_write()
            {
                let open = self.perform_locked(guard, batch);
                SYNCING_ON_A_WORKER.fetch_sub(1, Ordering::AcqRel);
                return open;
            }
            SYNCING_ON_A_WORKER.fetch_sub(1, Ordering::AcqRel);
            return tokio::task::block_in_place(|| self.perform_locked(self.write(), batch));
        }
        let cell = self.clone();
        tokio::task::spawn_blocking(move || cell.perform_locked(cell.write(), batch))
            .await
            .unwrap_or(false)
    }

    /// Performs one batch under `guard`. A panic in the library lets the session go
    /// (its lock with it): the batch's callers see their answers dropped, and the
    /// gate closes.
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

/// What became of an entered command.
pub(crate) enum Entered {
    /// As [`Submitted`].
    Was(Submitted),
    /// Queued first, the gate taken: the caller runs its batch ([`Lead::run`]).
    Lead(Lead),
}

/// The duty to perform the batch a command started: run it, or (when dropped
/// unrun) a drain task is started to run it, so the gate is never left taken.
#[must_use]
pub(crate) struct Lead(Option<Arc<Shared>>);

impl Lead {
    /// Performs the first batch (everything queued by now, up to `max_batch`), then
    /// hands what was queued meanwhile to a drain task, or frees the gate.
    pub(crate) async fn run(mut self) {
        let Some(shared) = self.0.take() else {
            return;
        };
        let batch = shared.take_batch();
        let open = shared.perform(batch).await;
        shared.finish(open);
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        // Outside a runtime (its shutdown) nothing runs any more anyway.
        if let Some(shared) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(shared.drain());
        }
    }
}

/// Where a command may be performed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Weight {
    /// No sync: on the caller's task.
    Light,
    /// One sync of the journal: on a worker, or in `block_in_place`.
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

/// What a session's writer is asked to do.
pub(crate) enum Command {
    /// A `session/*` write: an append, `session/branch`, `session/sync`.
    Call {
        request: Box<Request>,
        reply: oneshot::Sender<Reply>,
    },
    /// `createBranchedSession(leaf)`: a new session, for the registry to adopt.
    Branched {
        leaf: String,
        reply: oneshot::Sender<Result<OwnedSession, Error>>,
    },
    /// `session/follow`: `outbox` gets a notification for each append after this.
    Follow {
        outbox: Arc<Outbox>,
        reply: oneshot::Sender<Reply>,
    },
    /// `session/unfollow` (answered when `reply` is given) or a connection's end.
    Unfollow {
        outbox: u64,
        reply: Option<oneshot::Sender<Reply>>,
    },
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
}

/// The shared cell of `session`, its gate free.
pub(crate) fn start(session: OwnedSession, setup: Setup) -> Arc<Shared> {
    Arc::new(Shared {
        session_id: session.session_id().to_owned(),
        session: RwLock::new(Some(session)),
        reads: Arc::new(Semaphore::new(setup.max_reads.max(1))),
        gate: Mutex::new(Gate::default()),
        followers: Mutex::new(Vec::new()),
        store: setup.store,
        queue: setup.queue.max(1),
        max_batch: setup.max_batch.max(1),
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

/// Performs one batch under `guard`: the writes in order, one sync if any asked for
/// it, then the answers and notifications in order. Returns whether the session is
/// still open.
fn process(
    shared: &Shared,
    mut guard: RwLockWriteGuard<'_, Option<OwnedSession>>,
    batch: Vec<Command>,
) -> bool {
    let store = &*shared.store;
    let mut followers = shared
        .followers
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let followers = &mut *followers;
    let mut answers: Vec<(oneshot::Sender<Reply>, Reply, bool)> = Vec::with_capacity(batch.len());
    let mut branched = Vec::new();
    let mut notes = Vec::new();
    let mut close = None;
    let mut sync = false;
    {
        let Some(s) = guard.as_mut() else {
            drop(guard);
            refuse_all(batch, &shared.session_id);
            return false;
        };
        // Every append is written at once and synced by the batch that carries it.
        s.set_durability(Durability::Buffered);
        for command in batch {
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
                    let (r, durable, appended) = apply(s, *request);
                    if let Some(id) = appended {
                        let note = note(s, &id, followers, changes_store && !store.is_empty());
                        notes.push(Note {
                            answer: answers.len(),
                            ..note
                        });
                    }
                    sync |= durable && r.is_ok();
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
                    answers.push((reply, ok(&followed), false));
                }
                Command::Unfollow { outbox, reply } => {
                    followers.retain(|f| f.id != outbox);
                    if let Some(reply) = reply {
                        answers.push((reply, ok(&p::Empty {}), false));
                    }
                }
                Command::Close { done } => close = Some(done),
            }
        }
    }
    drop(guard);
    if sync {
        // Under the read lock: reads go on while the journal syncs.
        let synced = shared
            .read_guard()
            .as_ref()
            .map(OwnedSession::sync_journal_shared);
        match synced {
            Some(Ok(())) => {
                // No second sync: this saves the index when it is due.
                if let Some(s) = shared.write().as_mut() {
                    let _ = s.sync_journal();
                }
            }
            Some(Err(e)) => {
                // Nothing that asked for durability is acknowledged as durable.
                let e = append_error(e);
                for (_, r, durable) in &mut answers {
                    if *durable && r.is_ok() {
                        *r = Err(e.clone());
                    }
                }
            }
            None => {}
        }
    }
    let session_topic = Topic::Session(shared.session_id.clone());
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
            store.notify(&Topic::Store, line);
        }
    }
    followers.retain(|f| !f.is_gone());
    for (reply, r, _) in answers {
        let _ = reply.send(r); // a caller that went away does not need its answer
    }
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
            } => {
                let _ = reply.send(Err(gone(session_id)));
            }
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

/// An append's answer, and the new entry's id when it succeeded.
type Written = (Reply, bool, Option<EntryId>);

fn appended(
    r: Result<EntryId, session_manager::AppendError>,
    durability: Option<p::Durability>,
) -> Written {
    let durable = durability.unwrap_or_default() == p::Durability::Durable;
    match r {
        Ok(entry_id) => (
            ok(&p::Appended {
                entry_id: entry_id.clone(),
            }),
            durable,
            Some(entry_id),
        ),
        Err(e) => (Err(append_error(e)), durable, None),
    }
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

/// Performs one `session/*` write: its answer, whether the answer waits for the
/// batch's sync, and the appended entry's id.
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
                .and_then(|()| ok(&p::Empty {})),
            false,
            None,
        ),
        R::SessionSync(_) => (ok(&p::Empty {}), true, None),
        // A read sent as a write (`is_read` sends none) is answered all the same.
        other if is_read(&other) => (read(s, other), false, None),
        other => (
            Err(Error::MethodNotFound {
                method: other.method().as_str().to_owned(),
            }),
            false,
            None,
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
        R::BuildSessionContext(q) => s
            .build_session_context_with(limits(q.limits), &ContextOptions::default())
            .map_err(read_error)
            // `to_json` is the reference's shape plus `serviceTier`: the protocol's
            // `SessionContext`, built by the library's one rule.
            .and_then(|c| ok(&c.to_json())),
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

    fn append(session_id: &str, durability: p::Durability) -> (Command, oneshot::Receiver<Reply>) {
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
            reply,
        };
        (command, answer)
    }

    /// The syncs one batch of `n` appends costs.
    fn syncs_of_a_batch(n: usize, durability: p::Durability) -> u64 {
        let fs = SimFs::new();
        let store = Store::new(Layout::with_root("/sim").expect("absolute"))
            .with_sources(Sources::deterministic(1, 1))
            .with_vfs(Arc::new(fs.clone()));
        let s = store.create("/w").expect("create");
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
        let store = Store::new(Layout::with_root("/sim").expect("absolute"))
            .with_sources(Sources::deterministic(1, 1))
            .with_vfs(Arc::new(fs.clone()));
        let s = store.create("/w").expect("create");
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
}
