//! The simulated file system itself, and the model-based random crash campaign.

use std::path::Path;

use session_journal::vfs::{OpenMode, Vfs};
use session_journal::{Durability, NewFrame, OpenError};
use session_testkit::sim::{SimFs, SimRng};

use crate::{Env, entry, payload};

#[test]
fn unsynced_files_may_vanish_and_synced_data_survives() {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let f = fs.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap();
    f.write_all_at(0, b"data").unwrap();
    f.sync_data().unwrap();
    drop(f);
    let mut vanished = 0;
    for seed in 0..32 {
        let fs2 = SimFs::new();
        fs2.create_dir_all(Path::new("/d")).unwrap();
        let f = fs2.open(Path::new("/d/a"), OpenMode::CreateNew).unwrap();
        f.write_all_at(0, b"data").unwrap();
        f.sync_data().unwrap();
        fs2.crash(seed);
        match fs2.read_raw(Path::new("/d/a")) {
            None => vanished += 1,
            Some(b) => assert_eq!(b, b"data"),
        }
    }
    assert!(
        vanished > 0,
        "a file whose directory was never synced must be able to vanish"
    );
    fs.sync_dir(Path::new("/d")).unwrap();
    fs.crash(1);
    assert_eq!(fs.read_raw(Path::new("/d/a")).unwrap(), b"data");
}

#[test]
fn crash_outcomes_cover_drop_tear_zero_and_reorder() {
    let (mut dropped, mut torn, mut zeroed, mut kept_after_loss) = (0, 0, 0, 0);
    for seed in 0..200 {
        let fs = SimFs::new();
        fs.write_raw(Path::new("/f"), b"");
        let f = fs.open(Path::new("/f"), OpenMode::ReadWrite).unwrap();
        f.write_all_at(0, &[1u8; 1024]).unwrap();
        f.write_all_at(1024, &[2u8; 1024]).unwrap();
        drop(f);
        fs.crash(seed);
        let b = fs.read_raw(Path::new("/f")).unwrap();
        let first = &b[..b.len().min(1024)];
        if b.is_empty() {
            dropped += 1;
        }
        if !first.is_empty() && first.len() < 1024 {
            torn += 1;
        }
        if first.contains(&0) {
            zeroed += 1;
        }
        if b.len() == 2048 && b[1024..].iter().all(|x| *x == 2) && first.iter().any(|x| *x != 1) {
            kept_after_loss += 1;
        }
    }
    assert!(dropped > 0 && torn > 0 && zeroed > 0 && kept_after_loss > 0);
}

#[test]
fn stale_handles_fail_after_a_crash() {
    let fs = SimFs::new();
    fs.write_raw(Path::new("/f"), b"x");
    let f = fs.open(Path::new("/f"), OpenMode::ReadWrite).unwrap();
    fs.crash_process();
    assert!(f.write_all_at(1, b"y").is_err());
    assert!(f.sync_data().is_err());
}

/// One seed of the model-based campaign: random appends (sizes up to 64 KiB, mixed
/// durability, batches, syncs), a clean close (sealed) or a drop, then a power-loss
/// crash and recovery, three rounds.
/// Oracle: recovery succeeds; the entries are a prefix of everything appended; that
/// prefix holds every entry acknowledged as durable; payloads are byte-identical.
fn run_seed(seed: u64) {
    let env = Env::new();
    let mut rng = SimRng::new(seed);
    let mut appended: Vec<Vec<u8>> = Vec::new();
    let mut durable = 0usize;
    let mut w = env.create();
    for round in 0..3 {
        let ops = 1 + rng.below(12);
        for _ in 0..ops {
            let len = match rng.below(10) {
                0 => 1 + rng.below(64 * 1024) as usize,
                1..=3 => 1 + rng.below(8) as usize,
                _ => 1 + rng.below(2000) as usize,
            };
            let d = if rng.one_in(3) {
                Durability::Durable
            } else {
                Durability::Buffered
            };
            match rng.below(6) {
                0 => {
                    let n = 1 + rng.below(5) as usize;
                    let ps: Vec<Vec<u8>> = (0..n)
                        .map(|i| payload(seed * 1000 + appended.len() as u64 + i as u64, len))
                        .collect();
                    let frames: Vec<NewFrame<'_>> =
                        ps.iter().map(|p| NewFrame::new(entry(), p)).collect();
                    w.append_batch(&frames, d).unwrap();
                    appended.extend(ps);
                }
                1 => {
                    w.sync().unwrap();
                    durable = appended.len();
                    continue;
                }
                _ => {
                    let p = payload(seed * 1000 + appended.len() as u64, len);
                    w.append(entry(), &p, d).unwrap();
                    appended.push(p);
                }
            }
            if d == Durability::Durable {
                durable = appended.len();
            }
        }
        if rng.one_in(2) {
            // A clean close: sealed, everything durable.
            w.close().unwrap();
            durable = appended.len();
        } else {
            drop(w);
        }
        env.fs.crash(seed.wrapping_mul(31).wrapping_add(round));
        let (w2, report) = match env.open() {
            Ok(x) => x,
            Err(e @ OpenError::Corrupt { .. }) => panic!("seed {seed}: false corruption: {e}"),
            Err(e) => panic!("seed {seed}: open failed: {e}"),
        };
        let got = env.payloads();
        assert_eq!(got.len() as u64, report.frames, "seed {seed}");
        assert!(
            got.len() >= durable,
            "seed {seed}: lost a durable entry ({} < {durable})",
            got.len()
        );
        assert!(got.len() <= appended.len(), "seed {seed}");
        assert!(
            got[..] == appended[..got.len()],
            "seed {seed}: not a prefix"
        );
        // What survived is durable now (recovery syncs it).
        appended.truncate(got.len());
        durable = got.len();
        w = w2;
    }
}

