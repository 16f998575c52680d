//! Lock-free, read-only access: point reads that verify one frame, and bounded
//! iteration. Readers never modify files and never classify tails — only the writer
//! does that.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::capture::Capture;
use crate::decode::{Expect, Fault, POINT_CHUNK, SCAN_CHUNK, Window, decode_at};
use crate::error::{FrameFault, OpenError, ReadError};
use crate::format::FRAME_ALIGN;
use crate::frame::{Frame, FrameInfo};
use crate::header::{JournalHeader, Prefix, read_prefix};
use crate::seal::{Prev, advance, check_sequence};
use crate::types::{JournalId, Offset, Seq};
use crate::vfs::{FileId, OpenMode, StdVfs, Vfs, VfsFile};

/// Options of [`Reader::open`].
#[derive(Debug, Clone)]
pub struct ReaderOptions {
    /// The file system.
    pub vfs: Arc<dyn Vfs>,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        Self {
            vfs: Arc::new(StdVfs),
        }
    }
}

/// A read-only view of a journal. Needs no lock; safe while a writer appends.
#[derive(Debug)]
pub struct Reader {
    path: PathBuf,
    file: Box<dyn VfsFile>,
    prefix: Prefix,
    /// The identity of the file read (when the file system can tell).
    file_id: Option<FileId>,
}

/// What a reader already verified about its journal — the prefix (signature and
/// header frame) and, optionally, one entry frame — offered to a writer's open
/// ([`OpenOptions::known`](crate::OpenOptions::known)) so that resuming reads no byte
/// twice. The writer uses it only for the very file it locked (same device and
/// inode); a verified frame stands in for re-reading the trusted witness, since a
/// durable frame never changes.
#[derive(Debug, Clone)]
pub struct Known {
    pub(crate) prefix: Prefix,
    pub(crate) file: FileId,
    pub(crate) frame: Option<FrameInfo>,
}

impl Known {
    /// The same evidence plus a frame the caller verified through the same reader
    /// (e.g. the derived index's witness frame).
    pub fn with_verified_frame(mut self, frame: Option<FrameInfo>) -> Self {
        self.frame = frame;
        self
    }
}

impl std::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefix")
            .field("header", &self.header)
            .field("data_start", &self.data_start)
            .finish_non_exhaustive()
    }
}

/// Why an iteration ended before its bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// Where the invalid frame starts.
    pub offset: Offset,
    /// Why it is invalid. Unbounded iteration treats this as the end of the journal
    /// (possibly an append in progress); only the writer's open classifies it.
    pub fault: FrameFault,
}

