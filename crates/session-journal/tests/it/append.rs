//! The write path: durability, batches, poisoning, limits, permissions.

use std::path::Path;

use session_journal::vfs::Vfs as _;
use session_journal::{
    AppendError, CreateError, CreateOptions, Durability, JournalId, NewFrame, Offset, Reader,
    ReaderOptions, Seq, Tag, Writer,
};

use crate::{BUFFERED, DURABLE, Env, entry, payload};

#[test]
fn durable_appends_are_durable_when_the_call_returns() {
    let env = Env::new();
    let mut w = env.create();
    let a = w.append(entry(), b"one", DURABLE).unwrap();
    assert_eq!(a.seq, Seq(1));
    assert_eq!(a.durability, Durability::Durable);
    assert_eq!(w.durable_capture().len, a.end());
    drop(w);
    env.fs.crash(1);
    let (_w, report) = env.open().unwrap();
    assert_eq!(report.frames, 1);
    assert_eq!(env.payloads(), vec![b"one".to_vec()]);
}

#[test]
fn buffered_appends_survive_a_process_crash_and_sync_moves_the_watermark() {
    let env = Env::new();
    let mut w = env.create();
    let start = w.durable_capture().len;
    for i in 0..5 {
        w.append(entry(), &payload(i, 100), BUFFERED).unwrap();
    }
    assert_eq!(w.durable_capture().len, start);
    assert_eq!(w.capture().last_seq, Seq(5));
    drop(w);
    env.fs.crash_process();
    let (mut w, report) = env.open().unwrap();
    assert_eq!(report.frames, 5);
    w.append(entry(), b"six", BUFFERED).unwrap();
    let synced = w.sync().unwrap();
    assert_eq!(synced, w.capture());
    assert_eq!(synced.last_seq, Seq(6));
}

#[test]
fn batches_are_one_write_and_one_sync() {
    let env = Env::new();
    let mut w = env.create();
    let syncs = env.fs.stats().syncs;
    let frames: Vec<Vec<u8>> = (0..10).map(|i| payload(i, 50 + i as usize)).collect();
    let batch: Vec<NewFrame<'_>> = frames
        .iter()
        .enumerate()
        .map(|(i, p)| NewFrame::new(entry(), p).with_tag(Tag([i as u8; 16])))
        .collect();
    let out = w.append_batch(&batch, DURABLE).unwrap();
    assert_eq!(env.fs.stats().syncs, syncs + 1);
    assert_eq!(out.len(), 10);
    assert_eq!(out[9].seq, Seq(10));
    for pair in out.windows(2) {
        assert_eq!(pair[0].end(), pair[1].offset);
    }
    let r = env.reader();
    let f = r.read_frame_at(out[3].offset).unwrap();
    assert_eq!(f.payload, frames[3]);
    assert_eq!(f.info.tag, Tag([3; 16]));
    assert_eq!(f.info.body_check, out[3].body_check);
    assert_eq!(w.last_frame().unwrap().body_check, out[9].body_check);
}

#[test]
fn sync_failure_poisons_and_reopen_recovers_the_acknowledged_prefix() {
    for crash in [false, true] {
        let env = Env::new();
        let mut w = env.create();
        let acked: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 200)).collect();
        for p in &acked {
            w.append(entry(), p, DURABLE).unwrap();
        }
        env.fs.fail_sync_after(1);
        let err = w.append(entry(), b"lost", DURABLE).unwrap_err();
        assert!(matches!(err, AppendError::Io { op: "sync", .. }), "{err}");
        assert!(w.is_poisoned());
        assert!(matches!(
            w.append(entry(), b"later", BUFFERED),
            Err(AppendError::Poisoned { .. })
        ));
        assert!(matches!(w.sync(), Err(AppendError::Poisoned { .. })));
        drop(w);
        if crash {
            env.fs.crash(9);
        }
        let (_w, report) = env.open().unwrap();
        let got = env.payloads();
        assert!(report.frames >= 3);
        assert_eq!(got[..3], acked[..]);
        if crash {
            // The failed sync's data never reached the disk.
            assert_eq!(got.len(), 3);
        }
    }
}

