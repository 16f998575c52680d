//! The store's static methods: create, open, continue, fork, read-only views,
//! listing, import and delete.

use std::sync::Arc;

use session_index::SessionInfo;
use session_journal::vfs::StdVfs;
use session_manager::{ListObserver, NewSessionOptions, OpenError, ReadLimits, SafeSessionId};
use session_testkit::CountingVfs;

use crate::support::{assistant, assistant_from, store, store_at, user};

#[test]
fn create_writes_the_header_durably_at_once() {
    let (_d, store) = store();
    let s = store.create("/work/p").expect("create");
    let path = s.session_file().expect("persisted").to_path_buf();
    assert!(s.is_persisted());
    assert!(s.supports_captured_history_reads());
    assert_eq!(s.get_leaf_id(), None);
    assert_eq!(
        path,
        store
            .layout()
            .sessions_dir()
            .join(format!("{}.jsonl", s.session_id()))
    );
    assert_eq!(s.session_dir(), store.layout().sessions_dir());
    // UUIDv7 by default.
    let id = uuid::Uuid::parse_str(s.session_id()).expect("uuid");
    assert_eq!(id.get_version_num(), 7);
    let header = s.header().clone();
    assert_eq!(header.version, Some(3));
    assert_eq!(s.cwd(), "/work/p");
    // Readable by others right away, before any append.
    let view = store.open_read_only(&path).expect("read-only view");
    assert_eq!(view.header(), &header);
    assert!(view.get_entries().is_empty());
    drop(s);
    let again = store.open(&path).expect("reopen");
    assert_eq!(again.header(), &header);
}

#[test]
fn a_second_owner_gets_the_lock_error_naming_the_holder() {
    let (_d, store) = store();
    let s = store.create("/w").expect("create");
    let path = s.session_file().expect("file").to_path_buf();
    let err = store.open(&path).expect_err("second owner");
    match &err {
        OpenError::Locked { holder, .. } => assert_eq!(holder.pid, Some(std::process::id())),
        other => panic!("expected Locked, got {other}"),
    }
    assert!(
        err.to_string()
            .contains(&format!("owned by pid {}", std::process::id())),
        "{err}"
    );
    let del = store.delete(&path).expect_err("delete while owned");
    assert!(matches!(del, OpenError::Locked { .. }));
    assert!(path.exists());
    drop(s);
    store.open(&path).expect("free again");
}

#[test]
fn legacy_jsonl_is_refused_with_a_hint_to_import() {
    let (d, store) = store();
    let p = d.path().join("old.jsonl");
    std::fs::write(&p, "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n")
        .expect("write");
    let err = store.open(&p).expect_err("legacy");
    assert!(matches!(err, OpenError::LegacyJsonl { .. }), "{err}");
    assert!(err.to_string().contains("import"), "{err}");
    assert!(matches!(
        store.open_read_only(&p),
        Err(OpenError::LegacyJsonl { .. })
    ));
    assert!(matches!(
        store.fork_from(&p, "/w"),
        Err(OpenError::LegacyJsonl { .. })
    ));
    assert!(matches!(
        store.open(&d.path().join("missing.jsonl")),
        Err(OpenError::NotFound { .. })
    ));
}

#[test]
fn custom_ids_and_duplicates() {
    let (_d, store) = store();
    let s = store
        .create_with("/w", NewSessionOptions::with_id("my-session_1"))
        .expect("create");
    assert_eq!(s.session_id(), "my-session_1");
    assert_eq!(s.header().id.as_str(), "my-session_1");
    let err = store
        .create_with("/w", NewSessionOptions::with_id("my-session_1"))
        .expect_err("exists");
    assert!(matches!(err, OpenError::Exists { .. }), "{err}");
}

#[test]
fn delete_removes_journal_derived_files_and_artifacts() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.append_message(user("hi")).expect("append");
    let art = s.session_artifact_dir().expect("artifacts");
    std::fs::write(art.join("blob"), b"x").expect("artifact");
    let path = s.session_file().expect("file").to_path_buf();
    drop(s);
    assert_eq!(store.list_all(&mut ()).expect("list").len(), 1);
    let report = store.delete(&path).expect("delete");
    let lock = session_journal::lock::lock_path(&path);
    assert_eq!(report.removed.first(), Some(&path));
    assert_eq!(report.removed.last(), Some(&lock));
    for p in [&path, &session_index::sidecar_path(&path), &art, &lock] {
        assert!(!p.exists(), "{} should be gone", p.display());
    }
    assert!(store.list_all(&mut ()).expect("list").is_empty());
    assert!(matches!(
        store.delete(&path),
        Err(OpenError::NotFound { .. })
    ));
}

