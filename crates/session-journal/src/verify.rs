//! Read-only whole-journal checks: `verify` (what would an open find?) and `salvage`
//! (every intact frame, and the gaps between them).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::decode::{Expect, Fault, SCAN_CHUNK, Window, decode_at, has_magic};
use crate::error::{FrameFault, OpenError};
use crate::format::{
    FRAME_ALIGN, FRAME_HEADER_LEN, FRAME_MAGIC, HEADER_FRAME_OFFSET, MAX_PAYLOAD_CAP, SIGNATURE,
};
use crate::frame::{Frame, FrameInfo, FrameKey, RawHeader};
use crate::header::{JournalHeader, read_prefix};
use crate::recover::{Verdict, classify, scan};
use crate::types::{JournalId, Offset, Seq};
use crate::vfs::{OpenMode, StdVfs, Vfs, VfsFile};

/// Options of [`verify`] and [`salvage`].
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// The file system.
    pub vfs: Arc<dyn Vfs>,
    /// The journal id to key the checks with when the header frame is unreadable
    /// (salvage only; by default the id in the damaged header frame is tried).
    pub journal_id: Option<JournalId>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        Self {
            vfs: Arc::new(StdVfs),
            journal_id: None,
        }
    }
}

/// What [`verify`] found. Errors (`Corrupt`, `ForeignData`, ...) are what a writer's
/// open would refuse with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The header.
    pub header: JournalHeader,
    /// Entry frames in the valid prefix.
    pub frames: u64,
    /// The last valid seq.
    pub last_seq: Seq,
    /// The last valid frame after the header frame (an entry, or the seal).
    pub last_frame: Option<FrameInfo>,
    /// Whether the valid prefix ends with a seal (a clean close).
    pub sealed: bool,
    /// The end of the valid prefix.
    pub end: Offset,
    /// The file's length.
    pub len: u64,
    /// The first invalid frame after the prefix, which an open would treat as a torn
    /// tail (`None`: the file ends cleanly).
    pub torn_tail: Option<(Offset, FrameFault)>,
}

fn open_file(vfs: &dyn Vfs, path: &Path) -> Result<(Box<dyn VfsFile>, u64), OpenError> {
    let file = vfs.open(path, OpenMode::Read).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            OpenError::NotFound {
                path: path.to_path_buf(),
            }
        } else {
            OpenError::Io {
                path: path.to_path_buf(),
                op: "open",
                offset: None,
                source: e,
            }
        }
    })?;
    let len = file.len().map_err(|e| OpenError::Io {
        path: path.to_path_buf(),
        op: "stat",
        offset: None,
        source: e,
    })?;
    Ok((file, len))
}

/// Verifies every frame and classifies the end of the file exactly as
/// [`Writer::open`](crate::Writer::open) would, without a lock and without modifying
/// anything.
pub fn verify(path: &Path, options: &VerifyOptions) -> Result<VerifyReport, OpenError> {
    let (file, len) = open_file(options.vfs.as_ref(), path)?;
    let prefix = read_prefix(file.as_ref(), path, len)?;
    let s = scan(file.as_ref(), path, &prefix, len)?;
    let mut torn_tail = None;
    if let Some(fault) = &s.stop {
        match classify(file.as_ref(), path, &prefix, &s, fault, len, None)? {
            Verdict::Torn => torn_tail = Some((Offset(s.end), fault.clone())),
            Verdict::Corrupt(e) => return Err(e),
        }
    }
    Ok(VerifyReport {
        header: prefix.header,
        frames: s.frames,
        last_seq: Seq(s.last_seq()),
        last_frame: s.last_frame,
        sealed: s.sealed(),
        end: Offset(s.end),
        len,
        torn_tail,
    })
}

/// A byte range that holds no valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// First byte of the range.
    pub start: Offset,
    /// One past the last byte.
    pub end: Offset,
    /// Why the frame expected at `start` was invalid.
    pub fault: FrameFault,
}

