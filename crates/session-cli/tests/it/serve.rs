//! `bcs serve`: the owner on stdio and on the socket, driven as a process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::Bcs;

fn request(id: u32, method: &str, params: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string() + "\n"
}

/// Writes one request line and reads one answer line.
fn call(w: &mut impl Write, r: &mut impl BufRead, line: &str) -> Value {
    w.write_all(line.as_bytes()).expect("write");
    w.flush().expect("flush");
    let mut answer = String::new();
    r.read_line(&mut answer).expect("read");
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
}

#[test]
fn serve_stdio_answers_one_client_and_exits_when_stdin_ends() {
    let bcs = Bcs::new();
    let mut child = bcs
        .cmd(&["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bcs serve");
    let mut w = child.stdin.take().expect("stdin");
    let mut r = BufReader::new(child.stdout.take().expect("stdout"));

    let a = call(
        &mut w,
        &mut r,
        &request(
            1,
            "initialize",
            json!({"protocolVersion":{"major":1,"minor":0}}),
        ),
    );
    assert_eq!(
        a["result"]["protocolVersion"],
        json!({"major":1,"minor":1}),
        "{a}"
    );
    let a = call(
        &mut w,
        &mut r,
        &request(2, "store/create", json!({"cwd":"/w","sessionId":"s1"})),
    );
    assert_eq!(a["result"]["sessionId"], "s1", "{a}");
    let a = call(
        &mut w,
        &mut r,
        &request(
            3,
            "session/appendMessage",
            json!({"sessionId":"s1","message":{"role":"user","content":"hi","timestamp":1}}),
        ),
    );
    let entry = a["result"]["entryId"]
        .as_str()
        .expect("an entry id")
        .to_owned();
    let a = call(&mut w, &mut r, &request(4, "session/explode", json!({})));
    assert_eq!(a["error"]["code"], -32601, "{a}");
    drop(w);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");

    // The owner closed the session when stdin ended: `bcs` reads the entry back.
    let shown = bcs.run(&["tree", "s1", "--json"]);
    assert!(shown.ok().contains(&entry), "{}", shown.stdout);
}

#[test]
fn serve_prints_its_socket_and_answers_on_it() {
    let bcs = Bcs::new();
    let mut child = bcs
        .cmd(&["serve"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bcs serve");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut path = String::new();
    out.read_line(&mut path).expect("the socket path");
    let path = std::path::PathBuf::from(path.trim_end());
    assert_eq!(path, bcs.home().join("owner/owner.sock"));

    let stream = std::os::unix::net::UnixStream::connect(&path).expect("connect");
    let mut r = BufReader::new(stream.try_clone().expect("clone"));
    let mut w = stream;
    let a = call(
        &mut w,
        &mut r,
        &request(
            1,
            "initialize",
            json!({"protocolVersion":{"major":2,"minor":0}}),
        ),
    );
    assert_eq!(a["error"]["code"], -32004, "{a}");
    assert_eq!(
        a["error"]["data"]["client"],
        json!({"major":2,"minor":0}),
        "{a}"
    );

    child.kill().expect("kill our bcs serve");
    child.wait().expect("reap");
}

/// Waits for `child` to exit, at most `secs` seconds (a watcher thread waits; this
/// thread waits on its answer, no polling).
fn wait_for(child: std::process::Child, secs: u64) -> std::process::Output {
    let (tx, rx) = std::sync::mpsc::channel();
    let pid = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            // Ours, by its pid: end it so the test reports instead of hanging.
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("bcs serve (pid {pid}) did not exit within {secs} s");
        }
    }
}

/// A client on the owner's socket: `initialize` answered.
fn initialized(path: &std::path::Path) -> (impl Write, impl BufRead) {
    let stream = std::os::unix::net::UnixStream::connect(path).expect("connect");
    let mut r = BufReader::new(stream.try_clone().expect("clone"));
    let mut w = stream;
    let a = call(
        &mut w,
        &mut r,
        &request(
            1,
            "initialize",
            json!({"protocolVersion":{"major":1,"minor":0}}),
        ),
    );
    assert!(a["result"].is_object(), "{a}");
    (w, r)
}

#[test]
fn of_eight_owners_started_at_once_one_serves_and_the_others_exit_3() {
    let bcs = Bcs::new();
    let children: Vec<_> = (0..8)
        .map(|_| {
            bcs.cmd(&["serve", "--idle-timeout", "0"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn bcs serve")
        })
        .collect();
    // The losers exit by themselves; the winner prints its socket and serves.
    let mut winner = None;
    let mut losers = 0;
    for mut child in children {
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        out.read_line(&mut first).expect("read");
        if first.is_empty() {
            let done = wait_for(child, 60);
            let stderr = String::from_utf8_lossy(&done.stderr);
            assert_eq!(done.status.code(), Some(3), "{stderr}");
            // The winner's pid is named once it has written it (best effort: a loser
            // that comes first reads an empty lock file).
            assert!(
                stderr.starts_with("bcs: ")
                    && stderr.contains("another owner")
                    && stderr.contains("is serving this home"),
                "{stderr}"
            );
            losers += 1;
        } else {
            assert_eq!(
                first.trim_end(),
                bcs.home().join("owner/owner.sock").to_string_lossy()
            );
            assert!(winner.is_none(), "two owners serve");
            winner = Some(child);
        }
    }
    assert_eq!(losers, 7);
    let mut winner = winner.expect("one owner serves");
    let path = bcs.home().join("owner/owner.sock");
    let clients: Vec<_> = (0..8).map(|_| initialized(&path)).collect();
    drop(clients);
    winner.kill().expect("kill our bcs serve");
    winner.wait().expect("reap");
}

#[test]
fn serve_exits_when_idle_and_removes_its_socket() {
    let bcs = Bcs::new();
    let mut child = bcs
        .cmd(&["serve", "--idle-timeout", "200ms"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bcs serve");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut path = String::new();
    out.read_line(&mut path).expect("the socket path");
    let path = std::path::PathBuf::from(path.trim_end());
    // A client may or may not come in time; either way the owner ends when idle.
    if let Ok(stream) = std::os::unix::net::UnixStream::connect(&path) {
        drop(stream);
    }
    let done = wait_for(child, 120);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(!path.exists(), "the socket is removed");
    // The next owner starts (the lock was released).
    let mut next = bcs
        .cmd(&["serve", "--idle-timeout", "1ms"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bcs serve");
    let mut line = String::new();
    BufReader::new(next.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    assert_eq!(line.trim_end(), path.to_string_lossy());
    assert!(wait_for(next, 120).status.success());
}

/// Out of descriptors, `accept` fails (EMFILE): the owner pauses and tries again
/// instead of ending, and serves the waiting client once descriptors are free. The
/// owner runs under `ulimit -n 32` (a shell sets it, then execs `bcs`).
#[test]
fn serve_survives_running_out_of_descriptors() {
    let bcs = Bcs::new();
    let mut child = serve_under_ulimit(&bcs, "-n 32");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut path = String::new();
    out.read_line(&mut path).expect("the socket path");
    let path = std::path::PathBuf::from(path.trim_end());
    let init = request(
        1,
        "initialize",
        json!({"protocolVersion":{"major":1,"minor":0}}),
    );

    // Connect until one is not answered soon: the owner is out of descriptors.
    let mut held = Vec::new();
    let mut waiting = None;
    for _ in 0..64 {
        let stream = std::os::unix::net::UnixStream::connect(&path).expect("connect");
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let mut w = stream.try_clone().expect("clone");
        w.write_all(init.as_bytes()).expect("write");
        let mut r = BufReader::new(stream);
        let mut answer = String::new();
        match r.read_line(&mut answer) {
            Ok(n) if n > 0 => held.push((w, r)),
            Ok(_) => panic!("the owner closed the connection: it ended"),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                waiting = Some((w, r));
                break;
            }
            Err(e) => panic!("the owner ended: {e}"),
        }
    }
    let (_w, mut r) = waiting.expect("32 descriptors ran out before 64 connections");
    assert!(held.len() < 32, "{} answered", held.len());

    // Free some descriptors: the owner, still there, answers the waiting client.
    held.truncate(held.len().saturating_sub(4));
    r.get_ref()
        .set_read_timeout(Some(std::time::Duration::from_secs(120)))
        .expect("timeout");
    let mut answer = String::new();
    let n = r
        .read_line(&mut answer)
        .expect("answered once descriptors are free");
    assert!(n > 0, "the owner ended instead of waiting");
    let a: Value = serde_json::from_str(&answer).expect("json");
    assert_eq!(
        a["result"]["protocolVersion"],
        json!({"major":1,"minor":1}),
        "{a}"
    );
    assert!(child.try_wait().expect("status").is_none(), "still serving");
    child.kill().expect("kill our bcs serve");
    child.wait().expect("reap");
}

/// The owner holds descriptors for every open session (its journal, its index
/// sidecar's pages), so `bcs serve` raises its soft limit on open files to the hard
/// limit at start: a default soft limit of 1,024 would otherwise cap it at a few
/// hundred sessions. Started under `ulimit -Sn 64` (the hard limit unchanged), its
/// `/proc/<pid>/limits` shows the soft limit equal to the hard one.
#[test]
fn serve_raises_its_soft_open_files_limit_to_the_hard_limit() {
    let bcs = Bcs::new();
    let mut child = serve_under_ulimit(&bcs, "-Sn 64");
    // The socket's path is printed once it serves, after the limit was raised.
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut path = String::new();
    out.read_line(&mut path).expect("the socket path");
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id()))
        .expect("the owner's limits");
    child.kill().expect("kill our bcs serve");
    child.wait().expect("reap");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a line for open files");
    let fields: Vec<&str> = line["Max open files".len()..].split_whitespace().collect();
    assert_ne!(fields[0], "64", "the soft limit was not raised: {line}");
    // An unlimited hard limit leaves the soft one at the kernel's `nr_open` cap.
    if fields[1] != "unlimited" {
        assert_eq!(fields[0], fields[1], "soft and hard limits: {line}");
    }
}

/// `bcs serve` on `bcs`'s home (never idle), started by a shell that first runs
/// `ulimit <limit>` and then execs it.
fn serve_under_ulimit(bcs: &Bcs, limit: &str) -> std::process::Child {
    Command::new("sh")
        .arg("-c")
        .arg(format!(r#"ulimit {limit} && exec "$0" "$@""#))
        .arg(crate::support::bin())
        .arg("--home")
        .arg(bcs.home())
        .args(["serve", "--idle-timeout", "0"])
        .env_remove("BASE_CONTEXT_HOME")
        .env_remove("BASE_CONTEXT_SESSION_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn bcs serve under ulimit {limit}: {e}"))
}