#[derive(Default)]
struct Recorder {
    progress: Vec<(usize, usize)>,
    sessions: Vec<String>,
}

impl ListObserver for Recorder {
    fn on_progress(&mut self, loaded: usize, total: usize) {
        self.progress.push((loaded, total));
    }
    fn on_session(&mut self, s: &SessionInfo) {
        self.sessions.push(s.summary.first_message.clone());
    }
}

#[test]
fn list_filters_by_cwd_and_reports_progress_and_sessions() {
    let (_d, store) = store();
    for (cwd, text) in [("/a", "one"), ("/b", "two"), ("/a", "three")] {
        let mut s = store.create(cwd).expect("create");
        s.append_message(user(text)).expect("user");
        s.append_message(assistant("ok")).expect("assistant");
    }
    let mut rec = Recorder::default();
    let a = store.list("/a", &mut rec).expect("list");
    assert_eq!(a.len(), 2);
    assert!(a.iter().all(|i| i.summary.cwd == "/a"));
    assert_eq!(rec.progress, vec![(0, 2), (1, 2), (2, 2)]);
    assert_eq!(rec.sessions.len(), 2);
    let all = store.list_all(&mut ()).expect("all");
    assert_eq!(all.len(), 3);
    assert_eq!(all.iter().map(|i| i.summary.message_count).sum::<u64>(), 6);
}

#[test]
fn continue_recent_picks_the_latest_activity_from_summaries_only() {
    let dir = tempfile::tempdir().expect("dir");
    let counting = Arc::new(CountingVfs::new(Arc::new(StdVfs)));
    let store = store_at(dir.path(), 3).with_vfs(counting.clone());
    let mut paths = Vec::new();
    // Created in this order, but the second has the latest activity.
    for (cwd, text, ts) in [
        ("/p", "old", 10),
        ("/p", "newest", 30),
        ("/p", "middle", 20),
        ("/q", "other", 40),
    ] {
        let mut s = store.create(cwd).expect("create");
        s.append_message(user(text)).expect("user");
        s.append_message(assistant_from(text, "p", "m", ts))
            .expect("assistant");
        paths.push(s.session_file().expect("file").to_path_buf());
    }
    // Warm the catalog, then count what continue_recent's choice reads.
    store.list_all(&mut ()).expect("warm");
    counting.reset();
    let recent = store.list("/p", &mut ()).expect("list");
    assert_eq!(recent[0].path, paths[1]);
    // A catalog record written within a second of its journal's last change (racy)
    // is checked against the journal (header and last frame); no journal is read
    // through to choose.
    assert!(
        counting.bytes_read_matching(".jsonl") <= 4 * 16 * 1024,
        "journals read through to choose"
    );
    assert!(counting.opens_matching(".jsonl") <= 4);
    counting.reset();
    let s = store.continue_recent("/p").expect("continue");
    assert_eq!(s.session_file(), Some(paths[1].as_path()));
    // Only the chosen journal was read (to open it); of the others only what checks
    // their catalog records.
    for (i, p) in paths.iter().enumerate() {
        if i != 1 {
            assert!(
                counting.bytes_read(p) <= 16 * 1024,
                "{} was read",
                p.display()
            );
        }
    }
    assert!(counting.bytes_read(&paths[1]) > 0);
    drop(s);
    // No session for this cwd: a new one.
    let fresh = store.continue_recent("/none").expect("create");
    assert!(
        !paths
            .iter()
            .any(|p| Some(p.as_path()) == fresh.session_file())
    );
    assert_eq!(fresh.cwd(), "/none");
}

/// Two agents continuing in one directory: the second gets the newest session nobody
/// owns (or a new one), never the first one's lock error.
#[test]
fn continue_recent_skips_sessions_someone_owns() {
    let (_d, store) = store();
    let older = store.create("/p").expect("create");
    let older_path = older.session_file().expect("file").to_path_buf();
    older.close().expect("close");
    let mut newer = store.create("/p").expect("create");
    newer.append_message(user("latest")).expect("append");
    let newer_path = newer.session_file().expect("file").to_path_buf();
    // The first agent holds the newest session.
    let second = store.continue_recent("/p").expect("second agent");
    assert_eq!(second.session_file(), Some(older_path.as_path()));
    // A third agent: both are owned now, so a new session.
    let third = store.continue_recent("/p").expect("third agent");
    let third_path = third.session_file().expect("file");
    assert!(third_path != older_path && third_path != newer_path);
    drop((newer, second, third));
}

