//! Faults of the owner process (`bcs serve`): killed with `kill -9` under load from 16
//! clients, again and again; a client process killed mid-request.
//!
//! `BCS_OWNER_KILLS` sets how many owners are killed (default 3; the recorded run in
//! `docs/reliability.md` used 50).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use session_client::{Client, ClientOptions};
use session_manager::{Layout, ReadLimits, Store};

use crate::support::{Bcs, bin};

/// Bounds every wait: a hang fails the test instead of stalling it.
const DEADLINE: Duration = Duration::from_secs(120);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn user(text: &str) -> session_types::AgentMessage {
    serde_json::from_value(json!({"role":"user","content":text,"timestamp":1})).expect("a message")
}

/// `bcs serve` (never idle-exiting), once it printed its socket's path.
fn serve(bcs: &Bcs) -> Child {
    let mut child = bcs
        .cmd(&["serve", "--idle-timeout", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bcs serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the socket path");
    assert!(line.ends_with("owner.sock\n"), "{line:?}");
    child
}

/// Kills (SIGKILL) and reaps our child when dropped, even on failure.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every entry id of the session, read through the library (no owner running): the
/// open recovers the journal as the next owner would.
fn stored_ids(bcs: &Bcs, sid: &str) -> Vec<String> {
    let store = Store::new(Layout::with_root(bcs.home()).expect("absolute home"));
    let s = store.open_id(sid).expect("the journal opens");
    let limits = ReadLimits {
        max_source_entries: u64::MAX,
        max_source_bytes: u64::MAX,
    };
    s.read_entries(limits)
        .expect("every entry reads")
        .iter()
        .map(|e| e.id().expect("an id").to_owned())
        .collect()
}

#[test]
fn owners_killed_under_load_from_16_clients_lose_no_acknowledged_entry() {
    let kills: usize = std::env::var("BCS_OWNER_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let bcs = Bcs::new();
    let rt = runtime();
    let options = ClientOptions::default().with_bcs(bin());
    let mut sids: Vec<String> = Vec::new();
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let mut appended = 0usize;
    for round in 0..kills {
        let owner = Reaped(serve(&bcs));
        let clients: Vec<Client> = (0..16)
            .map(|_| {
                rt.block_on(Client::connect_with(bcs.home(), options.clone()))
                    .expect("connect")
            })
            .collect();
        if sids.is_empty() {
            for c in &clients[..4] {
                sids.push(rt.block_on(c.create("/w")).expect("create").session_id);
            }
        }
        // Four sessions, four clients (connections, streams of durable appends) each;
        // every session is recovered by this round's owner from the last one's kill.
        for (k, c) in clients.iter().enumerate() {
            rt.block_on(c.open(&sids[k % 4])).expect("open");
        }
        let count = Arc::new(AtomicUsize::new(0));
        let progress = Arc::new(tokio::sync::Notify::new());
        let streams: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let (c, sid) = (c.clone(), sids[k % 4].clone());
                let (count, progress) = (count.clone(), progress.clone());
                rt.spawn(async move {
                    let mut ids = Vec::new();
                    for i in 0.. {
                        let text = format!("r{round} c{k} {i}");
                        match c.append_message(&sid, user(&text), None).await {
                            Ok(id) => {
                                ids.push(id.as_str().to_owned());
                                count.fetch_add(1, Ordering::Relaxed);
                                progress.notify_one();
                            }
                            Err(e) => return (ids, e),
                        }
                    }
                    unreachable!("appends until the owner is gone")
                })
            })
            .collect();
        // Kill at a point that moves from round to round (32 to 95 acknowledged).
        let at = 32 + (round * 37) % 64;
        rt.block_on(async {
            tokio::time::timeout(DEADLINE, async {
                while count.load(Ordering::Relaxed) < at {
                    progress.notified().await;
                }
            })
            .await
            .expect("appends are acknowledged");
        });
        drop(owner); // kill -9, reaped
        for s in streams {
            let (ids, e) = rt
                .block_on(async { tokio::time::timeout(DEADLINE, s).await })
                .expect("every client gets an error, none hangs")
                .expect("a stream");
            assert!(e.is_owner_gone(), "round {round}: {e:?}");
            appended += ids.len();
            acked.extend(ids);
        }
        assert!(clients.iter().all(Client::is_gone));
    }
    assert_eq!(acked.len(), appended, "no id acknowledged twice");
    let mut stored = BTreeSet::new();
    for sid in &sids {
        let ids = stored_ids(&bcs, sid);
        let unique: BTreeSet<String> = ids.iter().cloned().collect();
        assert_eq!(unique.len(), ids.len(), "no entry twice in {sid}");
        stored.extend(unique);
    }
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "{} kills: lost {lost:?}", kills);
    eprintln!(
        "{kills} owners killed under 16 clients: {} acknowledged entries, all stored",
        acked.len()
    );
}

#[test]
fn a_client_killed_mid_request_leaves_no_partial_entry_and_disturbs_no_one() {
    let bcs = Bcs::new();
    let rt = runtime();
    let _owner = Reaped(serve(&bcs));
    let options = ClientOptions::default().with_bcs(bin());
    let other = rt
        .block_on(Client::connect_with(bcs.home(), options))
        .expect("connect");
    let sid = rt.block_on(other.create("/w")).expect("create").session_id;

    // A client process (`bcs append`, through the owner) killed while it streams.
    let mut child = Reaped(
        bcs.cmd(&["append", &sid, "--buffered"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bcs append"),
    );
    let mut input = child.0.stdin.take().expect("stdin");
    let mut printed = BufReader::new(child.0.stdout.take().expect("stdout"));
    let mut ids = Vec::new();
    for i in 0..20 {
        let line =
            json!({"role":"user","content":format!("from the killed client {i}"),"timestamp":1});
        writeln!(input, "{line}").expect("feed");
        input.flush().expect("flush");
        let mut id = String::new();
        printed.read_line(&mut id).expect("an id");
        ids.push(id.trim().to_owned());
    }
    // One more request on its way, and half a line: then kill -9.
    writeln!(
        input,
        "{}",
        json!({"role":"user","content":"in flight","timestamp":1})
    )
    .expect("feed");
    write!(input, "{{\"role\":\"user\",\"content\":\"half").expect("feed");
    input.flush().expect("flush");
    drop(child);
    drop(input);

    // Nobody else is disturbed: the other client appends and reads on.
    for i in 0..20 {
        rt.block_on(other.append_message(&sid, user(&format!("other {i}")), None))
            .expect("the other client appends");
    }
    let seen = rt.block_on(other.read_entries(&sid)).expect("entries");
    assert!(seen.len() >= 40, "{}", seen.len());
    assert!(
        seen.iter().all(|e| e.as_message().is_some()),
        "whole entries only"
    );
    rt.block_on(other.shutdown()).expect("shutdown");
    drop(_owner);

    // The journal holds whole entries only: every printed id, nothing torn.
    let store = Store::new(Layout::with_root(bcs.home()).expect("absolute home"));
    let s = store.open_id(&sid).expect("opens");
    assert!(s.repaired_tail().is_none(), "no partial frame to repair");
    drop(s);
    let stored: BTreeSet<String> = stored_ids(&bcs, &sid).into_iter().collect();
    for id in &ids {
        assert!(
            stored.contains(id),
            "{id} printed by the killed client is stored"
        );
    }
    assert!(stored.len() >= 40, "{}", stored.len());
}
