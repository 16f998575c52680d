//! The Unix socket: a private directory, a private socket, two clients of one process.

use std::os::unix::fs::PermissionsExt;

use std::time::Duration;

use session_owner::{Owner, OwnerOptions, socket};
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
        drop(bound); // an owner that died: its socket file stays, its lock goes
    }
    assert!(socket::socket_path(home).exists());
    assert_eq!(mode(&socket::lock_path(home)), 0o600);
    let bound = socket::bind(home)
        .await
        .expect("the stale socket is replaced");
    // While the lock is held, a second owner is refused before it touches the socket,
    // even when nothing answers on it.
    let e = socket::bind(home).await.expect_err("the lock is held");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    assert!(
        e.to_string()
            .contains(&format!("another owner (pid {})", std::process::id())),
        "{e}"
    );
    assert!(
        socket::socket_path(home).exists(),
        "the loser removed nothing"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_eight_owners_started_at_once_exactly_one_serves() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().to_path_buf();
    let tries: Vec<_> = (0..8)
        .map(|_| {
            let home = home.clone();
            tokio::spawn(async move { socket::bind(&home).await })
        })
        .collect();
    let mut bound = Vec::new();
    for t in tries {
        match t.await.expect("a bind task") {
            Ok(b) => bound.push(b),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}"),
        }
    }
    assert_eq!(bound.len(), 1, "exactly one owner");
    let owner = owner(&home);
    tokio::spawn(socket::serve(owner, bound.remove(0)));
    for _ in 0..8 {
        let (r, w) = socket::connect(&home).await.expect("connect").into_split();
        Client::over(r, w).initialize().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_owner_removes_its_socket_and_returns() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path();
    let options = OwnerOptions::default().with_idle_timeout(Some(Duration::from_millis(50)));
    let owner = Owner::new(store(home), options);
    let bound = socket::bind(home).await.expect("bind");
    // Connected before the owner serves (the listener queues it), so the owner is
    // never idle before this client is served: no race with the short timeout.
    let (r, w) = socket::connect(home).await.expect("connect").into_split();
    let serving = tokio::spawn(socket::serve(owner.clone(), bound));

    // While a client holds a session open, the owner stays.
    let mut c = Client::over(r, w);
    c.initialize().await;
    let s = c.create().await;
    c.call::<call::AppendMessage>(append(&s.session_id, "kept", None))
        .await
        .expect("append");
    assert!(!serving.is_finished());
    drop(c); // the client goes: its session is closed, the idle clock starts

    tokio::time::timeout(Duration::from_secs(60), serving)
        .await
        .expect("the owner exits when idle")
        .expect("the serve task")
        .expect("serve ends cleanly");
    assert!(!socket::socket_path(home).exists(), "the socket is removed");
    assert_eq!(owner.open_sessions().await, 0);
    // Its lock is free: the next owner starts.
    drop(socket::bind(home).await.expect("a new owner"));
    // The session was closed cleanly: its entry reads back.
    let reopened = store(home)
        .open(std::path::Path::new(&s.session_file))
        .expect("reopen");
    assert_eq!(
        reopened
            .read_entries(Default::default())
            .expect("read")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_planted_link_as_the_lock_is_not_followed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let dir = socket::socket_dir(&home);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let target = tmp.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, socket::lock_path(&home)).expect("symlink");
    let e = socket::bind(&home).await.expect_err("a link is refused");
    assert!(e.to_string().contains("owner.lock"), "{e}");
    assert!(!target.exists(), "nothing created through the link");
    assert!(
        !socket::socket_path(&home).exists(),
        "no socket without the lock"
    );
}
