//! The per-call timeout (`ClientOptions::call_timeout`): an owner that accepts a
//! connection and never answers fails the call with a typed error naming the method
//! and the time, instead of leaving it waiting forever.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::json;
use session_client::session_protocol::{ReadParams, call};
use session_client::{Client, ClientError, ClientOptions, socket};

use crate::fake;

/// A socket at the home's owner path that accepts every connection and never reads
/// or writes: an owner wedged after `accept`.
fn mute_owner(home: &std::path::Path) -> tokio::task::JoinHandle<()> {
    let dir = socket::socket_dir(home);
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let listener = tokio::net::UnixListener::bind(socket::socket_path(home)).expect("bind");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream); // kept open, never answered
        }
    })
}

#[tokio::test]
async fn an_owner_that_accepts_and_never_answers_times_the_handshake_out() {
    let home = tempfile::tempdir().expect("tempdir");
    let _owner = mute_owner(home.path());
    let after = Duration::from_millis(200);
    let options = ClientOptions::default().with_call_timeout(Some(after));
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        Client::connect_with(home.path(), options.clone()),
    )
    .await
    .expect("the client gives up by itself")
    .expect_err("no answer");
    let ClientError::Timeout {
        method,
        after: waited,
    } = &e
    else {
        panic!("a timeout: {e:?}");
    };
    assert_eq!(*method, "initialize");
    assert_eq!(*waited, after);
    assert_eq!(
        e.to_string(),
        "initialize: the owner did not answer within 200ms"
    );
    assert!(!e.is_owner_gone() && !e.is_retryable());

    // Starting an owner on demand does not hide it: the mute one is there.
    let e = tokio::time::timeout(
        Duration::from_secs(60),
        Client::connect_or_start_with(home.path(), options.with_bcs(home.path().join("no-bcs"))),
    )
    .await
    .expect("the client gives up by itself")
    .expect_err("no answer");
    assert!(
        matches!(
            e,
            ClientError::Timeout {
                method: "initialize",
                ..
            }
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_call_left_unanswered_times_out_and_the_connection_goes_on() {
    let (client, fake) =
        fake::pair(ClientOptions::default().with_call_timeout(Some(Duration::from_millis(100))));
    let mut fake = fake;
    let (client, _) = tokio::join!(client, fake.handshake(1, 0));
    let client = client.expect("initialized");
    assert_eq!(client.call_timeout(), Some(Duration::from_millis(100)));

    let read = || {
        client.call::<call::ReadTree>(ReadParams {
            session_id: "s1".into(),
            limits: None,
        })
    };
    let (answer, req) = tokio::join!(read(), fake.next());
    let e = answer.expect_err("never answered");
    assert!(
        matches!(e, ClientError::Timeout { method: "session/readTree", after } if after == Duration::from_millis(100)),
        "{e:?}"
    );
    assert!(e.to_string().contains("session/readTree"), "{e}");
    assert!(e.to_string().contains("100ms"), "{e}");
    assert_eq!(client.in_flight(), 0, "the timed-out call leaves no slot");
    assert!(!client.is_gone());

    // Its late answer is dropped; the next call is answered as usual.
    let late = req.expect("the request was sent");
    fake.answer(&late["id"], json!({"nodes":[],"roots":[]}))
        .await;
    let (answer, req) = tokio::join!(read(), async {
        let req = fake.next().await.expect("the next request");
        fake.answer(&req["id"], json!({"nodes":[],"roots":[]}))
            .await;
        req
    });
    assert_ne!(req["id"], late["id"]);
    assert!(answer.expect("answered").nodes.is_empty());

    // A clone may wait longer (or forever) on the same connection.
    let patient = client.clone().with_call_timeout(None);
    assert_eq!(patient.call_timeout(), None);
    assert_eq!(client.call_timeout(), Some(Duration::from_millis(100)));
}

#[test]
fn calls_wait_without_a_bound_by_default() {
    assert_eq!(ClientOptions::default().call_timeout, None);
}
