//! Pipelining, answers out of order, notifications, typed errors, the handshake, and
//! every pending call failing `OwnerGone` when the connection ends.

use serde_json::json;
use session_client::session_protocol::{
    AppendMessageParams, Error, LimitKind, Notification, PROTOCOL_VERSION, ProtocolVersion,
    ReadParams, call, code,
};
use session_client::{ClientError, ClientOptions, Notice};

use crate::fake::{connected, pair};

fn user(text: &str) -> session_types::AgentMessage {
    serde_json::from_value(json!({"role":"user","content":text,"timestamp":1})).expect("a message")
}

fn append(text: &str) -> AppendMessageParams {
    AppendMessageParams {
        session_id: "s".into(),
        message: user(text),
        durability: None,
    }
}

#[tokio::test]
async fn pipelined_calls_get_their_own_answers_in_any_order() {
    let (client, mut fake) = connected().await;
    let calls: Vec<_> = (0..50)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move {
                c.call::<call::AppendMessage>(append(&format!("m{i}")))
                    .await
            })
        })
        .collect();
    // All 50 are on the wire before any is answered; answer them backwards, each with
    // an id derived from its own message.
    let mut requests = Vec::new();
    for _ in 0..50 {
        requests.push(fake.next().await.expect("a request"));
    }
    let ids: std::collections::BTreeSet<String> =
        requests.iter().map(|r| r["id"].to_string()).collect();
    assert_eq!(ids.len(), 50, "ids are distinct");
    for r in requests.iter().rev() {
        let text = r["params"]["message"]["content"].as_str().expect("text");
        fake.answer(&r["id"], json!({"entryId": format!("id-{text}")}))
            .await;
    }
    for (i, c) in calls.into_iter().enumerate() {
        let got = c.await.expect("joined").expect("answered");
        assert_eq!(got.entry_id.as_str(), format!("id-m{i}"));
    }
}

#[tokio::test]
async fn every_pending_call_gets_owner_gone_when_the_connection_ends() {
    let (client, mut fake) = connected().await;
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move {
                c.call::<call::AppendMessage>(append(&format!("m{i}")))
                    .await
            })
        })
        .collect();
    for _ in 0..20 {
        fake.next().await.expect("a request");
    }
    // One is answered; then the owner dies with 19 in flight.
    fake.answer(&json!(2), json!({"entryId":"first"})).await;
    drop(fake);
    let mut gone = 0;
    for c in calls {
        match c.await.expect("joined") {
            Ok(a) => assert_eq!(a.entry_id.as_str(), "first"),
            Err(e) => {
                assert!(e.is_owner_gone(), "{e:?}");
                assert!(e.to_string().starts_with("the owner is gone: "), "{e}");
                gone += 1;
            }
        }
    }
    assert_eq!(gone, 19);
    assert!(client.is_gone());
    // A call after the end fails at once.
    let e = client
        .call::<call::AppendMessage>(append("late"))
        .await
        .expect_err("gone");
    assert!(e.is_owner_gone(), "{e:?}");
}

#[tokio::test]
async fn the_owners_errors_arrive_typed_with_their_codes() {
    let (client, mut fake) = connected().await;
    let read = |s: &str| ReadParams {
        session_id: s.into(),
        limits: None,
    };
    let (a, b, c) = tokio::join!(
        client.call::<call::ReadEntries>(read("a")),
        client.call::<call::ReadEntries>(read("b")),
        async {
            for _ in 0..2 {
                let r = fake.next().await.expect("a request");
                let line = if r["params"]["sessionId"] == "a" {
                    json!({"jsonrpc":"2.0","id":r["id"],"error":{"code":1005,"message":"x: read limit exceeded","data":{"kind":"limitExceeded","session":"x","limit":"sourceEntries","limitValue":1,"needed":2,"exact":true}}})
                } else {
                    json!({"jsonrpc":"2.0","id":r["id"],"error":{"code":4242,"message":"from the future","data":{"kind":"novel"}}})
                };
                fake.send(&line.to_string()).await;
            }
        }
    );
    let () = c;
    let a = a.expect_err("limit exceeded");
    assert_eq!(a.code(), Some(code::LIMIT_EXCEEDED));
    assert!(
        matches!(
            a,
            ClientError::Owner(Error::LimitExceeded {
                limit: LimitKind::SourceEntries,
                limit_value: 1,
                needed: 2,
                ..
            })
        ),
        "{a:?}"
    );
    let b = b.expect_err("unknown");
    assert_eq!(b.code(), Some(4242));
    assert!(
        matches!(&b, ClientError::Owner(Error::Unknown { message, .. }) if message == "from the future"),
        "{b:?}"
    );
    assert!(!b.is_retryable());
}

