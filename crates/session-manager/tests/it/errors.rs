//! Typed errors end to end: each failure a caller acts on is provoked through the
//! manager's API and matched by variant, and its message names the journal once.

use std::path::{Path, PathBuf};

use session_journal::OpenError as J;
use session_manager::{AppendError, OpenError, ReadError, ReadLimits, Store};

use crate::support::{store, user};

/// A session with three messages, closed; its journal.
fn closed_session(store: &Store) -> PathBuf {
    let mut s = store.create("/w").expect("create");
    for t in ["one", "two", "three"] {
        s.append_message(user(t)).expect("append");
    }
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    path
}

/// `error`'s message and its causes, each said once (as `bcs` prints them).
fn line(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

#[track_caller]
fn names_once(error: &dyn std::error::Error, path: &Path) {
    let text = line(error);
    let shown = path.display().to_string();
    assert_eq!(text.matches(&shown).count(), 1, "{text}");
}

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/campaign/malformed")
        .join(name)
}

#[test]
fn every_failure_a_caller_acts_on_has_its_own_variant() {
    let (_d, store) = store();
    let sessions = store.layout().sessions_dir().to_path_buf();
    std::fs::create_dir_all(&sessions).expect("sessions dir");

    // Written by a newer format version: found and supported versions.
    let future = sessions.join("future.jsonl");
    std::fs::copy(corpus("journal-future-version.jsonl"), &future).expect("copy");
    let e = store.open(&future).expect_err("future");
    match &e {
        OpenError::Journal(J::UnsupportedVersion {
            found, supported, ..
        }) => assert!(!found.is_empty() && !supported.is_empty(), "{e}"),
        other => panic!("unsupported version: {other:?}"),
    }
    names_once(&e, &future);

    // Not a journal at all, and legacy JSONL (which must be imported).
    let junk = sessions.join("junk.jsonl");
    std::fs::copy(corpus("random-bytes.jsonl"), &junk).expect("copy");
    let e = store.open(&junk).expect_err("junk");
    assert!(
        matches!(e, OpenError::Journal(J::NotAJournal { .. })),
        "{e:?}"
    );
    names_once(&e, &junk);
    let legacy = sessions.join("legacy.jsonl");
    std::fs::write(
        &legacy,
        "{\"type\":\"session\",\"version\":3,\"id\":\"l\"}\n",
    )
    .expect("w");
    let e = store.open(&legacy).expect_err("legacy");
    assert!(matches!(e, OpenError::LegacyJsonl { .. }), "{e:?}");
    names_once(&e, &legacy);

    // Corruption of acknowledged data: offset and the later frame proving it durable.
    let path = closed_session(&store);
    let mut bytes = std::fs::read(&path).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&path, &bytes).expect("write");
    let _ = std::fs::remove_file(session_index::sidecar_path(&path));
    let e = store.open(&path).expect_err("corrupt");
    match &e {
        OpenError::Journal(J::Corrupt {
            offset, evidence, ..
        }) => {
            assert!(offset.0 > 0 && offset.0 <= middle as u64, "{e}");
            assert!(evidence.is_some(), "{e}");
        }
        other => panic!("corrupt: {other:?}"),
    }
    names_once(&e, &path);

    // A torn tail is repaired by open, and reported.
    let path = closed_session(&store);
    let len = std::fs::metadata(&path).expect("meta").len();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(&mut f, &[0x11; 50]).expect("tear");
    drop(f);
    let s = store.open(&path).expect("a torn tail is repaired");
    let repair = s.repaired_tail().expect("reported");
    assert_eq!((repair.offset, repair.bytes), (len, 50));

    // Owned by another handle: the holder.
    let e = store.open(&path).expect_err("owned");
    match &e {
        OpenError::Locked { holder, .. } => assert_eq!(holder.pid, Some(std::process::id())),
        other => panic!("locked: {other:?}"),
    }
    names_once(&e, &path);

    // A read over its limit: the session, the limit and the need.
    let tight = ReadLimits {
        max_source_entries: 1,
        ..ReadLimits::default()
    };
    let e = s.read_entries(tight).expect_err("limit");
    match &e {
        ReadError::LimitExceeded {
            session, needed, ..
        } => {
            assert_eq!(Path::new(session), path.as_path());
            assert_eq!(*needed, 3);
        }
        other => panic!("limit: {other:?}"),
    }
    names_once(&e, &path);

    // An entry that does not exist: the session and the id.
    let e = s
        .read_entry("nope", ReadLimits::default())
        .expect_err("missing");
    assert!(
        matches!(&e, ReadError::EntryNotFound { session, id } if id == "nope" && Path::new(session) == path),
        "{e:?}"
    );
    names_once(&e, &path);
    drop(s);
    let mut s = store.open(&path).expect("open");
    let e = s
        .append_label_change("nope", Some("x"))
        .expect_err("missing target");
    assert!(
        matches!(&e, AppendError::EntryNotFound { id, .. } if id == "nope"),
        "{e:?}"
    );
    names_once(&e, &path);
}