impl Reader {
    /// Opens a journal for reading; verifies its signature and header frame.
    pub fn open(path: &Path, options: ReaderOptions) -> Result<Reader, OpenError> {
        let file = match options.vfs.open(path, OpenMode::Read) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(OpenError::NotFound {
                    path: path.to_path_buf(),
                });
            }
            Err(e) => {
                return Err(OpenError::Io {
                    path: path.to_path_buf(),
                    op: "open",
                    offset: None,
                    source: e,
                });
            }
        };
        let len = file.len().map_err(|e| OpenError::Io {
            path: path.to_path_buf(),
            op: "stat",
            offset: None,
            source: e,
        })?;
        let prefix = read_prefix(file.as_ref(), path, len)?;
        let file_id = file.status().ok().map(|s| s.id);
        Ok(Reader {
            path: path.to_path_buf(),
            file,
            prefix,
            file_id,
        })
    }

    /// What this reader verified, for a writer's open of the same file; `None` when
    /// the file system cannot tell the file's identity.
    pub fn known(&self) -> Option<Known> {
        Some(Known {
            prefix: self.prefix.clone(),
            file: self.file_id?,
            frame: None,
        })
    }

    /// The identity of the file this reader reads, when the file system can tell.
    pub fn file_id(&self) -> Option<FileId> {
        self.file_id
    }

    /// The journal's header.
    pub fn header(&self) -> &JournalHeader {
        &self.prefix.header
    }

    /// The journal's id (what a derived index binds itself to).
    pub fn journal_id(&self) -> JournalId {
        self.prefix.header.journal_id
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the first entry frame starts.
    pub fn data_start(&self) -> Offset {
        Offset(self.prefix.data_start)
    }

    /// The file's current length (may include a frame being appended).
    pub fn len(&self) -> Result<Offset, ReadError> {
        self.file.len().map(Offset).map_err(|e| ReadError::Io {
            path: self.path.clone(),
            offset: Offset(0),
            source: e,
        })
    }

    /// Whether the journal has no entry frames (by its current length).
    pub fn is_empty(&self) -> Result<bool, ReadError> {
        Ok(self.len()?.0 <= self.prefix.data_start)
    }

    fn point(&self, offset: Offset) -> Result<(Window<'_>, u64), ReadError> {
        let bound = self.len()?.0;
        if offset.0 < self.prefix.data_start
            || offset.0 >= bound
            || !offset.0.is_multiple_of(FRAME_ALIGN)
        {
            return Err(ReadError::OutOfRange {
                path: self.path.clone(),
                offset,
                start: Offset(self.prefix.data_start),
                bound: Offset(bound),
            });
        }
        Ok((Window::new(self.file.as_ref(), bound, POINT_CHUNK), bound))
    }

    fn fault(&self, offset: u64, f: Fault) -> ReadError {
        match f {
            Fault::Io(e) => ReadError::Io {
                path: self.path.clone(),
                offset: Offset(offset),
                source: e,
            },
            Fault::Frame(fault) => ReadError::Invalid {
                path: self.path.clone(),
                offset: Offset(offset),
                fault,
            },
        }
    }

    /// Reads and verifies the frame at `offset` (both checks, bound to this journal
    /// and this offset): an entry, or a seal (kind [`FrameKind::SEAL`](crate::FrameKind::SEAL)).
    /// The caller checks the seq (and kind) it expects.
    pub fn read_frame_at(&self, offset: Offset) -> Result<Frame, ReadError> {
        let (mut win, _) = self.point(offset)?;
        let max = self.prefix.header.max_payload;
        match decode_at(&mut win, &self.prefix.key, offset.0, Expect::Entry, max) {
            Ok(d) => Ok(Frame {
                info: d.info(offset.0),
                payload: d.payload.to_vec(),
            }),
            Err(f) => Err(self.fault(offset.0, f)),
        }
    }

    /// Verifies the single frame at `offset` (an entry or a seal) without returning its
    /// payload: one read and one hash, the O(1) check a derived index runs on the last
    /// frame it covers (a closed journal's seal).
    pub fn verify_frame_at(&self, offset: Offset) -> Result<FrameInfo, ReadError> {
        let (mut win, _) = self.point(offset)?;
        let max = self.prefix.header.max_payload;
        match decode_at(&mut win, &self.prefix.key, offset.0, Expect::Entry, max) {
            Ok(d) => Ok(d.info(offset.0)),
            Err(f) => Err(self.fault(offset.0, f)),
        }
    }

    /// [`read_frame_at`](Self::read_frame_at) for a frame the caller knows ends at `end`
    /// (e.g. from an index): exactly its bytes are read, never the bytes after it, so
    /// a resume reads no byte twice. A frame that does not end there is an error.
    pub fn read_frame_within(&self, offset: Offset, end: Offset) -> Result<Frame, ReadError> {
        let (win, bound) = self.point(offset)?;
        let mut win = win.bounded(bound.min(end.0));
        let max = self.prefix.header.max_payload;
        match decode_at(&mut win, &self.prefix.key, offset.0, Expect::Entry, max) {
            Ok(d) => Ok(Frame {
                info: d.info(offset.0),
                payload: d.payload.to_vec(),
            }),
            Err(f) => Err(self.fault(offset.0, f)),
        }
    }

    /// [`verify_frame_at`](Self::verify_frame_at) for a frame the caller knows ends at
    /// `end`: exactly its bytes are read.
    pub fn verify_frame_within(&self, offset: Offset, end: Offset) -> Result<FrameInfo, ReadError> {
        let (win, bound) = self.point(offset)?;
        let mut win = win.bounded(bound.min(end.0));
        let max = self.prefix.header.max_payload;
        match decode_at(&mut win, &self.prefix.key, offset.0, Expect::Entry, max) {
            Ok(d) => Ok(d.info(offset.0)),
            Err(f) => Err(self.fault(offset.0, f)),
        }
    }

    /// Reads the consecutive frames that fill `[start, end)` with one read and
    /// verifies each of them (both checks, bound to this journal and its offset), as
    /// [`read_frame_within`](Self::read_frame_within) would one by one: what a caller
    /// that knows where its frames lie (an index) uses to read many neighbours at once.
    /// The caller bounds the run's size (its bytes are read into one buffer) and checks
    /// each frame's seq and kind as it expects. A frame that does not end inside the
    /// run, or a run that does not end on a frame's end, is an error.
    pub fn read_run(&self, start: Offset, end: Offset) -> Result<FrameRun, ReadError> {
        self.read_runs(&[(start, end)])
            .pop()
            .unwrap_or_else(|| Err(self.out_of_range(start, 0)))
    }

    /// [`read_run`](Self::read_run) of each run, with one check of the file's length
    /// for all of them (rather than one per frame read): one result per run, in order.
    pub fn read_runs(&self, runs: &[(Offset, Offset)]) -> Vec<Result<FrameRun, ReadError>> {
        let bound = match self.len() {
            Ok(l) => l.0,
            Err(e) => {
                let mut out = vec![Err(e)];
                out.extend(
                    runs.iter()
                        .skip(1)
                        .map(|&(s, _)| Err(self.out_of_range(s, 0))),
                );
                return out;
            }
        };
        runs.iter()
            .map(|&(start, end)| self.run_within(start, end, bound))
            .collect()
    }

    fn out_of_range(&self, offset: Offset, bound: u64) -> ReadError {
        ReadError::OutOfRange {
            path: self.path.clone(),
            offset,
            start: Offset(self.prefix.data_start),
            bound: Offset(bound),
        }
    }

    /// One run, the file being `bound` bytes long.
    fn run_within(&self, start: Offset, end: Offset, bound: u64) -> Result<FrameRun, ReadError> {
        if start.0 < self.prefix.data_start || !start.0.is_multiple_of(FRAME_ALIGN) {
            return Err(self.out_of_range(start, bound));
        }
        if end.0 > bound || end.0 <= start.0 {
            return Err(self.out_of_range(end, bound));
        }
        let len = usize::try_from(end.0 - start.0).map_err(|_| self.out_of_range(end, bound))?;
        // One window as large as the run: its first read fetches every byte of it.
        let mut win = Window::new(self.file.as_ref(), end.0, len);
        let max = self.prefix.header.max_payload;
        let mut frames = Vec::new();
        let mut at = start.0;
        while at < end.0 {
            match decode_at(&mut win, &self.prefix.key, at, Expect::Entry, max) {
                Ok(d) => {
                    let info = d.info(at);
                    at = info.end().0;
                    frames.push(info);
                }
                Err(f) => return Err(self.fault(at, f)),
            }
        }
        let (buf_start, buf) = win.into_parts();
        Ok(FrameRun {
            start: buf_start,
            buf,
            frames,
        })
    }

    /// The frames at `frames` (each a frame's start and end, as an index knows them;
    /// in file order, apart or neighbours), read with one read of the bytes from the
    /// first's start to the last's end into `buf`'s allocation (its bytes are
    /// overwritten; [`FrameRun::into_buffer`] gives it back for the next read), with one
    /// check of the file's length. Each frame is verified as
    /// [`read_frame_within`](Self::read_frame_within) verifies it; the bytes between
    /// them are read but neither decoded nor trusted. What a caller that knows where
    /// its frames lie reads a few scattered frames with: a context's frames, between
    /// the frames of other branches it skips. The caller bounds the span (it is read
    /// into one buffer) and checks each frame's seq and kind as it expects. Frames out
    /// of order, overlapping or outside the file are an error (none given too).
    pub fn read_frames_into(
        &self,
        frames: &[(Offset, Offset)],
        buf: Vec<u8>,
    ) -> Result<FrameRun, ReadError> {
        let bound = self.len()?.0;
        let (Some(&(start, _)), Some(&(_, end))) = (frames.first(), frames.last()) else {
            return Err(self.out_of_range(Offset(0), bound));
        };
        let mut prev_end = start.0;
        for &(s, e) in frames {
            if s.0 < self.prefix.data_start || !s.0.is_multiple_of(FRAME_ALIGN) || s.0 < prev_end {
                return Err(self.out_of_range(s, bound));
            }
            if e.0 > bound || e.0 <= s.0 {
                return Err(self.out_of_range(e, bound));
            }
            prev_end = e.0;
        }
        let len = usize::try_from(end.0 - start.0).map_err(|_| self.out_of_range(end, bound))?;
        // One window as large as the span: its first read fetches every byte of it.
        let mut win = Window::with_buffer(self.file.as_ref(), end.0, len, buf);
        if let Err(e) = win.get(start.0, len) {
            return Err(self.fault(start.0, Fault::Io(e)));
        }
        let max = self.prefix.header.max_payload;
        let mut infos = Vec::with_capacity(frames.len());
        for &(at, frame_end) in frames {
            // Bounded at the frame's end, as a point read of it is.
            win.set_bound(frame_end.0, end.0);
            match decode_at(&mut win, &self.prefix.key, at.0, Expect::Entry, max) {
                Ok(d) => infos.push(d.info(at.0)),
                Err(f) => return Err(self.fault(at.0, f)),
            }
        }
        let (buf_start, buf) = win.into_parts();
        Ok(FrameRun {
            start: buf_start,
            buf,
            frames: infos,
        })
    }

    /// Iterates entry frames from the first one. See [`Reader::frames_from`].
    pub fn frames(&self, bound: Option<Capture>) -> Frames<'_> {
        self.frames_from(Offset(self.prefix.data_start), bound)
    }

    /// Iterates verified entry frames starting at `offset` (a frame boundary).
    ///
    /// With a [`Capture`], only frames below `capture.len` are read, and an invalid
    /// frame there is an error (captured bytes were completely written). Without one,
    /// the bound is the file's length now and the first invalid frame ends the
    /// iteration quietly — it may be an append in progress — and [`Frames::stop`] says
    /// where and why.
    pub fn frames_from(&self, offset: Offset, bound: Option<Capture>) -> Frames<'_> {
        let (len, error) = match bound {
            Some(c) if c.journal_id != self.journal_id() => (
                0,
                Some(ReadError::ForeignCapture {
                    path: self.path.clone(),
                    expected: self.journal_id(),
                    found: c.journal_id,
                }),
            ),
            Some(c) => (c.len.0, None),
            None => match self.len() {
                Ok(l) => (l.0, None),
                Err(e) => (0, Some(e)),
            },
        };
        let expected = if offset.0 == self.prefix.data_start {
            Some(self.prefix.start())
        } else {
            None
        };
        Frames {
            reader: self,
            win: Window::new(self.file.as_ref(), len, SCAN_CHUNK),
            at: offset.0,
            bound: len,
            strict: bound.is_some(),
            prev: expected,
            seals: false,
            pending_error: error,
            stop: None,
            done: false,
        }
    }
}