/// What [`salvage`] recovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvageReport {
    /// The path read.
    pub path: PathBuf,
    /// The header, if the header frame verified.
    pub header: Option<JournalHeader>,
    /// The id the checks were keyed with.
    pub journal_id: JournalId,
    /// Every entry frame that verifies at its own offset, in file order (seals, which
    /// hold no entry, are verified and left out).
    pub frames: Vec<Frame>,
    /// The ranges between them that hold no valid frame.
    pub gaps: Vec<Gap>,
}

/// Read-only salvage: returns every intact frame — each verified at its own offset —
/// and reports the gaps. Resynchronises past damage by trying every 8-byte-aligned
/// offset. Never modifies the file; needs no lock.
pub fn salvage(path: &Path, options: &VerifyOptions) -> Result<SalvageReport, OpenError> {
    let (file, len) = open_file(options.vfs.as_ref(), path)?;
    let (header, key, id, start, max) = match read_prefix(file.as_ref(), path, len) {
        Ok(p) => {
            let id = p.header.journal_id;
            (
                Some(p.header.clone()),
                p.key,
                id,
                p.data_start,
                p.header.max_payload,
            )
        }
        Err(e) => {
            let id = match options.journal_id {
                Some(id) => id,
                None => damaged_header_id(file.as_ref(), len).ok_or(e)?,
            };
            (
                None,
                FrameKey::derive(&id),
                id,
                HEADER_FRAME_OFFSET + FRAME_HEADER_LEN as u64,
                MAX_PAYLOAD_CAP,
            )
        }
    };
    let mut win = Window::new(file.as_ref(), len, SCAN_CHUNK);
    let mut frames = Vec::new();
    let mut gaps = Vec::new();
    let mut gap: Option<(u64, FrameFault)> = None;
    let mut p = start;
    let io = |at: u64, e| OpenError::Io {
        path: path.to_path_buf(),
        op: "read",
        offset: Some(Offset(at)),
        source: e,
    };
    while p < len {
        let result = if p + FRAME_HEADER_LEN as u64 > len {
            Err(Fault::Frame(FrameFault::Truncated {
                needed: FRAME_HEADER_LEN as u64,
                available: len - p,
            }))
        } else if gap.is_some() && !has_magic(win.get(p, 4).map_err(|e| io(p, e))?) {
            Err(Fault::Frame(FrameFault::BadMagic { found: [0; 4] }))
        } else {
            decode_at(&mut win, &key, p, Expect::Entry, max).map(|d| Frame {
                info: d.info(p),
                payload: d.payload.to_vec(),
            })
        };
        match result {
            Ok(frame) => {
                if let Some((g, fault)) = gap.take() {
                    gaps.push(Gap {
                        start: Offset(g),
                        end: Offset(p),
                        fault,
                    });
                }
                p = frame.info.end().0;
                if !frame.info.kind.is_seal() {
                    frames.push(frame);
                }
            }
            Err(Fault::Frame(fault)) => {
                if gap.is_none() {
                    gap = Some((p, fault));
                }
                p += FRAME_ALIGN;
            }
            Err(Fault::Io(e)) => return Err(io(p, e)),
        }
    }
    if let Some((g, fault)) = gap {
        gaps.push(Gap {
            start: Offset(g),
            end: Offset(len),
            fault,
        });
    }
    Ok(SalvageReport {
        path: path.to_path_buf(),
        header,
        journal_id: id,
        frames,
        gaps,
    })
}

/// The journal id in a damaged header frame, if its signature and magic survived.
fn damaged_header_id(file: &dyn VfsFile, len: u64) -> Option<JournalId> {
    if len < HEADER_FRAME_OFFSET + FRAME_HEADER_LEN as u64 {
        return None;
    }
    let mut b = [0u8; 8 + FRAME_HEADER_LEN];
    file.read_exact_at(0, &mut b).ok()?;
    if b[..8] != SIGNATURE {
        return None;
    }
    let mut hdr = [0u8; FRAME_HEADER_LEN];
    hdr.copy_from_slice(&b[8..]);
    let raw = RawHeader::parse(&hdr);
    (raw.magic == FRAME_MAGIC).then_some(JournalId(raw.tag))
}