#[test]
fn model_based_random_crashes() {
    let seeds = crate::scale(300, "JOURNAL_SEEDS");
    let start = crate::scale(0, "JOURNAL_SEED_START");
    for seed in start..start + seeds {
        run_seed(seed);
    }
}

#[test]
fn process_crash_keeps_every_written_entry() {
    for seed in 0..20 {
        let env = Env::new();
        let mut rng = SimRng::new(seed);
        let mut w = env.create();
        let mut written = Vec::new();
        for i in 0..1 + rng.below(20) {
            let p = payload(i, 1 + rng.below(3000) as usize);
            let d = if rng.one_in(2) {
                Durability::Durable
            } else {
                Durability::Buffered
            };
            w.append(entry(), &p, d).unwrap();
            written.push(p);
        }
        drop(w);
        env.fs.crash_process();
        let (_w, report) = env.open().unwrap();
        assert_eq!(report.tail, session_journal::TailState::Clean);
        assert_eq!(env.payloads(), written);
    }
}

#[test]
fn writes_after_a_failed_sync_never_become_visible_as_durable() {
    let env = Env::new();
    let mut w = env.create();
    w.append(entry(), b"ok", Durability::Durable).unwrap();
    env.fs.fail_sync_after(1);
    assert!(w.sync().is_ok()); // nothing pending: no sync issued
    assert!(w.append(entry(), b"fails", Durability::Durable).is_err());
    drop(w);
    env.fs.crash(4);
    let (_w, report) = env.open().unwrap();
    assert_eq!(report.frames, 1);
}

/// A sync started with `start_sync` covers what was written before it started, not
/// what was appended while it ran: those need the next sync.
#[test]
fn a_started_sync_covers_only_what_was_written_before_it() {
    let env = Env::new();
    let mut w = env.create();
    w.append(entry(), b"first", Durability::Buffered).unwrap();
    let before = w.capture().len;
    let pending = w.start_sync().unwrap().expect("something to sync");
    assert_eq!(pending.end(), before);
    // Appended while the sync runs (the writer is free meanwhile).
    w.append(entry(), b"second", Durability::Buffered).unwrap();
    let done = pending.run();
    assert!(done.is_ok());
    w.finish_sync(done).unwrap();
    assert_eq!(w.durable_capture().len, before, "only the first is durable");
    assert_eq!(w.durable_capture().last_seq.0, 1);
    let syncs = env.fs.stats().syncs;
    w.sync().unwrap();
    assert_eq!(
        env.fs.stats().syncs,
        syncs + 1,
        "the second needs a sync of its own"
    );
    assert_eq!(w.durable_capture().len, w.capture().len);
    assert!(w.start_sync().unwrap().is_none(), "nothing left to sync");
}

/// A started sync that fails poisons the writer as any failed sync does: nothing
/// after the last durable byte counts as durable, and every later call is refused.
#[test]
fn a_failed_started_sync_poisons_the_writer() {
    let env = Env::new();
    let mut w = env.create();
    w.append(entry(), b"ok", Durability::Durable).unwrap();
    let durable = w.durable_capture().len;
    w.append(entry(), b"lost", Durability::Buffered).unwrap();
    env.fs.fail_sync_after(1);
    let pending = w.start_sync().unwrap().expect("something to sync");
    w.append(entry(), b"meanwhile", Durability::Buffered)
        .unwrap();
    let done = pending.run();
    assert!(!done.is_ok());
    let e = w.finish_sync(done).unwrap_err();
    assert!(e.to_string().contains("sync"), "{e}");
    assert_eq!(w.durable_capture().len, durable);
    assert!(w.is_poisoned());
    assert!(w.start_sync().is_err());
    assert!(w.append(entry(), b"after", Durability::Buffered).is_err());
    drop(w);
    env.fs.crash(4);
    let (_w, report) = env.open().unwrap();
    assert_eq!(report.frames, 1, "only the synced entry survives the crash");
}

/// Two syncs started before either ran: when the first fails, the second's success
/// proves nothing (fsyncgate) and is refused as the poisoned writer is.
#[test]
fn a_sync_that_succeeds_after_another_failed_is_refused() {
    let env = Env::new();
    let mut w = env.create();
    w.append(entry(), b"one", Durability::Buffered).unwrap();
    let first = w.start_sync().unwrap().expect("pending");
    w.append(entry(), b"two", Durability::Buffered).unwrap();
    let second = w.start_sync().unwrap().expect("pending");
    env.fs.fail_sync_after(1);
    assert!(w.finish_sync(first.run()).is_err());
    let done = second.run();
    assert!(done.is_ok(), "the file system took the second sync");
    assert!(w.finish_sync(done).is_err(), "but the writer is poisoned");
    assert_eq!(w.durable_capture().len.0, w.data_start().0);
}