#[test]
fn enospc_mid_frame_poisons_and_reopen_recovers_the_acknowledged_prefix() {
    let frame_len = 64 + 504;
    for k in [0u64, 1, 7, 63, 64, 65, 300, frame_len - 1] {
        for crash in [false, true] {
            let env = Env::new();
            let mut w = env.create();
            w.append(entry(), b"acked-1", DURABLE).unwrap();
            w.append(entry(), b"acked-2", BUFFERED).unwrap();
            env.fs.fail_writes_after(k);
            let err = w.append(entry(), &payload(3, 504), DURABLE).unwrap_err();
            assert!(matches!(err, AppendError::Io { op: "write", .. }), "{err}");
            assert!(matches!(
                w.append(entry(), b"x", DURABLE),
                Err(AppendError::Poisoned { .. })
            ));
            env.fs.clear_faults();
            drop(w);
            if crash {
                env.fs.crash(k);
            } else {
                env.fs.crash_process();
            }
            let (mut w, _) = env.open().unwrap();
            let got = env.payloads();
            if crash {
                assert!(
                    got.len() <= 2
                        && got
                            .iter()
                            .zip([b"acked-1", b"acked-2"])
                            .all(|(a, b)| a == b)
                );
                assert!(!got.is_empty(), "the durable frame was lost");
            } else {
                assert_eq!(got, vec![b"acked-1".to_vec(), b"acked-2".to_vec()]);
            }
            w.append(entry(), b"after", DURABLE).unwrap();
            drop(w);
            let (_w, again) = env.open().unwrap();
            assert_eq!(again.tail, session_journal::TailState::Clean);
        }
    }
}

#[test]
fn limits_are_enforced_before_writing() {
    let env = Env::new();
    let mut w = env.create_with(100);
    assert!(matches!(
        w.append(entry(), &[1; 101], DURABLE),
        Err(AppendError::TooLarge {
            len: 101,
            max: 100,
            ..
        })
    ));
    assert!(matches!(
        w.append(entry(), b"", DURABLE),
        Err(AppendError::Empty { .. })
    ));
    assert!(!w.is_poisoned());
    w.append(entry(), &[1; 100], DURABLE).unwrap();
    assert_eq!(w.capture().last_seq, Seq(1));
}

#[test]
fn create_refuses_an_existing_file_and_bad_options() {
    let env = Env::new();
    drop(env.create());
    let err = Writer::create(
        &env.path,
        JournalId([1; 16]),
        CreateOptions {
            vfs: env.vfs(),
            ..CreateOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, CreateError::Exists { .. }), "{err}");
    let err = Writer::create(
        Path::new("/s/other.jsonl"),
        JournalId([1; 16]),
        CreateOptions {
            max_payload: 0,
            vfs: env.vfs(),
            ..CreateOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, CreateError::InvalidOptions { .. }));
}

#[test]
fn create_is_durable_before_it_returns() {
    let env = Env::new();
    drop(env.create());
    env.fs.crash(3);
    let (_w, report) = env.open().unwrap();
    assert_eq!(report.frames, 0);
    assert_eq!(report.header.session_id.as_deref(), Some("s-1"));
    assert_eq!(report.end, Offset(env.bytes().len() as u64));
}

#[cfg(unix)]
#[test]
fn files_are_0600_and_created_directories_0700() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("a/b/s.jsonl");
    let mut w = Writer::create(&path, JournalId([5; 16]), CreateOptions::default()).unwrap();
    w.append(entry(), b"secret", DURABLE).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&session_journal::lock::lock_path(&path)), 0o600);
    assert_eq!(mode(&tmp.path().join("a")), 0o700);
    assert_eq!(mode(&tmp.path().join("a/b")), 0o700);
}

