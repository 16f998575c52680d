//! Decoding and verifying frames from untrusted bytes.
//!
//! Lengths are bounded (by the journal's maximum and by the bytes that remain) after
//! the header check and before anything is allocated for the payload.

use std::io;

use crate::error::FrameFault;
use crate::format::{
    FIRST_ENTRY_KIND, FRAME_HEADER_LEN, FRAME_MAGIC, FRAME_VERSION, KIND_HEADER, KIND_SEAL,
    frame_len,
};
use crate::frame::{FrameInfo, FrameKey, RawHeader};
use crate::types::{BodyCheck, FrameKind, Offset, Seq, Tag, UnixMillis};
use crate::vfs::VfsFile;

/// Sequential scans read this much at a time.
pub(crate) const SCAN_CHUNK: usize = 1 << 20;
/// Random reads read this much at a time (a header and a typical payload).
pub(crate) const POINT_CHUNK: usize = 4096;

/// A read-through window over a file, bounded by a length.
pub(crate) struct Window<'f> {
    file: &'f dyn VfsFile,
    bound: u64,
    chunk: usize,
    start: u64,
    buf: Vec<u8>,
    /// How many bytes of `buf`, from `start`, hold the file's bytes (a reused buffer
    /// holds none of them yet).
    held: usize,
}

impl<'f> Window<'f> {
    pub(crate) fn new(file: &'f dyn VfsFile, bound: u64, chunk: usize) -> Self {
        Self {
            file,
            bound,
            chunk,
            start: 0,
            buf: Vec::new(),
            held: 0,
        }
    }

    /// A window that reads into `buf`'s allocation (its bytes are overwritten): a
    /// caller reading many runs in turn reuses one buffer.
    pub(crate) fn with_buffer(
        file: &'f dyn VfsFile,
        bound: u64,
        chunk: usize,
        buf: Vec<u8>,
    ) -> Self {
        Self {
            buf,
            ..Self::new(file, bound, chunk)
        }
    }

    /// Moves the window's end to `bound` (never past `limit`, its end when made): the
    /// bytes it holds stay.
    pub(crate) fn set_bound(&mut self, bound: u64, limit: u64) {
        self.bound = bound.min(limit);
    }

    /// The same window, ending at `bound` (never past its own).
    pub(crate) fn bounded(mut self, bound: u64) -> Self {
        self.bound = self.bound.min(bound);
        self
    }

    /// What the window holds: where its buffer starts in the file, and the buffer.
    pub(crate) fn into_parts(self) -> (u64, Vec<u8>) {
        (self.start, self.buf)
    }

    pub(crate) fn bound(&self) -> u64 {
        self.bound
    }

    /// The bytes `[offset, offset + len)`; the caller has checked they are within the
    /// bound, so `len` is bounded by the file.
    pub(crate) fn get(&mut self, offset: u64, len: usize) -> io::Result<&[u8]> {
        let end = offset + len as u64;
        if end > self.bound {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the bound",
            ));
        }
        let have = offset >= self.start && end <= self.start + self.held as u64;
        if !have {
            let want = (len.max(self.chunk) as u64).min(self.bound - offset) as usize;
            size_for_read(&mut self.buf, want);
            self.start = offset;
            self.held = 0;
            if let Err(e) = self.file.read_exact_at(offset, &mut self.buf) {
                self.buf.clear();
                return Err(e);
            }
            self.held = want;
        }
        let at = (offset - self.start) as usize;
        Ok(&self.buf[at..at + len])
    }
}

/// Makes `buf` exactly `want` bytes long for a read that overwrites all of them,
/// zeroing only bytes it never held (a fresh allocation comes zeroed from the
/// allocator): refilling a scan buffer costs no memset.
pub(crate) fn size_for_read(buf: &mut Vec<u8>, want: usize) {
    if buf.capacity() < want {
        *buf = vec![0; want];
    } else {
        buf.resize(want, 0);
    }
}

/// Why a decode stopped.
#[derive(Debug)]
pub(crate) enum Fault {
    Io(io::Error),
    Frame(FrameFault),
}

impl From<FrameFault> for Fault {
    fn from(f: FrameFault) -> Self {
        Fault::Frame(f)
    }
}

/// Which kinds are acceptable at this position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    HeaderFrame,
    /// Any frame after the header frame: an entry or a seal.
    Entry,
}

