//! The sealed close (format version 2): a clean close writes a seal frame, so damage
//! to any synced frame of a closed journal is corruption, never a torn tail to cut.

use session_journal::{Appended, OpenError, TailState, VerifyOptions, salvage, verify};

use crate::{BUFFERED, DURABLE, Env, entry, payload};

/// A journal of `n` buffered entries, closed: `(entries, their payloads, the bytes)`.
fn sealed(env: &Env, n: u64) -> (Vec<Appended>, Vec<Vec<u8>>, Vec<u8>) {
    let mut w = env.create();
    let payloads: Vec<Vec<u8>> = (0..n).map(|i| payload(i, 5 + 3 * i as usize)).collect();
    let frames: Vec<Appended> = payloads
        .iter()
        .map(|p| w.append(entry(), p, BUFFERED).unwrap())
        .collect();
    w.close().unwrap();
    (frames, payloads, env.bytes())
}

fn verify_opts(env: &Env) -> VerifyOptions {
    env.verify_opts()
}

#[test]
fn a_clean_close_ends_the_journal_with_a_seal() {
    let env = Env::new();
    let (frames, payloads, bytes) = sealed(&env, 3);
    let last_end = frames.last().unwrap().end().get() as usize;
    assert!(
        bytes.len() > last_end,
        "a closed journal ends with a seal after its last entry"
    );
    // Readers see the entries only.
    assert_eq!(env.payloads(), payloads);
    let v = verify(&env.path, &verify_opts(&env)).unwrap();
    assert_eq!(v.frames, 3);
    assert!(v.sealed);
    assert_eq!(v.torn_tail, None);
    let s = salvage(&env.path, &verify_opts(&env)).unwrap();
    assert_eq!(s.frames.len(), 3);
    assert!(s.gaps.is_empty());
    // A reopen finds it sealed and clean; closing again without appends adds nothing.
    let (w, report) = env.open().unwrap();
    assert!(report.sealed);
    assert_eq!(report.tail, TailState::Clean);
    assert_eq!(report.frames, 3);
    w.close().unwrap();
    assert_eq!(env.bytes(), bytes);
}

/// Every bit of every byte of the last three frames (two entries and the seal) of a
/// sealed journal: corruption at that frame, nothing modified, never a torn tail.
#[test]
fn flipped_bits_in_the_last_three_frames_of_a_sealed_journal_are_corruption() {
    let env = Env::new();
    let (frames, payloads, clean) = sealed(&env, 4);
    let seal_at = frames[3].end().get() as usize;
    assert!(clean.len() > seal_at, "no seal");
    let regions = [
        (
            frames[2].offset.get() as usize,
            frames[2].end().get() as usize,
            2usize,
        ),
        (frames[3].offset.get() as usize, seal_at, 3),
        (seal_at, clean.len(), 4),
    ];
    for (start, end, k) in regions {
        for byte in start..end {
            for bit in 0..8 {
                let mut bytes = clean.clone();
                bytes[byte] ^= 1 << bit;
                env.set_bytes(&bytes);
                match env.open() {
                    Err(OpenError::Corrupt { offset, .. }) => {
                        assert_eq!(offset.get() as usize, start, "byte {byte} bit {bit}");
                    }
                    other => panic!("byte {byte} bit {bit}: expected corruption, got {other:?}"),
                }
                assert_eq!(env.bytes(), bytes, "byte {byte} bit {bit}: modified");
                assert!(
                    matches!(
                        verify(&env.path, &verify_opts(&env)),
                        Err(OpenError::Corrupt { .. })
                    ),
                    "byte {byte} bit {bit}: verify"
                );
                let seen: Vec<Vec<u8>> = env
                    .reader()
                    .frames(None)
                    .map(|x| x.unwrap().payload)
                    .collect();
                assert_eq!(seen, payloads[..k.min(4)], "byte {byte} bit {bit}");
            }
        }
    }
}

