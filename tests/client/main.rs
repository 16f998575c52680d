//! `session-client` against the real owner (`session-owner`, in this process, on its
//! Unix socket): both name the same socket, pipelined calls, notifications, typed
//! errors, and an owner that dies with calls in flight. (The client's own tests play
//! the owner's side by hand; it may not link the owner. `session-cli`'s tests drive a
//! `bcs serve` process: start on demand, kill -9.)

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use session_client::session_protocol::{
    EntryReadParams, Error, ListAllParams, Notification, OpenParams, ReadLimits, ReadParams, call,
    code,
};
use session_client::{Client, ClientError, Notice};
use session_manager::{Layout, Sources, Store};
use session_owner::{Owner, OwnerOptions, socket};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// An owner of `home` serving its socket on a runtime of its own: dropping (or
/// shutting down) the runtime kills it, as far as its clients can tell.
fn owner_runtime(home: &Path) -> Runtime {
    let rt = runtime();
    let store = Store::new(Layout::with_root(home).expect("absolute"))
        .with_sources(Sources::deterministic(1_767_225_600_000, 7));
    let owner = Owner::new(store, OwnerOptions::default());
    let bound = rt.block_on(socket::bind(home)).expect("bind");
    rt.spawn(socket::serve(owner, bound));
    rt
}

fn user(text: &str) -> session_types::AgentMessage {
    serde_json::from_value(json!({"role":"user","content":text,"timestamp":1})).expect("a message")
}

fn homes(tmp: &Path) -> [std::path::PathBuf; 2] {
    [
        tmp.join("short"),
        tmp.join("h".repeat(60)).join("o".repeat(60)),
    ]
}

#[test]
fn the_client_finds_the_socket_where_the_owner_binds_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for home in homes(tmp.path()) {
        assert_eq!(
            session_client::socket::socket_path(&home),
            socket::socket_path(&home)
        );
        assert_eq!(
            session_client::socket::socket_dir(&home),
            socket::socket_dir(&home)
        );
    }
}

#[test]
fn pipelined_appends_from_clones_land_once_each_short_and_long_homes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for home in homes(tmp.path()) {
        let _owner = owner_runtime(&home);
        assert_eq!(
            socket::socket_path(&home).as_os_str().len() > 108,
            home.as_os_str().len() > 100
        );
        runtime().block_on(async {
            let client = Client::connect(&home).await.expect("connect");
            assert_eq!(client.owner_pid(), Some(std::process::id()));
            assert_eq!(client.server().server_info.name, "bcs-owner");
            let s = client.create("/work").await.expect("create");
            let sid = Arc::new(s.session_id);
            let tasks: Vec<_> = (0..200)
                .map(|i| {
                    let (c, sid) = (client.clone(), sid.clone());
                    tokio::spawn(async move {
                        c.append_message(&sid, user(&format!("m{i}")), None).await
                    })
                })
                .collect();
            let mut acked = BTreeSet::new();
            for t in tasks {
                acked.insert(t.await.expect("joined").expect("acked").as_str().to_owned());
            }
            assert_eq!(acked.len(), 200);
            let stored: BTreeSet<String> = client
                .read_entries(&sid)
                .await
                .expect("entries")
                .iter()
                .filter_map(|e| e.id().map(str::to_owned))
                .collect();
            assert_eq!(stored, acked);
            // One chain: each entry's parent is the one before it.
            assert_eq!(client.read_branch(&sid).await.expect("branch").len(), 200);
        });
    }
}

#[test]
fn list_progress_notifications_arrive_before_the_answer() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path();
    let _owner = owner_runtime(home);
    runtime().block_on(async {
        let client = Client::connect(home).await.expect("connect");
        let mut notes = client.notifications().expect("receiver");
        for _ in 0..3 {
            let s = client.create("/work").await.expect("create");
            client.close(&s.session_id).await.expect("close");
        }
        let listed = client
            .call::<call::StoreListAll>(ListAllParams {
                progress: Some(true),
            })
            .await
            .expect("listed");
        assert_eq!(listed.sessions.len(), 3);
        let mut seen = Vec::new();
        let mut request = None;
        while let Ok(n) = notes.try_recv() {
            let Notice::Known(Notification::ListProgress(p)) = n else {
                panic!("{n:?}");
            };
            assert!(request.is_none() || request.as_ref() == Some(&p.request_id));
            request = Some(p.request_id);
            seen.push((p.loaded, p.total));
        }
        assert_eq!(seen, [(0, 3), (1, 3), (2, 3), (3, 3)]);
        assert_eq!(client.missed_notifications(), 0);
    });
}

