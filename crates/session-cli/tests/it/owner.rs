//! `bcs` and `session-client` with a running owner process: `bcs append` goes
//! through the owner that holds a client's session, clients start an owner on
//! demand, and an owner killed with calls in flight fails each of them `OwnerGone`
//! while the next call starts a new owner that recovers every acknowledged entry.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use serde_json::json;
use session_client::{Client, ClientOptions};

use crate::support::{Bcs, bin};

/// Owner processes a test started, killed (`kill -9`, by pid) when it ends, even on
/// failure: no test leaves an owner running. `bcs serve` children the test spawned
/// itself are kept to be reaped.
#[derive(Default)]
struct Owners(Vec<u32>, Vec<std::process::Child>);

impl Owners {
    /// Kills the `bcs serve` children and waits until they are gone (their sockets
    /// closed with them).
    fn kill_children(&mut self) {
        for mut c in std::mem::take(&mut self.1) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn add(&mut self, pid: Option<u32>) {
        if let Some(pid) = pid
            && !self.0.contains(&pid)
        {
            self.0.push(pid);
        }
    }

    fn kill(pid: u32) {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

impl Drop for Owners {
    fn drop(&mut self) {
        self.kill_children();
        for pid in &self.0 {
            Owners::kill(*pid);
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

fn options() -> ClientOptions {
    ClientOptions::default().with_bcs(bin())
}

fn user(text: &str) -> session_types::AgentMessage {
    serde_json::from_value(json!({"role":"user","content":text,"timestamp":1})).expect("a message")
}

/// `bcs serve` on `bcs`'s home, once it has printed its socket (it is bound).
fn serve(bcs: &Bcs, owners: &mut Owners) {
    let mut child = bcs
        .cmd(&["serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bcs serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the socket path");
    owners.1.push(child);
    assert!(line.ends_with("owner.sock\n"), "{line:?}");
}

#[test]
fn bcs_append_goes_through_the_owner_holding_a_clients_session() {
    let bcs = Bcs::new();
    let mut owners = Owners::default();
    serve(&bcs, &mut owners);
    let rt = runtime();
    let client = rt
        .block_on(Client::connect_with(bcs.home(), options()))
        .expect("connect");
    let s = rt.block_on(client.create("/w")).expect("create");
    let first = rt
        .block_on(client.append_message(&s.session_id, user("from the client"), None))
        .expect("append");

    // The owner holds the session's lock: without it `bcs append` would be refused.
    let run = bcs.run_stdin(
        &["append", &s.session_id],
        "{\"role\":\"user\",\"content\":\"from bcs\",\"timestamp\":2}\n{\"type\":\"custom\",\"customType\":\"x\",\"data\":1}\n",
    );
    let ids: Vec<&str> = run.ok().lines().collect();
    assert_eq!(ids.len(), 2, "{}", run.stdout);
    let run = bcs.run_stdin(
        &["append", "--buffered", &s.session_id[..8]],
        "{\"role\":\"user\",\"content\":\"buffered\",\"timestamp\":3}\n",
    );
    let buffered = run.ok().trim().to_owned();
    // Named by its journal's path (here with another sessions directory given, so
    // the path, not the id, names it): the same session in the owner.
    let run = bcs.run_stdin(
        &["--session-dir", "elsewhere", "append", &s.session_file],
        "{\"role\":\"user\",\"content\":\"by path\",\"timestamp\":4}\n",
    );
    let by_path = run.ok().trim().to_owned();

    // The client sees them, on its branch, after its own.
    let branch = rt
        .block_on(client.read_branch(&s.session_id))
        .expect("branch");
    let got: Vec<&str> = branch.iter().filter_map(|e| e.id()).collect();
    assert_eq!(got, [first.as_str(), ids[0], ids[1], &buffered, &by_path]);

    // Reading commands read the files alongside the owner and see every entry.
    let tree = bcs.run(&["tree", &s.session_id, "--json"]);
    for id in [first.as_str(), ids[0], ids[1], &buffered, &by_path] {
        assert!(tree.ok().contains(id), "{id}: {}", tree.stdout);
    }

    // An owner's error reaches `bcs` as one line: here an entry whose id is taken.
    let run = bcs.run_stdin(
        &["append", &s.session_id],
        &format!(
            "{{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"{first}\",\"parentId\":null}}\n"
        ),
    );
    let err = run.fails(1);
    assert!(err.contains("stdin line 1: invalid entry: "), "{err}");
    assert!(err.contains("already exists"), "{err}");
}

#[test]
fn bcs_append_names_the_journal_it_found_not_the_owners_namesake() {
    let bcs = Bcs::new();
    let mut owners = Owners::default();
    serve(&bcs, &mut owners);
    let rt = runtime();
    let client = rt
        .block_on(Client::connect_with(bcs.home(), options()))
        .expect("connect");
    let s = rt.block_on(client.create("/w")).expect("create");
    // Another sessions directory holds a session with the same id.
    bcs.run(&["--session-dir", "other", "new", "--id", &s.session_id])
        .ok();
    let run = bcs.run_stdin(
        &["--session-dir", "other", "append", &s.session_id],
        "{\"role\":\"user\",\"content\":\"to the other\",\"timestamp\":2}\n",
    );
    let id = run.ok().trim().to_owned();
    let tree = bcs.run(&["--session-dir", "other", "tree", &s.session_id, "--json"]);
    assert!(tree.ok().contains(&id), "{}", tree.stdout);
    let branch = rt
        .block_on(client.read_branch(&s.session_id))
        .expect("branch");
    assert!(
        branch.is_empty(),
        "the owner's session is untouched: {branch:?}"
    );
}

#[test]
fn bcs_append_uses_the_files_when_the_owner_is_dead() {
    let bcs = Bcs::new();
    let id = bcs.run(&["new", "--cwd", "/w"]).ok().trim().to_owned();
    let mut owners = Owners::default();
    serve(&bcs, &mut owners);
    owners.kill_children();
    // Its socket is left behind; nobody answers on it.
    let rt = runtime();
    let e = rt
        .block_on(Client::connect_with(bcs.home(), options()))
        .expect_err("nobody answers");
    assert!(
        matches!(e, session_client::ClientError::Connect { .. }),
        "{e:?}"
    );
    let run = bcs.run_stdin(
        &["append", &id],
        "{\"role\":\"user\",\"content\":\"direct\",\"timestamp\":2}\n",
    );
    assert_eq!(run.ok().lines().count(), 1);
}

#[test]
fn a_client_starts_an_owner_on_demand_and_the_next_client_shares_it() {
    let bcs = Bcs::new();
    let mut owners = Owners::default();
    let rt = runtime();
    let a = rt
        .block_on(Client::connect_or_start_with(bcs.home(), options()))
        .expect("started");
    owners.add(a.started_owner());
    owners.add(a.owner_pid());
    assert!(a.started_owner().is_some());
    assert_eq!(a.owner_pid(), a.started_owner());
    let b = rt
        .block_on(Client::connect_or_start_with(bcs.home(), options()))
        .expect("connected");
    assert_eq!(b.started_owner(), None, "an owner answered: none started");
    assert_eq!(b.owner_pid(), a.owner_pid());
}

/// Clients starting at once end connected to one owner. This relies on the owner's
/// election lock beside its socket (two `bcs serve` racing on a home without it can
/// both bind, one of them to a socket name the other then replaces).
#[test]
fn clients_starting_at_once_end_with_one_owner() {
    let bcs = Bcs::new();
    let mut owners = Owners::default();
    let rt = runtime();
    let clients: Vec<Client> = rt.block_on(async {
        let tasks: Vec<_> = (0..6)
            .map(|_| {
                let home = bcs.home().to_path_buf();
                tokio::spawn(async move { Client::connect_or_start_with(&home, options()).await })
            })
            .collect();
        let mut clients = Vec::new();
        for t in tasks {
            clients.push(t.await.expect("joined").expect("connected"));
        }
        clients
    });
    for c in &clients {
        owners.add(c.started_owner());
        owners.add(c.owner_pid());
    }
    let pids: BTreeSet<Option<u32>> = clients.iter().map(Client::owner_pid).collect();
    assert_eq!(pids.len(), 1, "one owner serves them all: {pids:?}");
    // And it is one of theirs, reached by all: a session one creates, all can open.
    let s = rt.block_on(clients[0].create("/w")).expect("create");
    for c in &clients[1..] {
        rt.block_on(c.open(&s.session_id)).expect("shared");
    }
}

#[test]
fn an_owner_killed_mid_request_fails_every_call_and_the_next_call_starts_one() {
    let bcs = Bcs::new();
    let mut owners = Owners::default();
    let rt = runtime();
    let client = rt
        .block_on(Client::connect_or_start_with(bcs.home(), options()))
        .expect("started");
    owners.add(client.owner_pid());
    let pid = client.owner_pid().expect("the owner's pid");
    let sid = rt.block_on(client.create("/w")).expect("create").session_id;
    // Four clients (connections) on the session, four streams of durable appends
    // each, every stream until its first failure.
    let mut clients = vec![client.clone()];
    for _ in 0..3 {
        let c = rt
            .block_on(Client::connect_with(bcs.home(), options()))
            .expect("connect");
        rt.block_on(c.open(&sid)).expect("open");
        clients.push(c);
    }
    let streams: Vec<_> = (0..16)
        .map(|k| {
            let (c, sid) = (clients[k % 4].clone(), sid.clone());
            rt.spawn(async move {
                let mut acked = Vec::new();
                for i in 0.. {
                    match c
                        .append_message(&sid, user(&format!("{k}-{i}")), None)
                        .await
                    {
                        Ok(id) => acked.push(id.as_str().to_owned()),
                        Err(e) => return (acked, e),
                    }
                }
                unreachable!()
            })
        })
        .collect();
    rt.block_on(async { while client.read_entries(&sid).await.expect("entries").len() < 40 {} });
    Owners::kill(pid);
    let mut acked = BTreeSet::new();
    for s in streams {
        let (ids, e) = rt.block_on(s).expect("joined");
        assert!(e.is_owner_gone(), "{e:?}");
        acked.extend(ids);
    }
    // Not `acked.len() >= 40`: a read may see entries whose durable appends are still
    // being synced (reads never wait for a sync), so fewer may have been answered.
    assert!(clients.iter().all(Client::is_gone));

    // The next call starts a new owner, which recovers the journal: every
    // acknowledged entry is there.
    let again = rt
        .block_on(Client::connect_or_start_with(bcs.home(), options()))
        .expect("restarted");
    owners.add(again.owner_pid());
    assert_ne!(again.owner_pid(), Some(pid));
    assert_eq!(again.started_owner(), again.owner_pid());
    rt.block_on(again.open(&sid)).expect("reopened");
    let stored: BTreeSet<String> = rt
        .block_on(again.read_entries(&sid))
        .expect("entries")
        .iter()
        .filter_map(|e| e.id().map(str::to_owned))
        .collect();
    assert!(
        acked.is_subset(&stored),
        "lost: {:?}",
        acked.difference(&stored)
    );
}

/// The path `bcs` prints is where the client looks.
#[test]
fn the_client_connects_where_bcs_serve_binds() {
    let bcs = Bcs::new();
    assert_eq!(
        session_client::socket::socket_path(bcs.home()),
        Path::new(bcs.home()).join("owner/owner.sock")
    );
}

#[test]
fn a_stdio_owner_serves_one_client_and_ends_with_it() {
    let bcs = Bcs::new();
    let rt = runtime();
    let client = rt
        .block_on(Client::spawn_stdio(bcs.home(), options()))
        .expect("spawned");
    assert!(client.owner_pid().is_some());
    let s = rt.block_on(client.create("/w")).expect("create");
    let id = rt
        .block_on(client.append_message(&s.session_id, user("over stdio"), None))
        .expect("append");
    // Shut down: the owner closes the session and exits; its lock is released.
    rt.block_on(client.shutdown()).expect("shut down");
    let run = bcs.run_stdin(
        &["append", &s.session_id],
        "{\"role\":\"user\",\"content\":\"direct\",\"timestamp\":2}\n",
    );
    assert_eq!(run.ok().lines().count(), 1);
    assert!(
        bcs.run(&["tree", &s.session_id, "--json"])
            .ok()
            .contains(id.as_str())
    );
}

#[test]
fn an_owner_that_cannot_start_is_reported_with_its_reason() {
    use std::os::unix::fs::PermissionsExt;
    let bcs = Bcs::new();
    let dir = bcs.home().join("owner");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let rt = runtime();
    let e = rt
        .block_on(Client::connect_or_start_with(
            bcs.home(),
            options().with_start_attempts(6),
        ))
        .expect_err("no owner can bind there");
    assert!(
        matches!(e, session_client::ClientError::NotStarted { .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("exited: bcs: "), "{e}");
    assert!(e.to_string().contains("mode 0700"), "{e}");

    let e = rt
        .block_on(Client::connect_or_start_with(
            bcs.home(),
            ClientOptions::default().with_bcs(bcs.home().join("no-such-bcs")),
        ))
        .expect_err("no program");
    assert!(
        matches!(e, session_client::ClientError::Start { .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("no-such-bcs"), "{e}");
}
