//! One actor per open session: the task that alone writes the session, fed by a
//! bounded queue; reads go beside it.
//!
//! The session sits in a [`Shared`] cell behind a read-write lock. The actor takes
//! everything queued (up to `max_batch` commands) and, on tokio's blocking pool:
//!
//! 1. under the write lock, performs the writes in order with the journal in
//!    buffered mode (each append is written when performed);
//! 2. if any of them asked for durability, syncs once under the *read* lock
//!    ([`OwnedSession::sync_journal_shared`]), so reads go on during the sync;
//! 3. answers each command in order, and notifies the session's followers of each
//!    acknowledged append (and the store's followers of names, states and statuses).
//!
//! Appends that arrive together therefore share one sync, and none is acknowledged
//! as durable before it is. Reads ([`read`]) do not enter the queue: the connection
//! runs them on the blocking pool under the read lock, through a capture of the
//! session as it is then. They never wait for a sync, only for a batch's writes.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use session_manager::{
    ContextOptions, DEFAULT_MAX_SOURCE_BYTES, DEFAULT_MAX_SOURCE_ENTRIES, Durability, EntryId,
    NodeEntry, OwnedSession,
};
use session_protocol::{self as p, Error, Request};
use session_types::Entry;
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::errors::{append_error, open_error, read_error};
use crate::outbox::{Follower, Followers, Outbox, Topic};

/// What a call answers: the result's JSON, or an error.
pub(crate) type Reply = Result<Box<RawValue>, Error>;

/// An open session, shared by its actor (writes) and the connections (reads).
#[derive(Debug)]
pub(crate) struct Shared {
    /// The session; `None` once closed.
    session: RwLock<Option<OwnedSession>>,
    /// Its id, for errors and notifications.
    pub(crate) session_id: String,
    /// Reads of this session running now (past the bound: `overloaded`).
    pub(crate) reads: Arc<Semaphore>,
}

impl Shared {
    fn write(&self) -> RwLockWriteGuard<'_, Option<OwnedSession>> {
        // A panic inside the library while writing poisons the lock; the actor then
        // ends and takes the session out (see `run`), so readers see `None`.
        self.session.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_guard(&self) -> RwLockReadGuard<'_, Option<OwnedSession>> {
        self.session.read().unwrap_or_else(PoisonError::into_inner)
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

    /// Takes the session out (closing it is the caller's).
    fn take(&self) -> Option<OwnedSession> {
        self.write().take()
    }
}

/// What the actor is asked to do.
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

/// The bounds and the store's followers an actor needs.
pub(crate) struct Setup {
    pub(crate) queue: usize,
    pub(crate) max_batch: usize,
    pub(crate) max_reads: usize,
    pub(crate) store: Arc<Followers>,
}

/// Starts the actor of `session`; returns its queue and the shared cell.
pub(crate) fn spawn(session: OwnedSession, setup: Setup) -> (mpsc::Sender<Command>, Arc<Shared>) {
    let (tx, rx) = mpsc::channel(setup.queue.max(1));
    let shared = Arc::new(Shared {
        session_id: session.session_id().to_owned(),
        session: RwLock::new(Some(session)),
        reads: Arc::new(Semaphore::new(setup.max_reads.max(1))),
    });
    tokio::spawn(run(shared.clone(), rx, setup.max_batch.max(1), setup.store));
    (tx, shared)
}

async fn run(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Command>,
    max_batch: usize,
    store: Arc<Followers>,
) {
    let mut followers: Vec<Follower> = Vec::new();
    loop {
        let mut batch = Vec::new();
        if rx.recv_many(&mut batch, max_batch).await == 0 {
            break; // every sender is gone
        }
        let (cell, store) = (shared.clone(), store.clone());
        let mut mine = std::mem::take(&mut followers);
        let done = tokio::task::spawn_blocking(move || {
            let open = process(&cell, batch, &mut mine, &store);
            (open, mine)
        })
        .await;
        match done {
            Ok((true, mine)) => followers = mine,
            // Closed on request: the session is gone and its lock with it.
            Ok((false, _)) => return,
            // The library panicked: let the session go (its lock with it); the
            // queue's remaining senders see it closed.
            Err(_) => {
                let cell = shared.clone();
                let _ = tokio::task::spawn_blocking(move || drop(cell.take())).await;
                return;
            }
        }
    }
    let cell = shared.clone();
    let _ = tokio::task::spawn_blocking(move || cell.take().map(OwnedSession::close)).await;
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

/// Performs one batch: the writes in order, one sync if any asked for it, then the
/// answers and notifications in order. Returns whether the session is still open.
pub(crate) fn process(
    shared: &Shared,
    batch: Vec<Command>,
    followers: &mut Vec<Follower>,
    store: &Followers,
) -> bool {
    let mut answers: Vec<(oneshot::Sender<Reply>, Reply, bool)> = Vec::with_capacity(batch.len());
    let mut branched = Vec::new();
    let mut notes = Vec::new();
    let mut close = None;
    let mut sync = false;
    {
        let mut guard = shared.write();
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
        detail: format!("session {session_id} is no longer served (its actor ended)"),
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

/// Whether a `session/*` request only reads (served beside the actor, never queued).
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
        // A read sent to the actor (`is_read` sends none) is answered all the same.
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
        assert!(process(
            &shared,
            batch,
            &mut Vec::new(),
            &Followers::default()
        ));
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

    fn cell(s: OwnedSession) -> Shared {
        Shared {
            session_id: s.session_id().to_owned(),
            session: RwLock::new(Some(s)),
            reads: Arc::new(Semaphore::new(1)),
        }
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
        let _ = process(&cell(s), vec![b, d], &mut Vec::new(), &Followers::default());
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
