//! Many journals made durable by one file-system sync (`SharedSync`), on the
//! simulated file system: what it covers, what it leaves to each journal's own sync,
//! and a failure that it must never hide.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::Vfs;
use session_journal::{
    Clock, CreateOptions, Durability, OpenOptions, PendingSync, SharedSync, Together, Writer,
};
use session_testkit::sim::SimFs;

use crate::{JOURNAL, entry};

/// `n` journals under `/s` of one simulated file system that offers a handle.
struct Journals {
    fs: SimFs,
    paths: Vec<PathBuf>,
}

impl Journals {
    fn new(n: usize, backlog: Option<u64>) -> (Self, SharedSync, Vec<Writer>) {
        Self::on_device(0, n, backlog)
    }

    /// The handle says it is on `device` (every simulated file is on device 0).
    fn on_device(device: u64, n: usize, backlog: Option<u64>) -> (Self, SharedSync, Vec<Writer>) {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/s")).unwrap();
        fs.offer_file_system(device, backlog);
        // The handle is opened before any journal is written, as its caller must.
        let handle = fs.file_system(Path::new("/s")).unwrap().expect("offered");
        let paths: Vec<PathBuf> = (0..n).map(|i| PathBuf::from(format!("/s/{i}.j"))).collect();
        let j = Self { fs, paths };
        let writers = j.paths.iter().map(|p| j.create(p)).collect();
        (j, SharedSync::new(handle), writers)
    }

    fn create(&self, path: impl AsRef<Path>) -> Writer {
        Writer::create(
            path.as_ref(),
            JOURNAL,
            CreateOptions {
                session_id: None,
                max_payload: 1 << 20,
                clock: Clock::fixed(1_000),
                vfs: Arc::new(self.fs.clone()),
            },
        )
        .unwrap()
    }

    /// Each journal's entries after a power loss and reopening.
    fn after_power_loss(&self, seed: u64) -> Vec<Vec<Vec<u8>>> {
        self.fs.crash(seed);
        self.paths
            .iter()
            .map(|p| {
                let opts = OpenOptions {
                    vfs: Arc::new(self.fs.clone()),
                    ..OpenOptions::default()
                };
                let (w, _) = Writer::open(p, opts).unwrap();
                drop(w);
                let reader = session_journal::Reader::open(
                    p,
                    session_journal::ReaderOptions {
                        vfs: Arc::new(self.fs.clone()),
                    },
                )
                .unwrap();
                reader.frames(None).map(|f| f.unwrap().payload).collect()
            })
            .collect()
    }
}

/// Appends `payload` (buffered) to each writer and starts its sync.
fn written(writers: &mut [Writer], payload: &[u8]) -> Vec<PendingSync> {
    writers
        .iter_mut()
        .map(|w| {
            w.append(entry(), payload, Durability::Buffered).unwrap();
            w.start_sync().unwrap().expect("something to sync")
        })
        .collect()
}

#[test]
fn syncs_of_several_journals_share_one_file_system_sync_and_survive_power_loss() {
    for seed in 0..crate::scale(16, "JOURNAL_SHARED_SYNC_SEEDS") {
        let (j, shared, mut writers) = Journals::new(4, Some(0));
        let before = j.fs.stats();
        let pending = written(&mut writers, b"kept");
        let done = shared.run(pending);
        let after = j.fs.stats();
        assert_eq!(after.syncs, before.syncs, "no journal synced on its own");
        assert_eq!(
            after.fs_syncs,
            before.fs_syncs + 2,
            "one shared sync, twice"
        );
        for (w, d) in writers.iter_mut().zip(done) {
            assert!(d.is_ok());
            w.finish_sync(d).unwrap();
            assert_eq!(w.durable_capture().len, w.capture().len);
        }
        // Written after the shared sync: not covered.
        for w in &mut writers {
            w.append(entry(), b"maybe", Durability::Buffered).unwrap();
        }
        drop(writers);
        for entries in j.after_power_loss(seed) {
            assert_eq!(entries.first().map(Vec::as_slice), Some(&b"kept"[..]));
        }
    }
}

