//! The background sync (`Writer::sync_in_background`): appends never wait for it, a
//! failure poisons the writer, whatever needs durability waits for it, and no thread
//! outlives the writer.

use std::sync::Arc;
use std::sync::mpsc;

use session_journal::vfs::Vfs;
use session_journal::{AppendError, Clock, CreateOptions, Writer};
use session_testkit::{HeldSyncs, Interposed};

use crate::{BUFFERED, DURABLE, Env, JOURNAL, entry, payload};

/// A writer on `env`'s file system with its syncs passing through `held`.
fn held_writer(env: &Env, held: &HeldSyncs) -> Writer {
    let vfs: Arc<dyn Vfs> = Arc::new(Interposed::wrap(env.vfs(), held.clone()));
    Writer::create(
        &env.path,
        JOURNAL,
        CreateOptions {
            session_id: Some("s-1".into()),
            clock: Clock::fixed(1_000),
            vfs,
            ..CreateOptions::default()
        },
    )
    .unwrap()
}

/// Starts `w`'s background sync with `held` armed, and waits until the sync is
/// being held (started, not yet returned).
fn start_held_sync(w: &mut Writer, held: &HeldSyncs) {
    held.arm();
    assert!(w.sync_in_background().unwrap(), "a sync was started");
    assert!(held.wait_holding());
}

#[test]
fn buffered_appends_go_on_while_a_background_sync_is_held() {
    let env = Env::new();
    let held = HeldSyncs::default();
    let mut w = held_writer(&env, &held);
    let start = w.durable_capture();
    for i in 0..3 {
        w.append(entry(), &payload(i, 100), BUFFERED).unwrap();
    }
    let requested = w.capture();
    start_held_sync(&mut w, &held);
    // At most one at a time: a second request while it runs starts nothing.
    assert!(!w.sync_in_background().unwrap());
    for i in 3..10 {
        w.append(entry(), &payload(i, 100), BUFFERED).unwrap();
    }
    assert!(held.holding(), "the appends did not wait for the sync");
    assert_eq!(
        w.durable_capture(),
        start,
        "nothing durable before the sync returns"
    );
    held.release();
    let synced = w.sync().unwrap();
    assert!(!held.timed_out());
    assert_eq!(synced, w.capture());
    assert!(synced.len > requested.len);
    // The background sync ran on a thread of its own.
    let me = std::thread::current().id();
    let syncs = held.done();
    assert_eq!(syncs.len(), 2, "{syncs:?}");
    assert_ne!(syncs[0].1, me);
    assert_eq!(syncs[1].1, me);
}

#[test]
fn a_finished_background_sync_advances_the_durable_watermark() {
    let env = Env::new();
    let mut w = env.create();
    w.append(entry(), b"one", BUFFERED).unwrap();
    let requested = w.capture();
    let (tx, rx) = mpsc::channel();
    assert!(
        w.sync_in_background_then(Box::new(move |durable| tx.send(durable).unwrap()))
            .unwrap()
    );
    // The follow-up is handed what the sync made durable: everything written when
    // it was requested.
    assert_eq!(rx.recv().unwrap(), requested);
    w.append(entry(), b"two", BUFFERED).unwrap();
    // `sync` waits for the background sync, takes its watermark, then syncs "two".
    assert_eq!(w.sync().unwrap(), w.capture());
    drop(w);
    env.fs.crash(3);
    assert_eq!(env.payloads(), vec![b"one".to_vec(), b"two".to_vec()]);
}

#[test]
fn a_follow_up_runs_without_a_sync_when_nothing_is_pending() {
    let env = Env::new();
    let held = HeldSyncs::default();
    let mut w = held_writer(&env, &held);
    w.append(entry(), b"one", DURABLE).unwrap();
    let before = held.done().len();
    assert!(!w.sync_in_background().unwrap(), "nothing pending");
    let (tx, rx) = mpsc::channel();
    assert!(
        w.sync_in_background_then(Box::new(move |durable| tx.send(durable).unwrap()))
            .unwrap()
    );
    assert_eq!(rx.recv().unwrap(), w.durable_capture());
    w.sync().unwrap();
    assert_eq!(held.done().len(), before, "no sync was needed");
}

