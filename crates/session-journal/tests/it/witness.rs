//! Opening with a trusted prefix (a `Witness` from the index): only the bytes after
//! it are verified, and a witness that does not match is ignored.

use session_journal::{
    Durability, Offset, OpenOptions, TailState, Witness, WitnessOutcome, Writer,
};

use crate::{Env, entry, payload};

/// A journal of `n` durable frames and the witness of its first `k`.
fn journal(n: u64, k: u64) -> (Env, Witness, Vec<Vec<u8>>) {
    let env = Env::new();
    let mut w = env.create();
    let mut payloads = Vec::new();
    let mut witness = None;
    for i in 0..n {
        let p = payload(i, 100 + (i as usize * 37) % 900);
        let a = w.append(entry(), &p, Durability::Durable).unwrap();
        if i + 1 == k {
            witness = Some(Witness {
                frame: a.offset,
                seq: a.seq,
                body_check: a.body_check,
                end: a.end(),
            });
        }
        payloads.push(p);
    }
    drop(w);
    (env, witness.expect("k <= n"), payloads)
}

fn open_with(env: &Env, w: Witness) -> (Writer, session_journal::RecoveryReport) {
    Writer::open(
        &env.path,
        OpenOptions {
            trusted: Some(w),
            ..env.open_opts()
        },
    )
    .unwrap()
}

#[test]
fn an_accepted_witness_verifies_only_the_tail_and_ends_like_a_full_open() {
    let (env, w, payloads) = journal(40, 25);
    let (full_writer, full) = env.open().unwrap();
    let data_start = full_writer.data_start();
    drop(full_writer);
    let (mut writer, report) = open_with(&env, w);
    assert_eq!(report.witness, WitnessOutcome::Accepted);
    assert_eq!(report.verified_from, w.end);
    assert_eq!(full.witness, WitnessOutcome::NotOffered);
    assert_eq!(full.verified_from, data_start);
    assert_eq!(
        (report.frames, report.last_seq, report.end),
        (full.frames, full.last_seq, full.end)
    );
    assert_eq!(report.last_frame, full.last_frame);
    assert_eq!(report.tail, TailState::Clean);
    writer
        .append(entry(), b"after", Durability::Durable)
        .unwrap();
    drop(writer);
    let mut expected = payloads;
    expected.push(b"after".to_vec());
    assert_eq!(env.payloads(), expected);
}

#[test]
fn a_witness_at_the_end_verifies_nothing_and_still_appends() {
    let (env, w, _) = journal(10, 10);
    let (mut writer, report) = open_with(&env, w);
    assert_eq!(report.witness, WitnessOutcome::Accepted);
    assert_eq!(report.verified_from, report.end);
    assert_eq!(report.frames, 10);
    let a = writer.append(entry(), b"x", Durability::Durable).unwrap();
    assert_eq!(a.seq.0, 11);
}

#[test]
fn a_witness_that_does_not_match_is_rejected_and_the_whole_journal_verified() {
    let (env, w, _) = journal(12, 6);
    let (_, full) = env.open().unwrap();
    let bad = [
        Witness {
            body_check: session_journal::BodyCheck([0; 8]),
            ..w
        },
        Witness {
            seq: session_journal::Seq(w.seq.0 + 1),
            ..w
        },
        Witness {
            end: Offset(w.end.0 + 8),
            ..w
        },
        Witness {
            frame: Offset(w.frame.0 + 8),
            ..w
        },
        Witness {
            end: Offset(1 << 40),
            ..w
        },
    ];
    for b in bad {
        let (writer, report) = open_with(&env, b);
        assert!(
            matches!(report.witness, WitnessOutcome::Rejected(_)),
            "{b:?}: {:?}",
            report.witness
        );
        assert_eq!((report.frames, report.end), (full.frames, full.end));
        drop(writer);
    }
}

#[test]
fn a_torn_tail_after_the_trusted_prefix_is_still_repaired() {
    let (env, w, payloads) = journal(8, 8);
    let mut bytes = env.bytes();
    let cut = bytes.len();
    bytes.extend_from_slice(&[0x89, b'J', b'F', b'1', 1, 0x10, 0, 0, 9, 9]);
    env.set_bytes(&bytes);
    let (_, report) = open_with(&env, w);
    assert_eq!(report.witness, WitnessOutcome::Accepted);
    assert!(
        matches!(report.tail, TailState::TornTail { offset, .. } if offset.0 == cut as u64),
        "{:?}",
        report.tail
    );
    assert_eq!(env.payloads(), payloads);
}

/// The documented limit: damage inside a trusted prefix is not found at open, but
/// no read ever returns the damaged frame, and a full open still refuses it.
#[test]
fn damage_inside_the_trusted_prefix_is_caught_by_reads_and_by_a_full_open() {
    let (env, w, _) = journal(20, 20);
    let reader = env.reader();
    let victim = reader.frames(None).nth(5).unwrap().unwrap().info;
    let mut bytes = env.bytes();
    bytes[victim.offset.0 as usize + 64 + 3] ^= 0x10;
    env.set_bytes(&bytes);
    let (writer, report) = open_with(&env, w);
    assert_eq!(report.witness, WitnessOutcome::Accepted);
    drop(writer);
    assert!(env.reader().read_frame_at(victim.offset).is_err());
    assert!(
        matches!(env.open(), Err(session_journal::OpenError::Corrupt { offset, .. }) if offset == victim.offset)
    );
}
