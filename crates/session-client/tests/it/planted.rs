//! What someone planted where the owner's socket directory goes: the client refuses it
//! with an error naming it, and never blocks on it.

use std::time::Duration;

use session_client::{Client, ClientError};

#[tokio::test]
async fn a_fifo_planted_as_the_socket_directory_is_refused_without_blocking() {
    let home = tempfile::tempdir().expect("tempdir");
    let planted = home.path().join("owner");
    let made = std::process::Command::new("mkfifo")
        .arg(&planted)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let e = tokio::time::timeout(Duration::from_secs(10), Client::connect(home.path()))
        .await
        .expect("refused at once, not blocked on the FIFO")
        .expect_err("no owner there");
    let ClientError::Connect { source, .. } = &e else {
        panic!("a connection error: {e:?}");
    };
    assert_eq!(source.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("not a directory"), "{e}");
}
