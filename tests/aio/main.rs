//! The awaited API (`session_manager::aio`) under a multi-threaded runtime: many
//! sessions appended to concurrently, each acknowledged entry durable and readable;
//! the executor's workers stay free while appends sync; a dropped append future
//! neither loses an acknowledged entry nor leaves a half-written one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use session_manager::aio::AsyncStore;
use session_manager::{Layout, ReadLimits, Store};
use session_types::AgentMessage;

fn user(text: &str) -> AgentMessage {
    serde_json::from_value(serde_json::json!({"role": "user", "content": text, "timestamp": 1}))
        .expect("message")
}

fn store(root: &std::path::Path) -> AsyncStore {
    AsyncStore::new(Store::new(Layout::with_root(root).expect("absolute root")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_sessions_appended_concurrently_keep_every_acknowledged_entry() {
    let root = tempfile::tempdir().expect("dir");
    let store = store(root.path());
    let mut tasks = Vec::new();
    for s in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let session = store.create(format!("/w{s}")).await.expect("create");
            let mut acked = Vec::new();
            for k in 0..20 {
                let id = session
                    .append_message(user(&format!("s{s} k{k}")))
                    .await
                    .expect("append");
                acked.push(id);
            }
            let path = session.session_file().await.expect("file");
            session.close().await.expect("close");
            (path, acked)
        }));
    }
    for t in tasks {
        let (path, acked) = t.await.expect("task");
        let reopened = store.open(path).await.expect("reopen");
        let entries = reopened
            .read_entries(ReadLimits::default())
            .await
            .expect("entries");
        let ids: Vec<String> = entries
            .iter()
            .filter_map(|e| e.id().map(str::to_owned))
            .collect();
        for id in &acked {
            assert!(ids.iter().any(|i| i == id.as_str()), "{id} lost");
        }
        reopened.close().await.expect("close");
    }
    assert_eq!(store.list_all().await.expect("list").len(), 16);
}

/// While durable appends sync on the blocking pool, the runtime's workers keep
/// running other tasks: a ticker on a single-worker runtime keeps ticking.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn durable_appends_never_block_the_executor() {
    let root = tempfile::tempdir().expect("dir");
    let store = store(root.path());
    let session = store.create("/w").await.expect("create");
    let ticks = Arc::new(AtomicUsize::new(0));
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(1)).await;
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let before = ticks.load(Ordering::Relaxed);
    for k in 0..200 {
        session
            .append_message(user(&format!("k{k}")))
            .await
            .expect("append");
    }
    let after = ticks.load(Ordering::Relaxed);
    ticker.abort();
    // The only worker ran the ticker between the appends' awaits: had an append
    // blocked it, no tick could have happened while the 200 syncs ran.
    assert!(after > before, "the ticker never ran ({before} -> {after})");
    session.close().await.expect("close");
}

/// A dropped append future: the append either happened completely (and is read back
/// whole) or not at all; every acknowledged entry survives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_append_future_loses_nothing_acknowledged() {
    let root = tempfile::tempdir().expect("dir");
    let store = store(root.path());
    let session = store.create("/w").await.expect("create");
    let acked = session.append_message(user("kept")).await.expect("append");
    for k in 0..20 {
        let fut = session.append_message(user(&format!("dropped {k}")));
        // Poll it briefly, then drop it.
        let _ = tokio::time::timeout(Duration::from_micros(1), fut).await;
    }
    let path = session.session_file().await.expect("file");
    session.close().await.expect("close");
    let reopened = store.open(path).await.expect("reopen");
    let entries = reopened
        .read_entries(ReadLimits::default())
        .await
        .expect("every frame reads back whole");
    assert!(entries.iter().any(|e| e.id() == Some(acked.as_str())));
    let ctx = reopened.build_session_context().await.expect("context");
    assert!(!ctx.messages.is_empty());
    reopened.close().await.expect("close");
}
