//! The seal: the frame a clean close writes (format version 2).
//!
//! A seal is written after a sync, so its `synced_to` is its own offset: while it
//! validates, every frame before it is provably durable, and damage to any of them
//! is corruption (the evidence rule of recovery). Every byte of a seal is determined
//! by the journal before it — kind, `seq` (the last entry's: a seal takes no sequence
//! number), `synced_to` and payload (its own offset), `time_ms` (the time of the frame
//! it follows), a zero tag, the entry count and the body check of the frame it
//! follows — so recovery can tell a seal damaged in place (a few flipped bits: bit
//! rot, corruption) from a seal whose write was cut short (a torn tail).

use crate::decode::Decoded;
use crate::encode::{FrameSpec, encode_frame};
use crate::error::FrameFault;
use crate::format::{KIND_SEAL, SEAL_DAMAGE_BITS, SEAL_FRAME_LEN, SEAL_PAYLOAD_LEN};
use crate::frame::FrameKey;
use crate::types::{Offset, Seq};

/// The last valid frame as far as sequencing needs it: what the next frame must
/// continue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prev {
    /// The last entry's seq (0: none; a seal repeats it).
    pub(crate) seq: u64,
    /// Its `synced_to`.
    pub(crate) synced_to: u64,
    /// Its `time_ms` (what a seal after it carries).
    pub(crate) time_ms: u64,
    /// Its body check (what a seal after it names).
    pub(crate) check: [u8; 8],
}

/// The payload of the seal at `offset` after `prev`.
pub(crate) fn seal_payload(prev: &Prev, offset: u64) -> [u8; SEAL_PAYLOAD_LEN as usize] {
    let mut p = [0u8; SEAL_PAYLOAD_LEN as usize];
    p[..8].copy_from_slice(&prev.seq.to_le_bytes());
    p[8..16].copy_from_slice(&offset.to_le_bytes());
    p[16..].copy_from_slice(&prev.check);
    p
}

/// The seal frame that belongs at `offset` after `prev`, encoded (appended to `out`);
/// returns its body check.
pub(crate) fn encode_seal(
    key: &FrameKey,
    prev: &Prev,
    offset: u64,
    out: &mut Vec<u8>,
) -> crate::types::BodyCheck {
    let payload = seal_payload(prev, offset);
    encode_frame(
        key,
        &FrameSpec {
            offset,
            kind: KIND_SEAL,
            seq: prev.seq,
            synced_to: offset,
            time_ms: prev.time_ms,
            tag: [0; 16],
            payload: &payload,
        },
        out,
    )
}

/// The sequencing rules of a frame that passed its checks at `offset`, after `prev`.
///
/// An entry: `seq` = previous + 1, `synced_to` between the previous frame's and its
/// own offset. A seal: exactly the seal that belongs there (same `seq`, `synced_to`
/// its own offset, the time of the frame it follows, zero tag, the payload above).
pub(crate) fn check_sequence(d: &Decoded<'_>, offset: u64, prev: &Prev) -> Result<(), FrameFault> {
    if d.raw.kind == KIND_SEAL {
        if d.raw.seq != prev.seq {
            return Err(FrameFault::SeqOutOfOrder {
                expected: Seq(prev.seq),
                found: Seq(d.raw.seq),
            });
        }
        if d.raw.synced_to != offset {
            return Err(FrameFault::BadSyncedTo {
                found: Offset(d.raw.synced_to),
            });
        }
        if d.raw.time_ms != prev.time_ms
            || d.raw.tag != [0; 16]
            || d.payload != seal_payload(prev, offset)
        {
            return Err(FrameFault::SealMismatch);
        }
        return Ok(());
    }
    if d.raw.seq != prev.seq + 1 {
        return Err(FrameFault::SeqOutOfOrder {
            expected: Seq(prev.seq + 1),
            found: Seq(d.raw.seq),
        });
    }
    if d.raw.synced_to > offset || d.raw.synced_to < prev.synced_to {
        return Err(FrameFault::BadSyncedTo {
            found: Offset(d.raw.synced_to),
        });
    }
    Ok(())
}

/// The state after a frame that passed [`check_sequence`] (`info` is that frame).
pub(crate) fn advance(prev: &Prev, info: &crate::frame::FrameInfo) -> Prev {
    Prev {
        seq: if info.kind.is_seal() {
            prev.seq
        } else {
            info.seq.0
        },
        synced_to: info.synced_to.0,
        time_ms: info.time.0,
        check: info.body_check.0,
    }
}

/// If `tail` (the bytes from `offset` to the end of the file) is the seal expected at
/// `offset` with a few bits flipped — 1 to [`SEAL_DAMAGE_BITS`], no two in one byte —
/// the number of flipped bits. A torn write leaves a shorter file, zeros or garbage
/// over whole ranges; bit rot leaves the frame's length and most of its bits.
pub(crate) fn damaged_seal_bits(
    key: &FrameKey,
    prev: &Prev,
    offset: u64,
    tail: &[u8],
) -> Option<u32> {
    if tail.len() as u64 != SEAL_FRAME_LEN {
        return None;
    }
    let mut expected = Vec::with_capacity(SEAL_FRAME_LEN as usize);
    encode_seal(key, prev, offset, &mut expected);
    let mut bits = 0u32;
    for (a, e) in tail.iter().zip(&expected) {
        let d = (a ^ e).count_ones();
        if d > 1 {
            return None;
        }
        bits += d;
    }
    (1..=SEAL_DAMAGE_BITS).contains(&bits).then_some(bits)
}
