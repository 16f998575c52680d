//! Open-time recovery: verify every frame, then classify the end of the file.
//!
//! The first invalid frame at offset `o` ends the valid prefix. Its cause is decided
//! by evidence, never by guessing:
//!
//! - a later frame that validates at its own offset with `synced_to > o` proves the
//!   bytes at `o` had been synced before it was written: **corruption** of durable data,
//!   refused with the offset;
//! - a journal signature in `[o, EOF)` means another journal's bytes were appended
//!   (`cat a b > c`): refused;
//! - a non-zero tail longer than any in-flight write could be: refused;
//! - otherwise a **torn tail** — bytes never acknowledged as durable — which the writer
//!   copies aside to `<name>.torn-<ms>`, truncates and syncs, and reports.

use std::path::{Path, PathBuf};

use crate::decode::{
    Decoded, Expect, Fault, POINT_CHUNK, SCAN_CHUNK, Window, decode_at, has_magic,
};
use crate::error::{FrameFault, OpenError};
use crate::format::{FRAME_ALIGN, FRAME_HEADER_LEN, SIGNATURE, TAIL_REPAIR_SLACK, frame_len};
use crate::frame::FrameInfo;
use crate::header::{JournalHeader, Prefix, all_zero};
use crate::types::{BodyCheck, Offset, Seq};
use crate::vfs::{OpenMode, Vfs, VfsFile, parent_dir};

/// How the writer's open treats an invalid end of file (named after RocksDB's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RecoveryMode {
    /// Repair a torn tail (copy aside, truncate, sync, report); refuse corruption of
    /// durable data. The default.
    #[default]
    TornTailOnly,
    /// Refuse any invalid byte after the last valid frame; repair nothing.
    Strict,
    /// Explicit repair: truncate at the first invalid frame even when later frames
    /// prove it was durable, after copying everything from it aside. Those later
    /// frames are lost from the journal (they stay in the copy).
    PointInTime,
}

/// The state of the end of the file found at open.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TailState {
    /// The file ends exactly after the last valid frame.
    Clean,
    /// A torn tail, never acknowledged as durable, was removed.
    TornTail {
        /// Where the file was truncated (the end of the last valid frame).
        offset: Offset,
        /// How many bytes were removed.
        bytes: u64,
        /// Why the frame at `offset` was invalid.
        fault: FrameFault,
        /// Where the removed bytes were copied (`None` when they were all zeros).
        quarantine: Option<PathBuf>,
    },
    /// [`RecoveryMode::PointInTime`] removed damaged durable data and everything after
    /// it.
    Discarded {
        /// Where the file was truncated.
        offset: Offset,
        /// How many bytes were removed.
        bytes: u64,
        /// Why the frame at `offset` was invalid.
        fault: FrameFault,
        /// Where the removed bytes were copied.
        quarantine: Option<PathBuf>,
    },
}

/// What an open found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The journal's header.
    pub header: JournalHeader,
    /// Entry frames in the valid prefix.
    pub frames: u64,
    /// The last valid frame's seq (0 when there are no entries).
    pub last_seq: Seq,
    /// The last valid entry frame, if any.
    pub last_frame: Option<FrameInfo>,
    /// The end of the valid prefix (the file's length after recovery).
    pub end: Offset,
    /// How the file ended.
    pub tail: TailState,
    /// Where forward verification started: the end of the header frame, or the end
    /// of a trusted prefix ([`Witness`]) that was accepted.
    pub verified_from: Offset,
    /// What became of [`OpenOptions::trusted`](crate::OpenOptions::trusted).
    pub witness: WitnessOutcome,
}

/// A claim about a prefix of the journal, from a derived file that already verified
/// it (the session index): the frame at `frame` has `seq` and `body_check` and ends at
/// `end`. [`Writer::open`](crate::Writer::open) re-verifies that one frame (header
/// and body checks, bound to its offset) and, if it matches, verifies forward only
/// from `end`. Frames inside the prefix are still verified whenever they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Witness {
    /// Offset of the last frame of the prefix.
    pub frame: Offset,
    /// Its seq (also the number of entry frames in the prefix).
    pub seq: Seq,
    /// Its body check.
    pub body_check: BodyCheck,
    /// The end of the prefix (the end of that frame).
    pub end: Offset,
}

/// What happened to a trusted prefix offered to [`Writer::open`](crate::Writer::open).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WitnessOutcome {
    /// None was offered: the whole journal was verified.
    NotOffered,
    /// Its frame matched: verification started at its end.
    Accepted,
    /// Its frame did not match (the reason): the whole journal was verified.
    Rejected(String),
}

