//! Test support that needs the journal's internals, behind the non-default `testing`
//! feature: frames forged with valid checks, and the header frame as stored.
//!
//! Everything else tests use (the simulated file system, the fuzz harness, golden
//! journals and their dump) lives in the `session-testkit` crate and goes through the
//! public API; these three functions cannot, because the frame key and the raw header
//! frame are deliberately not public. `session-testkit` enables this feature, so a
//! crate's tests get it by dev-depending on `session-testkit`.

use std::path::Path;

use crate::decode::{Expect, SCAN_CHUNK, Window, decode_at};
use crate::format::{FRAME_HEADER_LEN, HEADER_FRAME_OFFSET, MAX_HEADER_PAYLOAD};
use crate::frame::Frame;
use crate::header::read_prefix;
use crate::types::JournalId;
use crate::vfs::VfsFile;

/// Builds a 64-byte frame header for `journal` at `offset` with arbitrary fields and a
/// *valid* header check — so tests can present lengths and sequence numbers that only
/// the later bound checks can reject. The body check is left zero.
pub fn forge_frame_header(
    journal: JournalId,
    offset: u64,
    kind: u8,
    payload_len: u32,
    seq: u64,
    synced_to: u64,
) -> [u8; FRAME_HEADER_LEN] {
    let key = crate::frame::FrameKey::derive(&journal);
    let mut raw = crate::frame::RawHeader {
        magic: crate::format::FRAME_MAGIC,
        version: crate::format::FRAME_VERSION,
        kind,
        flags: 0,
        payload_len,
        header_check: [0; 4],
        seq,
        synced_to,
        time_ms: 0,
        tag: [0; 16],
        body_check: [0; 8],
    };
    raw.header_check = key.header_check(offset, &raw.to_bytes());
    raw.to_bytes()
}

/// Re-encodes a whole frame (header and payload, valid checks) for `journal` at
/// `offset` — for tests that need a well-formed frame breaking a sequencing rule.
pub fn forge_frame(
    journal: JournalId,
    offset: u64,
    kind: u8,
    seq: u64,
    synced_to: u64,
    payload: &[u8],
) -> Vec<u8> {
    let key = crate::frame::FrameKey::derive(&journal);
    let mut out = Vec::new();
    crate::encode::encode_frame(
        &key,
        &crate::encode::FrameSpec {
            offset,
            kind,
            seq,
            synced_to,
            time_ms: 0,
            tag: [0; 16],
            payload,
        },
        &mut out,
    );
    out
}

/// A header frame (kind 1, seq 0, at offset 8, the tag = `journal`) with valid checks
/// around an arbitrary payload — for tests of header payloads this code refuses (a
/// newer format version, say).
pub fn forge_header_frame(journal: JournalId, time_ms: u64, payload: &[u8]) -> Vec<u8> {
    let key = crate::frame::FrameKey::derive(&journal);
    let mut out = Vec::new();
    crate::encode::encode_frame(
        &key,
        &crate::encode::FrameSpec {
            offset: crate::format::HEADER_FRAME_OFFSET,
            kind: crate::format::KIND_HEADER,
            seq: 0,
            synced_to: 0,
            time_ms,
            tag: journal.0,
            payload,
        },
        &mut out,
    );
    out
}

/// The header frame of the journal in `file` (`len` bytes long) as stored: its fields
/// (the tag is the journal id; the kind, not an entry kind, reads as
/// [`FrameKind::FIRST_CALLER`](crate::FrameKind::FIRST_CALLER)) and its payload verbatim. `None` if
/// the signature or the header frame does not decode; `path` only names the file.
pub fn header_frame(file: &dyn VfsFile, path: &Path, len: u64) -> Option<Frame> {
    let prefix = read_prefix(file, path, len).ok()?;
    let mut win = Window::new(file, len, SCAN_CHUNK);
    let d = decode_at(
        &mut win,
        &prefix.key,
        HEADER_FRAME_OFFSET,
        Expect::HeaderFrame,
        MAX_HEADER_PAYLOAD,
    )
    .ok()?;
    Some(Frame {
        info: d.info(HEADER_FRAME_OFFSET),
        payload: d.payload.to_vec(),
    })
}