#[test]
fn a_single_sync_is_the_journals_own() {
    let (j, shared, mut writers) = Journals::new(1, None);
    let before = j.fs.stats();
    let done = shared.run(written(&mut writers, b"one"));
    assert_eq!(j.fs.stats().syncs, before.syncs + 1);
    assert_eq!(j.fs.stats().fs_syncs, before.fs_syncs);
    writers[0]
        .finish_sync(done.into_iter().next().unwrap())
        .unwrap();
}

/// Over the backlog limit, syncs are handed back to run on their own, and a
/// file-system sync of its own writes the backlog out meanwhile (answering nobody).
#[test]
fn a_large_write_back_backlog_keeps_syncs_apart_and_is_written_out() {
    let limit = session_journal::DEFAULT_BACKLOG_LIMIT;
    let (j, shared, mut writers) = Journals::new(3, Some(limit + 1));
    let shared = shared.with_drain_interval(std::time::Duration::from_secs(3600));
    let before = j.fs.stats();
    let handed = shared.share(written(&mut writers, b"x"));
    assert!(handed.iter().all(|t| matches!(t, Together::Alone(_))));
    assert_eq!(j.fs.stats().syncs, before.syncs, "handed back, not run");
    wait_for("the backlog's own sync", || {
        j.fs.stats().fs_syncs == before.fs_syncs + 1
    });
    run_alone(&mut writers, handed);
    assert_eq!(j.fs.stats().syncs, before.syncs + 3);
    // Still over the limit: handed back again, but the backlog's sync does not start
    // again within the drain interval (a writer that keeps the backlog up is not
    // chased with syncs).
    let handed = shared.share(written(&mut writers, b"y"));
    run_alone(&mut writers, handed);
    assert_eq!(
        j.fs.stats().fs_syncs,
        before.fs_syncs + 1,
        "no second drain"
    );
    // With no interval, the next round over the limit starts another.
    let shared = shared.with_drain_interval(std::time::Duration::ZERO);
    let handed = shared.share(written(&mut writers, b"z"));
    run_alone(&mut writers, handed);
    wait_for("a second drain", || {
        j.fs.stats().fs_syncs == before.fs_syncs + 2
    });
    // Under the limit (or unknown), shared again.
    let (j, shared, mut writers) = Journals::new(3, Some(limit));
    let before = j.fs.stats();
    shared.run(written(&mut writers, b"x"));
    assert_eq!(j.fs.stats().syncs, before.syncs);
    assert_eq!(j.fs.stats().fs_syncs, before.fs_syncs + 2);
}

/// The backlog's own sync hears of a failure as any file-system sync does: sharing
/// ends (a journal's loss is then reported by its own sync alone).
#[test]
fn a_failure_the_backlogs_sync_hears_of_ends_sharing() {
    let limit = session_journal::DEFAULT_BACKLOG_LIMIT;
    let (j, shared, mut writers) = Journals::new(2, Some(limit + 1));
    j.fs.fail_next_file_system_sync();
    let handed = shared.share(written(&mut writers, b"x"));
    wait_for("sharing to end", || !shared.is_sharing());
    for (w, t) in writers.iter_mut().zip(handed) {
        let Together::Alone(sync) = t else {
            unreachable!()
        };
        let done = sync.run();
        assert!(!done.is_ok(), "its own sync reports the loss");
        assert!(w.finish_sync(done).is_err());
    }
}

/// Runs each sync handed back on its own and records it.
fn run_alone(writers: &mut [Writer], handed: Vec<Together>) {
    for (w, t) in writers.iter_mut().zip(handed) {
        let Together::Alone(sync) = t else {
            panic!("handed back")
        };
        w.finish_sync(sync.run()).unwrap();
    }
}

