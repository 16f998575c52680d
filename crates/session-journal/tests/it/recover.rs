//! Open-time recovery: torn tails are repaired, durable damage is refused.

use session_journal::{
    Appended, FrameFault, JournalId, NewFrame, Offset, OpenError, Reader, ReaderOptions,
    RecoveryMode, Seq, TailState, VerifyOptions, salvage, verify,
};
use session_testkit::fuzz::forge_frame;
use session_testkit::sim::SimRng;

use crate::{BUFFERED, DURABLE, Env, JOURNAL, entry, payload};

/// A journal with `n` small durable frames, then one frame of `last` bytes appended
/// buffered. Returns the env, the earlier payloads and the last append.
fn journal_with_last(n: u64, last: usize) -> (Env, Vec<Vec<u8>>, Appended) {
    let env = Env::new();
    let mut w = env.create();
    let earlier: Vec<Vec<u8>> = (0..n).map(|i| payload(i, 10 + i as usize)).collect();
    for p in &earlier {
        w.append(entry(), p, DURABLE).unwrap();
    }
    let a = w.append(entry(), &payload(99, last), BUFFERED).unwrap();
    drop(w);
    (env, earlier, a)
}

fn check_torn_at(env: &Env, full: &[u8], earlier: &[Vec<u8>], start: u64, cut: usize) {
    env.set_bytes(&full[..cut]);
    let (mut w, report) = env.open().unwrap();
    assert_eq!(report.frames, earlier.len() as u64, "cut {cut}");
    assert_eq!(report.end, Offset(start));
    if cut as u64 == start {
        assert_eq!(report.tail, TailState::Clean);
    } else {
        match &report.tail {
            TailState::TornTail {
                offset,
                bytes,
                quarantine,
                ..
            } => {
                assert_eq!(*offset, Offset(start), "cut {cut}");
                assert_eq!(*bytes, cut as u64 - start);
                if let Some(q) = quarantine {
                    assert_eq!(env.fs.read_raw(q).unwrap(), full[start as usize..cut]);
                    env.remove(q);
                }
            }
            other => panic!("cut {cut}: expected a torn tail, got {other:?}"),
        }
    }
    assert_eq!(env.bytes().len() as u64, start);
    w.append(entry(), b"after", DURABLE).unwrap();
    drop(w);
    let (_w, again) = env.open().unwrap();
    assert_eq!(again.tail, TailState::Clean, "cut {cut}");
    assert_eq!(again.frames, earlier.len() as u64 + 1);
    let got = env.payloads();
    assert_eq!(got[..earlier.len()], earlier[..]);
    assert_eq!(got.last().unwrap(), b"after");
}

#[test]
fn torn_last_frame_at_every_byte_offset() {
    for size in [1usize, 100, 5 * 1024] {
        let (env, earlier, last) = journal_with_last(3, size);
        let full = env.bytes();
        let start = last.offset.get();
        for cut in start as usize..full.len() {
            check_torn_at(&env, &full, &earlier, start, cut);
        }
    }
}

/// 2 MiB, open–repair–append–reopen: every offset of the 64-byte frame header, 8
/// offsets at each end of the payload, and `JOURNAL_TORN_2MIB_SAMPLES` (default 24)
/// offsets spread evenly over the payload; `JOURNAL_TORN_2MIB_SAMPLES=all` takes every
/// offset (each repair copies the torn bytes aside, so that run is quadratic: minutes
/// in release, see docs/reliability.md). How every offset is classified is checked
/// below, in the ordinary suite.
#[test]
fn torn_last_frame_of_two_mib_repaired_at_sampled_offsets() {
    let (env, earlier, last) = journal_with_last(2, 2 << 20);
    let full = env.bytes();
    let start = last.offset.get() as usize;
    let end = full.len();
    let cuts: Vec<usize> = if std::env::var("JOURNAL_TORN_2MIB_SAMPLES").as_deref() == Ok("all") {
        (start..end).collect()
    } else {
        let mut cuts: Vec<usize> = (start..start + 64 + 8).collect();
        cuts.extend(end - 8..end);
        let samples = crate::scale(24, "JOURNAL_TORN_2MIB_SAMPLES") as usize;
        let stride = (end - start) / samples;
        cuts.extend((0..samples).map(|i| start + i * stride + i % 8));
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    };
    for cut in cuts {
        check_torn_at(&env, &full, &earlier, start as u64, cut);
    }
}

