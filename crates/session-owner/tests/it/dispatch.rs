//! How writes are dispatched: performed on the connection's own task when nothing
//! else is queued or running (no thread hand-off), queued behind a running batch
//! otherwise; either way in order, and nothing durable acknowledged before its sync.

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use serde_json::Value;
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;

use crate::reads::{Gate, gated_store};
use crate::support::*;

/// Bounds every wait: a failure reports instead of hanging.
const DEADLINE: Duration = Duration::from_secs(60);

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {DEADLINE:?}"))
}

/// A runtime whose blocking pool has one thread, and a way to occupy it.
fn starved_runtime(multi: bool) -> tokio::runtime::Runtime {
    let mut b = if multi {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.max_blocking_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Occupies the runtime's only blocking thread until the returned sender is dropped.
async fn occupy_the_blocking_pool() -> std_mpsc::Sender<()> {
    let (release, wait) = std_mpsc::channel::<()>();
    let (started, running) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let _ = started.send(());
        let _ = wait.recv(); // until the sender is dropped
    });
    running.await.expect("the blocking task started");
    release
}

/// Without a free blocking thread, a buffered append, a `branch` and a `follow` are
/// still answered: they are performed on the connection's task.
fn light_writes_need_no_blocking_thread(multi: bool) {
    starved_runtime(multi).block_on(async {
        let home = tempfile::tempdir().expect("tempdir");
        let owner = owner(home.path());
        let mut c = Client::ready(&owner).await;
        let sid = c.create().await.session_id;
        let release = occupy_the_blocking_pool().await;
        let first = within(
            "a buffered append",
            c.call::<call::AppendMessage>(append(&sid, "one", Some(Durability::Buffered))),
        )
        .await
        .expect("append");
        within(
            "a follow",
            c.call::<call::SessionFollow>(SessionParams {
                session_id: sid.clone(),
            }),
        )
        .await
        .expect("follow");
        within(
            "a branch",
            c.call::<call::Branch>(BranchParams {
                session_id: sid.clone(),
                entry_id: Some(first.entry_id.clone()),
            }),
        )
        .await
        .expect("branch");
        drop(release);
        c.disconnect().await;
    });
}

#[test]
fn light_writes_are_answered_on_the_connections_task_current_thread() {
    light_writes_need_no_blocking_thread(false);
}

#[test]
fn light_writes_are_answered_on_the_connections_task_multi_thread() {
    light_writes_need_no_blocking_thread(true);
}

/// On a multi-thread runtime a durable append syncs on a worker (or in
/// `block_in_place`), not on the blocking pool.
#[test]
fn a_durable_append_needs_no_blocking_thread_on_a_multi_thread_runtime() {
    starved_runtime(true).block_on(async {
        let home = tempfile::tempdir().expect("tempdir");
        let owner = owner(home.path());
        let mut c = Client::ready(&owner).await;
        let sid = c.create().await.session_id;
        let release = occupy_the_blocking_pool().await;
        for i in 0..3 {
            within(
                "a durable append",
                c.call::<call::AppendMessage>(append(&sid, &format!("d{i}"), None)),
            )
            .await
            .expect("append");
        }
        drop(release);
        c.disconnect().await;
    });
}