/// A close cut at every byte of its seal (the crash came before the seal was whole)
/// is a torn tail back to the unsealed journal, which then appends and closes.
#[test]
fn a_close_cut_inside_its_seal_is_a_torn_tail_back_to_the_unsealed_journal() {
    let env = Env::new();
    let (frames, payloads, clean) = sealed(&env, 3);
    let seal_at = frames[2].end().get() as usize;
    assert!(clean.len() > seal_at, "no seal");
    for cut in seal_at..clean.len() {
        env.set_bytes(&clean[..cut]);
        let (mut w, report) = env.open().unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        assert!(!report.sealed, "cut {cut}");
        assert_eq!(report.frames, 3, "cut {cut}");
        if cut == seal_at {
            assert_eq!(report.tail, TailState::Clean);
        } else {
            match &report.tail {
                TailState::TornTail { offset, bytes, .. } => {
                    assert_eq!(offset.get() as usize, seal_at, "cut {cut}");
                    assert_eq!(*bytes as usize, cut - seal_at, "cut {cut}");
                }
                other => panic!("cut {cut}: expected a torn tail, got {other:?}"),
            }
        }
        assert_eq!(env.bytes(), clean[..seal_at], "cut {cut}");
        assert_eq!(env.payloads(), payloads);
        w.append(entry(), b"after the cut", DURABLE).unwrap();
        w.close().unwrap();
        let (_w, report) = env.open().unwrap();
        assert!(report.sealed);
        assert_eq!(report.frames, 4);
        remove_torn_copies(&env);
    }
}

/// Appends after reopening a sealed journal follow the seal; a torn tail after them
/// repairs to the seal or later, never before it.
#[test]
fn a_torn_tail_after_a_seal_repairs_to_the_seal_or_later() {
    let env = Env::new();
    let (frames, payloads, _) = sealed(&env, 2);
    let seal_at = frames[1].end().get();
    let (mut w, _) = env.open().unwrap();
    let more: Vec<Vec<u8>> = (10..13).map(|i| payload(i, 40)).collect();
    let after: Vec<Appended> = more
        .iter()
        .map(|p| w.append(entry(), p, BUFFERED).unwrap())
        .collect();
    assert!(after[0].offset.get() > seal_at, "appends follow the seal");
    drop(w);
    let full = env.bytes();
    let seal_end = after[0].offset.get() as usize;
    for cut in seal_end..full.len() {
        env.set_bytes(&full[..cut]);
        let (_w, report) = env.open().unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        let end = report.end.get() as usize;
        assert!(
            end >= seal_end && end <= cut,
            "cut {cut}: repaired to {end}"
        );
        let got = env.payloads();
        assert_eq!(got[..2], payloads[..], "cut {cut}");
        assert_eq!(got[2..], more[..got.len() - 2], "cut {cut}");
        remove_torn_copies(&env);
    }
}

fn remove_torn_copies(env: &Env) {
    for q in env.fs.list() {
        if q.to_string_lossy().contains(".torn-") {
            env.remove(&q);
        }
    }
}

/// Readers skip seals; `with_seals` and a point read at a seal's offset report one with
/// the seal kind; callers cannot append the seal kind.
#[test]
fn readers_skip_seals_unless_asked_and_callers_cannot_append_one() {
    use session_journal::{AppendError, FrameKind};

    let env = Env::new();
    let (frames, payloads, _) = sealed(&env, 2);
    let (mut w, _) = env.open().unwrap();
    w.append(entry(), b"third", DURABLE).unwrap();
    assert!(matches!(
        w.append(FrameKind::SEAL, b"x", DURABLE),
        Err(AppendError::ReservedKind { kind: 2, .. })
    ));
    assert!(!w.is_poisoned());
    w.close().unwrap();
    let r = env.reader();
    let all: Vec<_> = r.frames(None).with_seals().map(|f| f.unwrap()).collect();
    let kinds: Vec<bool> = all.iter().map(|f| f.info.kind.is_seal()).collect();
    assert_eq!(kinds, [false, false, true, false, true]);
    let seqs: Vec<u64> = all.iter().map(|f| f.info.seq.get()).collect();
    assert_eq!(
        seqs,
        [1, 2, 2, 3, 3],
        "a seal repeats the seq of the entry before it"
    );
    let mut want = payloads.clone();
    want.push(b"third".to_vec());
    assert_eq!(env.payloads(), want);
    let seal = r.read_frame_at(frames[1].end()).unwrap();
    assert_eq!(seal.info.kind, FrameKind::SEAL);
    assert_eq!(r.verify_frame_at(frames[1].end()).unwrap().seq.get(), 2);
}