/// One huge entry must not pin a buffer of its size for the writer's lifetime: after
/// the next `sync` (or append) the writer keeps at most 1 MiB of frame buffer.
#[test]
fn a_huge_append_does_not_pin_its_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let mut w = Writer::create(&path, JournalId([3; 16]), CreateOptions::default()).unwrap();
    w.append(entry(), b"small", BUFFERED).unwrap();
    w.sync().unwrap();
    let before = crate::alloc::live_bytes();
    {
        let big = vec![7u8; 8 << 20];
        w.append(entry(), &big, BUFFERED).unwrap();
    }
    w.sync().unwrap();
    let held = crate::alloc::live_bytes() - before;
    assert!(held < 2 << 20, "the writer still holds {held} bytes");
    w.append(entry(), b"after", BUFFERED).unwrap();
    drop(w);
}

/// A synced writer is at rest, and an owner holds a thousand of them: after a sync it
/// keeps at most 64 KiB of frame buffer, even after a batch of a few MiB (a fork).
#[test]
fn a_synced_writer_keeps_a_small_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rest.jsonl");
    let mut w = Writer::create(&path, JournalId([4; 16]), CreateOptions::default()).unwrap();
    w.append(entry(), b"small", BUFFERED).unwrap();
    w.sync().unwrap();
    let before = crate::alloc::live_bytes();
    {
        let payload = vec![b'x'; 2200];
        let frames: Vec<_> = (0..1000)
            .map(|_| session_journal::NewFrame::new(entry(), &payload))
            .collect();
        w.append_batch(&frames, BUFFERED).unwrap();
    }
    w.sync().unwrap();
    let held = crate::alloc::live_bytes() - before;
    assert!(
        held <= 64 << 10,
        "the synced writer still holds {held} bytes"
    );
    w.append(entry(), b"after", DURABLE).unwrap();
}

/// `create_unpublished`: a locked temporary whose writes are not synced until the
/// caller syncs; frames before that sync claim nothing durable, the one after it
/// covers them; linked into place once synced, it reads as a journal.
#[test]
fn an_unpublished_journal_is_synced_only_when_asked() {
    let env = Env::new();
    let syncs = env.fs.stats().syncs;
    let (tmp, mut w) = Writer::create_unpublished(
        Path::new("/s"),
        ".j.jsonl.import-",
        crate::JOURNAL,
        CreateOptions {
            session_id: Some("s-1".into()),
            vfs: env.vfs(),
            ..CreateOptions::default()
        },
    )
    .unwrap();
    assert!(tmp.starts_with("/s"), "{}", tmp.display());
    let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(".j.jsonl.import-") && name.ends_with(".tmp"),
        "{name}"
    );
    assert!(env.fs.lock_held(&tmp));
    let first = w.append(entry(), b"one", BUFFERED).unwrap();
    assert_eq!(w.durable_capture().len, Offset(0));
    assert_eq!((env.fs.stats().syncs, env.fs.stats().dir_syncs), (syncs, 0));
    let durable = w.sync().unwrap();
    assert_eq!(durable.len, first.end());
    w.append(entry(), b"two", BUFFERED).unwrap();
    w.sync().unwrap();
    assert_eq!(env.fs.stats().syncs, syncs + 2);
    let synced_to: Vec<u64> = Reader::open(&tmp, ReaderOptions { vfs: env.vfs() })
        .unwrap()
        .frames(None)
        .map(|f| f.unwrap().info.synced_to.0)
        .collect();
    assert_eq!(synced_to, vec![0, first.end().0]);
    // Published by the caller: the file reads as the journal it wrote.
    env.fs.hard_link(&tmp, &env.path).unwrap();
    env.fs.remove_file(&tmp).unwrap();
    drop(w);
    env.fs.sync_dir(Path::new("/s")).unwrap();
    env.fs.crash(3);
    assert_eq!(env.payloads(), vec![b"one".to_vec(), b"two".to_vec()]);
    assert_eq!(env.reader().header().session_id.as_deref(), Some("s-1"));
}