/// A read-only file system holding one file, `bytes[..len]`, with `len` settable: a
/// truncation costs nothing, so an open can be tried at every length of a large file.
/// Any attempt to write fails, which also shows the opens below never modify anything.
#[derive(Debug)]
struct PrefixFs {
    path: std::path::PathBuf,
    bytes: std::sync::Arc<Vec<u8>>,
    len: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Debug)]
struct PrefixFile {
    bytes: std::sync::Arc<Vec<u8>>,
    len: usize,
}

fn read_only() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "PrefixFs is read-only",
    )
}

impl session_journal::vfs::VfsFile for PrefixFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let from = (offset as usize).min(self.len);
        let n = buf.len().min(self.len - from);
        buf[..n].copy_from_slice(&self.bytes[from..from + n]);
        Ok(n)
    }
    fn write_all_at(&self, _: u64, _: &[u8]) -> std::io::Result<()> {
        Err(read_only())
    }
    fn len(&self) -> std::io::Result<u64> {
        Ok(self.len as u64)
    }
    fn set_len(&self, _: u64) -> std::io::Result<()> {
        Err(read_only())
    }
    fn sync_data(&self) -> std::io::Result<()> {
        Err(read_only())
    }
    fn sync_all(&self) -> std::io::Result<()> {
        Err(read_only())
    }
    fn status(&self) -> std::io::Result<session_journal::vfs::FileStatus> {
        Ok(session_journal::vfs::FileStatus {
            id: session_journal::vfs::FileId { dev: 0, ino: 1 },
            links: 1,
            len: self.len as u64,
        })
    }
    fn try_lock(&self) -> std::io::Result<bool> {
        Err(read_only())
    }
}

