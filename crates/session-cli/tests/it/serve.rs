//! `bcs serve`: the owner on stdio and on the socket, driven as a process.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

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
        json!({"major":1,"minor":0}),
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
