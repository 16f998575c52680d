//! One actor per open session: a task that alone touches the session's
//! `OwnedSession`, fed by a bounded queue.
//!
//! Group commit: the actor takes everything queued (up to `max_batch` commands),
//! performs them in order on tokio's blocking pool with the journal in buffered mode,
//! syncs once if any of them asked for durability, and only then answers each, in
//! order. Appends that arrive together therefore share one sync, and none is
//! acknowledged as durable before it is.

use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use session_manager::{
    ContextOptions, DEFAULT_MAX_SOURCE_BYTES, DEFAULT_MAX_SOURCE_ENTRIES, Durability, NodeEntry,
    OwnedSession,
};
use session_protocol::{self as p, Error, Request};
use tokio::sync::{mpsc, oneshot};

use crate::errors::{append_error, open_error, read_error};

/// What a call answers: the result's JSON, or an error.
pub(crate) type Reply = Result<Box<RawValue>, Error>;

/// What the actor is asked to do.
pub(crate) enum Command {
    /// A `session/*` request.
    Call {
        request: Box<Request>,
        reply: oneshot::Sender<Reply>,
    },
    /// The session as `store/open` answers it (for a client joining an open session).
    Describe { reply: oneshot::Sender<Reply> },
    /// `createBranchedSession(leaf)`: a new session, for the registry to adopt.
    Branched {
        leaf: String,
        reply: oneshot::Sender<Result<OwnedSession, Error>>,
    },
    /// Sync and release the session; nothing after this is performed.
    Close {
        done: oneshot::Sender<Result<(), Error>>,
    },
}

/// Starts the actor of `session` and returns its queue.
pub(crate) fn spawn(
    session: OwnedSession,
    queue: usize,
    max_batch: usize,
) -> mpsc::Sender<Command> {
    let (tx, rx) = mpsc::channel(queue.max(1));
    tokio::spawn(run(session, rx, max_batch.max(1)));
    tx
}

async fn run(session: OwnedSession, mut rx: mpsc::Receiver<Command>, max_batch: usize) {
    let mut slot = Some(session);
    loop {
        let mut batch = Vec::new();
        if rx.recv_many(&mut batch, max_batch).await == 0 {
            break; // every sender is gone
        }
        let Some(s) = slot.take() else { break };
        match tokio::task::spawn_blocking(move || process(s, batch)).await {
            Ok(Some(s)) => slot = Some(s),
            // Closed on request, or the library panicked: the session is gone (its
            // lock went with it) and the queue's remaining senders see it closed.
            Ok(None) | Err(_) => return,
        }
    }
    if let Some(s) = slot {
        let _ = tokio::task::spawn_blocking(move || s.close()).await;
    }
}