/// Consecutive frames read with one read and each verified
/// ([`Reader::read_run`]): their headers, and their payloads borrowed from the run's
/// buffer.
#[derive(Debug)]
pub struct FrameRun {
    /// Where `buf` starts in the file.
    start: u64,
    buf: Vec<u8>,
    frames: Vec<FrameInfo>,
}

impl FrameRun {
    /// The frames, in file order.
    pub fn frames(&self) -> &[FrameInfo] {
        &self.frames
    }

    /// The payload of the `i`-th frame (`None` past the last).
    pub fn payload(&self, i: usize) -> Option<&[u8]> {
        let info = self.frames.get(i)?;
        let from = usize::try_from(info.offset.0.checked_sub(self.start)?).ok()?
            + crate::format::FRAME_HEADER_LEN;
        self.buf.get(from..from + info.payload_len as usize)
    }

    /// The run's buffer, for the next read ([`Reader::read_frames_into`]).
    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }
}

/// An iterator over verified frames; see [`Reader::frames_from`].
pub struct Frames<'r> {
    reader: &'r Reader,
    win: Window<'r>,
    at: u64,
    bound: u64,
    strict: bool,
    /// What the next frame continues, when known.
    prev: Option<Prev>,
    /// Whether seal frames are yielded (they are skipped by default).
    seals: bool,
    pending_error: Option<ReadError>,
    stop: Option<Stop>,
    done: bool,
}

