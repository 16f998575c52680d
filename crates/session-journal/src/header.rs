//! The signature and the header frame: the journal's identity and format version.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::decode::{Expect, check_body, check_header};
use crate::error::{FrameFault, OpenError};
use crate::format::{
    CHECKSUM_ALGORITHM, FORMAT_NAME, FORMAT_VERSION, FRAME_HEADER_LEN, FRAME_MAGIC,
    HEADER_FRAME_OFFSET, MAX_HEADER_PAYLOAD, MAX_PAYLOAD_CAP, OLDEST_FORMAT_VERSION, SIGNATURE,
    frame_len,
};
use crate::frame::{FrameKey, RawHeader};
use crate::types::{JournalId, Offset, Seq, UnixMillis};
use crate::vfs::VfsFile;

/// What the header frame says about a journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalHeader {
    /// The journal's identity; keys every frame check.
    pub journal_id: JournalId,
    /// The session this journal belongs to, if the creator recorded one (opaque).
    pub session_id: Option<String>,
    /// When the journal was created (from the creator's injected clock).
    pub created_at: UnixMillis,
    /// The largest entry payload this journal accepts.
    pub max_payload: u32,
    /// The journal format version the journal was created with (1 or 2). A version 1
    /// journal is read as it is; a version 2 writer appends the same entry frames to
    /// it and seals it at a clean close (its header frame is never rewritten).
    pub format_version: u32,
}

/// The JSON payload of the header frame. Field order is the byte order on disk.
#[derive(Serialize, Deserialize)]
struct HeaderPayload {
    format: String,
    format_version: u32,
    journal_id: String,
    #[serde(default)]
    session_id: Option<String>,
    created_at_ms: u64,
    max_payload: u32,
    checksum: String,
}

pub(crate) fn encode_header_payload(h: &JournalHeader) -> Vec<u8> {
    let p = HeaderPayload {
        format: FORMAT_NAME.to_owned(),
        format_version: h.format_version,
        journal_id: h.journal_id.to_string(),
        session_id: h.session_id.clone(),
        created_at_ms: h.created_at.0,
        max_payload: h.max_payload,
        checksum: CHECKSUM_ALGORITHM.to_owned(),
    };
    // Serialising plain strings and integers cannot fail.
    serde_json::to_vec(&p).unwrap_or_default()
}

/// A verified file prefix (signature and header frame).
#[derive(Clone)]
pub(crate) struct Prefix {
    pub(crate) header: JournalHeader,
    pub(crate) key: FrameKey,
    /// Where the first entry frame starts.
    pub(crate) data_start: u64,
    pub(crate) header_synced_to: u64,
    /// The header frame's body check and time (what a seal right after it names).
    pub(crate) header_check: [u8; 8],
    pub(crate) header_time: u64,
}

impl Prefix {
    /// The sequencing state before the first entry frame.
    pub(crate) fn start(&self) -> crate::seal::Prev {
        crate::seal::Prev {
            seq: 0,
            synced_to: self.header_synced_to,
            time_ms: self.header_time,
            check: self.header_check,
        }
    }
}

