//! Encoding frames into bytes.

use crate::format::{FRAME_MAGIC, FRAME_VERSION, padded};
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
    let mut raw = RawHeader {
        magic: FRAME_MAGIC,
        version: FRAME_VERSION,
        kind: spec.kind,
        flags: 0,
        payload_len: spec.payload.len() as u32,
        header_check: [0; 4],
        seq: spec.seq,
        synced_to: spec.synced_to,
        time_ms: spec.time_ms,
        tag: spec.tag,
        body_check: [0; 8],
    };
    let (head, body) = key.checks(spec.offset, &raw.to_bytes(), spec.payload);
    raw.header_check = head;
    raw.body_check = body;
    out.extend_from_slice(&raw.to_bytes());
    out.extend_from_slice(spec.payload);
    let pad = padded(spec.payload.len() as u64) as usize - spec.payload.len();
    out.extend_from_slice(&[0u8; 8][..pad]);
    BodyCheck(body)
}
