//! `new`, `append`, `rm`, and the writer lock between two `append`s.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::support::Bcs;

#[test]
fn new_prints_an_id_and_refuses_bad_or_taken_ids() {
    let b = Bcs::new();
    let id = b.run(&["new"]).ok().trim().to_owned();
    assert_eq!(id.len(), 36, "a UUID: {id}");
    assert!(b.sessions().join(format!("{id}.jsonl")).is_file());
    assert_eq!(b.run(&["new", "--id", "s1", "--cwd", "/w"]).ok(), "s1\n");
    let shown = b.run(&["show", "s1", "--json"]).json();
    assert_eq!(shown["header"]["cwd"], "/w");
    let mut errors = vec![b.redact(b.run(&["new", "--id", "s1"]).fails(1))];
    errors.push(b.redact(b.run(&["new", "--id", "../evil"]).fails(1)));
    insta::assert_snapshot!(errors.concat());
}

#[test]
fn append_entries_and_messages_prints_ids() {
    let b = Bcs::new();
    b.run(&["new", "--id", "s1", "--cwd", "/w"]).ok();
    let input = concat!(
        r#"{"role":"user","content":"hello","timestamp":1}"#,
        "\n",
        "\n",
        r#"{"type":"message","id":"a2","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#,
        "\n",
        r#"{"type":"label","targetId":"a2","label":"greeting"}"#,
        "\n",
        r#"{"type":"thinking_level_change","thinkingLevel":"high"}"#,
        "\n",
    );
    let r = b.run_stdin(&["append", "s1"], input);
    let ids: Vec<&str> = r.ok().lines().collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!(ids[1], "a2");
    let tree = b.run(&["tree", "s1", "--json"]).json();
    let nodes = tree["nodes"].as_array().expect("nodes");
    let got: Vec<&str> = nodes
        .iter()
        .map(|n| n["id"].as_str().unwrap_or(""))
        .collect();
    for id in &ids {
        assert!(got.contains(id), "{id} in {got:?}");
    }
    let a2 = nodes.iter().find(|n| n["id"] == "a2").expect("a2");
    assert_eq!(a2["label"], "greeting");
    let ctx = b.run(&["context", "s1", "--json"]).json();
    assert_eq!(ctx["thinkingLevel"], "high");
    assert_eq!(ctx["model"]["provider"], "p");
    // --buffered acknowledges too.
    let r = b.run_stdin(
        &["append", "s1", "--buffered"],
        "{\"role\":\"user\",\"content\":\"again\",\"timestamp\":3}\n",
    );
    assert_eq!(r.ok().lines().count(), 1);
}

/// A line holding a lone surrogate escape (a JavaScript string cut in the middle of
/// an emoji, as `JSON.stringify` writes it) is appended with U+FFFD in its place, as
/// the owner reads a request holding one; an escaped backslash before `ud83d` is
/// text, kept.
#[test]
fn a_lone_surrogate_is_appended_as_u_fffd() {
    let b = Bcs::new();
    b.run(&["new", "--id", "s1", "--cwd", "/w"]).ok();
    let input = concat!(
        r#"{"role":"user","content":"cut \ud83d here \\ud83d","timestamp":1}"#,
        "\n",
        r#"{"type":"custom_message","customType":"k","content":"\udc00","display":true}"#,
        "\n",
    );
    assert_eq!(
        b.run_stdin(&["append", "s1"], input).ok().lines().count(),
        2
    );
    let ctx = b.run(&["context", "s1", "--json"]).json();
    assert_eq!(ctx["messages"][0]["content"], "cut \u{fffd} here \\ud83d");
    assert_eq!(ctx["messages"][1]["content"], "\u{fffd}");
}

#[test]
fn a_bad_line_names_its_number_and_keeps_earlier_lines() {
    let b = Bcs::new();
    b.run(&["new", "--id", "s1", "--cwd", "/w"]).ok();
    let mut errors = Vec::new();
    for bad in [
        "not json",
        "[1,2]",
        r#"{"neither":"type nor role"}"#,
        r#"{"role":42}"#,
        r#"{"type":42}"#,
        r#"{"type":"session","id":"x"}"#,
    ] {
        let input = format!(
            "{{\"role\":\"user\",\"content\":\"ok\",\"timestamp\":1}}\n{bad}\n{{\"role\":\"user\",\"content\":\"never\",\"timestamp\":1}}\n"
        );
        let r = b.run_stdin(&["append", "s1"], &input);
        let err = r.fails(1);
        assert!(err.contains("stdin line 2"), "{err}");
        assert_eq!(
            r.stdout.lines().count(),
            1,
            "the first line was acknowledged"
        );
        let id = r.stdout.trim();
        let tree = b.run(&["tree", "s1", "--json"]).json();
        assert!(
            tree["nodes"]
                .as_array()
                .expect("nodes")
                .iter()
                .any(|n| n["id"] == id)
        );
        errors.push(b.redact(err));
    }
    insta::assert_snapshot!(errors.concat());
    let r = b.run_stdin(&["append", "nope"], "");
    assert!(r.fails(1).contains("no session \"nope\""));
}

#[test]
fn rm_deletes_and_refuses_while_owned() {
    let b = Bcs::new();
    b.run(&["new", "--id", "s1"]).ok();
    b.run(&["new", "--id", "s2"]).ok();
    // Hold s1 with an append that waits on stdin.
    let mut holder = b
        .cmd(&["append", "s1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = holder.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(holder.stdout.take().expect("stdout"));
    writeln!(stdin, r#"{{"role":"user","content":"x","timestamp":1}}"#).expect("write");
    let mut line = String::new();
    stdout.read_line(&mut line).expect("ack");
    let refused = b.run(&["rm", "s1"]);
    let err = refused.fails(1);
    assert!(err.contains(&format!("pid {}", holder.id())), "{err}");
    assert!(b.sessions().join("s1.jsonl").is_file());
    drop(stdin);
    assert!(holder.wait().expect("wait").success());
    assert_eq!(
        b.run(&["rm", "s1"])
            .ok()
            .lines()
            .next()
            .map(|l| l.starts_with("removed s1")),
        Some(true)
    );
    assert!(!b.sessions().join("s1.jsonl").exists());
    assert!(
        b.run(&["show", "s1"])
            .fails(1)
            .contains("no session \"s1\"")
    );
}

#[test]
fn a_second_append_fails_at_once_naming_the_holder() {
    let b = Bcs::new();
    b.run(&["new", "--id", "s1"]).ok();
    let mut first = b
        .cmd(&["append", "s1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = first.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(first.stdout.take().expect("stdout"));
    writeln!(
        stdin,
        r#"{{"role":"user","content":"first","timestamp":1}}"#
    )
    .expect("write");
    let mut line = String::new();
    stdout
        .read_line(&mut line)
        .expect("ack: the first append holds the lock");
    // The second append gets the lock error without reading stdin (which stays open
    // in the test harness only until the process exits).
    let second = b.run_stdin(
        &["append", "s1"],
        r#"{"role":"user","content":"second","timestamp":1}"#,
    );
    let err = second.fails(1);
    assert!(err.contains("owned by"), "{err}");
    assert!(
        err.contains(&format!("pid {}", first.id())),
        "names the holder: {err}"
    );
    assert!(second.stdout.is_empty());
    drop(stdin);
    assert!(first.wait().expect("wait").success());
}