/// A writer opened with a trusted prefix whose last frame is the seal (what an index
/// of a closed journal claims) verifies nothing before it, then appends and seals.
#[test]
fn a_seal_is_a_witness_for_a_trusted_open() {
    use session_journal::{OpenOptions, Witness, WitnessOutcome};

    let env = Env::new();
    let (frames, _, bytes) = sealed(&env, 3);
    let seal = env.reader().verify_frame_at(frames[2].end()).unwrap();
    let w = Witness {
        frame: seal.offset,
        seq: seal.seq,
        body_check: seal.body_check,
        end: seal.end(),
    };
    assert_eq!(w.end.get() as usize, bytes.len());
    let (mut writer, report) = session_journal::Writer::open(
        &env.path,
        OpenOptions {
            trusted: Some(w),
            ..env.open_opts()
        },
    )
    .unwrap();
    assert_eq!(report.witness, WitnessOutcome::Accepted);
    assert!(report.sealed);
    assert_eq!(report.frames, 3);
    let a = writer.append(entry(), b"next", BUFFERED).unwrap();
    assert_eq!(a.seq.get(), 4);
    assert_eq!(a.offset, w.end);
    writer.close().unwrap();
    let (_w, report) = env.open().unwrap();
    assert!(report.sealed);
    assert_eq!(report.frames, 4);
}

/// A seal that passes its checks but is not the seal belonging at its offset (here:
/// one naming another frame) is corruption, not a torn tail.
#[test]
fn a_forged_seal_that_does_not_match_its_journal_is_corruption() {
    let env = Env::new();
    let (frames, _, bytes) = sealed(&env, 2);
    let at = frames[1].end().get();
    let mut wrong = session_journal::testing::forge_frame(
        crate::JOURNAL,
        at,
        session_journal::format::KIND_SEAL,
        2,
        at,
        &[0u8; 24],
    );
    assert_eq!(wrong.len(), bytes.len() - at as usize);
    let mut forged = bytes[..at as usize].to_vec();
    forged.append(&mut wrong);
    env.set_bytes(&forged);
    match env.open() {
        Err(OpenError::Corrupt { offset, fault, .. }) => {
            assert_eq!(offset.get(), at);
            assert_eq!(fault, session_journal::FrameFault::SealMismatch);
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Power loss in the middle of a close: the seal was written (handed to the OS) but
/// its sync never returned, so the simulated file system applies, drops, tears,
/// zero-fills, garbles or sector-mixes it. Every outcome opens with every entry; the
/// seal survives whole or is cut as a torn tail. The one ambiguous shape — a garbled
/// byte range that leaves the seal with a few flipped bits, which is what bit rot
/// looks like — is refused as a damaged seal (`DamagedSeal`), never cut; the count of
/// such seeds is printed (`JOURNAL_SEAL_CRASH_SEEDS`, default 2,000).
#[test]
fn power_loss_during_a_close_opens_with_every_entry() {
    use session_journal::vfs::{OpenMode, Vfs};
    use session_journal::{FrameFault, RecoveryMode};

    let env = Env::new();
    let (frames, payloads, sealed_bytes) = sealed(&env, 3);
    let seal_at = frames[2].end().get() as usize;
    let seeds = crate::scale(2_000, "JOURNAL_SEAL_CRASH_SEEDS");
    let (mut whole, mut torn, mut damaged) = (0u64, 0u64, 0u64);
    for seed in 0..seeds {
        let env = Env::new();
        env.set_bytes(&sealed_bytes[..seal_at]);
        let f = env.fs.open(&env.path, OpenMode::ReadWrite).unwrap();
        f.write_all_at(seal_at as u64, &sealed_bytes[seal_at..])
            .unwrap();
        drop(f);
        env.fs.crash(seed);
        match env.open() {
            Ok((_w, report)) => {
                if report.sealed {
                    whole += 1;
                } else {
                    torn += 1;
                }
                assert_eq!(env.payloads(), payloads, "seed {seed}");
            }
            Err(OpenError::Corrupt {
                offset,
                fault: FrameFault::DamagedSeal { .. },
                ..
            }) => {
                assert_eq!(offset.get() as usize, seal_at, "seed {seed}");
                damaged += 1;
                // Nothing is lost: an explicit repair cuts the seal.
                let (_w, _) = session_journal::Writer::open(
                    &env.path,
                    session_journal::OpenOptions {
                        recovery: RecoveryMode::PointInTime,
                        ..env.open_opts()
                    },
                )
                .unwrap();
                assert_eq!(env.payloads(), payloads, "seed {seed}");
            }
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    println!(
        "power loss mid-close: {seeds} seeds, seal whole {whole}, cut {torn}, refused as damaged {damaged}"
    );
    assert!(whole > 0 && torn > 0);
}
