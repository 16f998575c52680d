//! Frames held outside their journal file, verified by their logical position.
//!
//! A frame's checks bind it to its journal (the key is derived from the journal id) and
//! to its **logical offset**: where it sits in the journal's byte stream. That offset
//! is a logical position, not a physical one — it is fixed by the frames before it
//! (`8 + Σ frame lengths`), exactly as a `seq` is, and unlike a `seq` it names one frame
//! even where a seal repeats its predecessor's `seq` (`docs/format.md` §2.8). Nothing
//! binds a frame to the file it was first written to, so a storage backend may copy
//! frames byte for byte into other files or objects (segments on object storage) and
//! verify them there with [`verify_relocated`], without re-hashing, as long as it keeps
//! each frame's logical offset beside it. Concatenating the signature and the frames
//! in logical order gives back the journal, byte for byte. Why the checks bind to the
//! logical offset rather than to the `seq` alone is argued in `docs/format.md` §2.9.

use crate::decode::{Expect, check_body, check_header};
use crate::error::FrameFault;
use crate::format::{
    FRAME_ALIGN, FRAME_HEADER_LEN, HEADER_FRAME_OFFSET, MAX_HEADER_PAYLOAD, MAX_PAYLOAD_CAP,
    frame_len,
};
use crate::frame::{FrameInfo, FrameKey};
use crate::types::{JournalId, Offset};

/// Why a relocated frame did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelocatedError {
    /// No frame can start at this logical offset (below the header frame or not a
    /// multiple of 8).
    #[error("logical offset {offset} cannot start a frame (expected a multiple of 8, at least 8)")]
    Misaligned {
        /// The logical offset given.
        offset: u64,
    },
    /// The bytes are not exactly one frame: header, payload and padding.
    #[error("frame at logical offset {offset}: {found} bytes given, its header says {expected}")]
    Length {
        /// The logical offset given.
        offset: u64,
        /// The frame's length from its verified header.
        expected: u64,
        /// The bytes given.
        found: u64,
    },
    /// The frame fails a check at this logical offset in this journal (damaged, from
    /// another journal, or presented at another position).
    #[error("frame at logical offset {offset} does not verify: {fault}")]
    Frame {
        /// The logical offset given.
        offset: u64,
        /// What failed.
        fault: FrameFault,
    },
}

/// Verifies one frame held anywhere (`bytes`: exactly its header, payload and padding)
/// as the frame at `logical_offset` of journal `id`: magic, both keyed checks, version,
/// flags, kind (the header frame at offset 8, an entry or a seal elsewhere), length and
/// zero padding. Sequencing (`seq`, `synced_to`, a seal's content) is a property of the
/// frames around it and is checked when the journal is read back in logical order.
/// Nothing is allocated; the bytes are hashed once, as a read of the journal would.
pub fn verify_relocated(
    id: &JournalId,
    logical_offset: Offset,
    bytes: &[u8],
) -> Result<FrameInfo, RelocatedError> {
    let offset = logical_offset.0;
    if offset < HEADER_FRAME_OFFSET || !offset.is_multiple_of(FRAME_ALIGN) {
        return Err(RelocatedError::Misaligned { offset });
    }
    let frame = |fault| RelocatedError::Frame { offset, fault };
    let found = bytes.len() as u64;
    let Some(head) = bytes.first_chunk::<FRAME_HEADER_LEN>() else {
        return Err(frame(FrameFault::Truncated {
            needed: FRAME_HEADER_LEN as u64,
            available: found,
        }));
    };
    let (expect, max_payload) = if offset == HEADER_FRAME_OFFSET {
        (Expect::HeaderFrame, MAX_HEADER_PAYLOAD)
    } else {
        (Expect::Entry, MAX_PAYLOAD_CAP)
    };
    let key = FrameKey::derive(id);
    // The bound is where the given bytes end, as if they lay at their logical offset.
    let raw =
        check_header(&key, offset, head, expect, max_payload, offset + found).map_err(frame)?;
    let expected = frame_len(u64::from(raw.payload_len));
    if expected != found {
        return Err(RelocatedError::Length {
            offset,
            expected,
            found,
        });
    }
    check_body(&key, offset, head, &raw, &bytes[FRAME_HEADER_LEN..]).map_err(frame)?;
    Ok(crate::decode::Decoded {
        raw,
        payload: &bytes[FRAME_HEADER_LEN..FRAME_HEADER_LEN + raw.payload_len as usize],
    }
    .info(offset))
}
