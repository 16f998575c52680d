//! Open-time recovery: verify every frame, then classify the end of the file.
//!
//! The first invalid frame at offset `o` ends the valid prefix. Its cause is decided
//! by evidence, never by guessing:
//!
//! - a later frame that validates at its own offset with `synced_to > o` proves the
//!   bytes at `o` had been synced before it was written: **corruption** of durable data,
//!   refused with the offset (a seal, written after a sync, is such a frame for every
//!   frame before it);
//! - a file that ends with the seal belonging at `o` with a few bits flipped holds a
//!   synced seal damaged in place: **corruption** (see `seal.rs`);
//! - a journal signature in `[o, EOF)` means another journal's bytes were appended
//!   (`cat a b > c`): refused;
//! - a non-zero tail longer than any in-flight write could be: refused;
//! - otherwise a **torn tail** — bytes never acknowledged as durable — which the writer
//!   copies aside to `<name>.torn-<ms>`, truncates and syncs, and reports.

use std::path::{Path, PathBuf};

use crate::decode::{
    Decoded, Expect, Fault, POINT_CHUNK, SCAN_CHUNK, Window, check_body, check_header, decode_at,
    has_magic, size_for_read,
};
use crate::error::{FrameFault, OpenError};
use crate::format::KIND_SEAL;
use crate::format::{
    FRAME_ALIGN, FRAME_HEADER_LEN, SEAL_FRAME_LEN, SIGNATURE, TAIL_REPAIR_SLACK, frame_len,
};
use crate::frame::FrameInfo;
use crate::frame::RawHeader;
use crate::header::{JournalHeader, Prefix, all_zero};
use crate::seal::{Prev, advance, check_sequence, damaged_seal_bits};
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
    /// The last valid entry's seq (0 when there are no entries).
    pub last_seq: Seq,
    /// The last valid frame after the header frame — an entry, or the seal
    /// ([`FrameKind::SEAL`](crate::FrameKind::SEAL)) when the journal ends sealed.
    pub last_frame: Option<FrameInfo>,
    /// Whether the journal ends with a seal: it was closed cleanly and nothing was
    /// appended since.
    pub sealed: bool,
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
    /// Its seq (also the number of entry frames in the prefix; a seal repeats the
    /// seq of the entry before it).
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
    if w.frame.0 < prefix.data_start {
        return Err(format!("no frame can be at {} with seq {}", w.frame, w.seq));
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
            Ok(trusted_scan(w, info))
        }
        Err(Fault::Frame(f)) => Err(format!("the frame at {} is not valid: {f}", w.frame)),
        Err(Fault::Io(e)) => Err(format!("reading the frame at {}: {e}", w.frame)),
    }
}

/// Whether `frame`, verified by a reader of the same file, is the trusted witness `w`
/// and lies within the file's `len`.
pub(crate) fn witnessed(frame: &FrameInfo, w: &Witness, len: u64) -> bool {
    frame.offset == w.frame
        && frame.seq == w.seq
        && frame.body_check == w.body_check
        && frame.end() == w.end
        && w.end.0 <= len
}

/// The scan [`trust`] would give for a witness whose frame was already verified.
pub(crate) fn trusted_scan(w: &Witness, frame: FrameInfo) -> Scan {
    Scan {
        end: w.end.0,
        frames: w.seq.0,
        prev: Prev {
            seq: w.seq.0,
            synced_to: frame.synced_to.0,
            time_ms: frame.time.0,
            check: frame.body_check.0,
        },
        last_frame: Some(frame),
        stop: None,
    }
}

/// The result of a forward verification pass.
pub(crate) struct Scan {
    pub(crate) end: u64,
    /// Entry frames (seals are not counted).
    pub(crate) frames: u64,
    /// What the next frame continues (its `seq` is the last entry's).
    pub(crate) prev: Prev,
    /// The last valid frame after the header frame (an entry or a seal).
    pub(crate) last_frame: Option<FrameInfo>,
    /// The first invalid frame, if the prefix ends before EOF.
    pub(crate) stop: Option<FrameFault>,
}

impl Scan {
    /// The last entry's seq.
    pub(crate) fn last_seq(&self) -> u64 {
        self.prev.seq
    }

    /// Whether the valid prefix ends with a seal.
    pub(crate) fn sealed(&self) -> bool {
        self.last_frame.is_some_and(|f| f.kind.is_seal())
    }

