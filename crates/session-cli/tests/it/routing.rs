//! `bcs` commands that change the store go through a running owner, so the owner's
//! store followers (the agents view) see them; with no owner they use the files.
//! And `bcs`'s calls are bounded in time: an owner that accepts and never answers
//! fails a command instead of hanging it.

use std::process::Stdio;
use std::time::Duration;

use session_client::session_protocol::{
    Notification, StoreChange, StoreChangedParams, StoreFollowParams, call,
};
use session_client::{Client, ClientOptions, Notice};

use crate::support::{Bcs, Serving, bin, fixtures};

/// Bounds every wait: a change that is never announced fails the test.
const DEADLINE: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The next `store/changed`, within the deadline.
fn next_change(
    rt: &tokio::runtime::Runtime,
    rx: &mut tokio::sync::mpsc::Receiver<Notice>,
) -> StoreChangedParams {
    rt.block_on(async {
        loop {
            let n = tokio::time::timeout(DEADLINE, rx.recv())
                .await
                .expect("announced")
                .expect("the connection is up");
            if let Notice::Known(Notification::StoreChanged(c)) = n {
                return c;
            }
        }
    })
}

#[test]
fn bcs_new_import_rename_and_rm_through_the_owner_are_announced_to_store_followers() {
    let bcs = Bcs::new();
    let _owner = Serving::start(&bcs);
    let rt = runtime();
    let follower = rt
        .block_on(Client::connect_with(
            bcs.home(),
            ClientOptions::default().with_bcs(bin()),
        ))
        .expect("connect");
    let mut rx = follower.notifications().expect("notifications");
    rt.block_on(follower.call::<call::StoreFollow>(StoreFollowParams {}))
        .expect("follow the store");

    let id = "0197a000-0000-7000-8000-00000000000a";
    let run = bcs.run(&["new", "--cwd", "/w", "--id", id]);
    assert_eq!(run.ok().trim(), id);
    // Refused as without an owner.
    let err = bcs.run(&["new", "--id", "../x"]).fails(1).to_owned();
    assert!(err.starts_with("bcs: invalid session id \"../x\""), "{err}");
    let c = next_change(&rt, &mut rx);
    assert_eq!(c.session_id, id);
    assert_eq!(
        c.change,
        StoreChange::Created {
            cwd: Some("/w".to_owned())
        }
    );
    assert!(
        c.session_file.ends_with(&format!("sessions/{id}.jsonl")),
        "{c:?}"
    );

    // An import: announced as created; printed as without an owner (counts only).
    let source = bcs.home().join("sources/v3-control.jsonl");
    std::fs::create_dir_all(source.parent().expect("a directory")).expect("mkdir");
    std::fs::copy(fixtures().join("legacy/v3-control.jsonl"), &source).expect("copy");
    let run = bcs.run(&["import", "--json", source.to_str().expect("utf-8")]);
    let v: serde_json::Value = serde_json::from_str(run.ok().trim()).expect("json");
    let imported = v["sessionId"].as_str().expect("an id").to_owned();
    assert_eq!(v["alreadyImported"], false, "{v}");
    let c = next_change(&rt, &mut rx);
    assert_eq!(c.session_id, imported);
    assert_eq!(c.change, StoreChange::Created { cwd: None });
    // Imported again: nothing new, nothing announced (the rename below comes next).
    let run = bcs.run(&["import", source.to_str().expect("utf-8")]);
    assert!(run.ok().starts_with("already imported"), "{}", run.stdout);

    // A rename is an append (already through the owner).
    bcs.run_stdin(
        &["append", id],
        "{\"type\":\"session_info\",\"name\":\"renamed\"}\n",
    )
    .ok();
    let c = next_change(&rt, &mut rx);
    assert_eq!(c.session_id, id);
    assert_eq!(
        c.change,
        StoreChange::Renamed {
            name: Some("renamed".to_owned())
        }
    );

    let run = bcs.run(&["rm", id]);
    assert!(
        run.ok().starts_with(&format!("removed {id}")),
        "{}",
        run.stdout
    );
    let c = next_change(&rt, &mut rx);
    assert_eq!(
        (c.session_id.as_str(), c.change),
        (id, StoreChange::Deleted)
    );
    assert!(!bcs.sessions().join(format!("{id}.jsonl")).exists());

    // A sessions directory the owner does not serve: the files, not the owner.
    let other = bcs.home().join("other");
    let run = bcs.run(&[
        "--session-dir",
        other.to_str().expect("utf-8"),
        "new",
        "--cwd",
        "/o",
    ]);
    let elsewhere = run.ok().trim().to_owned();
    assert!(other.join(format!("{elsewhere}.jsonl")).exists());
    assert!(!bcs.sessions().join(format!("{elsewhere}.jsonl")).exists());
    let run = bcs.run(&[
        "--session-dir",
        other.to_str().expect("utf-8"),
        "rm",
        &elsewhere,
    ]);
    run.ok();
    // The owner's followers heard nothing of it: the next change is ours again.
    bcs.run(&["rm", &imported]).ok();
    let c = next_change(&rt, &mut rx);
    assert_eq!(
        (c.session_id.as_str(), c.change),
        (imported.as_str(), StoreChange::Deleted)
    );
}

#[test]
fn bcs_gives_up_on_an_owner_that_accepts_and_never_answers() {
    use std::os::unix::fs::PermissionsExt;
    let bcs = Bcs::new();
    let id = bcs.run(&["new", "--cwd", "/w"]).ok().trim().to_owned();
    let dir = bcs.home().join("owner");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    // Bound and listening, never accepted from or answered: the kernel completes
    // the connections.
    let _mute = std::os::unix::net::UnixListener::bind(dir.join("owner.sock")).expect("bind");
    let run = bcs
        .cmd(&["append", &id])
        .env("BASE_CONTEXT_OWNER_TIMEOUT", "300ms")
        .stdin(Stdio::null())
        .output()
        .expect("run bcs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("initialize: the owner did not answer within 300ms"),
        "{stderr}"
    );
    let run = bcs
        .cmd(&["new"])
        .env("BASE_CONTEXT_OWNER_TIMEOUT", "soon")
        .output()
        .expect("run bcs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("BASE_CONTEXT_OWNER_TIMEOUT"), "{stderr}");
}