fn io_err(path: &Path, op: &'static str, offset: u64, source: std::io::Error) -> OpenError {
    OpenError::Io {
        path: path.to_path_buf(),
        op,
        offset: Some(Offset(offset)),
        source,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// True if every byte of `[from, len)` is zero.
pub(crate) fn all_zero(file: &dyn VfsFile, from: u64, len: u64) -> std::io::Result<bool> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = from;
    while at < len {
        let n = ((len - at) as usize).min(buf.len());
        file.read_exact_at(at, &mut buf[..n])?;
        if buf[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// Reads and verifies a journal's prefix: the signature, then the header frame, then
/// its payload. A file that ends (or holds only zeros) before a complete header frame
/// is an uninitialised journal: its creation never finished, so no entry exists.
pub(crate) fn read_prefix(file: &dyn VfsFile, path: &Path, len: u64) -> Result<Prefix, OpenError> {
    let uninit = || OpenError::Uninitialized {
        path: path.to_path_buf(),
        len,
    };
    if len == 0 {
        return Err(uninit());
    }
    check_signature(file, path, len)?;
    let at = HEADER_FRAME_OFFSET;
    if len < at + FRAME_HEADER_LEN as u64 {
        return Err(uninit());
    }
    let (raw, key, payload, total) = read_header_frame(file, path, len)?;
    let header = parse_header_payload(path, JournalId(raw.tag), &payload)?;
    Ok(Prefix {
        header,
        key,
        data_start: at + total,
        header_synced_to: 0,
        header_check: raw.body_check,
        header_time: raw.time_ms,
    })
}

/// The first bytes must be the signature. A correct prefix of it followed only by
/// zeros is a torn creation; text that looks like JSON is a legacy session.
fn check_signature(file: &dyn VfsFile, path: &Path, len: u64) -> Result<(), OpenError> {
    let n = len.min(SIGNATURE.len() as u64) as usize;
    let mut sig = [0u8; 8];
    file.read_exact_at(0, &mut sig[..n])
        .map_err(|e| io_err(path, "read", 0, e))?;
    if sig[..n] == SIGNATURE[..n] {
        return Ok(());
    }
    let first = sig[0];
    let legacy =
        first == b'{' || first.is_ascii_whitespace() || sig[..n.min(3)] == [0xef, 0xbb, 0xbf];
    let first_bad = sig[..n]
        .iter()
        .zip(SIGNATURE.iter())
        .position(|(a, b)| a != b)
        .unwrap_or(n) as u64;
    if !legacy && all_zero(file, first_bad, len).map_err(|e| io_err(path, "read", 0, e))? {
        return Err(OpenError::Uninitialized {
            path: path.to_path_buf(),
            len,
        });
    }
    Err(OpenError::NotAJournal {
        path: path.to_path_buf(),
        found: hex(&sig[..n]),
        legacy_jsonl: legacy,
    })
}

/// Reads and verifies the header frame (both checks, seq 0): its fields (the tag is
/// the journal id), the key the id derives, the payload, and the frame's total length.
fn read_header_frame(
    file: &dyn VfsFile,
    path: &Path,
    len: u64,
) -> Result<(RawHeader, FrameKey, Vec<u8>, u64), OpenError> {
    let at = HEADER_FRAME_OFFSET;
    let uninit = || OpenError::Uninitialized {
        path: path.to_path_buf(),
        len,
    };
    let mut hdr = [0u8; FRAME_HEADER_LEN];
    file.read_exact_at(at, &mut hdr)
        .map_err(|e| io_err(path, "read", at, e))?;
    let raw = RawHeader::parse(&hdr);
    let id = JournalId(raw.tag);
    let key = FrameKey::derive(&id);
    // A header frame that is invalid but followed by nothing but zeros is a torn
    // creation: no entry can have been written, since entries follow only after the
    // header was synced.
    let claimed_end = if raw.payload_len >= 1 && raw.payload_len <= MAX_HEADER_PAYLOAD {
        at + frame_len(u64::from(raw.payload_len))
    } else {
        at + FRAME_HEADER_LEN as u64
    };
    let damaged = |fault: FrameFault| -> OpenError {
        match all_zero(file, claimed_end.min(len), len) {
            Ok(true) => uninit(),
            Ok(false) => OpenError::Corrupt {
                path: path.to_path_buf(),
                offset: Offset(at),
                last_good_seq: Seq(0),
                fault,
                evidence: None,
            },
            Err(e) => io_err(path, "read", claimed_end, e),
        }
    };
    if raw.magic != FRAME_MAGIC {
        return Err(damaged(FrameFault::BadMagic { found: raw.magic }));
    }
    let raw = match check_header(&key, at, &hdr, Expect::HeaderFrame, MAX_HEADER_PAYLOAD, len) {
        Ok(raw) => raw,
        Err(FrameFault::Truncated { .. }) => return Err(uninit()),
        Err(FrameFault::UnsupportedVersion { found }) => {
            return Err(OpenError::UnsupportedVersion {
                path: path.to_path_buf(),
                offset: Offset(at),
                found: format!("frame version {found}"),
                supported: "frame version 1".to_owned(),
            });
        }
        Err(f) if f.is_unsupported() => {
            return Err(OpenError::Unsupported {
                path: path.to_path_buf(),
                offset: Offset(at),
                fault: f,
            });
        }
        Err(f) => return Err(damaged(f)),
    };
    let total = frame_len(u64::from(raw.payload_len));
    let mut rest = vec![0u8; (total - FRAME_HEADER_LEN as u64) as usize];
    file.read_exact_at(at + FRAME_HEADER_LEN as u64, &mut rest)
        .map_err(|e| io_err(path, "read", at, e))?;
    if let Err(f) = check_body(&key, at, &hdr, &raw, &rest) {
        return Err(damaged(f));
    }
    if raw.seq != 0 || raw.synced_to != 0 {
        return Err(OpenError::BadHeader {
            path: path.to_path_buf(),
            offset: Offset(at),
            reason: format!(
                "expected seq 0 and synced_to 0, found seq {} and synced_to {}",
                raw.seq, raw.synced_to
            ),
        });
    }
    rest.truncate(raw.payload_len as usize);
    Ok((raw, key, rest, total))
}

/// The header frame's payload: format, version and checksum this crate reads, the
/// same journal id as the frame, a payload bound in range.
fn parse_header_payload(
    path: &Path,
    id: JournalId,
    payload: &[u8],
) -> Result<JournalHeader, OpenError> {
    let at = HEADER_FRAME_OFFSET;
    let bad = |reason: String| OpenError::BadHeader {
        path: path.to_path_buf(),
        offset: Offset(at),
        reason,
    };
    let unsupported = |found: String, supported: String| OpenError::UnsupportedVersion {
        path: path.to_path_buf(),
        offset: Offset(at),
        found,
        supported,
    };
    let p: HeaderPayload = serde_json::from_slice(payload)
        .map_err(|e| bad(format!("payload is not header json: {e}")))?;
    if p.format != FORMAT_NAME {
        return Err(bad(format!(
            "expected format {FORMAT_NAME:?}, found {:?}",
            p.format
        )));
    }
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&p.format_version) {
        return Err(unsupported(
            p.format_version.to_string(),
            (OLDEST_FORMAT_VERSION..=FORMAT_VERSION)
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    if p.checksum != CHECKSUM_ALGORITHM {
        return Err(unsupported(
            format!("checksum {:?}", p.checksum),
            format!("checksum {CHECKSUM_ALGORITHM:?}"),
        ));
    }
    if JournalId::parse(&p.journal_id) != Some(id) {
        return Err(bad(format!(
            "journal id {:?} in the payload differs from {id} in the frame header",
            p.journal_id
        )));
    }
    if p.max_payload == 0 || p.max_payload > MAX_PAYLOAD_CAP {
        return Err(bad(format!(
            "max_payload {} is outside 1..={MAX_PAYLOAD_CAP}",
            p.max_payload
        )));
    }
    Ok(JournalHeader {
        journal_id: id,
        session_id: p.session_id,
        created_at: UnixMillis(p.created_at_ms),
        max_payload: p.max_payload,
        format_version: p.format_version,
    })
}