/// Performs one batch: every command in order, one sync if any asked for it, then
/// every answer in order. Returns the session unless the batch closed it.
pub(crate) fn process(mut s: OwnedSession, batch: Vec<Command>) -> Option<OwnedSession> {
    // Every append is written at once and synced by the batch that carries it.
    s.set_durability(Durability::Buffered);
    let mut answers: Vec<(oneshot::Sender<Reply>, Reply, bool)> = Vec::with_capacity(batch.len());
    let mut branched = Vec::new();
    let mut close = None;
    let mut sync = false;
    for command in batch {
        match command {
            _ if close.is_some() => {
                let closed = Error::SessionNotOpen {
                    session_id: s.session_id().to_owned(),
                };
                match command {
                    Command::Call { reply, .. } | Command::Describe { reply } => {
                        answers.push((reply, Err(closed), false));
                    }
                    Command::Branched { reply, .. } => branched.push((reply, Err(closed))),
                    Command::Close { .. } => {}
                }
            }
            Command::Call { request, reply } => {
                let (r, durable) = apply(&mut s, *request);
                sync |= durable && r.is_ok();
                answers.push((reply, r, durable));
            }
            Command::Describe { reply } => answers.push((reply, ok(&opened(&s)), false)),
            Command::Branched { leaf, reply } => {
                let r = s
                    .create_branched_session(&leaf)
                    .map_err(|e| open_error("session/createBranchedSession", e));
                branched.push((reply, r));
            }
            Command::Close { done } => close = Some(done),
        }
    }
    if sync && let Err(e) = s.sync_journal() {
        // Nothing that asked for durability is acknowledged as durable.
        let e = append_error(e);
        for (_, r, durable) in &mut answers {
            if *durable && r.is_ok() {
                *r = Err(e.clone());
            }
        }
    }
    for (reply, r, _) in answers {
        let _ = reply.send(r); // a caller that went away does not need its answer
    }
    for (reply, r) in branched {
        let _ = reply.send(r); // unclaimed, the new session is closed on drop
    }
    match close {
        None => Some(s),
        Some(done) => {
            let _ = done.send(s.close().map_err(append_error));
            None
        }
    }
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

pub(crate) fn ok<T: Serialize + ?Sized>(value: &T) -> Reply {
    serde_json::value::to_raw_value(value).map_err(|e| Error::Internal {
        detail: format!("serializing a result: {e}"),
    })
}

fn appended(r: Result<session_manager::EntryId, session_manager::AppendError>) -> Reply {
    r.map_err(append_error)
        .and_then(|entry_id| ok(&p::Appended { entry_id }))
}

fn durable(d: Option<p::Durability>) -> bool {
    d.unwrap_or_default() == p::Durability::Durable
}

fn limits(l: Option<p::ReadLimits>) -> session_manager::ReadLimits {
    let l = l.unwrap_or_default();
    session_manager::ReadLimits {
        max_source_entries: l.max_source_entries.unwrap_or(DEFAULT_MAX_SOURCE_ENTRIES),
        max_source_bytes: l.max_source_bytes.unwrap_or(DEFAULT_MAX_SOURCE_BYTES),
    }
}

/// Performs one `session/*` request; the flag says whether its answer waits for the
/// batch's sync.
fn apply(s: &mut OwnedSession, request: Request) -> (Reply, bool) {
    use Request as R;
    let read = |r: Result<Box<RawValue>, Error>| (r, false);
    match request {
        R::AppendMessage(q) => (appended(s.append_message(q.message)), durable(q.durability)),
        R::AppendThinkingLevelChange(q) => (
            appended(s.append_thinking_level_change(&q.thinking_level)),
            durable(q.durability),
        ),
        R::AppendServiceTierChange(q) => (
            appended(s.append_service_tier_change(&q.service_tier)),
            durable(q.durability),
        ),
        R::AppendModelChange(q) => (
            appended(s.append_model_change(&q.provider, &q.model_id)),
            durable(q.durability),
        ),
        R::AppendCompaction(q) => (
            appended(s.append_compaction(
                &q.summary,
                &q.first_kept_entry_id,
                q.tokens_before,
                q.details,
                q.from_hook,
            )),
            durable(q.durability),
        ),
        R::AppendCustomEntry(q) => (
            appended(s.append_custom_entry(&q.custom_type, q.data)),
            durable(q.durability),
        ),
        R::AppendChildUsageAttribution(q) => (
            appended(s.append_child_usage_attribution(
                &q.target_id,
                q.child_usage,
                q.aggregate_usage,
            )),
            durable(q.durability),
        ),
        R::AppendSessionInfo(q) => (
            appended(s.append_session_info(&q.name)),
            durable(q.durability),
        ),
        R::AppendSessionState(q) => (
            appended(s.append_session_state(q.state)),
            durable(q.durability),
        ),
        R::AppendAgentStatus(q) => (
            appended(s.append_agent_status(q.status)),
            durable(q.durability),
        ),
        R::AppendGitState(q) => (appended(s.append_git_state(q.git)), durable(q.durability)),
        R::AppendCustomMessageEntry(q) => (
            appended(s.append_custom_message_entry(
                &q.custom_type,
                q.content,
                q.display,
                q.details,
            )),
            durable(q.durability),
        ),
        R::AppendLabelChange(q) => (
            appended(s.append_label_change(&q.target_id, q.label.as_deref())),
            durable(q.durability),
        ),
        R::AppendEntry(q) => (appended(s.append_entry(q.entry)), durable(q.durability)),
        R::BranchWithSummary(q) => (
            appended(s.branch_with_summary(
                q.from_id.as_ref().map(|i| i.as_str()),
                &q.summary,
                q.details,
                q.from_hook,
            )),
            durable(q.durability),
        ),
        R::Branch(q) => read(
            s.branch_to(q.entry_id.as_ref().map(|i| i.as_str()))
                .map_err(append_error)
                .and_then(|()| ok(&p::Empty {})),
        ),
        R::SessionSync(_) => (ok(&p::Empty {}), true),
        R::ReadLeafEntry(q) => read(
            s.read_leaf_entry(limits(q.limits))
                .map_err(read_error)
                .and_then(|entry| ok(&p::MaybeEntry { entry })),
        ),
        R::ReadEntry(q) => read(
            s.read_entry(&q.entry_id, limits(q.limits))
                .map_err(read_error)
                .and_then(|entry| ok(&p::OneEntry { entry })),
        ),
        R::ReadLabel(q) => read(
            s.read_label(&q.entry_id, limits(q.limits))
                .map_err(read_error)
                .and_then(|label| ok(&p::Label { label })),
        ),
        R::ReadBranch(q) => read(
            s.read_branch(q.from_id.as_deref(), limits(q.limits))
                .map_err(read_error)
                .and_then(|entries| ok(&p::Entries { entries })),
        ),
        R::ReadBranches(q) => {
            let ids: Vec<&str> = q.leaf_ids.iter().map(String::as_str).collect();
            read(
                s.read_branches(&ids, limits(q.limits))
                    .map_err(read_error)
                    .and_then(|branches| ok(&p::Branches { branches })),
            )
        }
        R::ReadEntries(q) => read(
            s.read_entries(limits(q.limits))
                .map_err(read_error)
                .and_then(|entries| ok(&p::Entries { entries })),
        ),
        R::ReadTree(q) => read(
            s.read_tree(limits(q.limits))
                .map_err(read_error)
                .and_then(|t| ok(&tree(t))),
        ),
        R::ReadEntryRetention(q) => read(
            s.read_entry_retention(&q.entry_id)
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
        ),
        R::BuildSessionContext(q) => read(
            s.build_session_context_with(limits(q.limits), &ContextOptions::default())
                .map_err(read_error)
                // `to_json` is the reference's shape plus `serviceTier`: the
                // protocol's `SessionContext`, built by the library's one rule.
                .and_then(|c| ok(&c.to_json())),
        ),
        R::GetHeader(_) => read(ok(&p::HeaderResult {
            header: s.header().clone(),
        })),
        R::GetMetadata(_) => read(ok(&p::Metadata {
            session_id: s.session_id().to_owned(),
            session_file: opened(s).session_file,
            session_dir: s.session_dir().to_string_lossy().into_owned(),
            cwd: s.cwd().to_owned(),
            session_name: s.session_name().map(str::to_owned),
            leaf_id: s.get_leaf_id().cloned(),
        })),
        R::GetArtifactDir(_) => read(match s.session_artifact_dir() {
            Ok(path) => ok(&p::PathResult {
                path: path.to_string_lossy().into_owned(),
            }),
            Err(e) => Err(Error::Store {
                detail: format!("session {}: artifact directory: {e}", s.session_id()),
            }),
        }),
        other => read(Err(Error::MethodNotFound {
            method: other.method().as_str().to_owned(),
        })),
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
        let s = process(s, batch).expect("still open");
        let after = fs.stats().syncs;
        for mut a in answers {
            assert!(
                matches!(a.try_recv(), Ok(Ok(_))),
                "every append is acknowledged"
            );
        }
        drop(s);
        after - before
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
        let _ = process(s, vec![b, d]);
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
