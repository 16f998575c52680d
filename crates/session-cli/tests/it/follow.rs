//! `bcs follow SESSION`: entries printed as they are appended, through the owner.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use serde_json::{Value, json};
use session_client::session_protocol::Durability;
use session_client::{Client, ClientOptions};

use crate::support::{Bcs, bin};

/// Kills (SIGKILL) and reaps our child when dropped, even on failure.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Kills (SIGKILL, by pid) the owner a client started, when dropped.
struct KillOwner(Option<u32>);

impl Drop for KillOwner {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn user(text: &str) -> session_types::AgentMessage {
    serde_json::from_value(json!({"role":"user","content":text,"timestamp":1})).expect("a message")
}

fn content(line: &str) -> String {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    v["message"]["content"]
        .as_str()
        .expect("a user message")
        .to_owned()
}

#[test]
fn follow_prints_the_session_then_each_entry_as_it_is_appended() {
    let bcs = Bcs::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    // A client starts the owner (this `bcs`) and writes one entry.
    let client = rt
        .block_on(Client::connect_or_start_with(
            bcs.home(),
            ClientOptions::default().with_bcs(bin()),
        ))
        .expect("an owner");
    let _owner = KillOwner(client.started_owner());
    let sid = rt.block_on(client.create("/w")).expect("create").session_id;
    rt.block_on(client.append_message(&sid, user("before"), None))
        .expect("append");

    let mut follow = Reaped(
        bcs.cmd(&["follow", &sid[..8], "--from-start"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bcs follow"),
    );
    let mut lines = BufReader::new(follow.0.stdout.take().expect("stdout")).lines();
    let mut next = || lines.next().expect("a line").expect("read");
    // The history first (printed once following: nothing after it is missed).
    assert_eq!(content(&next()), "before");
    rt.block_on(client.append_message(&sid, user("durable"), None))
        .expect("append");
    rt.block_on(client.append_message(&sid, user("buffered"), Some(Durability::Buffered)))
        .expect("append");
    assert_eq!(content(&next()), "durable");
    assert_eq!(content(&next()), "buffered");
}

/// A `bcs follow` whose output nobody reads for a while falls behind: notifications
/// are dropped (by the owner, or by its client's own queue) and it re-reads. Whatever
/// happened, its output is every entry, once, in journal order.
#[test]
fn follow_that_falls_behind_still_prints_every_entry_once_in_order() {
    let bcs = Bcs::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let client = rt
        .block_on(Client::connect_or_start_with(
            bcs.home(),
            ClientOptions::default().with_bcs(bin()),
        ))
        .expect("an owner");
    let _owner = KillOwner(client.started_owner());
    let sid = rt.block_on(client.create("/w")).expect("create").session_id;
    rt.block_on(client.append_message(&sid, user("first"), None))
        .expect("append");

    let mut follow = Reaped(
        bcs.cmd(&["follow", &sid, "--from-start"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bcs follow"),
    );
    let stdout = follow.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut first = String::new();
    let mut reader = BufReader::new(stdout);
    reader.read_line(&mut first).expect("the history");
    assert_eq!(content(&first), "first");
    // Far more than the pipe, the client's queue and the owner's hold, unread.
    const N: usize = 3000;
    for i in 0..N {
        rt.block_on(client.append_message(
            &sid,
            user(&format!("m{i}")),
            Some(Durability::Buffered),
        ))
        .expect("append");
    }
    // Now read, in a thread; each line within a deadline.
    std::thread::spawn(move || {
        for line in reader.lines() {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut printed = Vec::new();
    for _ in 0..N {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("bcs follow prints every entry")
            .expect("read");
        printed.push(content(&line));
    }
    let expected: Vec<String> = (0..N).map(|i| format!("m{i}")).collect();
    assert_eq!(printed, expected, "every entry once, in order");
    // It did fall behind (and said so): the re-read is what this test exercises.
    let _ = follow.0.kill();
    let _ = follow.0.wait();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut follow.0.stderr.take().expect("stderr"), &mut stderr)
        .expect("stderr");
    assert!(
        stderr.starts_with("bcs: warning: ") && stderr.contains("re-reading"),
        "{stderr:?}"
    );
}