impl session_journal::vfs::Vfs for PrefixFs {
    fn open(
        &self,
        path: &std::path::Path,
        mode: session_journal::vfs::OpenMode,
    ) -> std::io::Result<Box<dyn session_journal::vfs::VfsFile>> {
        if path != self.path {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        if mode != session_journal::vfs::OpenMode::Read {
            return Err(read_only());
        }
        Ok(Box::new(PrefixFile {
            bytes: self.bytes.clone(),
            len: self.len.load(std::sync::atomic::Ordering::Relaxed),
        }))
    }
    fn create_dir_all(&self, _: &std::path::Path) -> std::io::Result<()> {
        Err(read_only())
    }
    fn sync_dir(&self, _: &std::path::Path) -> std::io::Result<()> {
        Err(read_only())
    }
    fn rename(&self, _: &std::path::Path, _: &std::path::Path) -> std::io::Result<()> {
        Err(read_only())
    }
    fn remove_file(&self, _: &std::path::Path) -> std::io::Result<()> {
        Err(read_only())
    }
    fn exists(&self, path: &std::path::Path) -> std::io::Result<bool> {
        Ok(path == self.path)
    }
    fn identity(
        &self,
        path: &std::path::Path,
    ) -> std::io::Result<Option<session_journal::vfs::FileId>> {
        Ok((path == self.path).then_some(session_journal::vfs::FileId { dev: 0, ino: 1 }))
    }
    fn stat(
        &self,
        path: &std::path::Path,
    ) -> std::io::Result<Option<session_journal::vfs::PathStatus>> {
        Ok(
            (path == self.path).then(|| session_journal::vfs::PathStatus {
                id: session_journal::vfs::FileId { dev: 0, ino: 1 },
                kind: session_journal::vfs::EntryKind::File,
                len: self.len.load(std::sync::atomic::Ordering::Relaxed) as u64,
                modified_ms: None,
                changed: None,
            }),
        )
    }
    fn hard_link(&self, _: &std::path::Path, _: &std::path::Path) -> std::io::Result<()> {
        Err(read_only())
    }
    fn create_temp(
        &self,
        _: &std::path::Path,
        _: &str,
    ) -> std::io::Result<(std::path::PathBuf, Box<dyn session_journal::vfs::VfsFile>)> {
        Err(read_only())
    }
    fn read_dir(
        &self,
        _: &std::path::Path,
    ) -> std::io::Result<Vec<session_journal::vfs::DirEntry>> {
        Err(std::io::ErrorKind::NotFound.into())
    }
    fn remove_dir_all(&self, _: &std::path::Path) -> std::io::Result<()> {
        Err(read_only())
    }
}

/// Every byte offset inside the last frame of 1 B, 100 B and 5 KiB, and of 2 MiB with
/// `JOURNAL_TORN_2MIB_SAMPLES=all` (otherwise its header, 4 KiB at each end of the
/// payload and every 257th offset between): `verify` — the classification a writer's
/// open performs, without repairing — yields exactly the earlier frames and a torn
/// tail at the last frame's offset, and a reader sees exactly the earlier payloads.
/// A tail cut inside a frame with an authentic header is classified from that header
/// alone; each open still reads ahead up to 4 MiB, so the full 2 MiB sweep (2.1 M
/// opens) takes minutes in release and is run on request (docs/reliability.md).
#[test]
fn torn_last_frame_classified_at_every_byte_offset() {
    let all = std::env::var("JOURNAL_TORN_2MIB_SAMPLES").as_deref() == Ok("all");
    for size in [1usize, 100, 5 * 1024, 2 << 20] {
        let (env, earlier, last) = journal_with_last(2, size);
        let full = std::sync::Arc::new(env.bytes());
        let start = last.offset.get() as usize;
        let end = full.len();
        let cuts: Vec<usize> = if size < (1 << 20) || all {
            (start..end).collect()
        } else {
            (start..end)
                .filter(|c| c - start < 4096 || end - c <= 4096 || (c - start).is_multiple_of(257))
                .collect()
        };
        classify_cuts(&env, &full, &earlier, start, &cuts);
    }
}

fn classify_cuts(
    env: &Env,
    full: &std::sync::Arc<Vec<u8>>,
    earlier: &[Vec<u8>],
    start: usize,
    cuts: &[usize],
) {
    let len = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(full.len()));
    let fs = std::sync::Arc::new(PrefixFs {
        path: env.path.clone(),
        bytes: full.clone(),
        len: len.clone(),
    });
    let opts = VerifyOptions {
        vfs: fs.clone(),
        journal_id: None,
    };
    let reader_opts = ReaderOptions { vfs: fs.clone() };
    let earlier_last = {
        len.store(start, std::sync::atomic::Ordering::Relaxed);
        verify(&env.path, &opts).unwrap().last_frame
    };
    for (i, &cut) in cuts.iter().enumerate() {
        len.store(cut, std::sync::atomic::Ordering::Relaxed);
        let report = verify(&env.path, &opts).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert_eq!(report.frames, earlier.len() as u64, "cut {cut}");
        assert_eq!(report.end, Offset(start as u64), "cut {cut}");
        assert_eq!(report.last_frame, earlier_last, "cut {cut}");
        match &report.torn_tail {
            None => assert_eq!(cut, start),
            Some((at, FrameFault::Truncated { available, .. })) => {
                assert_eq!(*at, Offset(start as u64), "cut {cut}");
                assert_eq!(*available, (cut - start) as u64);
            }
            Some(other) => panic!("cut {cut}: {other:?}"),
        }
        // The reader is bounded by the same valid prefix (checked on a sample: the
        // payload comparison would dominate the sweep and adds nothing per offset).
        if cut < start + 64 || i % 61 == 0 {
            let reader = Reader::open(&env.path, reader_opts.clone()).unwrap();
            let got: Vec<Vec<u8>> = reader.frames(None).map(|f| f.unwrap().payload).collect();
            assert_eq!(got, earlier, "cut {cut}");
        }
    }
}