/// Checks `w` against the frame at `w.frame`; on success the scan state at its end.
pub(crate) fn trust(
    file: &dyn VfsFile,
    prefix: &Prefix,
    len: u64,
    w: &Witness,
) -> Result<Scan, String> {
    if w.end.0 > len {
        return Err(format!(
            "the prefix ends at {} but the journal has {len} bytes",
            w.end
        ));
    }
    if w.frame.0 < prefix.data_start || w.seq.0 == 0 {
        return Err(format!(
            "no entry frame can be at {} with seq {}",
            w.frame, w.seq
        ));
    }
    // One frame is read here, not a scan's worth of bytes.
    let mut win = Window::new(file, len, POINT_CHUNK);
    match decode_at(
        &mut win,
        &prefix.key,
        w.frame.0,
        Expect::Entry,
        prefix.header.max_payload,
    ) {
        Ok(d) => {
            let info = d.info(w.frame.0);
            if info.seq != w.seq || info.body_check != w.body_check || info.end() != w.end {
                return Err(format!(
                    "the frame at {} has seq {} check {} ending at {}; expected seq {} check {} ending at {}",
                    w.frame,
                    info.seq,
                    info.body_check,
                    info.end(),
                    w.seq,
                    w.body_check,
                    w.end
                ));
            }
            Ok(Scan {
                end: w.end.0,
                frames: w.seq.0,
                last_seq: w.seq.0,
                last_synced_to: info.synced_to.0,
                last_frame: Some(info),
                stop: None,
            })
        }
        Err(Fault::Frame(f)) => Err(format!("the frame at {} is not valid: {f}", w.frame)),
        Err(Fault::Io(e)) => Err(format!("reading the frame at {}: {e}", w.frame)),
    }
}

/// The result of a forward verification pass.
pub(crate) struct Scan {
    pub(crate) end: u64,
    pub(crate) frames: u64,
    pub(crate) last_seq: u64,
    pub(crate) last_synced_to: u64,
    pub(crate) last_frame: Option<FrameInfo>,
    /// The first invalid frame, if the prefix ends before EOF.
    pub(crate) stop: Option<FrameFault>,
}

/// Sequencing rules for a frame that passed its checks.
pub(crate) fn check_sequence(
    d: &Decoded<'_>,
    offset: u64,
    expected_seq: u64,
    prev_synced_to: u64,
) -> Result<(), FrameFault> {
    if d.raw.seq != expected_seq {
        return Err(FrameFault::SeqOutOfOrder {
            expected: Seq(expected_seq),
            found: Seq(d.raw.seq),
        });
    }
    if d.raw.synced_to > offset || d.raw.synced_to < prev_synced_to {
        return Err(FrameFault::BadSyncedTo {
            found: Offset(d.raw.synced_to),
        });
    }
    Ok(())
}

fn io_err(path: &Path, op: &'static str, offset: u64, source: std::io::Error) -> OpenError {
    OpenError::Io {
        path: path.to_path_buf(),
        op,
        offset: Some(Offset(offset)),
        source,
    }
}

/// Verifies frames forward from the end of the header frame up to `len`.
pub(crate) fn scan(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
) -> Result<Scan, OpenError> {
    let start = Scan {
        end: prefix.data_start,
        frames: 0,
        last_seq: 0,
        last_synced_to: prefix.header_synced_to,
        last_frame: None,
        stop: None,
    };
    scan_from(file, path, prefix, len, start)
}

/// Verifies frames forward from `s.end` up to `len`, continuing the state `s`.
pub(crate) fn scan_from(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
    mut s: Scan,
) -> Result<Scan, OpenError> {
    let mut win = Window::new(file, len, SCAN_CHUNK);
    let max = prefix.header.max_payload;
    while s.end < len {
        let at = s.end;
        match decode_at(&mut win, &prefix.key, at, Expect::Entry, max) {
            Ok(d) => {
                if let Err(f) = check_sequence(&d, at, s.last_seq + 1, s.last_synced_to) {
                    s.stop = Some(f);
                    break;
                }
                let info = d.info(at);
                s.last_seq = d.raw.seq;
                s.last_synced_to = d.raw.synced_to;
                s.frames += 1;
                s.end = info.end().0;
                s.last_frame = Some(info);
            }
            Err(Fault::Frame(f)) => {
                s.stop = Some(f);
                break;
            }
            Err(Fault::Io(e)) => return Err(io_err(path, "read", at, e)),
        }
    }
    Ok(s)
}

/// How the invalid tail at `scan.end` is explained.
pub(crate) enum Verdict {
    Torn,
    Corrupt(OpenError),
}

