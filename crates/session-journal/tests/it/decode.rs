//! Hostile frame headers: lengths are bounded before anything is allocated, and
//! zero-filled bytes never parse as a frame.

use session_journal::{FrameFault, Offset, ReadError, TailState};
use session_testkit::fuzz::forge_frame_header;

use crate::alloc::largest_allocation;
use crate::{BUFFERED, DURABLE, Env, JOURNAL, entry};

/// A journal with two frames; returns (env, offset of the second frame).
fn two_frames(max: u32) -> (Env, u64) {
    let env = Env::new();
    let mut w = env.create_with(max);
    w.append(entry(), b"first", DURABLE).unwrap();
    let second = w.append(entry(), b"second frame", DURABLE).unwrap();
    drop(w);
    (env, second.offset.get())
}

fn with_forged_len(env: &Env, at: u64, len: u32) {
    let mut bytes = env.bytes();
    let hdr = forge_frame_header(JOURNAL, at, 0x10, len, 2, at);
    bytes[at as usize..at as usize + 64].copy_from_slice(&hdr);
    env.set_bytes(&bytes);
}

#[test]
fn hostile_lengths_are_rejected_without_allocating_them() {
    let max = 64 << 20;
    type Expected = fn(&FrameFault) -> bool;
    let cases: [(u32, Expected); 5] = [
        (0, |f| matches!(f, FrameFault::ZeroLength)),
        (max + 1, |f| matches!(f, FrameFault::TooLong { .. })),
        (u32::MAX, |f| matches!(f, FrameFault::TooLong { .. })),
        (u32::MAX - 7, |f| matches!(f, FrameFault::TooLong { .. })),
        (max, |f| matches!(f, FrameFault::Truncated { .. })), // past the end of the file
    ];
    for (len, expected) in cases {
        let (env, at) = two_frames(max);
        with_forged_len(&env, at, len);
        let reader = env.reader();
        let (r, largest) = largest_allocation(|| reader.read_frame_at(Offset(at)));
        match r {
            Err(ReadError::Invalid { fault, offset, .. }) => {
                assert_eq!(offset, Offset(at));
                assert!(expected(&fault), "len {len}: unexpected fault {fault:?}");
            }
            other => panic!("len {len}: expected an invalid frame, got {other:?}"),
        }
        assert!(largest < 64 * 1024, "len {len}: allocated {largest} bytes");

        // The writer's open classifies it (a torn tail: nothing proves it durable)
        // with the same bound.
        let (r, largest) = largest_allocation(|| env.open());
        let (_w, report) = r.unwrap();
        assert_eq!(report.frames, 1);
        assert!(matches!(report.tail, TailState::TornTail { .. }));
        assert!(
            largest < 2 << 20,
            "len {len}: open allocated {largest} bytes"
        );
    }
}

#[test]
fn length_past_end_in_a_journal_with_a_huge_maximum_is_not_allocated() {
    let cap = session_journal::format::MAX_PAYLOAD_CAP;
    let (env, at) = two_frames(cap);
    with_forged_len(&env, at, cap - 8);
    let reader = env.reader();
    let (r, largest) = largest_allocation(|| reader.verify_frame_at(Offset(at)));
    assert!(matches!(
        r,
        Err(ReadError::Invalid {
            fault: FrameFault::Truncated { .. },
            ..
        })
    ));
    assert!(largest < 64 * 1024, "allocated {largest} bytes");
}

#[test]
fn zero_filled_bytes_never_parse_as_a_frame() {
    let env = Env::new();
    let mut w = env.create();
    let a = w.append(entry(), b"x", BUFFERED).unwrap();
    drop(w);
    let mut bytes = env.bytes();
    let at = a.offset.get() as usize;
    for b in &mut bytes[at..] {
        *b = 0;
    }
    bytes.extend_from_slice(&[0u8; 4096]);
    env.set_bytes(&bytes);
    let r = env.reader();
    assert!(matches!(
        r.read_frame_at(a.offset),
        Err(ReadError::Invalid {
            fault: FrameFault::BadMagic {
                found: [0, 0, 0, 0]
            },
            ..
        })
    ));
    assert_eq!(r.frames(None).count(), 0);
}

#[test]
fn misaligned_and_out_of_range_offsets_are_refused() {
    let (env, at) = two_frames(1 << 20);
    let r = env.reader();
    for o in [0, 8, at + 4, at + 1_000_000] {
        assert!(matches!(
            r.read_frame_at(Offset(o)),
            Err(ReadError::OutOfRange { .. })
        ));
    }
}