#[test]
fn fork_from_copies_every_entry_and_records_the_parent() {
    let (_d, store) = store();
    let mut s = store.create("/src").expect("create");
    let a = s.append_message(user("q")).expect("user");
    s.append_message(assistant("r")).expect("assistant");
    s.append_label_change(a.as_str(), Some("L")).expect("label");
    let src = s.session_file().expect("file").to_path_buf();
    let before = s.read_entries(ReadLimits::default()).expect("entries");
    // Works while the source is owned: the source is only read.
    let f = store.fork_from(&src, "/dst").expect("fork");
    assert_eq!(f.cwd(), "/dst");
    assert_eq!(
        f.header().parent_session.as_deref(),
        Some(src.to_string_lossy().as_ref())
    );
    assert_ne!(f.session_id(), s.session_id());
    assert_eq!(
        f.read_entries(ReadLimits::default()).expect("entries"),
        before
    );
    assert_eq!(
        f.get_leaf_id(),
        before
            .last()
            .and_then(|e| e.id())
            .map(session_types::EntryId::new)
            .as_ref()
    );
    assert_eq!(
        f.read_label(a.as_str(), ReadLimits::default())
            .expect("label")
            .as_deref(),
        Some("L")
    );
}

/// Resume costs what the context needs: with a fresh index the writer verifies only
/// the bytes after the index's witness, and the context loads only what it shows.
#[test]
fn resume_reads_what_the_context_needs_not_the_journal() {
    let dir = tempfile::tempdir().expect("dir");
    let counting = Arc::new(CountingVfs::new(Arc::new(StdVfs)));
    let store = store_at(dir.path(), 5).with_vfs(counting.clone());
    let mut s = store.create("/p").expect("create");
    s.set_durability(session_journal::Durability::Buffered);
    let big = "x".repeat(4000);
    for i in 0..1500 {
        s.append_message(user(&format!("{i} {big}"))).expect("user");
        s.append_message(assistant(&format!("{i} {big}")))
            .expect("assistant");
        if i == 1480 {
            // A compaction keeps the context small: summary + the last ~40 messages.
            let first_kept = s.get_leaf_id().expect("leaf").clone();
            s.append_compaction("summary", first_kept.as_str(), 1000, None, None)
                .expect("compaction");
        }
    }
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    let journal_len = std::fs::metadata(&path).expect("journal").len();

    // First open after close: the sidecar is fresh.
    counting.reset();
    let s = store.open(&path).expect("open");
    let ctx = s.build_session_context().expect("context");
    assert_eq!(ctx.messages.len(), 1 + 1 + 2 * 19);
    let read = counting.bytes_read_matching(".jsonl");
    assert!(
        read < journal_len / 20,
        "resume read {read} of {journal_len} journal bytes"
    );
}

/// `delete` removes sessions only: legacy JSONL and other files in the sessions
/// directory are refused and kept; an empty file (what a `create` that crashed before
/// writing its header left, before creation published complete journals) is removable.
#[test]
fn delete_refuses_files_that_are_not_journals() {
    let (_d, store) = store();
    let dir = store.layout().sessions_dir().to_path_buf();
    std::fs::create_dir_all(&dir).expect("dir");
    let legacy = dir.join("legacy.jsonl");
    std::fs::write(
        &legacy,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
    )
    .expect("write");
    let junk = dir.join("junk.jsonl");
    std::fs::write(&junk, [0x00u8, 0xff, 0x13, 0x37]).expect("write");
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, b"").expect("write");
    assert!(matches!(
        store.delete(&legacy),
        Err(OpenError::LegacyJsonl { .. })
    ));
    let err = store.delete(&junk).expect_err("junk refused");
    assert!(matches!(err, OpenError::NotAJournal { .. }), "{err}");
    assert!(err.to_string().contains("refusing to delete"), "{err}");
    assert!(legacy.exists() && junk.exists());
    assert!(!session_journal::lock::lock_path(&legacy).exists());
    store.delete(&empty).expect("an empty file holds nothing");
    assert!(!empty.exists());
}