#[test]
fn zero_filled_and_garbage_tails_recover_to_the_acknowledged_prefix() {
    let (env, earlier, last) = journal_with_last(3, 700);
    let full = env.bytes();
    let start = last.offset.get() as usize;
    let mut rng = SimRng::new(42);
    for cut in (start..full.len()).step_by(37) {
        for extra in [0usize, 4096, 65536] {
            for garbage in [false, true] {
                let mut bytes = full[..cut].to_vec();
                let mut tail = vec![0u8; full.len() - cut + extra];
                if garbage {
                    rng.fill(&mut tail);
                    // A valid-looking magic inside the garbage changes nothing.
                    if tail.len() >= 16 {
                        tail[8..12].copy_from_slice(&session_journal::format::FRAME_MAGIC);
                    }
                }
                bytes.extend_from_slice(&tail);
                env.set_bytes(&bytes);
                let (_w, report) = env.open().unwrap();
                assert_eq!(
                    report.frames, 3,
                    "cut {cut} extra {extra} garbage {garbage}"
                );
                assert!(matches!(report.tail, TailState::TornTail { .. }) || bytes.len() == start);
                assert_eq!(env.payloads(), earlier);
            }
        }
    }
}

#[test]
fn unsynced_batch_with_a_dropped_frame_and_later_ones_kept_is_a_torn_tail() {
    for k in 0..5usize {
        for zero in [true, false] {
            let env = Env::new();
            let mut w = env.create();
            let acked: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 30)).collect();
            for p in &acked {
                w.append(entry(), p, DURABLE).unwrap();
            }
            let batch_payloads: Vec<Vec<u8>> = (10..15).map(|i| payload(i, 300)).collect();
            let batch: Vec<NewFrame<'_>> = batch_payloads
                .iter()
                .map(|p| NewFrame::new(entry(), p))
                .collect();
            let out = w.append_batch(&batch, BUFFERED).unwrap();
            drop(w);
            // The crash lost frame k of the batch (zeros or garbage), kept the rest.
            let mut bytes = env.bytes();
            let (a, b) = (out[k].offset.get() as usize, out[k].end().get() as usize);
            if zero {
                bytes[a..b].fill(0);
            } else {
                SimRng::new(k as u64).fill(&mut bytes[a..b]);
            }
            env.set_bytes(&bytes);
            let (_w, report) = env.open().unwrap();
            assert_eq!(report.frames, 3 + k as u64);
            match report.tail {
                TailState::TornTail { offset, .. } => assert_eq!(offset, out[k].offset),
                other => panic!("expected a torn tail, got {other:?}"),
            }
            let mut expected = acked.clone();
            expected.extend(batch_payloads[..k].iter().cloned());
            assert_eq!(env.payloads(), expected);
        }
    }
}