/// `append_encoded_at` stamps the frame with the time it is given, not the writer's
/// clock (which reads 1,000 here); `append_encoded` still reads the clock. Both
/// verify and read back alike.
#[test]
fn an_encoded_append_at_a_given_time_carries_that_time() {
    let env = Env::new();
    let mut w = env.create();
    let (a, payload) = w
        .append_encoded_at(
            entry(),
            Tag([7; 16]),
            session_journal::UnixMillis(1_735_689_600_123),
            BUFFERED,
            |b| b.extend_from_slice(b"at"),
        )
        .unwrap();
    assert_eq!((a.seq, payload), (Seq(1), &b"at"[..]));
    w.append_encoded(entry(), Tag::default(), BUFFERED, |b| {
        b.extend_from_slice(b"now")
    })
    .unwrap();
    w.sync().unwrap();
    drop(w);
    let times: Vec<(u64, Vec<u8>)> = env
        .reader()
        .frames(None)
        .map(|f| f.unwrap())
        .map(|f| (f.info.time.0, f.payload))
        .collect();
    assert_eq!(
        times,
        vec![
            (1_735_689_600_123, b"at".to_vec()),
            (1_000, b"now".to_vec())
        ]
    );
}

/// The bytes of a journal of `frames` buffered appends (and a durable one) written
/// on `env`, sealed; and the reserved end seen after each buffered append.
fn reserving_run(env: &Env, frames: &[Vec<u8>]) -> (Vec<u8>, Vec<(u64, Option<u64>)>) {
    let mut w = env.create();
    let mut seen = Vec::new();
    for p in frames {
        let a = w.append(entry(), p, BUFFERED).unwrap();
        seen.push((a.end().0, env.fs.reserved_end(&env.path)));
    }
    w.close().unwrap();
    (env.bytes(), seen)
}

/// A buffered writer reserves the journal's blocks ahead of its appends (so a write
/// lands in reserved blocks and the periodic sync allocates nothing), in steps that
/// follow the journal's size but stay bounded (at most 1 MiB, or the frame, past
/// the end), and releases them when it seals: a closed journal keeps nothing past
/// its end. Durable appends reserve nothing. The bytes are those of a journal on a
/// file system without reservations.
#[test]
fn buffered_appends_reserve_blocks_ahead_and_the_seal_releases_them() {
    let frames: Vec<Vec<u8>> = (0..400)
        .map(|i| payload(i, 2_000 + (i as usize % 7) * 300))
        .collect();
    let plain = Env::new();
    let (expected, unreserved) = reserving_run(&plain, &frames);
    assert!(unreserved.iter().all(|(_, r)| r.is_none()));
    let env = Env::new();
    env.fs.allow_preallocation();
    let (bytes, seen) = reserving_run(&env, &frames);
    assert_eq!(bytes, expected);
    for (end, reserved) in &seen {
        let reserved = reserved.unwrap_or(0);
        assert!(reserved >= *end, "written to {end}, reserved to {reserved}");
        assert!(reserved - end <= 1 << 20, "{end}: {reserved}");
    }
    // Steps grow with the journal (64 KiB at first, then its size).
    let steps: std::collections::BTreeSet<u64> = seen.iter().filter_map(|s| s.1).collect();
    assert!(steps.len() >= 4, "{steps:?}");
    assert_eq!(env.fs.reserved_end(&env.path), None, "released by the seal");

    let durable = Env::new();
    durable.fs.allow_preallocation();
    let mut w = durable.create();
    w.append(entry(), b"durable", DURABLE).unwrap();
    assert_eq!(durable.fs.reserved_end(&durable.path), None);
}

/// On the real file system, a journal closed after buffered appends holds no blocks
/// past its end (where the file system reserves them at all, the seal released
/// them).
#[cfg(unix)]
#[test]
fn a_closed_journal_keeps_no_reserved_blocks_on_disk() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.jsonl");
    let mut w = Writer::create(&path, JournalId([3; 16]), CreateOptions::default()).unwrap();
    for i in 0..100 {
        w.append(entry(), &payload(i, 3_000), BUFFERED).unwrap();
    }
    w.close().unwrap();
    let m = std::fs::metadata(&path).unwrap();
    // Allocated bytes: the length rounded up to blocks, nothing like the 1 MiB
    // reserved while appending.
    assert!(
        m.blocks() * 512 < m.len() + (64 << 10),
        "{} bytes allocated for {}",
        m.blocks() * 512,
        m.len()
    );
}
