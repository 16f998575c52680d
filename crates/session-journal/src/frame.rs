//! The frame: a 64-byte header, the payload, zero padding to 8 bytes.
//!
//! Both checks are keyed BLAKE3 with a key derived from the journal id, over the
//! frame's file offset (not stored) and the header fields, so a frame only validates in
//! its own journal at its own offset.

use crate::format::{
    BODY_CHECK_LEN, FRAME_HEADER_LEN, FRAME_KEY_CONTEXT, HEADER_CHECK_LEN, OFF_BODY_CHECK,
    OFF_FLAGS, OFF_HEADER_CHECK, OFF_KIND, OFF_LEN, OFF_MAGIC, OFF_SEQ, OFF_SYNCED_TO, OFF_TAG,
    OFF_TIME, OFF_VERSION,
};
use crate::types::{BodyCheck, FrameKind, JournalId, Offset, Seq, Tag, UnixMillis};

/// The per-journal key of the frame checks.
#[derive(Clone)]
pub(crate) struct FrameKey([u8; 32]);

impl FrameKey {
    pub(crate) fn derive(id: &JournalId) -> Self {
        Self(blake3::derive_key(FRAME_KEY_CONTEXT, id.as_bytes()))
    }

    /// The keyed hasher after the offset and the covered header bytes.
    fn header_state(&self, offset: u64, hdr: &[u8; FRAME_HEADER_LEN]) -> blake3::Hasher {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(&offset.to_le_bytes());
        h.update(&hdr[..OFF_HEADER_CHECK]);
        h.update(&hdr[OFF_SEQ..OFF_BODY_CHECK]);
        h
    }

    /// Computes both checks; `payload` excludes padding.
    pub(crate) fn checks(
        &self,
        offset: u64,
        hdr: &[u8; FRAME_HEADER_LEN],
        payload: &[u8],
    ) -> ([u8; HEADER_CHECK_LEN], [u8; BODY_CHECK_LEN]) {
        let mut h = self.header_state(offset, hdr);
        let head = truncate::<HEADER_CHECK_LEN>(&h.finalize());
        h.update(payload);
        let body = truncate::<BODY_CHECK_LEN>(&h.finalize());
        (head, body)
    }

    /// The body check alone (one hash over offset, header fields and payload).
    pub(crate) fn body_check(
        &self,
        offset: u64,
        hdr: &[u8; FRAME_HEADER_LEN],
        payload: &[u8],
    ) -> [u8; BODY_CHECK_LEN] {
        let mut h = self.header_state(offset, hdr);
        h.update(payload);
        truncate::<BODY_CHECK_LEN>(&h.finalize())
    }

    pub(crate) fn header_check(
        &self,
        offset: u64,
        hdr: &[u8; FRAME_HEADER_LEN],
    ) -> [u8; HEADER_CHECK_LEN] {
        truncate::<HEADER_CHECK_LEN>(&self.header_state(offset, hdr).finalize())
    }
}

impl std::fmt::Debug for FrameKey {
    // Never print key material.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameKey(..)")
    }
}

fn truncate<const N: usize>(hash: &blake3::Hash) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&hash.as_bytes()[..N]);
    out
}

/// The fields of a frame header, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawHeader {
    pub(crate) magic: [u8; 4],
    pub(crate) version: u8,
    pub(crate) kind: u8,
    pub(crate) flags: u16,
    pub(crate) payload_len: u32,
    pub(crate) header_check: [u8; HEADER_CHECK_LEN],
    pub(crate) seq: u64,
    pub(crate) synced_to: u64,
    pub(crate) time_ms: u64,
    pub(crate) tag: [u8; 16],
    pub(crate) body_check: [u8; BODY_CHECK_LEN],
}

fn arr<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

impl RawHeader {
    pub(crate) fn parse(b: &[u8; FRAME_HEADER_LEN]) -> Self {
        Self {
            magic: arr(b, OFF_MAGIC),
            version: b[OFF_VERSION],
            kind: b[OFF_KIND],
            flags: u16::from_le_bytes(arr(b, OFF_FLAGS)),
            payload_len: u32::from_le_bytes(arr(b, OFF_LEN)),
            header_check: arr(b, OFF_HEADER_CHECK),
            seq: u64::from_le_bytes(arr(b, OFF_SEQ)),
            synced_to: u64::from_le_bytes(arr(b, OFF_SYNCED_TO)),
            time_ms: u64::from_le_bytes(arr(b, OFF_TIME)),
            tag: arr(b, OFF_TAG),
            body_check: arr(b, OFF_BODY_CHECK),
        }
    }

    pub(crate) fn to_bytes(self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        b[OFF_MAGIC..OFF_MAGIC + 4].copy_from_slice(&self.magic);
        b[OFF_VERSION] = self.version;
        b[OFF_KIND] = self.kind;
        b[OFF_FLAGS..OFF_FLAGS + 2].copy_from_slice(&self.flags.to_le_bytes());
        b[OFF_LEN..OFF_LEN + 4].copy_from_slice(&self.payload_len.to_le_bytes());
        b[OFF_HEADER_CHECK..OFF_HEADER_CHECK + HEADER_CHECK_LEN]
            .copy_from_slice(&self.header_check);
        b[OFF_SEQ..OFF_SEQ + 8].copy_from_slice(&self.seq.to_le_bytes());
        b[OFF_SYNCED_TO..OFF_SYNCED_TO + 8].copy_from_slice(&self.synced_to.to_le_bytes());
        b[OFF_TIME..OFF_TIME + 8].copy_from_slice(&self.time_ms.to_le_bytes());
        b[OFF_TAG..OFF_TAG + 16].copy_from_slice(&self.tag);
        b[OFF_BODY_CHECK..OFF_BODY_CHECK + BODY_CHECK_LEN].copy_from_slice(&self.body_check);
        b
    }
}

/// What a verified frame's header says (everything but the payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Where the frame starts.
    pub offset: Offset,
    /// The caller's kind byte.
    pub kind: FrameKind,
    /// The frame's sequence number.
    pub seq: Seq,
    /// The caller's 16-byte tag (zeros when unused).
    pub tag: Tag,
    /// When the writer appended it (from the writer's injected clock).
    pub time: UnixMillis,
    /// The journal length a completed sync covered when the frame was written.
    pub synced_to: Offset,
    /// Payload bytes (excluding header and padding).
    pub payload_len: u32,
    /// The frame's body check, as stored.
    pub body_check: BodyCheck,
}

impl FrameInfo {
    /// Where the next frame starts.
    pub fn end(&self) -> Offset {
        Offset(self.offset.0 + crate::format::frame_len(u64::from(self.payload_len)))
    }
}

/// A verified frame with its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The header fields.
    pub info: FrameInfo,
    /// The opaque payload bytes.
    pub payload: Vec<u8>,
}