impl std::fmt::Debug for Frames<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames")
            .field("at", &self.at)
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl Frames<'_> {
    /// The same iteration, yielding the journal's seal frames too (kind
    /// [`FrameKind::SEAL`](crate::FrameKind::SEAL), payload the seal's), for a caller
    /// that keeps track of everything the journal holds (a derived index covers the
    /// seal so that its coverage ends where the file does). By default seals are
    /// verified and skipped: they are not entries.
    pub fn with_seals(mut self) -> Self {
        self.seals = true;
        self
    }

    /// Where the next frame would start (after the iteration: the end of the valid
    /// prefix read).
    pub fn position(&self) -> Offset {
        Offset(self.at)
    }

    /// Why an unbounded iteration ended before the file's end, if it did.
    pub fn stop(&self) -> Option<&Stop> {
        self.stop.as_ref()
    }

    /// The last valid entry's seq seen so far, if any.
    pub fn last_seq(&self) -> Option<Seq> {
        self.prev.map(|p| Seq(p.seq)).filter(|s| s.0 > 0)
    }
}

impl Iterator for Frames<'_> {
    type Item = Result<Frame, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.pending_error.take() {
                self.done = true;
                return Some(Err(e));
            }
            if self.done || self.at >= self.bound {
                return None;
            }
            match self.step() {
                Some(Ok(frame)) if frame.info.kind.is_seal() && !self.seals => continue,
                other => return other,
            }
        }
    }
}

