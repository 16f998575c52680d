//! The Unix socket: a private directory, a private socket, two clients of one process.

use std::os::unix::fs::PermissionsExt;

use session_owner::socket;
use session_protocol::*;

use crate::support::*;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(p)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777
}

async fn two_clients(home: &std::path::Path) {
    let owner = owner(home);
    let bound = socket::bind(home).await.expect("bind");
    assert_eq!(mode(&socket::socket_dir(home)), 0o700);
    assert_eq!(mode(bound.path()), 0o600);
    tokio::spawn(socket::serve(owner.clone(), bound));

    let (r, w) = socket::connect(home).await.expect("connect").into_split();
    let mut a = Client::over(r, w);
    let (r, w) = socket::connect(home).await.expect("connect").into_split();
    let mut b = Client::over(r, w);
    a.initialize().await;
    b.initialize().await;
    let s = a.create().await;
    b.open(&s.session_id).await;
    a.call::<call::AppendMessage>(append(&s.session_id, "from a", None))
        .await
        .expect("append");
    b.call::<call::AppendMessage>(append(&s.session_id, "from b", None))
        .await
        .expect("append");
    let branch = a.branch(&s.session_id).await;
    assert_eq!(
        branch.entries.iter().map(text_of).collect::<Vec<_>>(),
        ["from a", "from b"]
    );

    // A second owner on the same home is refused while this one answers.
    let e = socket::bind(home).await.expect_err("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_share_a_session_over_the_socket() {
    let home = tempfile::tempdir().expect("tempdir");
    two_clients(home.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_longer_than_a_socket_address_works() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("h".repeat(60)).join("o".repeat(60));
    assert!(socket::socket_path(&home).as_os_str().len() > 108);
    two_clients(&home).await;
}

#[tokio::test]
async fn a_stale_socket_is_replaced_and_a_loose_directory_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path();
    {
        let bound = socket::bind(home).await.expect("bind");
        drop(bound); // an owner that died: its socket file stays
    }
    assert!(socket::socket_path(home).exists());
    let bound = socket::bind(home)
        .await
        .expect("the stale socket is replaced");
    drop(bound);

    std::fs::set_permissions(
        socket::socket_dir(home),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    let e = socket::bind(home).await.expect_err("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
    assert!(e.to_string().contains("mode 0700"), "{e}");
}