#[test]
fn the_owners_errors_arrive_typed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path();
    let _owner = owner_runtime(home);
    runtime().block_on(async {
        let client = Client::connect(home).await.expect("connect");
        let s = client.create("/work").await.expect("create");
        for i in 0..3 {
            client
                .append_message(&s.session_id, user(&format!("m{i}")), None)
                .await
                .expect("append");
        }
        let e = client
            .call::<call::ReadEntries>(ReadParams {
                session_id: s.session_id.clone(),
                limits: Some(ReadLimits {
                    max_source_entries: Some(1),
                    max_source_bytes: None,
                }),
            })
            .await
            .expect_err("over the limit");
        assert_eq!(e.code(), Some(code::LIMIT_EXCEEDED));
        assert!(
            matches!(&e, ClientError::Owner(Error::LimitExceeded { limit_value: 1, needed, .. }) if *needed > 1),
            "{e:?}"
        );

        let e = client.open("no-such-session").await.expect_err("none");
        assert_eq!(e.code(), Some(code::NOT_FOUND), "{e:?}");
        assert!(matches!(&e, ClientError::Owner(Error::NotFound { path }) if path.contains("no-such-session")), "{e:?}");

        let e = client
            .call::<call::ReadEntry>(EntryReadParams {
                session_id: s.session_id.clone(),
                entry_id: "nope".into(),
                limits: None,
            })
            .await
            .expect_err("no entry");
        assert!(
            matches!(&e, ClientError::Owner(Error::EntryNotFound { entry_id, .. }) if entry_id == "nope"),
            "{e:?}"
        );

        let e = client.read_entries("never-opened").await.expect_err("not open");
        assert_eq!(e.code(), Some(code::SESSION_NOT_OPEN), "{e:?}");

        let e = client
            .call::<call::StoreOpen>(OpenParams {
                path: None,
                session_id: None,
            })
            .await
            .expect_err("neither");
        assert_eq!(e.code(), Some(code::INVALID_PARAMS), "{e:?}");
    });
}

#[test]
fn an_owner_that_dies_fails_every_call_in_flight_and_the_next_owner_serves() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path();
    let owner = owner_runtime(home);
    let crt = runtime();
    let (client, sid) = crt.block_on(async {
        let client = Client::connect(home).await.expect("connect");
        let s = client.create("/work").await.expect("create");
        (client, s.session_id)
    });
    // Eight streams of pipelined appends, each until its first failure.
    let streams: Vec<_> = (0..8)
        .map(|k| {
            let (c, sid) = (client.clone(), sid.clone());
            crt.spawn(async move {
                let mut acked = Vec::new();
                for i in 0.. {
                    match c
                        .append_message(&sid, user(&format!("{k}-{i}")), None)
                        .await
                    {
                        Ok(id) => acked.push(id),
                        // The owner here "dies" by its runtime shutting down, which
                        // drops its tasks in no set order: a session actor dropped
                        // before its connection makes that connection answer a call
                        // in flight with an internal error before it goes too (a
                        // killed process answers nothing: `session-cli`'s
                        // `owner_faults`). The stream goes on until the connection ends.
                        Err(ClientError::Owner(Error::Internal { detail }))
                            if detail.contains("no longer served") => {}
                        Err(e) => return (acked, e),
                    }
                }
                unreachable!()
            })
        })
        .collect();
    // Once some appends are acknowledged, the owner dies. A read sees entries whose
    // batch is still syncing (one per stream at most) and entries whose answer is
    // still on its way (one per stream at most): 66 seen means 50 acknowledged.
    crt.block_on(async {
        let mut n = 0;
        while n < 66 {
            n = client.read_entries(&sid).await.expect("entries").len();
        }
    });
    owner.shutdown_background();
    let mut acked_total = 0;
    for s in streams {
        let (acked, e) = crt.block_on(s).expect("joined");
        assert!(e.is_owner_gone(), "{e:?}");
        acked_total += acked.len();
    }
    assert!(acked_total >= 50);
    assert!(client.is_gone());
    let e = crt.block_on(client.list_all()).expect_err("gone at once");
    assert!(e.is_owner_gone(), "{e:?}");

    // The dead owner's socket is stale; a new owner replaces it and serves.
    let _owner = owner_runtime(home);
    crt.block_on(async {
        let client = Client::connect(home).await.expect("reconnect");
        let listed = client.list_all().await.expect("listed");
        assert_eq!(listed.len(), 1);
    });
}