#[test]
fn a_flipped_bit_in_a_durable_frame_is_corruption_at_its_offset() {
    let env = Env::new();
    let mut w = env.create();
    let payloads: Vec<Vec<u8>> = (0..4).map(|i| payload(i, 13 + i as usize)).collect();
    let frames: Vec<Appended> = payloads
        .iter()
        .map(|p| w.append(entry(), p, DURABLE).unwrap())
        .collect();
    drop(w);
    let clean = env.bytes();
    // Every bit of every frame that has a later frame after it.
    for (k, f) in frames[..3].iter().enumerate() {
        for byte in f.offset.get() as usize..f.end().get() as usize {
            for bit in 0..8 {
                let mut bytes = clean.clone();
                bytes[byte] ^= 1 << bit;
                env.set_bytes(&bytes);
                match env.open() {
                    Err(OpenError::Corrupt {
                        offset,
                        last_good_seq,
                        evidence,
                        ..
                    }) => {
                        assert_eq!(offset, f.offset, "byte {byte} bit {bit}");
                        assert_eq!(last_good_seq, Seq(k as u64));
                        assert!(evidence.is_some());
                    }
                    other => panic!("byte {byte} bit {bit}: expected corruption, got {other:?}"),
                }
                // Nothing was modified, and no API returns the damaged payload.
                assert_eq!(env.bytes(), bytes);
                let r = env.reader();
                assert!(r.read_frame_at(f.offset).is_err());
                let seen: Vec<Vec<u8>> = r.frames(None).map(|x| x.unwrap().payload).collect();
                assert_eq!(seen, payloads[..k]);
                if byte % 16 == 0 {
                    let s = salvage(&env.path, &env.verify_opts()).unwrap();
                    let got: Vec<&Vec<u8>> = s.frames.iter().map(|f| &f.payload).collect();
                    let want: Vec<&Vec<u8>> = payloads
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != k)
                        .map(|(_, p)| p)
                        .collect();
                    assert_eq!(got, want);
                    assert_eq!(s.gaps.len(), 1);
                    assert_eq!(s.gaps[0].start, f.offset);
                    assert_eq!(s.gaps[0].end, f.end());
                }
            }
        }
    }
}

#[test]
fn concatenated_journals_never_validate_as_frames_of_the_result() {
    let a = Env::new();
    let mut w = a.create();
    w.append(entry(), b"a-1", DURABLE).unwrap();
    w.append(entry(), b"a-2", DURABLE).unwrap();
    drop(w);
    let b = Env::new();
    let mut w = session_journal::Writer::create(
        &b.path,
        JournalId([0xbb; 16]),
        session_journal::CreateOptions {
            vfs: b.vfs(),
            ..Default::default()
        },
    )
    .unwrap();
    w.append(entry(), b"b-1", DURABLE).unwrap();
    drop(w);
    let a_len = a.bytes().len() as u64;
    let mut c = a.bytes();
    c.extend_from_slice(&b.bytes());
    let env = Env::new();
    env.set_bytes(&c);
    match env.open() {
        Err(OpenError::ForeignData {
            offset,
            signature_at,
            ..
        }) => {
            assert_eq!(offset, Offset(a_len));
            assert_eq!(signature_at, Offset(a_len));
        }
        other => panic!("expected foreign data, got {other:?}"),
    }
    assert_eq!(env.payloads(), vec![b"a-1".to_vec(), b"a-2".to_vec()]);
    let s = salvage(&env.path, &env.verify_opts()).unwrap();
    assert_eq!(s.frames.len(), 2);
    // Even the same journal appended to itself: its frames sit at other offsets.
    let mut twice = a.bytes();
    twice.extend_from_slice(&a.bytes()[8..]);
    env.set_bytes(&twice);
    assert_eq!(env.payloads().len(), 2);
    assert_eq!(
        salvage(&env.path, &env.verify_opts()).unwrap().frames.len(),
        2
    );
}

#[test]
fn frames_moved_to_another_offset_or_journal_never_validate() {
    let env = Env::new();
    let mut w = env.create();
    let f1 = w.append(entry(), b"same-size-1", DURABLE).unwrap();
    let f2 = w.append(entry(), b"same-size-2", DURABLE).unwrap();
    drop(w);
    let clean = env.bytes();
    let (a, b) = (f1.offset.get() as usize, f2.offset.get() as usize);
    let n = f1.len as usize;
    let mut swapped = clean.clone();
    swapped[a..a + n].copy_from_slice(&clean[b..b + n]);
    swapped[b..b + n].copy_from_slice(&clean[a..a + n]);
    env.set_bytes(&swapped);
    let r = env.reader();
    assert!(matches!(
        r.read_frame_at(f1.offset),
        Err(session_journal::ReadError::Invalid {
            fault: FrameFault::HeaderCheck { .. },
            ..
        })
    ));
    assert!(r.read_frame_at(f2.offset).is_err());
    assert!(
        salvage(&env.path, &env.verify_opts())
            .unwrap()
            .frames
            .is_empty()
    );

    // The same bytes at the same offset of a journal with another id.
    let other = Env::new();
    drop(
        session_journal::Writer::create(
            &other.path,
            JournalId([9; 16]),
            session_journal::CreateOptions {
                session_id: Some("s-1".into()),
                max_payload: u32::MAX >> 2,
                clock: session_journal::Clock::fixed(1_000),
                vfs: other.vfs(),
            },
        )
        .unwrap(),
    );
    let mut foreign = other.bytes();
    foreign.extend_from_slice(&clean[a..]);
    other.set_bytes(&foreign);
    assert!(other.reader().read_frame_at(f1.offset).is_err());
    assert_eq!(other.payloads().len(), 0);
}