/// Verifies a frame header: magic, header check, then the fields the check vouches for,
/// then the length bounds. Nothing is allocated.
pub(crate) fn check_header(
    key: &FrameKey,
    offset: u64,
    hdr: &[u8; FRAME_HEADER_LEN],
    expect: Expect,
    max_payload: u32,
    bound: u64,
) -> Result<RawHeader, FrameFault> {
    let raw = RawHeader::parse(hdr);
    if raw.magic != FRAME_MAGIC {
        return Err(FrameFault::BadMagic { found: raw.magic });
    }
    let expected = key.header_check(offset, hdr);
    if expected != raw.header_check {
        return Err(FrameFault::HeaderCheck {
            expected,
            found: raw.header_check,
        });
    }
    if raw.version != FRAME_VERSION {
        return Err(FrameFault::UnsupportedVersion { found: raw.version });
    }
    if raw.flags != 0 {
        return Err(FrameFault::UnknownFlags { found: raw.flags });
    }
    match (expect, raw.kind) {
        (Expect::HeaderFrame, KIND_HEADER) => {}
        (Expect::Entry, k) if k >= FIRST_ENTRY_KIND || k == KIND_SEAL => {}
        (_, k) if k > KIND_HEADER && k < FIRST_ENTRY_KIND => {
            return Err(FrameFault::ReservedKind { found: k });
        }
        (_, k) => return Err(FrameFault::MisplacedKind { found: k }),
    }
    if raw.payload_len == 0 {
        return Err(FrameFault::ZeroLength);
    }
    if raw.payload_len > max_payload {
        return Err(FrameFault::TooLong {
            len: raw.payload_len,
            max: max_payload,
        });
    }
    let needed = frame_len(u64::from(raw.payload_len));
    let available = bound.saturating_sub(offset);
    if needed > available {
        return Err(FrameFault::Truncated { needed, available });
    }
    Ok(raw)
}

/// Verifies the body check and the zero padding; `rest` is payload plus padding.
pub(crate) fn check_body(
    key: &FrameKey,
    offset: u64,
    hdr: &[u8; FRAME_HEADER_LEN],
    raw: &RawHeader,
    rest: &[u8],
) -> Result<(), FrameFault> {
    let len = raw.payload_len as usize;
    let (payload, padding) = rest.split_at(len.min(rest.len()));
    let expected = key.body_check(offset, hdr, payload);
    if expected != raw.body_check {
        return Err(FrameFault::BodyCheck {
            expected,
            found: raw.body_check,
        });
    }
    if padding.iter().any(|b| *b != 0) {
        return Err(FrameFault::NonZeroPadding);
    }
    Ok(())
}

/// A verified frame borrowed from a [`Window`].
pub(crate) struct Decoded<'w> {
    pub(crate) raw: RawHeader,
    pub(crate) payload: &'w [u8],
}

impl Decoded<'_> {
    pub(crate) fn info(&self, offset: u64) -> FrameInfo {
        FrameInfo {
            offset: Offset(offset),
            // Entry and seal kinds are checked by `check_header`; the header frame's
            // kind is reported as the generic entry kind only by internal dumps.
            kind: if self.raw.kind == KIND_SEAL {
                FrameKind::SEAL
            } else {
                FrameKind::new(self.raw.kind).unwrap_or(FrameKind::FIRST_CALLER)
            },
            seq: Seq(self.raw.seq),
            tag: Tag(self.raw.tag),
            time: UnixMillis(self.raw.time_ms),
            synced_to: Offset(self.raw.synced_to),
            payload_len: self.raw.payload_len,
            body_check: BodyCheck(self.raw.body_check),
        }
    }
}

/// Reads and verifies the frame at `offset`.
pub(crate) fn decode_at<'w>(
    win: &'w mut Window<'_>,
    key: &FrameKey,
    offset: u64,
    expect: Expect,
    max_payload: u32,
) -> Result<Decoded<'w>, Fault> {
    let bound = win.bound();
    let available = bound.saturating_sub(offset);
    if available < FRAME_HEADER_LEN as u64 {
        return Err(FrameFault::Truncated {
            needed: FRAME_HEADER_LEN as u64,
            available,
        }
        .into());
    }
    let mut hdr = [0u8; FRAME_HEADER_LEN];
    hdr.copy_from_slice(win.get(offset, FRAME_HEADER_LEN).map_err(Fault::Io)?);
    let raw = check_header(key, offset, &hdr, expect, max_payload, bound)?;
    let total = frame_len(u64::from(raw.payload_len)) as usize;
    let bytes = win.get(offset, total).map_err(Fault::Io)?;
    let rest = &bytes[FRAME_HEADER_LEN..];
    check_body(key, offset, &hdr, &raw, rest)?;
    Ok(Decoded {
        raw,
        payload: &rest[..raw.payload_len as usize],
    })
}

/// Cheap pre-filter for scans: could a frame start here?
pub(crate) fn has_magic(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && bytes[..4] == FRAME_MAGIC
}