#[tokio::test]
async fn notifications_arrive_in_order_and_unknown_ones_are_kept_raw() {
    let (client, mut fake) = connected().await;
    let mut notes = client.notifications().expect("the receiver");
    assert!(client.notifications().is_none(), "taken once");
    let (listed, ()) = tokio::join!(client.list_all(), async {
        let r = fake.next().await.expect("a request");
        let id = r["id"].clone();
        fake.send(&json!({"jsonrpc":"2.0","method":"store/listProgress","params":{"requestId":id,"loaded":1,"total":2}}).to_string()).await;
        fake.send(
            &json!({"jsonrpc":"2.0","method":"session/somethingNew","params":{"x":1}}).to_string(),
        )
        .await;
        fake.answer(&id, json!({"sessions":[]})).await;
    });
    assert_eq!(
        listed.expect("listed"),
        Vec::<session_protocol::ListedSession>::new()
    );
    // The reader delivers a notification before the answer that follows it: both are
    // queued by the time the call returns.
    match notes.try_recv().expect("progress") {
        Notice::Known(Notification::ListProgress(p)) => assert_eq!((p.loaded, p.total), (1, 2)),
        other => panic!("{other:?}"),
    }
    match notes.try_recv().expect("unknown") {
        Notice::Unknown { method, params } => {
            assert_eq!(method, "session/somethingNew");
            assert_eq!(params.expect("params").get(), r#"{"x":1}"#);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(client.missed_notifications(), 0);
}

#[tokio::test]
async fn an_owner_of_a_newer_major_is_refused_by_name() {
    // The owner refuses us.
    let (connecting, mut fake) = pair(
        ClientOptions::default().with_protocol_version(ProtocolVersion { major: 2, minor: 0 }),
    );
    let (client, ()) = tokio::join!(connecting, async {
        let r = fake.next().await.expect("initialize");
        assert_eq!(r["params"]["protocolVersion"], json!({"major":2,"minor":0}));
        fake.send(&json!({"jsonrpc":"2.0","id":r["id"],"error":{"code":-32004,"message":"unsupported protocol version: the client speaks 2.0, this owner speaks 1.0 (major 1 only)","data":{"kind":"unsupportedProtocol","client":{"major":2,"minor":0},"server":{"major":1,"minor":0}}}}).to_string()).await;
    });
    let e = client.expect_err("refused");
    assert_eq!(e.code(), Some(code::UNSUPPORTED_PROTOCOL));
    assert!(
        e.to_string()
            .contains("the client speaks 2.0, this owner speaks 1.0"),
        "{e}"
    );

    // An owner answering with a newer major is refused here, naming both.
    let (connecting, mut fake) = pair(ClientOptions::default());
    let (client, _) = tokio::join!(connecting, fake.handshake(2, 3));
    let e = client.expect_err("refused");
    assert_eq!(
        e.to_string(),
        format!(
            "unsupported protocol version: the client speaks {}.{}, this owner speaks 2.3 (major 2 only)",
            PROTOCOL_VERSION.major, PROTOCOL_VERSION.minor
        )
    );

    // A newer minor of our major is served.
    let (connecting, mut fake) = pair(ClientOptions::default());
    let (client, _) = tokio::join!(connecting, fake.handshake(1, 7));
    let client = client.expect("served");
    assert_eq!(
        client.server().protocol_version,
        ProtocolVersion { major: 1, minor: 7 }
    );
}

#[tokio::test]
async fn an_unreadable_answer_fails_its_call_or_if_unattributable_the_connection() {
    let (client, mut fake) = connected().await;
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":ID,"result":{}1{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    let (a, b, ()) = tokio::join!(
        client.call::<call::ReadEntries>(ReadParams {
            session_id: "a".into(),
            limits: None
        }),
        client.call::<call::ReadEntries>(ReadParams {
            session_id: "b".into(),
            limits: None
        }),
        async {
            let r1 = fake.next().await.expect("a request");
            let r2 = fake.next().await.expect("a request");
            let (first, second) = if r1["params"]["sessionId"] == "a" {
                (r1, r2)
            } else {
                (r2, r1)
            };
            // Too deep to parse, but its id is readable: only that call fails.
            fake.send(&deep.replace("ID", &first["id"].to_string()))
                .await;
            fake.answer(&second["id"], json!({"entries":[]})).await;
        }
    );
    assert!(
        matches!(
            a,
            Err(ClientError::BadAnswer {
                method: "session/readEntries",
                ..
            })
        ),
        "{a:?}"
    );
    assert_eq!(b.expect("answered").entries.len(), 0);
    assert!(!client.is_gone());

    // A line nobody can attribute ends the connection rather than leave a call waiting.
    let (c, ()) = tokio::join!(
        client.call::<call::ReadEntries>(ReadParams {
            session_id: "c".into(),
            limits: None
        }),
        async {
            fake.next().await.expect("a request");
            fake.send("\u{1}garbage").await;
        }
    );
    let e = c.expect_err("gone");
    assert!(e.is_owner_gone(), "{e:?}");
    assert!(e.to_string().contains("unreadable line"), "{e}");
}

#[tokio::test]
async fn a_request_the_owner_would_refuse_unread_is_refused_before_sending() {
    let (client, mut fake) = connected().await;
    let mut v = json!(1);
    for _ in 0..80 {
        v = json!([v]);
    }
    let e = client
        .call::<call::AppendCustomEntry>(
            session_client::session_protocol::AppendCustomEntryParams {
                session_id: "s".into(),
                custom_type: "x".into(),
                data: Some(v),
                durability: None,
            },
        )
        .await
        .expect_err("too deep");
    assert_eq!(e.code(), Some(code::TOO_DEEP), "{e:?}");
    // Nothing was written: the next line the owner reads is the next call's.
    let (ok, ()) = tokio::join!(client.list_all(), async {
        let r = fake.next().await.expect("a request");
        assert_eq!(r["method"], "store/listAll");
        fake.answer(&r["id"], json!({"sessions":[]})).await;
    });
    ok.expect("listed");
}

#[tokio::test]
async fn shutdown_lets_the_calls_already_sent_finish_and_waits_for_the_owner() {
    let (client, mut fake) = connected().await;
    let other = client.clone();
    let pending = tokio::spawn(async move { other.list_all().await });
    let r = fake.next().await.expect("the pending request");
    let (done, ()) = tokio::join!(client.clone().shutdown(), async {
        // Our side ends after the request already sent…
        assert!(fake.next().await.is_none(), "end of the client's side");
        // …and the owner still answers it before closing its own.
        fake.answer(&r["id"], json!({"sessions":[]})).await;
        drop(fake);
    });
    done.expect("shut down");
    assert_eq!(pending.await.expect("joined").expect("answered").len(), 0);
    let e = client.list_all().await.expect_err("closed");
    assert!(e.is_owner_gone(), "{e:?}");
}

#[tokio::test]
async fn stray_answers_are_ignored_and_a_full_notification_queue_never_stalls_answers() {
    let mut options = ClientOptions::default();
    options.notification_queue = 2;
    let (connecting, mut fake) = pair(options);
    let (client, _) = tokio::join!(connecting, fake.handshake(1, 0));
    let client = client.expect("initialized");
    let mut notes = client.notifications().expect("receiver");
    let (listed, ()) = tokio::join!(client.list_all(), async {
        let r = fake.next().await.expect("a request");
        // Answers to ids nobody waits for: an unknown number, a string, a duplicate.
        fake.answer(&json!(999_999), json!({"sessions":[1]})).await;
        fake.answer(&json!("x"), json!({"sessions":[2]})).await;
        for i in 0..5 {
            fake.send(&json!({"jsonrpc":"2.0","method":"store/listProgress","params":{"requestId":r["id"],"loaded":i,"total":5}}).to_string()).await;
        }
        fake.answer(&r["id"], json!({"sessions":[]})).await;
        fake.answer(&r["id"], json!({"sessions":[3]})).await;
    });
    assert_eq!(
        listed.expect("its own answer"),
        Vec::<session_protocol::ListedSession>::new()
    );
    let mut kept = 0;
    while notes.try_recv().is_ok() {
        kept += 1;
    }
    assert_eq!((kept, client.missed_notifications()), (2, 3));
    // The connection goes on.
    let (again, ()) = tokio::join!(client.list_all(), async {
        let r = fake.next().await.expect("a request");
        fake.answer(&r["id"], json!({"sessions":[]})).await;
    });
    again.expect("answered");
}

#[tokio::test]
async fn a_call_given_up_leaves_nothing_waiting_and_its_late_answer_is_dropped() {
    let (client, mut fake) = connected().await;
    let c = client.clone();
    let abandoned = tokio::spawn(async move { c.list_all().await });
    let r = fake.next().await.expect("a request");
    assert_eq!(client.in_flight(), 1);
    abandoned.abort();
    assert!(abandoned.await.expect_err("aborted").is_cancelled());
    assert_eq!(client.in_flight(), 0);
    // Its answer comes after all: nobody waits for it, and the next call gets its own.
    fake.answer(&r["id"], json!({"sessions":[1]})).await;
    let (next, ()) = tokio::join!(client.list_all(), async {
        let r = fake.next().await.expect("a request");
        fake.answer(&r["id"], json!({"sessions":[]})).await;
    });
    assert_eq!(
        next.expect("answered"),
        Vec::<session_protocol::ListedSession>::new()
    );
}
