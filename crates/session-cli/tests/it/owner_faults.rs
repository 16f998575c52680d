//! Faults of the owner process (`bcs serve`): killed with `kill -9` under load from 16
//! clients (eight connections of this process, eight `bcs append` processes, two of
//! which are killed mid-request just before the owner), again and again; a client
//! process killed mid-request.
//!
//! `BCS_OWNER_KILLS` sets how many owners are killed (default 3; the recorded run in
//! `docs/reliability.md` used 50).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

/// Every entry of the session, read through the library (no owner running): the
/// open recovers the journal as the next owner would.
fn stored_entries(bcs: &Bcs, sid: &str) -> Vec<session_types::Entry> {
    let store = Store::new(Layout::with_root(bcs.home()).expect("absolute home"));
    let s = store.open_id(sid).expect("the journal opens");
    let limits = ReadLimits {
        max_source_entries: u64::MAX,
        max_source_bytes: u64::MAX,
    };
    s.read_entries(limits).expect("every entry reads")
}

/// Every entry id of the session (as [`stored_entries`]).
fn stored_ids(bcs: &Bcs, sid: &str) -> Vec<String> {
    stored_entries(bcs, sid)
        .iter()
        .map(|e| e.id().expect("an id").to_owned())
        .collect()
}

/// A client process: `bcs append SESSION` streaming through the owner, fed lines
/// without end (until its input breaks); each id it prints is an acknowledged
/// append. Killed (`kill -9`) and reaped when dropped.
struct ClientProcess {
    child: Child,
    /// The ids it printed so far.
    ids: Arc<Mutex<Vec<String>>>,
    /// Signalled when its output ends (it exited, however).
    ended: std::sync::mpsc::Receiver<()>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl ClientProcess {
    fn spawn(bcs: &Bcs, sid: &str, label: String, progress: &Progress) -> ClientProcess {
        let mut child = bcs
            .cmd(&["append", sid])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bcs append");
        let mut input = child.stdin.take().expect("stdin");
        std::thread::spawn(move || {
            for i in 0.. {
                let line = json!({"role":"user","content":format!("{label} {i}"),"timestamp":1});
                // Ends when the process does (EPIPE).
                if writeln!(input, "{line}").is_err() {
                    return;
                }
            }
        });
        let ids = Arc::new(Mutex::new(Vec::new()));
        let (done, ended) = std::sync::mpsc::channel();
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let (seen, progress) = (ids.clone(), progress.clone());
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(id) = line else { break };
                seen.lock().expect("ids").push(id);
                progress.tick();
            }
            let _ = done.send(());
        });
        let mut err = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
            text
        });
        ClientProcess {
            child,
            ids,
            ended,
            stderr: Some(stderr),
        }
    }

    fn printed(&self) -> usize {
        self.ids.lock().expect("ids").len()
    }

    /// Waits (bounded) for it to exit; its exit code (`None`: killed by a signal),
    /// what it said on stderr, and every id it printed.
    fn finish(mut self) -> (Option<i32>, String, Vec<String>) {
        self.ended
            .recv_timeout(DEADLINE)
            .expect("the client process ends, none hangs");
        let status = self.child.wait().expect("wait");
        let stderr = self
            .stderr
            .take()
            .expect("stderr")
            .join()
            .expect("stderr read");
        let ids = std::mem::take(&mut *self.ids.lock().expect("ids"));
        (status.code(), stderr, ids)
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Acknowledged appends counted across tasks and processes, and a wake-up per one.
#[derive(Clone, Default)]
struct Progress {
    count: Arc<AtomicUsize>,
    notify: Arc<tokio::sync::Notify>,
}

impl Progress {
    fn tick(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.notify.notify_one();
    }

    /// Waits (bounded) until `done()` holds, re-checking after each tick.
    fn wait_until(&self, rt: &tokio::runtime::Runtime, done: impl Fn() -> bool) {
        rt.block_on(async {
            tokio::time::timeout(DEADLINE, async {
                while !done() {
                    self.notify.notified().await;
                }
            })
            .await
            .expect("appends are acknowledged");
        });
    }
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
    let mut clients_killed = 0usize;
    for round in 0..kills {
        let owner = Reaped(serve(&bcs));
        // Eight clients are connections of this process (session-client tasks).
        let clients: Vec<Client> = (0..8)
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
        // Four sessions, two task clients and two client processes each, every one a
        // stream of durable appends; every session is recovered by this round's owner
        // from the last one's kill.
        for (k, c) in clients.iter().enumerate() {
            rt.block_on(c.open(&sids[k % 4])).expect("open");
        }
        let progress = Progress::default();
        let mut processes: Vec<ClientProcess> = (0..8)
            .map(|k| ClientProcess::spawn(&bcs, &sids[k % 4], format!("r{round} p{k}"), &progress))
            .collect();
        let streams: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let (c, sid) = (c.clone(), sids[k % 4].clone());
                let progress = progress.clone();
                rt.spawn(async move {
                    let mut ids = Vec::new();
                    for i in 0.. {
                        let text = format!("r{round} c{k} {i}");
                        match c.append_message(&sid, user(&text), None).await {
                            Ok(id) => {
                                ids.push(id.as_str().to_owned());
                                progress.tick();
                            }
                            Err(e) => return (ids, e),
                        }
                    }
                    unreachable!("appends until the owner is gone")
                })
            })
            .collect();
        // Every process streams through this owner (so none can fall back to the
        // files once it is gone), and the kill comes at a point that moves from
        // round to round (32 to 95 acknowledged).
        let at = 32 + (round * 37) % 64;
        progress.wait_until(&rt, || {
            processes.iter().all(|p| p.printed() > 0)
                && progress.count.load(Ordering::Relaxed) >= at
        });
        // Two client processes killed mid-stream (a request in flight, or its next
        // one about to be sent: their input is never empty), then the owner.
        for k in [round % 8, (round + 3) % 8] {
            let _ = processes[k].child.kill();
        }
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
        for (k, p) in processes.into_iter().enumerate() {
            let (code, stderr, ids) = p.finish();
            if k == round % 8 || k == (round + 3) % 8 {
                assert_eq!(code, None, "round {round}: process {k} was killed");
                clients_killed += 1;
            } else {
                // A process gets the owner's death as its typed error, in one line.
                assert_eq!(code, Some(1), "round {round}: process {k}: {stderr}");
                assert!(
                    stderr.starts_with("bcs: ") && stderr.contains("the owner is gone"),
                    "round {round}: process {k}: {stderr}"
                );
            }
            appended += ids.len();
            acked.extend(ids);
        }
    }
    assert_eq!(acked.len(), appended, "no id acknowledged twice");
    let mut stored = BTreeSet::new();
    for sid in &sids {
        let entries = stored_entries(&bcs, sid);
        // Whole entries only: each is one of the messages a client sent.
        for e in &entries {
            let text = e
                .as_message()
                .map(|m| serde_json::to_value(m).expect("json"));
            let text = text.as_ref().and_then(|m| m["content"].as_str());
            assert!(
                text.is_some_and(|t| t.starts_with('r') && t.split(' ').count() == 3),
                "{sid}: a whole message: {e:?}"
            );
        }
        let ids: Vec<String> = entries
            .iter()
            .map(|e| e.id().expect("an id").to_owned())
            .collect();
        let unique: BTreeSet<String> = ids.iter().cloned().collect();
        assert_eq!(unique.len(), ids.len(), "no entry twice in {sid}");
        stored.extend(unique);
    }
    let lost: Vec<_> = acked.difference(&stored).collect();
    assert!(lost.is_empty(), "{} kills: lost {lost:?}", kills);
    eprintln!(
        "{kills} owners killed under 16 clients (8 processes, {clients_killed} of them killed \
         mid-request too): {} acknowledged entries, all stored",
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