#[test]
fn a_well_formed_frame_with_a_wrong_seq_is_corruption() {
    let env = Env::new();
    let mut w = env.create();
    let f1 = w.append(entry(), b"one", DURABLE).unwrap();
    drop(w);
    let mut bytes = env.bytes();
    let at = f1.end().get();
    bytes.extend(forge_frame(JOURNAL, at, 0x10, 5, at, b"seq five"));
    env.set_bytes(&bytes);
    assert!(matches!(
        env.open(),
        Err(OpenError::Corrupt {
            fault: FrameFault::SeqOutOfOrder { .. },
            ..
        })
    ));
    // A synced_to past the frame's own offset is impossible too.
    let mut bytes = env.bytes();
    bytes.truncate(at as usize);
    bytes.extend(forge_frame(JOURNAL, at, 0x10, 2, at + 8, b"future"));
    env.set_bytes(&bytes);
    assert!(matches!(
        env.open(),
        Err(OpenError::Corrupt {
            fault: FrameFault::BadSyncedTo { .. },
            ..
        })
    ));
    // A reserved kind from a newer writer is refused, not truncated.
    let mut bytes = env.bytes();
    bytes.truncate(at as usize);
    bytes.extend(forge_frame(JOURNAL, at, 0x05, 2, at, b"new kind"));
    env.set_bytes(&bytes);
    assert!(matches!(env.open(), Err(OpenError::Unsupported { .. })));
    assert_eq!(env.bytes(), bytes);
}

#[test]
fn recovery_modes() {
    let (env, _, last) = journal_with_last(2, 50);
    let full = env.bytes();
    let torn = &full[..full.len() - 3];
    env.set_bytes(torn);
    let strict = session_journal::OpenOptions {
        recovery: RecoveryMode::Strict,
        ..env.open_opts()
    };
    assert!(matches!(
        session_journal::Writer::open(&env.path, strict),
        Err(OpenError::TornTail { offset, .. }) if offset == last.offset
    ));
    assert_eq!(env.bytes(), torn);

    // Point-in-time: damage in a durable frame is cut away with everything after it,
    // after being copied aside.
    let env = Env::new();
    let mut w = env.create();
    let f1 = w.append(entry(), b"one", DURABLE).unwrap();
    w.append(entry(), b"two", DURABLE).unwrap();
    w.append(entry(), b"three", DURABLE).unwrap();
    drop(w);
    let mut bytes = env.bytes();
    bytes[f1.end().get() as usize + 70] ^= 1;
    env.set_bytes(&bytes);
    assert!(matches!(env.open(), Err(OpenError::Corrupt { .. })));
    let pit = session_journal::OpenOptions {
        recovery: RecoveryMode::PointInTime,
        ..env.open_opts()
    };
    let (_w, report) = session_journal::Writer::open(&env.path, pit).unwrap();
    match report.tail {
        TailState::Discarded {
            offset,
            quarantine: Some(q),
            ..
        } => {
            assert_eq!(offset, f1.end());
            assert_eq!(
                env.fs.read_raw(&q).unwrap(),
                bytes[f1.end().get() as usize..]
            );
        }
        other => panic!("expected a discarded tail, got {other:?}"),
    }
    assert_eq!(env.payloads(), vec![b"one".to_vec()]);
}