/// Classifies the invalid tail `[scan.end, len)`; read-only.
pub(crate) fn classify(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    scan: &Scan,
    fault: &FrameFault,
    len: u64,
    tail_repair_limit: Option<u64>,
) -> Result<Verdict, OpenError> {
    let o = scan.end;
    if fault.is_unsupported() {
        return Err(OpenError::Unsupported {
            path: path.to_path_buf(),
            offset: Offset(o),
            fault: fault.clone(),
        });
    }
    let corrupt = |evidence| OpenError::Corrupt {
        path: path.to_path_buf(),
        offset: Offset(o),
        last_good_seq: Seq(scan.last_seq),
        fault: fault.clone(),
        evidence,
    };
    if fault.is_sequencing() {
        return Ok(Verdict::Corrupt(corrupt(None)));
    }
    // Evidence: a later frame, valid at its own offset, that says `o` was synced.
    let max = prefix.header.max_payload;
    let mut win = Window::new(file, len, SCAN_CHUNK);
    let mut p = o + FRAME_ALIGN;
    while p + FRAME_HEADER_LEN as u64 <= len {
        let magic = win.get(p, 4).map_err(|e| io_err(path, "read", p, e))?;
        if !has_magic(magic) {
            p += FRAME_ALIGN;
            continue;
        }
        match decode_at(&mut win, &prefix.key, p, Expect::Entry, max) {
            Ok(d) if d.raw.seq > scan.last_seq => {
                if d.raw.synced_to > o {
                    return Ok(Verdict::Corrupt(corrupt(Some((Offset(p), Seq(d.raw.seq))))));
                }
                p += frame_len(u64::from(d.raw.payload_len));
            }
            Ok(_) | Err(Fault::Frame(_)) => p += FRAME_ALIGN,
            Err(Fault::Io(e)) => return Err(io_err(path, "read", p, e)),
        }
    }
    // Foreign data: another journal's signature anywhere in the tail.
    if let Some(at) = find_signature(&mut win, o, len).map_err(|e| io_err(path, "read", o, e))? {
        return Ok(Verdict::Corrupt(OpenError::ForeignData {
            path: path.to_path_buf(),
            offset: Offset(o),
            signature_at: Offset(at),
        }));
    }
    let limit = tail_repair_limit.unwrap_or(u64::from(max) + TAIL_REPAIR_SLACK);
    if len - o > limit && !all_zero(file, o, len).map_err(|e| io_err(path, "read", o, e))? {
        return Ok(Verdict::Corrupt(OpenError::SuspiciousTail {
            path: path.to_path_buf(),
            offset: Offset(o),
            len: len - o,
            limit,
        }));
    }
    Ok(Verdict::Torn)
}

fn find_signature(win: &mut Window<'_>, from: u64, len: u64) -> std::io::Result<Option<u64>> {
    let step = SCAN_CHUNK as u64;
    let mut at = from;
    while at + SIGNATURE.len() as u64 <= len {
        let n = (step + SIGNATURE.len() as u64 - 1).min(len - at) as usize;
        let bytes = win.get(at, n)?;
        if let Some(i) = bytes.windows(SIGNATURE.len()).position(|w| w == SIGNATURE) {
            return Ok(Some(at + i as u64));
        }
        at += step;
    }
    Ok(None)
}

/// Copies `[from, len)` of `file` to a fresh `<journal>.torn-<ms>[-n]` file and makes it
/// durable. Returns `None` without writing when the bytes are all zeros.
pub(crate) fn quarantine(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    path: &Path,
    from: u64,
    len: u64,
    now_ms: u64,
) -> Result<Option<PathBuf>, OpenError> {
    if all_zero(file, from, len).map_err(|e| io_err(path, "read", from, e))? {
        return Ok(None);
    }
    let named = |suffix: String| {
        let mut s = path.as_os_str().to_owned();
        s.push(suffix);
        PathBuf::from(s)
    };
    let mut target = named(format!(".torn-{now_ms}"));
    let mut n = 0u32;
    let out = loop {
        match vfs.open(&target, OpenMode::CreateNew) {
            Ok(f) => break f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 10_000 => {
                n += 1;
                target = named(format!(".torn-{now_ms}-{n}"));
            }
            Err(e) => return Err(io_err(&target, "create", 0, e)),
        }
    };
    let mut buf = vec![0u8; SCAN_CHUNK.min((len - from) as usize)];
    let mut at = from;
    while at < len {
        let k = ((len - at) as usize).min(buf.len());
        file.read_exact_at(at, &mut buf[..k])
            .map_err(|e| io_err(path, "read", at, e))?;
        out.write_all_at(at - from, &buf[..k])
            .map_err(|e| io_err(&target, "write", at - from, e))?;
        at += k as u64;
    }
    out.sync_all().map_err(|e| io_err(&target, "sync", 0, e))?;
    let dir = parent_dir(path);
    vfs.sync_dir(&dir)
        .map_err(|e| io_err(&dir, "sync directory", 0, e))?;
    Ok(Some(target))
}
