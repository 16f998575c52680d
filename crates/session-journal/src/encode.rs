//! Encoding frames into bytes.

use crate::format::{FRAME_HEADER_LEN, FRAME_MAGIC, FRAME_VERSION, padded};
use crate::frame::{FrameKey, RawHeader};
use crate::types::BodyCheck;

/// The header fields a frame is written with.
pub(crate) struct FrameSpec<'a> {
    pub(crate) offset: u64,
    pub(crate) kind: u8,
    pub(crate) seq: u64,
    pub(crate) synced_to: u64,
    pub(crate) time_ms: u64,
    pub(crate) tag: [u8; 16],
    pub(crate) payload: &'a [u8],
}

/// Appends the encoded frame (header, payload, padding) to `out`; returns its body
/// check. The payload length must already be validated against the journal's maximum.
pub(crate) fn encode_frame(key: &FrameKey, spec: &FrameSpec<'_>, out: &mut Vec<u8>) -> BodyCheck {
    let at = out.len();
    out.extend_from_slice(&[0u8; FRAME_HEADER_LEN]);
    out.extend_from_slice(spec.payload);
    seal_frame(key, spec, out, at)
}

/// Completes a frame built in place: `out[at..at + 64]` is room for the header and
/// everything after it is the payload (`spec.payload` is ignored). Writes the header
/// with both checks and the zero padding; returns the body check. The payload length
/// must already be validated against the journal's maximum.
///
/// This is how a caller's payload is encoded straight into the writer's buffer, with
/// no copy; [`encode_frame`] is the same path for a payload held elsewhere, so both
/// produce the same bytes by construction.
pub(crate) fn seal_frame(
    key: &FrameKey,
    spec: &FrameSpec<'_>,
    out: &mut Vec<u8>,
    at: usize,
) -> BodyCheck {
    let payload_start = at + FRAME_HEADER_LEN;
    let payload_len = out.len() - payload_start;
    let mut raw = RawHeader {
        magic: FRAME_MAGIC,
        version: FRAME_VERSION,
        kind: spec.kind,
        flags: 0,
        payload_len: payload_len as u32,
        header_check: [0; 4],
        seq: spec.seq,
        synced_to: spec.synced_to,
        time_ms: spec.time_ms,
        tag: spec.tag,
        body_check: [0; 8],
    };
    let (head, body) = key.checks(spec.offset, &raw.to_bytes(), &out[payload_start..]);
    raw.header_check = head;
    raw.body_check = body;
    out[at..payload_start].copy_from_slice(&raw.to_bytes());
    let pad = padded(payload_len as u64) as usize - payload_len;
    out.extend_from_slice(&[0u8; 8][..pad]);
    BodyCheck(body)
}
