//! Following: `session/appended` for every acknowledged entry, in journal order, from
//! any client; `store/changed` for the agents view; a slow follower is told it lagged
//! and never slows a writer.

use std::time::Duration;

use serde_json::Value;
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;

use crate::support::*;

/// Bounds every wait of these tests: a failure reports instead of hanging.
const DEADLINE: Duration = Duration::from_secs(120);

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no progress within {DEADLINE:?}"))
}

/// Reads lines until `n` notifications of `method` came; returns them (other lines
/// are answers, kept aside).
async fn notifications(c: &mut Client, method: &str, n: usize) -> Vec<Value> {
    let mut got = Vec::new();
    while got.len() < n {
        let line = c.recv().await;
        if line["method"] == method {
            got.push(line["params"].clone());
        }
    }
    got
}

fn id_of(params: &Value) -> String {
    params["entry"]["id"]
        .as_str()
        .expect("an entry id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_every_entry_of_two_writers_in_journal_order() {
    let home = tempfile::tempdir().expect("tempdir");
    // Room for every notification: this follower reads, but maybe later than the
    // writers write.
    let owner = Owner::new(
        store(home.path()),
        OwnerOptions::default().with_outgoing_queue(1024),
    );
    let mut a = Client::ready(&owner).await;
    let s = a.create().await;
    let sid = s.session_id.clone();
    a.call::<call::AppendMessage>(append(&sid, "before", None))
        .await
        .expect("append");
    let b = Client::joined(&owner, &sid).await;
    let mut f = Client::joined(&owner, &sid).await;
    let followed = f
        .call::<call::SessionFollow>(SessionParams {
            session_id: sid.clone(),
        })
        .await
        .expect("follow");
    let before = a.branch(&sid).await.entries;
    assert_eq!(
        followed.last_entry_id.as_deref(),
        before.last().and_then(|e| e.id())
    );

    const N: usize = 150;
    let writer = |mut c: Client, name: &'static str, sid: String| async move {
        for i in 0..N {
            let d = (i % 3 == 0).then_some(Durability::Buffered);
            c.send::<call::AppendMessage>(append(&sid, &format!("{name} {i}"), d))
                .await;
        }
        for _ in 0..N {
            let answer = c.recv().await;
            assert!(answer["result"]["entryId"].is_string(), "{answer}");
        }
        c
    };
    let (wa, wb) = (
        tokio::spawn(writer(a, "a", sid.clone())),
        tokio::spawn(writer(b, "b", sid.clone())),
    );
    let seen = within(
        "the follower",
        notifications(&mut f, "session/appended", 2 * N),
    )
    .await;
    let mut a = wa.await.expect("writer a");
    wb.await.expect("writer b");

    assert!(seen.iter().all(|p| p["sessionId"] == sid.as_str()));
    let journal: Vec<String> = a
        .call::<call::ReadEntries>(ReadParams {
            session_id: sid.clone(),
            limits: None,
        })
        .await
        .expect("entries")
        .entries
        .iter()
        .skip(1) // "before", appended before the follow
        .map(|e| e.id().expect("id").to_owned())
        .collect();
    let notified: Vec<String> = seen.iter().map(id_of).collect();
    assert_eq!(notified, journal, "every entry once, in journal order");

    // Unfollowed: the next append is not notified (its answer is the next line).
    f.call::<call::SessionUnfollow>(SessionParams {
        session_id: sid.clone(),
    })
    .await
    .expect("unfollow");
    let appended = f
        .call::<call::AppendMessage>(append(&sid, "after", None))
        .await
        .expect("append");
    let last = f.branch(&sid).await.entries;
    assert_eq!(
        last.last().and_then(|e| e.id()),
        Some(appended.entry_id.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_never_reads_slows_no_writer_and_is_told_it_lagged() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = Owner::new(
        store(home.path()),
        OwnerOptions::default().with_outgoing_queue(8),
    );
    let mut w = Client::ready(&owner).await;
    let s = w.create().await;
    let sid = s.session_id.clone();
    // A small pipe: the follower's lines back up at once.
    let mut f = Client::connect_with_buffer(&owner, 1024);
    f.initialize().await;
    f.open(&sid).await;
    f.call::<call::SessionFollow>(SessionParams {
        session_id: sid.clone(),
    })
    .await
    .expect("follow");

    // The writer appends far more than the follower's pipe and queue hold; every
    // append is answered although the follower reads nothing.
    const N: usize = 300;
    within("the writer", async {
        for i in 0..N {
            w.call::<call::AppendMessage>(append(&sid, &format!("m{i}"), None))
                .await
                .expect("append");
        }
    })
    .await;

    // Now the follower reads: a prefix of the entries, then one `session/lagged`.
    let journal: Vec<String> = w
        .call::<call::ReadEntries>(ReadParams {
            session_id: sid.clone(),
            limits: None,
        })
        .await
        .expect("entries")
        .entries
        .iter()
        .map(|e| e.id().expect("id").to_owned())
        .collect();
    let mut prefix = Vec::new();
    within("the lagged notice", async {
        loop {
            let line = f.recv().await;
            match line["method"].as_str() {
                Some("session/appended") => prefix.push(id_of(&line["params"])),
                Some("session/lagged") => {
                    assert_eq!(line["params"]["sessionId"], sid.as_str());
                    break;
                }
                _ => panic!("unexpected {line}"),
            }
        }
    })
    .await;
    assert!(prefix.len() < N, "some notifications were dropped");
    assert_eq!(prefix[..], journal[..prefix.len()], "what came is in order");

    // Following resumes after the notice: the next entry comes, and no second notice.
    let next = w
        .call::<call::AppendMessage>(append(&sid, "resumed", None))
        .await
        .expect("append");
    let line = within("the next entry", f.recv()).await;
    assert_eq!(line["method"], "session/appended", "{line}");
    assert_eq!(id_of(&line["params"]), next.entry_id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_follower_sees_sessions_created_renamed_changed_and_deleted() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut v = Client::ready(&owner).await;
    v.call::<call::StoreFollow>(StoreFollowParams {})
        .await
        .expect("follow the store");

    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let sid = s.session_id.clone();
    c.call::<call::AppendSessionInfo>(AppendSessionInfoParams {
        session_id: sid.clone(),
        name: "  the parser  ".into(),
        durability: None,
    })
    .await
    .expect("name");
    c.call::<call::AppendMessage>(append(&sid, "not a store change", None))
        .await
        .expect("append");
    c.call::<call::AppendSessionState>(AppendSessionStateParams {
        session_id: sid.clone(),
        state: serde_json::from_value(serde_json::json!("archived")).expect("state"),
        durability: None,
    })
    .await
    .expect("state");
    c.call::<call::AppendAgentStatus>(AppendAgentStatusParams {
        session_id: sid.clone(),
        status: serde_json::from_value(
            serde_json::json!({"summary":"testing","taskState":"working"}),
        )
        .expect("status"),
        durability: None,
    })
    .await
    .expect("status");
    c.close(&sid).await;
    c.call::<call::StoreDelete>(DeleteParams {
        session_id: sid.clone(),
    })
    .await
    .expect("delete");

    let seen = within(
        "the store follower",
        notifications(&mut v, "store/changed", 5),
    )
    .await;
    let kinds: Vec<&str> = seen
        .iter()
        .map(|p| p["change"]["kind"].as_str().expect("a kind"))
        .collect();
    assert_eq!(
        kinds,
        [
            "created",
            "renamed",
            "sessionState",
            "agentStatus",
            "deleted"
        ]
    );
    assert!(seen.iter().all(|p| p["sessionId"] == sid.as_str()));
    assert!(
        seen.iter()
            .all(|p| p["sessionFile"] == s.session_file.as_str())
    );
    assert_eq!(seen[0]["change"]["cwd"], "/work");
    assert_eq!(seen[1]["change"]["name"], "the parser");
    assert_eq!(seen[2]["change"]["state"], "archived");
    assert_eq!(seen[3]["change"]["status"]["taskState"], "working");

    // Unfollowed: the next creation is not announced (the answer is the next line).
    v.call::<call::StoreUnfollow>(StoreFollowParams {})
        .await
        .expect("unfollow");
    let other = v.create().await;
    assert_ne!(other.session_id, sid);
}
