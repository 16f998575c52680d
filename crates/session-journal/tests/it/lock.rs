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

/// A fresh journal on the real file system, with one entry.
fn real_journal(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut w = Writer::create(&path, JournalId([9; 16]), CreateOptions::default()).unwrap();
    w.append(entry(), b"first", DURABLE).unwrap();
    w.close().unwrap();
    path
}

fn expect_locked(r: Result<(Writer, session_journal::RecoveryReport), OpenError>, what: &str) {
    match r {
        Err(OpenError::Locked { .. }) => {}
        Err(other) => panic!("{what}: expected a lock error, got {other}"),
        Ok(_) => panic!("{what}: a second owner was let in"),
    }
}

/// The lock belongs to the journal file, not to a name: a hard link, another spelling
/// of the directory and the holder record's deletion all meet the same lock.
#[test]
fn every_name_of_a_journal_meets_one_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = real_journal(dir.path(), "a.jsonl");
    let (_w, _) = Writer::open(&path, OpenOptions::default()).unwrap();

    let hard = dir.path().join("b.jsonl");
    std::fs::hard_link(&path, &hard).unwrap();
    expect_locked(Writer::open(&hard, OpenOptions::default()), "hard link");

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let dotted = sub.join("..").join("a.jsonl");
    expect_locked(
        Writer::open(&dotted, OpenOptions::default()),
        "dot-dot path",
    );

    // Deleting the holder record (as a stale-lock cleanup would) changes nothing.
    std::fs::remove_file(lock_path(&path)).unwrap();
    expect_locked(
        Writer::open(&path, OpenOptions::default()),
        "record deleted",
    );
    expect_locked(
        Writer::open(&hard, OpenOptions::default()),
        "record deleted, link",
    );
}

/// A symbolic link is never followed: not at the journal's name, not at its holder
/// record's name (whose target stays untouched).
#[cfg(unix)]
#[test]
fn links_at_a_journal_or_its_record_are_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let path = real_journal(dir.path(), "a.jsonl");
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let err = Writer::open(&link, OpenOptions::default()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(
        !lock_path(&link).exists(),
        "nothing created for a refused link"
    );

    let outside = dir.path().join("victim.txt");
    std::fs::write(&outside, b"precious").unwrap();
    std::fs::remove_file(lock_path(&path)).unwrap();
    std::os::unix::fs::symlink(&outside, lock_path(&path)).unwrap();
    let (mut w, _) = Writer::open(&path, OpenOptions::default()).unwrap();
    w.append(entry(), b"second", DURABLE).unwrap();
    drop(w);
    assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
}

/// A FIFO where a journal is expected is refused at once, never waited on.
#[cfg(unix)]
#[test]
fn a_fifo_at_a_journal_name_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("f.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = Writer::open(&fifo, OpenOptions::default()).unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");
    let err = Reader::open(&fifo, ReaderOptions::default()).unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");
}

/// A file system that, right after opening the journal, lets a hostile step run: the
/// race between opening a journal and locking it, made deterministic.
struct RaceFs {
    inner: session_journal::vfs::StdVfs,
    journal: std::path::PathBuf,
    step: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl std::fmt::Debug for RaceFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RaceFs")
    }
}

impl session_journal::vfs::Vfs for RaceFs {
    fn open(
        &self,
        path: &std::path::Path,
        mode: session_journal::vfs::OpenMode,
    ) -> std::io::Result<Box<dyn session_journal::vfs::VfsFile>> {
        let f = self.inner.open(path, mode)?;
        if path == self.journal
            && let Some(step) = self.step.lock().unwrap().take()
        {
            step();
        }
        Ok(f)
    }
    fn create_dir_all(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.inner.create_dir_all(p)
    }
    fn sync_dir(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.inner.sync_dir(p)
    }
    fn rename(&self, a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
        self.inner.rename(a, b)
    }
    fn remove_file(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.inner.remove_file(p)
    }
    fn exists(&self, p: &std::path::Path) -> std::io::Result<bool> {
        self.inner.exists(p)
    }
    fn identity(
        &self,
        p: &std::path::Path,
    ) -> std::io::Result<Option<session_journal::vfs::FileId>> {
        self.inner.identity(p)
    }
    fn stat(
        &self,
        p: &std::path::Path,
    ) -> std::io::Result<Option<session_journal::vfs::PathStatus>> {
        self.inner.stat(p)
    }
    fn hard_link(&self, a: &std::path::Path, b: &std::path::Path) -> std::io::Result<()> {
        self.inner.hard_link(a, b)
    }
    fn create_temp(
        &self,
        d: &std::path::Path,
        p: &str,
    ) -> std::io::Result<(std::path::PathBuf, Box<dyn session_journal::vfs::VfsFile>)> {
        self.inner.create_temp(d, p)
    }
    fn read_dir(
        &self,
        d: &std::path::Path,
    ) -> std::io::Result<Vec<session_journal::vfs::DirEntry>> {
        self.inner.read_dir(d)
    }
    fn remove_dir_all(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.inner.remove_dir_all(p)
    }
}

