//! The writer lock.

use std::time::Instant;

use session_journal::lock::{lock_path, parse_holder};
use session_journal::{
    CreateOptions, JournalId, OpenError, OpenOptions, Reader, ReaderOptions, Writer,
};

use crate::process::ChildProc;
use crate::{DURABLE, Env, entry};

#[test]
fn a_second_writer_in_the_same_process_is_refused_and_readers_need_no_lock() {
    let env = Env::new();
    let w = env.create();
    match env.open() {
        Err(OpenError::Locked {
            holder,
            lock_path: lp,
            ..
        }) => {
            assert_eq!(holder.pid, Some(std::process::id()));
            assert_eq!(lp, lock_path(&env.path));
        }
        other => panic!("expected a lock error, got {other:?}"),
    }
    assert_eq!(env.reader().journal_id(), w.journal_id());
    drop(w);
    // Released on drop; the lock file stays.
    assert!(env.open().is_ok());
    assert!(env.fs.read_raw(&lock_path(&env.path)).is_some());
}

#[test]
fn lock_holder_records_parse_leniently() {
    let h = parse_holder(b"pid=42\nhost=box\n");
    assert_eq!((h.pid, h.host.as_deref()), (Some(42), Some("box")));
    let h = parse_holder(b"garbage\x00\xff");
    assert_eq!((h.pid, h.host.clone()), (None, None));
    assert_eq!(h.to_string(), "an unknown process");
}

#[test]
fn a_writer_in_another_process_is_refused_until_the_holder_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("locked.jsonl");
    let mut w = Writer::create(&path, JournalId([3; 16]), CreateOptions::default()).unwrap();
    w.append(entry(), b"before", DURABLE).unwrap();
    drop(w);

    let mut child = ChildProc::spawn(&format!("lock:{}", path.display()));
    assert_eq!(child.next().as_deref(), Some("locked"));
    let started = Instant::now();
    let err = Writer::open(&path, OpenOptions::default()).unwrap_err();
    let elapsed = started.elapsed();
    match &err {
        OpenError::Locked { holder, .. } => {
            assert_eq!(holder.pid, Some(child.child.id()));
            assert!(holder.host.is_some());
            assert!(
                err.to_string()
                    .contains(&format!("pid {}", child.child.id()))
            );
        }
        other => panic!("expected a lock error, got {other:?}"),
    }
    // Reported, not asserted: try_lock never blocks.
    println!("lock refusal took {elapsed:?}");

    // Readers need no lock.
    let r = Reader::open(&path, ReaderOptions::default()).unwrap();
    assert_eq!(r.frames(None).count(), 1);

    child.kill9();
    let (_w, report) = Writer::open(&path, OpenOptions::default()).unwrap();
    assert_eq!(report.frames, 1);
    assert!(lock_path(&path).exists());
}

/// Refusing a file that is not a journal (or a missing one) leaves no lock file behind.
#[test]
fn refused_opens_leave_no_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = dir.path().join("legacy.jsonl");
    std::fs::write(
        &legacy,
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.jsonl");
    for path in [&legacy, &missing] {
        let Err(err) = session_journal::Writer::open(path, session_journal::OpenOptions::default())
        else {
            panic!("{} opened", path.display());
        };
        assert!(
            matches!(
                err,
                session_journal::OpenError::NotAJournal { .. }
                    | session_journal::OpenError::NotFound { .. }
            ),
            "{err}"
        );
        assert!(
            !session_journal::lock::lock_path(path).exists(),
            "{}",
            path.display()
        );
    }
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("legacy.jsonl")]);
}

/// Two writers racing for a real lock: the loser's error names the winner even when
/// it lost by microseconds (the winner records itself just after taking the lock, so
/// the loser could read an empty lock file: about one race in three before the loser
/// learned to wait briefly for the record).
#[test]
fn a_writer_losing_a_close_race_still_learns_who_holds_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.jsonl");
    drop(Writer::create(&path, JournalId([7; 16]), CreateOptions::default()).unwrap());
    let mut named = 0;
    let rounds = 60;
    for _ in 0..rounds {
        let barrier = std::sync::Barrier::new(2);
        let results: Vec<Result<Writer, OpenError>> = std::thread::scope(|s| {
            let open = || {
                barrier.wait();
                Writer::open(&path, OpenOptions::default()).map(|(w, _)| w)
            };
            let a = s.spawn(open);
            let b = s.spawn(open);
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        // Both may succeed one after the other only if the first was dropped first:
        // it is held in `results` until here, so exactly one wins.
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
        for r in &results {
            match r {
                Ok(_) => {}
                Err(OpenError::Locked { holder, .. }) => {
                    if holder.pid == Some(std::process::id()) {
                        named += 1;
                    }
                }
                Err(other) => panic!("expected a lock error, got {other:?}"),
            }
        }
    }
    assert_eq!(named, rounds, "every lost race names the holder");
}