/// `delete` touches only `<sessions>/<id>.jsonl` of its own store: a journal of
/// another store, a file whose name is not a valid id (`...jsonl`, `..jsonl`) and a
/// symlink to a journal are refused, and nothing of anyone's is removed.
#[test]
fn delete_refuses_what_is_not_a_journal_of_this_store() {
    let (d, store) = store();
    let s = store.create("/w").expect("create");
    let path = s.session_file().expect("persisted").to_path_buf();
    let id = s.session_id().to_owned();
    s.close().expect("close");
    let artifacts = store
        .layout()
        .artifact_dir(&SafeSessionId::new(&id).expect("id"));
    std::fs::create_dir_all(&artifacts).expect("artifacts");
    std::fs::write(artifacts.join("keep"), b"x").expect("artifact");

    // Another store holding a journal of the same name.
    let other_root = d.path().join("other-home");
    let other = store_at(&other_root, 2);
    let o = other
        .create_with("/w", {
            let mut o = NewSessionOptions::default();
            o.id = Some(id.clone());
            o
        })
        .expect("other create");
    let other_path = o.session_file().expect("persisted").to_path_buf();
    o.close().expect("close");
    let err = store
        .delete(&other_path)
        .expect_err("foreign journal refused");
    assert!(matches!(err, OpenError::NotInStore { .. }), "{err}");
    assert!(other_path.exists() && path.exists() && artifacts.join("keep").exists());

    // Names that are not `<id>.jsonl`: `...jsonl` has the stem `..`.
    let sessions = store.layout().sessions_dir();
    for name in ["...jsonl", "..jsonl", ".hidden.jsonl", "x.txt"] {
        let p = sessions.join(name);
        std::fs::write(&p, b"").expect("write");
        let err = store.delete(&p).expect_err(name);
        assert!(matches!(err, OpenError::NotInStore { .. }), "{name}: {err}");
        assert!(p.exists(), "{name} kept");
    }
    assert!(artifacts.join("keep").exists(), "artifacts untouched");
    assert!(store.layout().root().join("session-artifacts").exists());

    // A symlink to the journal, under a valid id: refused without following it.
    #[cfg(unix)]
    {
        let link = sessions.join("alias.jsonl");
        std::os::unix::fs::symlink(&path, &link).expect("symlink");
        let err = store.delete(&link).expect_err("symlink refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert!(path.exists() && link.exists());
    }
    store.delete(&path).expect("the real one");
    assert!(!path.exists() && !artifacts.exists());
}

/// After `delete`, no derived file of the store holds the session's text: the
/// listing catalog's record is gone (and the catalog stays `0600`).
#[test]
fn delete_forgets_the_catalog_record() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.append_message(user("quagga-marker")).expect("append");
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    let mut other = store.create("/w").expect("create");
    other.append_message(user("kept")).expect("append");
    other.close().expect("close");
    assert_eq!(store.list("/w", &mut ()).expect("list").len(), 2);
    let catalog = store.layout().sessions_dir().join(".catalog");
    let holds = |p: &std::path::Path| {
        std::fs::read(p).is_ok_and(|c| c.windows(13).any(|w| w == b"quagga-marker"))
    };
    assert!(
        holds(&catalog),
        "the listing wrote a catalog holding the text"
    );
    store.delete(&path).expect("delete");
    assert!(
        !holds(&catalog),
        "the catalog still holds the deleted session's text"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&catalog)
            .expect("catalog")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(store.list("/w", &mut ()).expect("list").len(), 1);
}

/// `open_shared_sync`: a handle on the sessions directory's file system (created
/// when missing) on this machine; none through a link (each journal then syncs on
/// its own); an error that names the directory when it cannot be made.
#[cfg(target_os = "linux")]
#[test]
fn the_shared_sync_handle_is_on_the_sessions_directory_and_never_through_a_link() {
    let (d, store) = store();
    assert!(!store.layout().sessions_dir().exists());
    let shared = store.open_shared_sync().expect("opened");
    assert!(
        shared.is_some_and(|s| s.is_sharing()),
        "Linux 5.8+ on ext4 or tmpfs"
    );
    assert!(store.layout().sessions_dir().is_dir(), "created");

    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("dir");
    let linked_root = d.path().join("linked");
    std::fs::create_dir(&linked_root).expect("dir");
    std::os::unix::fs::symlink(&elsewhere, linked_root.join("sessions")).expect("link");
    let linked = store_at(&linked_root, 1);
    assert!(linked.open_shared_sync().expect("no error").is_none());

    let blocked_root = d.path().join("blocked");
    std::fs::create_dir(&blocked_root).expect("dir");
    std::fs::write(blocked_root.join("sessions"), b"a file").expect("file");
    let blocked = store_at(&blocked_root, 1);
    let e = blocked
        .open_shared_sync()
        .expect_err("a file where the directory goes");
    let sessions = blocked_root.join("sessions");
    assert!(
        e.to_string().contains(&sessions.display().to_string()),
        "{e}"
    );
}