/// A journal deleted, or replaced by a rename, between a writer's open and its lock:
/// the writer fails closed instead of owning a file nobody will read again.
#[test]
fn a_journal_deleted_or_replaced_while_opening_fails_closed() {
    for replace in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = real_journal(dir.path(), "a.jsonl");
        let other = real_journal(dir.path(), "other.jsonl");
        let (p, o) = (path.clone(), other.clone());
        let fs = RaceFs {
            inner: session_journal::vfs::StdVfs,
            journal: path.clone(),
            step: std::sync::Mutex::new(Some(Box::new(move || {
                if replace {
                    std::fs::rename(&o, &p).unwrap();
                } else {
                    std::fs::remove_file(&p).unwrap();
                }
            }))),
        };
        let options = OpenOptions {
            vfs: std::sync::Arc::new(fs),
            ..OpenOptions::default()
        };
        match Writer::open(&path, options) {
            Err(OpenError::Replaced { path: p }) => assert_eq!(p, path),
            Err(other) => panic!("replace={replace}: expected Replaced, got {other}"),
            Ok(_) => panic!("replace={replace}: a writer owns a file that lost its name"),
        }
    }
}

/// Creation publishes a complete journal: the name never exists without its header,
/// no temporary is left, and an existing name is never replaced.
#[test]
fn creation_links_a_complete_journal_into_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.jsonl");
    let w = Writer::create(&path, JournalId([1; 16]), CreateOptions::default()).unwrap();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(names, vec!["new.jsonl", "new.jsonl.lock"]);
    assert!(matches!(
        Writer::create(&path, JournalId([2; 16]), CreateOptions::default()),
        Err(session_journal::CreateError::Exists { .. })
    ));
    drop(w);
    // A 250-byte name still has a temporary name that fits.
    let long = dir.path().join(format!("{}.jsonl", "x".repeat(244)));
    drop(Writer::create(&long, JournalId([3; 16]), CreateOptions::default()).unwrap());
    assert!(long.exists());
    assert!(session_journal::is_leftover_temp(std::ffi::OsStr::new(
        ".new.jsonl.new-0123456789abcdef.tmp"
    )));
    assert!(!session_journal::is_leftover_temp(std::ffi::OsStr::new(
        "new.jsonl"
    )));
}

/// A writer that closed cleanly empties its holder record before its lock goes; yet
/// the lock can outlive it for a moment when another thread of its process forked a
/// child that has not exec'd yet (the child's copy of the descriptor shares the open
/// file description, so the `flock` stays until the exec closes it). A writer opening
/// the journal then finds it locked with an empty record: it keeps trying the lock
/// while the record stays empty (bounded), instead of failing `Locked` at once. Here a
/// second description of the journal holds the lock for 40 ms with no record.
#[test]
fn a_lock_lingering_after_a_clean_close_is_waited_for_briefly() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("lingering.jsonl");
    let mut w = Writer::create(&path, JournalId([5; 16]), CreateOptions::default()).unwrap();
    w.append(entry(), b"before", DURABLE).unwrap();
    drop(w);
    assert_eq!(std::fs::read(lock_path(&path)).unwrap_or_default(), b"");

    let lingering = std::fs::File::open(&path).unwrap();
    lingering
        .try_lock()
        .expect("the lingering description takes the lock");
    let (tx, rx) = std::sync::mpsc::channel();
    let release = std::thread::spawn(move || {
        rx.recv().expect("the opener started");
        std::thread::sleep(std::time::Duration::from_millis(40));
        drop(lingering);
    });
    tx.send(()).unwrap();
    let opened = Writer::open(&path, OpenOptions::default());
    release.join().unwrap();
    let (w, _) = opened.expect("the lock is taken once the lingering description closes");
    assert_eq!(w.journal_id(), JournalId([5; 16]));
}
