//! Many clients, one session: the owner holds it once and serializes their writes.

use std::collections::BTreeMap;

use session_protocol::*;

use crate::support::*;

/// Sends `n` appends without waiting, then reads the `n` answers; returns the
/// acknowledged entry ids by text.
async fn burst(c: &mut Client, sid: &str, who: &str, n: usize) -> BTreeMap<String, String> {
    let mut sent = BTreeMap::new();
    for i in 0..n {
        let text = format!("{who}-{i}");
        let id = c
            .send::<call::AppendMessage>(append(sid, &text, None))
            .await;
        sent.insert(serde_json::to_string(&id).expect("id"), text);
    }
    let mut acked = BTreeMap::new();
    for _ in 0..n {
        let answer = c.recv().await;
        let text = sent
            .remove(&answer["id"].to_string())
            .unwrap_or_else(|| panic!("an answer to a request we sent, once: {answer}"));
        let r = decode::<call::AppendMessage>(answer).expect("acknowledged");
        acked.insert(r.entry_id.0, text);
    }
    acked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_append_to_one_session_and_nothing_is_lost_interleaved_or_duplicated() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut a = Client::connect(&owner);
    let mut b = Client::connect(&owner);
    a.initialize().await;
    b.initialize().await;
    let s = a.create().await;
    let sid = s.session_id.clone();
    let joined = b.open(&sid).await;
    assert_eq!(joined.session_file, s.session_file);
    assert_eq!(
        owner.open_sessions().await,
        1,
        "the owner holds the session once"
    );

    const N: usize = 200;
    let (sa, sb) = (sid.clone(), sid.clone());
    let ta = tokio::spawn(async move { (burst(&mut a, &sa, "a", N).await, a) });
    let tb = tokio::spawn(async move { (burst(&mut b, &sb, "b", N).await, b) });
    let (acked_a, mut a) = ta.await.expect("client a");
    let (acked_b, mut b) = tb.await.expect("client b");
    let mut acked = acked_a;
    for (id, text) in acked_b {
        assert!(
            acked.insert(id.clone(), text).is_none(),
            "entry id {id} acknowledged twice"
        );
    }
    assert_eq!(acked.len(), 2 * N);

    // The journal, read back after both let go: every acknowledged entry exactly
    // once, each whole, on one chain in the order the owner wrote them.
    b.close(&sid).await;
    assert_eq!(owner.open_sessions().await, 1, "a still holds it");
    a.close(&sid).await;
    assert_eq!(owner.open_sessions().await, 0);
    let view = store(home.path())
        .open_read_only(std::path::Path::new(&s.session_file))
        .expect("read back");
    let entries = view.get_entries();
    assert_eq!(entries.len(), 2 * N);
    let mut parent: Option<&str> = None;
    for e in entries {
        let id = e.id().expect("an id");
        assert_eq!(
            acked.remove(id).as_deref(),
            Some(text_of(e).as_str()),
            "entry {id}"
        );
        assert_eq!(e.parent_id(), parent, "one chain");
        parent = Some(id);
    }
    assert!(acked.is_empty(), "acknowledged but missing: {acked:?}");
    // Each client's own appends are in the order it sent them.
    for who in ["a", "b"] {
        let mine: Vec<usize> = entries
            .iter()
            .map(text_of)
            .filter_map(|t| {
                t.strip_prefix(&format!("{who}-"))
                    .and_then(|n| n.parse().ok())
            })
            .collect();
        assert_eq!(mine, (0..N).collect::<Vec<_>>(), "{who}'s order");
    }
}

#[tokio::test]
async fn a_client_that_goes_away_lets_go_of_its_sessions() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut a = Client::ready(&owner).await;
    let s = a.create().await;
    let mut b = Client::ready(&owner).await;
    b.open(&s.session_id).await;
    // Opening twice on one connection holds one reference.
    b.open(&s.session_id).await;
    a.disconnect().await;
    b.call::<call::AppendMessage>(append(&s.session_id, "still here", None))
        .await
        .expect("append");
    b.close(&s.session_id).await;
    // The session is closed (its lock released) once the last holder let go.
    assert_eq!(owner.open_sessions().await, 0);
    store(home.path())
        .open(std::path::Path::new(&s.session_file))
        .expect("the owner let go of the lock");
}