/// One connection pipelines buffered (performed inline when the gate is free) and
/// durable (performed by the drain task) appends: every answer arrives, the journal
/// and a follower see them in the order sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_and_queued_writes_keep_the_order_sent() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = Owner::new(
        store(home.path()),
        OwnerOptions::default().with_outgoing_queue(1024),
    );
    let mut w = Client::ready(&owner).await;
    let sid = w.create().await.session_id;
    let mut f = Client::joined(&owner, &sid).await;
    f.call::<call::SessionFollow>(SessionParams {
        session_id: sid.clone(),
    })
    .await
    .expect("follow");

    const N: usize = 200;
    let mut ids = Vec::new();
    for i in 0..N {
        // Runs of each kind, so both paths meet each other often.
        let durability = if (i / 3) % 2 == 0 {
            Durability::Buffered
        } else {
            Durability::Durable
        };
        ids.push(
            w.send::<call::AppendMessage>(append(&sid, &format!("m{i}"), Some(durability)))
                .await,
        );
    }
    let mut answered = Vec::new();
    for _ in 0..N {
        let a = within("an answer", w.recv()).await;
        assert!(a["result"]["entryId"].is_string(), "{a}");
        answered.push(a);
    }
    for id in &ids {
        let id = serde_json::to_value(id).expect("id");
        assert_eq!(
            answered.iter().filter(|a| a["id"] == id).count(),
            1,
            "one answer for {id}"
        );
    }
    let texts: Vec<String> = w.branch(&sid).await.entries.iter().map(text_of).collect();
    let sent: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
    assert_eq!(
        texts, sent,
        "the journal holds the appends in the order sent"
    );
    let mut seen = Vec::new();
    while seen.len() < N {
        let line: Value = within("a notification", f.recv()).await;
        if line["method"] == "session/appended" {
            seen.push(line["params"]["entry"]["message"]["content"].clone());
        }
    }
    let seen: Vec<String> = seen
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(seen, sent, "the follower sees them in journal order");
}

/// While a durable batch syncs, writes from another client wait behind it: a
/// buffered append is not performed inline past it, nothing of theirs is answered
/// before the held sync ends, the journal keeps the order sent, and the durable ones
/// queued meanwhile share one sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_behind_a_syncing_batch_wait_their_turn_and_share_one_sync() {
    let gate = Arc::new(Gate::default());
    let store = gated_store(&gate);
    let owner = Owner::new(store, OwnerOptions::default());
    let mut a = Client::ready(&owner).await;
    let sid = a.create().await.session_id;
    let mut b = Client::joined(&owner, &sid).await;

    gate.arm();
    let held = a
        .send::<call::AppendMessage>(append(&sid, "held", None))
        .await;
    let g = gate.clone();
    tokio::task::spawn_blocking(move || g.wait_holding())
        .await
        .expect("the gate");
    let syncs_before = gate.syncs();

    // Behind the held batch: a buffered append, two durable ones, then a read.
    let buffered = b
        .send::<call::AppendMessage>(append(&sid, "buffered", Some(Durability::Buffered)))
        .await;
    let d1 = b
        .send::<call::AppendMessage>(append(&sid, "d1", None))
        .await;
    let d2 = b
        .send::<call::AppendMessage>(append(&sid, "d2", None))
        .await;
    let read = b
        .send::<call::ReadBranch>(ReadBranchParams {
            session_id: sid.clone(),
            from_id: None,
            limits: None,
        })
        .await;
    // The read is answered first: the writes sent before it are still waiting.
    let first = within("the read", b.recv()).await;
    assert_eq!(
        first["id"],
        serde_json::to_value(&read).expect("id"),
        "{first}"
    );

    gate.release();
    let answer = within("the held append", a.recv()).await;
    assert_eq!(answer["id"], serde_json::to_value(&held).expect("id"));
    let mut got = Vec::new();
    for _ in 0..3 {
        let line = within("a queued write", b.recv()).await;
        assert!(line["result"]["entryId"].is_string(), "{line}");
        got.push(line["id"].clone());
    }
    // Answers of one batch may leave in any order (JSON-RPC matches them by id).
    let mut want: Vec<Value> = [buffered, d1, d2]
        .iter()
        .map(|id| serde_json::to_value(id).expect("id"))
        .collect();
    let key = |v: &Value| v.to_string();
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want, "each queued write answered once");
    let texts: Vec<String> = b.branch(&sid).await.entries.iter().map(text_of).collect();
    assert_eq!(texts, ["held", "buffered", "d1", "d2"]);
    assert_eq!(
        gate.syncs() - syncs_before,
        1,
        "the writes queued behind the held sync are one batch with one sync"
    );
}