    /// Takes in a frame that passed its checks and the sequencing rules.
    fn push(&mut self, d: &Decoded<'_>, at: u64) {
        let info = d.info(at);
        if d.raw.kind != KIND_SEAL {
            self.frames += 1;
        }
        self.prev = advance(&self.prev, &info);
        self.end = info.end().0;
        self.last_frame = Some(info);
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

/// Verifies frames forward from the end of the header frame up to `len`.
pub(crate) fn scan(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
) -> Result<Scan, OpenError> {
    scan_from(file, path, prefix, len, Scan::at_data_start(prefix))
}

impl Scan {
    /// The state before the first entry frame.
    pub(crate) fn at_data_start(prefix: &Prefix) -> Self {
        Scan {
            end: prefix.data_start,
            frames: 0,
            prev: prefix.start(),
            last_frame: None,
            stop: None,
        }
    }
}

/// Verifies frames forward from `s.end` up to `len`, continuing the state `s`.
pub(crate) fn scan_from(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
    s: Scan,
) -> Result<Scan, OpenError> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_WORKERS);
    if workers > 1 && len.saturating_sub(s.end) >= PARALLEL_MIN {
        return scan_parallel(file, path, prefix, len, s, workers, PARALLEL_BLOCK);
    }
    scan_sequential(file, path, prefix, len, s)
}

/// Scans of at least this many bytes verify frame bodies on several threads.
const PARALLEL_MIN: u64 = 64 << 10;
/// Bytes read (and verified) per round of a parallel scan.
const PARALLEL_BLOCK: usize = 4 << 20;
/// At most this many verifying threads.
const MAX_WORKERS: usize = 4;

/// The parallel scan: the same verdicts as [`scan_sequential`], frame for frame.
///
/// Per block of the file: walk the frame headers in order (each header's check, as
/// always, before its length is trusted); hash the bodies of the frames that lie
/// wholly inside the block on several threads; then apply, in frame order, the body
/// verdicts and the sequence rules, stopping at the first invalid frame exactly where
/// the sequential scan stops. A frame larger than a block is decoded sequentially.
fn scan_parallel(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
    mut s: Scan,
    workers: usize,
    block: usize,
) -> Result<Scan, OpenError> {
    let max = prefix.header.max_payload;
    let mut buf = Vec::new();
    while s.end < len {
        let start = s.end;
        let want = usize::try_from((len - start).min(block as u64)).unwrap_or(block);
        size_for_read(&mut buf, want);
        file.read_exact_at(start, &mut buf)
            .map_err(|e| io_err(path, "read", start, e))?;
        // Phase 1: headers, in order.
        let mut frames: Vec<(u64, [u8; FRAME_HEADER_LEN], RawHeader)> = Vec::new();
        let mut header_fault = None;
        let mut at = start;
        let block_end = start + want as u64;
        while at < len {
            let rel = (at - start) as usize;
            if rel + FRAME_HEADER_LEN > buf.len() {
                break; // the header straddles the block: next round (or sequential)
            }
            let mut hdr = [0u8; FRAME_HEADER_LEN];
            hdr.copy_from_slice(&buf[rel..rel + FRAME_HEADER_LEN]);
            match check_header(&prefix.key, at, &hdr, Expect::Entry, max, len) {
                Ok(raw) => {
                    let end = at + frame_len(u64::from(raw.payload_len));
                    if end > block_end {
                        break; // the body straddles the block
                    }
                    frames.push((at, hdr, raw));
                    at = end;
                }
                Err(f) => {
                    header_fault = Some(f);
                    break;
                }
            }
        }
        if frames.is_empty() && header_fault.is_none() {
            // A frame larger than a block (or a header at the very end): one
            // sequential step keeps the verdicts identical.
            let one = scan_sequential_steps(file, path, prefix, len, s, 1)?;
            if one.stop.is_some() || one.end == start {
                return Ok(one);
            }
            s = one;
            continue;
        }
        // Phase 2: bodies, on several threads.
        let verdicts = verify_bodies(&prefix.key, &buf, start, &frames, workers);
        // Phase 3: in frame order, exactly as the sequential scan decides.
        for ((at, _, raw), verdict) in frames.iter().zip(verdicts) {
            if let Err(f) = verdict {
                s.stop = Some(f);
                return Ok(s);
            }
            let rel = (at - start) as usize + FRAME_HEADER_LEN;
            let d = Decoded {
                raw: *raw,
                payload: &buf[rel..rel + raw.payload_len as usize],
            };
            if let Err(f) = check_sequence(&d, *at, &s.prev) {
                s.stop = Some(f);
                return Ok(s);
            }
            s.push(&d, *at);
        }
        if let Some(f) = header_fault {
            s.stop = Some(f);
            return Ok(s);
        }
    }
    Ok(s)
}