#[test]
fn a_failed_background_sync_poisons_the_writer() {
    // Whatever call comes next — an explicit sync, a durable append, a seal, a close
    // — returns the sync's error, and every call after it `Poisoned`: after a failed
    // `fdatasync` the page cache's state is unknown, so nothing is retried or
    // reported durable (a second `fdatasync` could succeed without the lost pages).
    type Next = fn(&mut Writer) -> Result<(), AppendError>;
    let nexts: [(&str, Next); 4] = [
        ("sync", |w| w.sync().map(drop)),
        ("durable append", |w| {
            w.append(entry(), b"durable", DURABLE).map(drop)
        }),
        ("seal", |w| w.seal().map(drop)),
        ("buffered append after a sync", |w| {
            let _ = w.sync();
            w.append(entry(), b"buffered", BUFFERED).map(drop)
        }),
    ];
    for (what, next) in nexts {
        let env = Env::new();
        let mut w = env.create();
        let acked: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 200)).collect();
        for p in &acked {
            w.append(entry(), p, DURABLE).unwrap();
        }
        let durable = w.durable_capture();
        w.append(entry(), b"pending", BUFFERED).unwrap();
        env.fs.fail_sync_after(1);
        assert!(w.sync_in_background().unwrap());
        let err = next(&mut w).unwrap_err();
        if what == "buffered append after a sync" {
            assert!(matches!(err, AppendError::Poisoned { .. }), "{what}: {err}");
        } else {
            assert!(
                matches!(
                    err,
                    AppendError::Io {
                        op: "background sync",
                        ..
                    }
                ),
                "{what}: {err}"
            );
        }
        assert!(w.is_poisoned(), "{what}");
        assert_eq!(w.durable_capture(), durable, "{what}");
        for later in [
            w.append(entry(), b"later", BUFFERED).map(drop),
            w.sync().map(drop),
            w.sync_in_background().map(drop),
        ] {
            assert!(
                matches!(later, Err(AppendError::Poisoned { offset, .. }) if offset == durable.len),
                "{what}: {later:?}"
            );
        }
        assert!(matches!(w.close(), Err(AppendError::Poisoned { .. })));
    }
}

#[test]
fn close_waits_for_the_background_sync() {
    let env = Env::new();
    let held = HeldSyncs::default();
    let mut w = held_writer(&env, &held);
    w.append(entry(), b"one", BUFFERED).unwrap();
    start_held_sync(&mut w, &held);
    let closing = std::thread::spawn(move || w.close());
    held.release();
    let closed = closing.join().unwrap().unwrap();
    assert!(!held.timed_out());
    // Two syncs: the background one, then the seal's (the sync before the seal
    // finds nothing pending once the background one is taken up).
    assert_eq!(held.done().len(), 2, "{:?}", held.done());
    env.fs.crash(5);
    let (_w, report) = env.open().unwrap();
    assert!(report.sealed);
    assert_eq!(report.end, closed.len);
}

#[test]
fn dropping_the_writer_joins_its_background_sync_before_the_lock_goes() {
    let env = Env::new();
    let held = HeldSyncs::default();
    let mut w = held_writer(&env, &held);
    w.append(entry(), b"one", BUFFERED).unwrap();
    start_held_sync(&mut w, &held);
    held.release();
    drop(w);
    // The thread is gone with the writer: its sync returned and the journal's
    // handle (the lock) with it.
    assert_eq!(held.done().len(), 1);
    assert!(!env.fs.lock_held(&env.path));
    assert!(env.open().is_ok());
}

#[test]
fn kill_9_during_a_background_sync_loses_no_buffered_append() {
    let env = Env::new();
    let held = HeldSyncs::default();
    let mut w = held_writer(&env, &held);
    let mut acked = Vec::new();
    for i in 0..4 {
        acked.push(payload(i, 300));
        w.append(entry(), &acked[i as usize], BUFFERED).unwrap();
    }
    start_held_sync(&mut w, &held);
    for i in 4..8 {
        acked.push(payload(i, 300));
        w.append(entry(), &acked[i as usize], BUFFERED).unwrap();
    }
    env.fs.crash_process();
    let (_w2, report) = env.open().unwrap();
    assert_eq!(report.frames, 8);
    assert_eq!(env.payloads(), acked);
    held.release();
    drop(w);
}