/// Waits (bounded: 60 s) until `done` holds.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A failed file-system sync: every journal of the call finds out through its own
/// sync (its pending writes are lost, and its writer is poisoned), nothing is called
/// durable, and sharing stops for good, so that a journal outside the call still
/// hears of its own loss from its next sync.
#[test]
fn a_failed_file_system_sync_is_reported_to_each_journal_and_ends_sharing() {
    let (j, shared, mut writers) = Journals::new(3, None);
    let mut bystander = writers.pop().unwrap();
    bystander
        .append(entry(), b"lost too", Durability::Buffered)
        .unwrap();
    let durable: Vec<u64> = writers.iter().map(|w| w.durable_capture().len.0).collect();
    let pending = written(&mut writers, b"lost");
    j.fs.fail_next_file_system_sync();
    let done = shared.run(pending);
    assert!(!shared.is_sharing());
    for ((w, d), durable) in writers.iter_mut().zip(done).zip(durable) {
        assert!(!d.is_ok(), "its own sync reports the loss");
        assert!(w.finish_sync(d).is_err());
        assert!(w.is_poisoned());
        assert_eq!(w.durable_capture().len.0, durable);
    }
    // The journal that was not in the call hears of it from its next sync.
    assert!(bystander.sync().is_err());
    // From now on every sync is the journal's own.
    let mut more: Vec<Writer> = (0..2).map(|i| j.create(format!("/s/more-{i}.j"))).collect();
    let before = j.fs.stats();
    let done = shared.run(written(&mut more, b"own"));
    assert!(done.iter().all(|d| d.is_ok()));
    assert_eq!(
        j.fs.stats().fs_syncs,
        before.fs_syncs,
        "not shared any more"
    );
    assert_eq!(j.fs.stats().syncs, before.syncs + 2);
}

#[test]
fn journals_on_another_device_than_the_handle_sync_on_their_own() {
    let (j, shared, mut writers) = Journals::on_device(1, 3, None);
    let before = j.fs.stats();
    let done = shared.run(written(&mut writers, b"elsewhere"));
    assert!(done.iter().all(|d| d.is_ok()));
    assert_eq!(j.fs.stats().syncs, before.syncs + 3);
    assert_eq!(j.fs.stats().fs_syncs, before.fs_syncs);
}

/// The real thing: a directory handle on this machine's file system, `syncfs`
/// through it, and journals on it made durable together.
#[cfg(target_os = "linux")]
#[test]
fn the_real_file_system_handle_syncs_real_journals_together() {
    use session_journal::vfs::StdVfs;
    let dir = tempfile::tempdir().unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(StdVfs);
    let handle = vfs
        .file_system(dir.path())
        .unwrap()
        .expect("Linux 5.8 or later reports syncfs failures");
    handle.sync().unwrap();
    let mut writers: Vec<Writer> = (0..3)
        .map(|i| {
            Writer::create(
                &dir.path().join(format!("{i}.j")),
                JOURNAL,
                CreateOptions {
                    session_id: None,
                    max_payload: 1 << 20,
                    clock: Clock::fixed(1_000),
                    vfs: vfs.clone(),
                },
            )
            .unwrap()
        })
        .collect();
    let meta = std::fs::metadata(dir.path().join("0.j")).unwrap();
    assert_eq!(handle.device(), std::os::unix::fs::MetadataExt::dev(&meta));
    let shared = SharedSync::new(handle).with_backlog_limit(u64::MAX);
    let done = shared.run(written(&mut writers, b"real"));
    for (w, d) in writers.iter_mut().zip(done) {
        assert!(d.is_ok());
        w.finish_sync(d).unwrap();
        assert_eq!(w.durable_capture().len, w.capture().len);
    }
    assert!(shared.is_sharing());
    // A link is not followed: no handle through it.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path(), &link).unwrap();
    assert!(vfs.file_system(&link).unwrap().is_none());
    // Nothing there: an error naming the cause.
    assert!(vfs.file_system(&dir.path().join("absent")).is_err());
}
