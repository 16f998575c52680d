//! Malformed input: each line gets an error, the connection goes on, and so do the
//! other clients.

use serde_json::{Value, json};
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;

use crate::support::*;

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error: {answer}"))
}

#[tokio::test]
async fn bad_lines_are_answered_and_the_connection_and_others_go_on() {
    let home = tempfile::tempdir().expect("tempdir");
    let limits = LineLimits {
        max_line_bytes: 4096,
        max_depth: MAX_DEPTH,
    };
    let owner = Owner::new(
        store(home.path()),
        OwnerOptions::default().with_line_limits(limits),
    );
    let mut bad = Client::connect(&owner);
    let mut good = Client::connect(&owner);
    bad.initialize().await;
    good.initialize().await;
    let s = good.create().await;
    bad.open(&s.session_id).await;

    // Random bytes (invalid UTF-8 included).
    bad.send_raw(b"\x00\xff\x13garbage\xc3\x28{{\n").await;
    let a = bad.recv().await;
    assert_eq!(
        (error_code(&a), &a["id"]),
        (code::PARSE_ERROR, &json!(null))
    );

    // A line over the limit is skipped whole, never buffered.
    let mut long = vec![b'x'; 10_000];
    long.push(b'\n');
    bad.send_raw(&long).await;
    let a = bad.recv().await;
    assert_eq!(error_code(&a), code::LINE_TOO_LONG);
    assert_eq!(
        a["error"]["data"],
        json!({"kind":"lineTooLong","len":10_000,"limit":4096})
    );

    // Deep JSON (within the size limit) is refused before parsing.
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"store/listAll\",\"params\":{}{}}}\n",
        "[".repeat(1500),
        "]".repeat(1500)
    );
    bad.send_raw(deep.as_bytes()).await;
    assert_eq!(error_code(&bad.recv().await), code::TOO_DEEP);

    // An unknown method and wrong params name the request.
    bad.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"u\",\"method\":\"session/explode\"}\n")
        .await;
    let a = bad.recv().await;
    assert_eq!(
        (error_code(&a), &a["id"]),
        (code::METHOD_NOT_FOUND, &json!("u"))
    );
    bad.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/appendMessage\",\"params\":{\"sessionId\":1}}\n")
        .await;
    let a = bad.recv().await;
    assert_eq!(
        (error_code(&a), &a["id"]),
        (code::INVALID_PARAMS, &json!(5))
    );
    // Blank lines and notifications get no answer; a stray response neither.
    bad.send_raw(b"\n   \n{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n")
        .await;

    // The same connection still works, and the other client never noticed.
    let r = bad
        .call::<call::AppendMessage>(append(&s.session_id, "after", None))
        .await;
    assert!(r.is_ok(), "{r:?}");
    let r = good
        .call::<call::AppendMessage>(append(&s.session_id, "meanwhile", None))
        .await;
    assert!(r.is_ok(), "{r:?}");
    let branch = good.branch(&s.session_id).await;
    assert_eq!(
        branch.entries.iter().map(text_of).collect::<Vec<_>>(),
        ["after", "meanwhile"]
    );
}

#[tokio::test]
async fn a_hundred_thousand_levels_do_not_reach_the_parser() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::connect(&owner);
    let deep = format!("{}\n", "[".repeat(100_000));
    c.send_raw(deep.as_bytes()).await;
    let a = c.recv().await;
    assert_eq!(error_code(&a), code::TOO_DEEP);
    c.initialize().await;
}

#[tokio::test]
async fn a_full_session_queue_answers_overloaded_and_retryable() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = Owner::new(
        store(home.path()),
        OwnerOptions::default().with_session_queue(2),
    );
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    // Everything in one write on this single-threaded runtime: the connection reads
    // and queues every line before the session's actor runs once.
    let mut lines = String::new();
    for i in 0..10 {
        let p = append(&s.session_id, &format!("m{i}"), None);
        lines += &encode_request(
            &RequestId::Number(100 + i),
            &call::AppendMessage::request(p),
        );
        lines.push('\n');
    }
    c.send_raw(lines.as_bytes()).await;
    let mut overloaded = 0;
    let mut acked = 0;
    for _ in 0..10 {
        let a = c.recv().await;
        match decode::<call::AppendMessage>(a) {
            Ok(_) => acked += 1,
            Err(e) => {
                assert!(e.is_retryable(), "{e:?}");
                assert_eq!(e.code(), code::OVERLOADED);
                overloaded += 1;
            }
        }
    }
    assert_eq!((acked, overloaded), (2, 8));
    // Retrying later succeeds.
    c.call::<call::AppendMessage>(append(&s.session_id, "retry", None))
        .await
        .expect("retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_stalls_only_itself() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut good = Client::ready(&owner).await;
    let s = good.create().await;
    let mut mute = Client::connect_with_buffer(&owner, 4096);
    mute.initialize().await;
    mute.open(&s.session_id).await;
    // The mute client writes requests and never reads an answer: its answers fill the
    // connection, its in-flight bound fills, and the owner stops reading it. Its
    // writes then block too, so they run on a task of their own.
    let sid = s.session_id.clone();
    let writer = tokio::spawn(async move {
        for i in 0..5_000 {
            mute.send::<call::AppendMessage>(append(
                &sid,
                &format!("mute-{i}"),
                Some(Durability::Buffered),
            ))
            .await;
        }
        mute
    });
    // Meanwhile the other client is served, on the same session.
    for i in 0..20 {
        good.call::<call::AppendMessage>(append(&s.session_id, &format!("good-{i}"), None))
            .await
            .expect("served");
    }
    assert!(
        !writer.is_finished(),
        "the owner stopped reading the mute client"
    );
    writer.abort();
}

/// A client that dies mid-request (half a line, then its end of the socket closes, as
/// `kill -9` closes it) leaves no entry, and nobody else notices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_request_leaves_no_entry() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path();
    let owner = owner(home);
    let bound = session_owner::socket::bind(home).await.expect("bind");
    tokio::spawn(session_owner::socket::serve(owner.clone(), bound));
    let (r, w) = session_owner::socket::connect(home)
        .await
        .expect("connect")
        .into_split();
    let mut good = Client::over(r, w);
    good.initialize().await;
    let s = good.create().await;

    let (r, w) = session_owner::socket::connect(home)
        .await
        .expect("connect")
        .into_split();
    let mut dying = Client::over(r, w);
    dying.initialize().await;
    dying.open(&s.session_id).await;
    let mut line = encode_request(
        &RequestId::Number(99),
        &call::AppendMessage::request(append(&s.session_id, "never whole", None)),
    );
    line.truncate(line.len() / 2);
    dying.send_raw(line.as_bytes()).await;
    dying.disconnect().await; // the socket closes with half a request sent

    for i in 0..5 {
        good.call::<call::AppendMessage>(append(&s.session_id, &format!("g{i}"), None))
            .await
            .expect("the other client appends");
    }
    let texts: Vec<String> = good
        .branch(&s.session_id)
        .await
        .entries
        .iter()
        .map(text_of)
        .collect();
    assert_eq!(texts, ["g0", "g1", "g2", "g3", "g4"]);
}