impl Frames<'_> {
    /// Reads and verifies the frame at the current position (an entry or a seal).
    fn step(&mut self) -> Option<Result<Frame, ReadError>> {
        let at = self.at;
        let max = self.reader.prefix.header.max_payload;
        let key = &self.reader.prefix.key;
        let prev = self.prev;
        let result = decode_at(&mut self.win, key, at, Expect::Entry, max).and_then(|d| {
            let info = d.info(at);
            let next = match &prev {
                Some(p) => {
                    check_sequence(&d, at, p)?;
                    advance(p, &info)
                }
                // Started mid-journal: sequencing is checked from this frame on (a
                // seal's seq repeats its entry's, so it is the entry seq either way).
                None => Prev {
                    seq: info.seq.0,
                    synced_to: info.synced_to.0,
                    time_ms: info.time.0,
                    check: info.body_check.0,
                },
            };
            Ok((
                Frame {
                    info,
                    payload: d.payload.to_vec(),
                },
                next,
            ))
        });
        match result {
            Ok((frame, next)) => {
                self.prev = Some(next);
                self.at = frame.info.end().0;
                Some(Ok(frame))
            }
            Err(Fault::Frame(fault)) if !self.strict => {
                self.done = true;
                self.stop = Some(Stop {
                    offset: Offset(at),
                    fault,
                });
                None
            }
            Err(f) => {
                self.done = true;
                Some(Err(self.reader.fault(at, f)))
            }
        }
    }
}
