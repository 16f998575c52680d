//! Relocatable frames (issue 19, point 6): frames copied byte for byte into other
//! objects verify there by their logical offset, without re-hashing, and the journal
//! reassembled from them is the journal.

use session_journal::format::{HEADER_FRAME_OFFSET, SIGNATURE};
use session_journal::{
    FrameFault, FrameKind, JournalId, Offset, RelocatedError, TailState, verify_relocated,
};

use crate::{BUFFERED, DURABLE, Env, entry, payload};

/// One frame's place in a segment: where it is in the journal and where in the segment.
struct Placed {
    logical: u64,
    segment: usize,
    at: usize,
    len: usize,
}

/// A journal of entries of varied sizes, closed (sealed), reopened, appended to and
/// closed again: header frame, entries, two seals.
fn journal(env: &Env) -> Vec<u8> {
    let mut w = env.create();
    for i in 0..40u64 {
        let mode = if i % 7 == 0 { DURABLE } else { BUFFERED };
        w.append(entry(), &payload(i, 1 + (i as usize * 37) % 300), mode)
            .unwrap();
    }
    w.close().unwrap();
    let (mut w, _) = env.open().unwrap();
    w.append(entry(), &payload(99, 17), BUFFERED).unwrap();
    w.close().unwrap();
    env.bytes()
}

/// Every frame's `(logical offset, length)`, header frame and seals included.
fn frames(env: &Env) -> Vec<(u64, usize)> {
    let reader = env.reader();
    let mut out = vec![];
    let mut at = HEADER_FRAME_OFFSET;
    // The header frame: everything before the first entry.
    let first = reader
        .frames(None)
        .with_seals()
        .next()
        .unwrap()
        .unwrap()
        .info
        .offset
        .0;
    out.push((at, (first - at) as usize));
    for f in reader.frames(None).with_seals() {
        let info = f.unwrap().info;
        at = info.offset.0;
        out.push((at, (info.end().0 - at) as usize));
    }
    out
}

#[test]
fn frames_copied_into_segments_verify_by_logical_offset_and_reassemble_the_journal() {
    let env = Env::new();
    let bytes = journal(&env);
    let layout = frames(&env);
    // Scatter the frames over three segments, each after a junk prefix of its own
    // length, so no frame keeps its physical offset (nor its alignment).
    let mut segments: Vec<Vec<u8>> = vec![vec![0xa5; 3], vec![0x5a; 11], vec![0x00; 5]];
    let mut placed = vec![];
    for (i, &(logical, len)) in layout.iter().enumerate() {
        let segment = (i * 7 + 1) % segments.len();
        let at = segments[segment].len();
        segments[segment].extend_from_slice(&bytes[logical as usize..][..len]);
        segments[segment].push(0xee); // a separator the frame must not need
        placed.push(Placed {
            logical,
            segment,
            at,
            len,
        });
    }

    // Every frame verifies where it now lies, by its logical offset alone.
    let mut kinds = vec![];
    for p in &placed {
        let held = &segments[p.segment][p.at..][..p.len];
        let info = verify_relocated(&crate::JOURNAL, Offset(p.logical), held)
            .unwrap_or_else(|e| panic!("frame at logical {}: {e}", p.logical));
        assert_eq!(info.offset, Offset(p.logical));
        kinds.push(info.kind);
    }
    assert_eq!(
        kinds.iter().filter(|k| **k == FrameKind::SEAL).count(),
        2,
        "both seals relocate too"
    );

    // The signature and the frames in logical order are the journal, byte for byte:
    // nothing was re-hashed or rewritten.
    let mut rebuilt = SIGNATURE.to_vec();
    for p in &placed {
        rebuilt.extend_from_slice(&segments[p.segment][p.at..][..p.len]);
    }
    assert_eq!(rebuilt, bytes);
    let copy = Env::new();
    copy.set_bytes(&rebuilt);
    let (w, report) = copy.open().unwrap();
    assert_eq!(report.tail, TailState::Clean);
    assert!(report.sealed);
    assert_eq!(w.capture().last_seq.0, 41);
}

#[test]
fn a_relocated_frame_verifies_nowhere_else() {
    let env = Env::new();
    let bytes = journal(&env);
    let layout = frames(&env);
    let (logical, len) = layout[5];
    let frame = &bytes[logical as usize..][..len];
    assert!(verify_relocated(&crate::JOURNAL, Offset(logical), frame).is_ok());

    // At another frame's logical offset, or one slot later: the checks bind the offset.
    for other in [layout[6].0, logical + 8, layout[1].0] {
        match verify_relocated(&crate::JOURNAL, Offset(other), frame) {
            Err(RelocatedError::Frame {
                fault: FrameFault::HeaderCheck { .. },
                ..
            }) => {}
            other_result => panic!("at {other}: {other_result:?}"),
        }
    }
    // In another journal: the key is the journal's.
    let foreign = JournalId(*b"journal-id-0002!");
    assert!(matches!(
        verify_relocated(&foreign, Offset(logical), frame),
        Err(RelocatedError::Frame {
            fault: FrameFault::HeaderCheck { .. },
            ..
        })
    ));
    // Not 8-aligned, or before the header frame: no frame starts there.
    for bad in [0, 4, logical + 3] {
        assert_eq!(
            verify_relocated(&crate::JOURNAL, Offset(bad), frame),
            Err(RelocatedError::Misaligned { offset: bad })
        );
    }
    // One byte short, one byte more, one bit flipped anywhere: refused.
    assert!(matches!(
        verify_relocated(&crate::JOURNAL, Offset(logical), &frame[..len - 1]),
        Err(RelocatedError::Frame {
            fault: FrameFault::Truncated { .. },
            ..
        })
    ));
    let mut longer = frame.to_vec();
    longer.push(0);
    assert!(matches!(
        verify_relocated(&crate::JOURNAL, Offset(logical), &longer),
        Err(RelocatedError::Length { .. })
    ));
    for i in 0..len {
        let mut flipped = frame.to_vec();
        flipped[i] ^= 1 << (i % 8);
        assert!(
            verify_relocated(&crate::JOURNAL, Offset(logical), &flipped).is_err(),
            "a bit flipped in byte {i} went unnoticed"
        );
    }
    // The header frame only verifies at offset 8, and an entry never there.
    let (h_at, h_len) = layout[0];
    let header = &bytes[h_at as usize..][..h_len];
    assert!(verify_relocated(&crate::JOURNAL, Offset(HEADER_FRAME_OFFSET), header).is_ok());
    assert!(verify_relocated(&crate::JOURNAL, Offset(HEADER_FRAME_OFFSET), frame).is_err());
}