/// The body verdict of each frame (`frames` lie wholly inside `buf`, which starts at
/// file offset `start`), computed on up to `workers` threads.
fn verify_bodies(
    key: &crate::frame::FrameKey,
    buf: &[u8],
    start: u64,
    frames: &[(u64, [u8; FRAME_HEADER_LEN], RawHeader)],
    workers: usize,
) -> Vec<Result<(), FrameFault>> {
    let check = |(at, hdr, raw): &(u64, [u8; FRAME_HEADER_LEN], RawHeader)| {
        let rel = (at - start) as usize + FRAME_HEADER_LEN;
        let total = frame_len(u64::from(raw.payload_len)) as usize - FRAME_HEADER_LEN;
        check_body(key, *at, hdr, raw, &buf[rel..rel + total])
    };
    if frames.len() < 2 * workers {
        return frames.iter().map(check).collect();
    }
    let per = frames.len().div_ceil(workers);
    std::thread::scope(|scope| {
        let handles: Vec<_> = frames
            .chunks(per)
            .map(|part| scope.spawn(move || part.iter().map(check).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn scan_sequential(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
    s: Scan,
) -> Result<Scan, OpenError> {
    scan_sequential_steps(file, path, prefix, len, s, u64::MAX)
}

/// At most `steps` frames of the sequential scan.
fn scan_sequential_steps(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    len: u64,
    mut s: Scan,
    steps: u64,
) -> Result<Scan, OpenError> {
    let mut steps = steps;
    let mut win = Window::new(file, len, SCAN_CHUNK);
    let max = prefix.header.max_payload;
    while s.end < len && steps > 0 {
        steps -= 1;
        let at = s.end;
        match decode_at(&mut win, &prefix.key, at, Expect::Entry, max) {
            Ok(d) => {
                if let Err(f) = check_sequence(&d, at, &s.prev) {
                    s.stop = Some(f);
                    break;
                }
                s.push(&d, at);
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
        last_good_seq: Seq(scan.last_seq()),
        fault: fault.clone(),
        evidence,
    };
    if fault.is_sequencing() {
        return Ok(Verdict::Corrupt(corrupt(None)));
    }
    let max = prefix.header.max_payload;
    let limit = tail_repair_limit.unwrap_or(u64::from(max) + TAIL_REPAIR_SLACK);
    if len - o <= limit && is_next_frame_cut_short(file, path, prefix, scan, fault, len)? {
        // The whole tail lies inside one frame whose header is authentic and is the
        // next in sequence: the file ends inside it, so no later frame exists, and
        // whatever its partial payload holds is payload, not evidence.
        return Ok(Verdict::Torn);
    }
    // A seal damaged in place: the file ends exactly where the seal that belongs at
    // `o` would end, and its bytes are that seal's with a few bits flipped. A torn
    // write of the seal leaves a shorter file, zeros or garbage, never this.
    if len - o == SEAL_FRAME_LEN {
        let mut tail = [0u8; SEAL_FRAME_LEN as usize];
        file.read_exact_at(o, &mut tail)
            .map_err(|e| io_err(path, "read", o, e))?;
        if let Some(bits) = damaged_seal_bits(&prefix.key, &scan.prev, o, &tail) {
            return Ok(Verdict::Corrupt(OpenError::Corrupt {
                path: path.to_path_buf(),
                offset: Offset(o),
                last_good_seq: Seq(scan.last_seq()),
                fault: FrameFault::DamagedSeal { bits },
                evidence: None,
            }));
        }
    }
    // Evidence: a later frame, valid at its own offset, that says `o` was synced.
    let mut win = Window::new(file, len, SCAN_CHUNK);
    let mut p = o + FRAME_ALIGN;
    while p + FRAME_HEADER_LEN as u64 <= len {
        let magic = win.get(p, 4).map_err(|e| io_err(path, "read", p, e))?;
        if !has_magic(magic) {
            p += FRAME_ALIGN;
            continue;
        }
        match decode_at(&mut win, &prefix.key, p, Expect::Entry, max) {
            // Later frames only: an entry after the last good one, or a seal (which
            // repeats the seq of the entry before it) after at least one more entry —
            // or right after the damaged frame when that was an entry.
            Ok(d) if d.raw.seq > scan.last_seq() => {
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

/// True when `fault` says the frame at `scan.end` runs past the end of the file and its
/// header passes every check (header check, version, kind, length bound) and is the
/// next frame in sequence with a valid `synced_to`: the file was cut inside the frame
/// that follows the valid prefix. Reads only the 64-byte header, so classifying such a
/// tail costs the same whatever its length.
fn is_next_frame_cut_short(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &Prefix,
    scan: &Scan,
    fault: &FrameFault,
    len: u64,
) -> Result<bool, OpenError> {
    let o = scan.end;
    let FrameFault::Truncated { available, .. } = fault else {
        return Ok(false);
    };
    if *available < FRAME_HEADER_LEN as u64 {
        return Ok(false);
    }
    let mut win = Window::new(file, len, FRAME_HEADER_LEN);
    let mut hdr = [0u8; FRAME_HEADER_LEN];
    match win.get(o, FRAME_HEADER_LEN) {
        Ok(bytes) => hdr.copy_from_slice(bytes),
        Err(e) => return Err(io_err(path, "read", o, e)),
    }
    let max = prefix.header.max_payload;
    let Ok(raw) = check_header(&prefix.key, o, &hdr, Expect::Entry, max, u64::MAX) else {
        return Ok(false);
    };
    Ok(frame_len(u64::from(raw.payload_len)) > len - o
        && if raw.kind == KIND_SEAL {
            raw.seq == scan.last_seq() && raw.synced_to == o
        } else {
            raw.seq == scan.last_seq() + 1
                && raw.synced_to <= o
                && raw.synced_to >= scan.prev.synced_to
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::read_prefix;
    use crate::vfs::{OpenMode, StdVfs, Vfs};
    use crate::{CreateOptions, Durability, FrameKind, JournalId, Writer};

    /// SplitMix64, as `session_testkit::sim::SimRng` (which a unit test cannot use: the
    /// test kit links the library build of this crate, not this test build).
    struct SimRng(u64);

    impl SimRng {
        fn new(seed: u64) -> Self {
            Self(seed ^ 0x5851_f42d_4c95_7f2d)
        }

        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn fill(&mut self, buf: &mut [u8]) {
            for chunk in buf.chunks_mut(8) {
                let v = self.next_u64().to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
        }
    }

    fn render(r: &Result<Scan, OpenError>) -> String {
        match r {
            Ok(s) => format!(
                "end {} frames {} seq {} synced {} last {:?} stop {:?}",
                s.end, s.frames, s.prev.seq, s.prev.synced_to, s.last_frame, s.stop
            ),
            Err(e) => format!("error {e}"),
        }
    }

    /// The parallel scan decides exactly as the sequential one, frame for frame, on
    /// intact journals and after bit flips, truncations, zeroed ranges and garbage —
    /// with blocks small enough that frames straddle them and some exceed them.
    #[test]
    fn parallel_and_sequential_scans_agree_on_damaged_journals() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = &dir.path().join("j.jsonl");
        let fs = StdVfs;
        let mut w =
            Writer::create(path, JournalId([3; 16]), CreateOptions::default()).expect("create");
        let mut rng = SimRng::new(7);
        for i in 0..400u64 {
            let len = 1 + (rng.next_u64() % if i % 50 == 0 { 20_000 } else { 3_000 }) as usize;
            let mut p = vec![0u8; len];
            rng.fill(&mut p);
            let d = if i % 7 == 0 {
                Durability::Durable
            } else {
                Durability::Buffered
            };
            w.append(FrameKind::FIRST_CALLER, &p, d).expect("append");
            if i % 97 == 50 {
                // Seals in the middle, as closes followed by reopens leave them.
                w.seal().expect("seal");
            }
        }
        w.close().expect("close");
        let pristine = std::fs::read(path).expect("bytes");
        let check = |bytes: &[u8], what: &str| {
            std::fs::write(path, bytes).expect("write");
            let file = fs.open(path, OpenMode::Read).expect("open");
            let len = bytes.len() as u64;
            let Ok(prefix) = read_prefix(file.as_ref(), path, len) else {
                return;
            };
            let start = Scan::at_data_start(&prefix);
            let copy = |s: &Scan| Scan {
                last_frame: s.last_frame,
                stop: s.stop.clone(),
                ..*s
            };
            let seq = scan_sequential(file.as_ref(), path, &prefix, len, copy(&start));
            for (workers, block) in [(2, 4096), (2, 9_000), (3, 65_536), (2, PARALLEL_BLOCK)] {
                let par = scan_parallel(
                    file.as_ref(),
                    path,
                    &prefix,
                    len,
                    copy(&start),
                    workers,
                    block,
                );
                assert_eq!(
                    render(&par),
                    render(&seq),
                    "{what}, {workers} workers, block {block}"
                );
            }
        };
        check(&pristine, "intact");
        let n = pristine.len();
        for round in 0..120 {
            let mut b = pristine.clone();
            let at = 8 + (rng.next_u64() as usize % (n - 8));
            let what = match round % 4 {
                0 => {
                    b[at] ^= 1 << (rng.next_u64() % 8);
                    format!("bit flip at {at}")
                }
                1 => {
                    b.truncate(at);
                    format!("truncated at {at}")
                }
                2 => {
                    let end = (at + 1 + rng.next_u64() as usize % 5_000).min(n);
                    b[at..end].fill(0);
                    format!("zeroed {at}..{end}")
                }
                _ => {
                    let end = (at + 1 + rng.next_u64() as usize % 300).min(n);
                    rng.fill(&mut b[at..end]);
                    format!("garbage {at}..{end}")
                }
            };
            check(&b, &what);
        }
    }
}