#[test]
fn torn_tails_are_copied_aside_before_truncation() {
    let (env, _, last) = journal_with_last(1, 500);
    let full = env.bytes();
    env.set_bytes(&full[..full.len() - 100]);
    let (_w, report) = env.open().unwrap();
    let TailState::TornTail {
        quarantine: Some(q),
        ..
    } = report.tail
    else {
        panic!("expected a quarantined torn tail");
    };
    assert_eq!(q.to_str().unwrap(), "/s/j.jsonl.torn-2000");
    assert_eq!(
        env.fs.read_raw(&q).unwrap(),
        full[last.offset.get() as usize..full.len() - 100]
    );
}

#[test]
fn a_long_nonzero_tail_is_suspicious_but_a_long_zero_tail_is_torn() {
    let env = Env::new();
    let mut w = env.create_with(1024);
    w.append(entry(), b"one", DURABLE).unwrap();
    drop(w);
    let clean = env.bytes();
    let mut bytes = clean.clone();
    let mut junk = vec![0u8; 9 << 20];
    SimRng::new(5).fill(&mut junk);
    bytes.extend_from_slice(&junk);
    env.set_bytes(&bytes);
    assert!(matches!(env.open(), Err(OpenError::SuspiciousTail { .. })));
    let mut bytes = clean.clone();
    bytes.extend_from_slice(&vec![0u8; 9 << 20]);
    env.set_bytes(&bytes);
    let (_w, report) = env.open().unwrap();
    assert!(matches!(
        report.tail,
        TailState::TornTail {
            quarantine: None,
            ..
        }
    ));
    assert_eq!(env.bytes(), clean);
}

#[test]
fn damaged_or_missing_headers() {
    let env = Env::new();
    drop(env.create());
    let header_only = env.bytes();
    // A crash during creation: every prefix of the header, and zero fill.
    for cut in 0..header_only.len() {
        env.set_bytes(&header_only[..cut]);
        assert!(
            matches!(env.open(), Err(OpenError::Uninitialized { .. })),
            "cut {cut}"
        );
        let mut z = header_only[..cut].to_vec();
        z.resize(header_only.len(), 0);
        if z == header_only {
            continue; // the cut only removed zero padding
        }
        env.set_bytes(&z);
        assert!(
            matches!(env.open(), Err(OpenError::Uninitialized { .. })),
            "zero {cut}"
        );
    }
    // A damaged header followed by entries is corruption.
    let mut w = {
        env.set_bytes(&header_only);
        env.open().unwrap().0
    };
    w.append(entry(), b"entry", DURABLE).unwrap();
    drop(w);
    let mut bytes = env.bytes();
    bytes[30] ^= 4;
    env.set_bytes(&bytes);
    assert!(matches!(
        env.open(),
        Err(OpenError::Corrupt {
            offset: Offset(8),
            ..
        })
    ));
    // Salvage still finds the entry through the id in the damaged header.
    let s = salvage(&env.path, &env.verify_opts()).unwrap();
    assert!(s.header.is_none());
    assert_eq!(s.frames.len(), 1);
    assert_eq!(s.frames[0].payload, b"entry");
}

#[test]
fn legacy_jsonl_and_other_files_are_not_journals() {
    let env = Env::new();
    env.set_bytes(b"{\"type\":\"session\",\"version\":3}\n");
    match env.open() {
        Err(
            e @ OpenError::NotAJournal {
                legacy_jsonl: true, ..
            },
        ) => {
            assert!(e.to_string().contains("import"), "{e}");
        }
        other => panic!("expected a legacy-jsonl refusal, got {other:?}"),
    }
    env.set_bytes(b"PK\x03\x04 a zip file");
    assert!(matches!(
        env.open(),
        Err(OpenError::NotAJournal {
            legacy_jsonl: false,
            ..
        })
    ));
}
