//! The writer: create, open with recovery, append, sync, close.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::capture::Capture;
use crate::encode::{FrameSpec, encode_frame, seal_frame};
use crate::error::{AppendError, CreateError, OpenError};
use crate::format::{
    DEFAULT_MAX_PAYLOAD, FIRST_ENTRY_KIND, FORMAT_VERSION, FRAME_HEADER_LEN, HEADER_FRAME_OFFSET,
    KIND_HEADER, MAX_PAYLOAD_CAP, SEAL_PAYLOAD_LEN, SIGNATURE, frame_len,
};
use crate::frame::{FrameInfo, FrameKey};
use crate::header::{JournalHeader, encode_header_payload, read_prefix};
use crate::lock::{HolderRecord, lock_error, lock_journal, open_for_lock, record_holder};
use crate::recover::{
    RecoveryMode, RecoveryReport, TailState, Verdict, Witness, WitnessOutcome, classify,
    quarantine, scan, scan_from, trust, trusted_scan, witnessed,
};
use crate::seal::{Prev, advance, encode_seal};
use crate::types::{
    BodyCheck, Clock, Durability, FrameKind, JournalId, Offset, Seq, Tag, UnixMillis,
};
use crate::vfs::{StdVfs, Vfs, VfsFile, parent_dir};

/// Options of [`Writer::create`].
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// An opaque session id recorded in the header (e.g. the session's UUID).
    pub session_id: Option<String>,
    /// The largest entry payload the journal accepts (1..=1 GiB; default 64 MiB).
    pub max_payload: u32,
    /// Source of the creation time and frame timestamps.
    pub clock: Clock,
    /// The file system.
    pub vfs: Arc<dyn Vfs>,
}

impl Default for CreateOptions {
    fn default() -> Self {
        Self {
            session_id: None,
            max_payload: DEFAULT_MAX_PAYLOAD,
            clock: Clock::system(),
            vfs: Arc::new(StdVfs),
        }
    }
}

/// Options of [`Writer::open`].
#[derive(Debug, Clone)]
pub struct OpenOptions {
    /// What to do with an invalid end of file.
    pub recovery: RecoveryMode,
    /// A non-zero invalid tail longer than this is refused rather than truncated
    /// (default: the journal's `max_payload` + 8 MiB).
    pub tail_repair_limit: Option<u64>,
    /// Source of frame timestamps and of quarantine file names.
    pub clock: Clock,
    /// The file system.
    pub vfs: Arc<dyn Vfs>,
    /// A prefix already verified by a derived file (the session index): when its
    /// last frame still matches, only the bytes after it are verified, so opening
    /// costs what was appended since the index was written, not the journal's size.
    /// Damage inside the prefix is still caught by every read (each frame is verified
    /// where it is read); `verify` and a full open find it too.
    pub trusted: Option<Witness>,
    /// What a reader of this journal already verified (its prefix, and the trusted
    /// witness's frame): used only if the locked file is the one that reader read, so
    /// that resuming reads each byte once.
    pub known: Option<crate::read::Known>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            recovery: RecoveryMode::default(),
            tail_repair_limit: None,
            clock: Clock::system(),
            vfs: Arc::new(StdVfs),
            trusted: None,
            known: None,
        }
    }
}

/// One entry to append: a kind, an optional tag, opaque payload bytes.
#[derive(Debug, Clone, Copy)]
pub struct NewFrame<'a> {
    /// The caller's kind.
    pub kind: FrameKind,
    /// The caller's 16-byte tag (zeros when unused).
    pub tag: Tag,
    /// The payload (1 byte up to the journal's maximum).
    pub payload: &'a [u8],
}

impl<'a> NewFrame<'a> {
    /// An untagged frame.
    pub fn new(kind: FrameKind, payload: &'a [u8]) -> Self {
        Self {
            kind,
            tag: Tag::default(),
            payload,
        }
    }

    /// The same frame with a tag.
    pub fn with_tag(self, tag: Tag) -> Self {
        Self { tag, ..self }
    }
}

/// What an acknowledged append wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The frame's seq.
    pub seq: Seq,
    /// Where the frame starts.
    pub offset: Offset,
    /// The frame's length on disk (header, payload, padding).
    pub len: u64,
    /// The frame's body check (what an index stores).
    pub body_check: BodyCheck,
    /// How far the frame travelled before the call returned.
    pub durability: Durability,
}

impl Appended {
    /// Where the next frame starts.
    pub fn end(&self) -> Offset {
        Offset(self.offset.0 + self.len)
    }
}

/// The payload being encoded by [`Writer::append_encoded`]: the part of the writer's
/// frame buffer after the frame header. It only grows (or is cleared); the header
/// room before it is out of reach.
#[derive(Debug)]
pub struct PayloadBuf<'a> {
    buf: &'a mut Vec<u8>,
}

impl PayloadBuf<'_> {
    /// Appends bytes to the payload.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The payload so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[FRAME_HEADER_LEN..]
    }

    /// Payload bytes so far.
    pub fn len(&self) -> usize {
        self.buf.len() - FRAME_HEADER_LEN
    }

    /// Whether nothing has been written yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Discards what was written (an empty payload is then refused by the append).
    pub fn clear(&mut self) {
        self.buf.truncate(FRAME_HEADER_LEN);
    }
}

impl std::io::Write for PayloadBuf<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A sync started by [`Writer::start_sync`]: the journal's file and the end (and
/// last sequence number) it makes durable. It holds the file open, and so the
/// writer's lock, until dropped.
#[derive(Debug)]
pub struct PendingSync {
    pub(crate) file: Arc<dyn VfsFile>,
    /// The journal's device (`st_dev`), when known: what a shared sync compares.
    pub(crate) device: Option<u64>,
    end: u64,
    seq: u64,
}

impl PendingSync {
    /// Performs the `fdatasync` (blocking; no writer needed): it covers every byte
    /// written before it started, at least up to [`end`](Self::end).
    pub fn run(self) -> SyncDone {
        let outcome = self.file.sync_data();
        SyncDone {
            sync: self,
            outcome,
        }
    }

    /// The end of the journal this sync makes durable.
    pub fn end(&self) -> Offset {
        Offset(self.end)
    }
}

/// What a [`PendingSync`] did, for [`Writer::finish_sync`].
#[derive(Debug)]
pub struct SyncDone {
    pub(crate) sync: PendingSync,
    pub(crate) outcome: std::io::Result<()>,
}

impl SyncDone {
    /// Whether the `fdatasync` succeeded.
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// The single writer of a journal. Holds the writer lock — on the journal file itself,
/// see [`lock`](crate::lock) — until dropped.
///
/// Any I/O error poisons the writer: the failing call returns the error, every later
/// call returns [`AppendError::Poisoned`], and nothing of the failing call counts as
/// written. Reopen it to recover from what is actually on disk. A failed
/// [background sync](Writer::sync_in_background) poisons it likewise: the next call
/// returns that sync's error.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    /// Emptied when the writer is dropped, before `file` releases the lock.
    _record: HolderRecord,
    /// The journal, opened and locked by this writer (the lock lives as long as it,
    /// and a background sync's thread, joined before the writer is gone, shares it;
    /// so does any [`PendingSync`] still held).
    file: Arc<dyn VfsFile>,
    /// The background sync in flight, if any (at most one).
    background: Option<BackgroundSync>,
    key: FrameKey,
    header: JournalHeader,
    data_start: u64,
    end: u64,
    last_seq: u64,
    durable_end: u64,
    durable_seq: u64,
    /// The last frame written after the header frame (an entry or the seal).
    last_frame: Option<FrameInfo>,
    /// What the next frame continues (a seal names the frame it follows).
    prev: Prev,
    poisoned: Option<u64>,
    clock: Clock,
    buf: Vec<u8>,
    /// How far the journal's blocks are reserved for buffered appends (`u64::MAX`:
    /// the file system reserves nothing, never asked again).
    reserved_to: u64,
    /// Whether blocks past the end may be reserved (released at the seal).
    reserved: bool,
    /// The journal's device, read (`fstat`) by the first started sync.
    device: Option<u64>,
}

/// Blocks a buffered writer reserves past its end at a time: the journal's size,
/// at least [`RESERVE_MIN`] and at most [`RESERVE_MAX`]. A write into reserved
/// blocks costs the kernel less than one that reserves delayed-allocation blocks
/// page by page, and the periodic `fdatasync` then allocates nothing.
const RESERVE_MIN: u64 = 64 << 10;
/// See [`RESERVE_MIN`].
const RESERVE_MAX: u64 = 1 << 20;

/// A sync of the journal running on a thread of its own, started by
/// [`Writer::sync_in_background`]: what it makes durable when it succeeds.
#[derive(Debug)]
struct BackgroundSync {
    /// The journal's end when it was started.
    end: u64,
    /// The last seq written then.
    seq: u64,
    /// Returns the `fdatasync`'s outcome (after the caller's follow-up, if any).
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

/// What a writer's background sync runs after its `fdatasync` succeeded: handed the
/// durable capture it made (a derived file's save, say).
pub type AfterSync = Box<dyn FnOnce(Capture) + Send + 'static>;

/// How much of its frame buffer a writer keeps between appends: one huge entry must not
/// pin its size (up to the 64 MiB maximum payload) for the writer's lifetime.
const KEPT_BUFFER: usize = 1 << 20;

/// The writer's frame buffer, emptied, for the next append; a buffer a large append
/// grew past [`KEPT_BUFFER`] is released first.
fn take_buffer(buf: &mut Vec<u8>) -> Vec<u8> {
    let mut b = std::mem::take(buf);
    b.clear();
    b.shrink_to(KEPT_BUFFER);
    b
}

/// How much frame buffer a synced writer keeps: a session at rest holds little (the
/// owner keeps a thousand of them open); the next append grows it again if it must.
const IDLE_BUFFER: usize = 64 << 10;

/// Refuses a `max_payload` outside `1..=MAX_PAYLOAD_CAP` (naming `path`).
fn check_max_payload(path: &Path, options: &CreateOptions) -> Result<(), CreateError> {
    if options.max_payload == 0 || options.max_payload > MAX_PAYLOAD_CAP {
        return Err(CreateError::InvalidOptions {
            path: path.to_path_buf(),
            reason: format!(
                "max_payload {} is outside 1..={MAX_PAYLOAD_CAP}",
                options.max_payload
            ),
        });
    }
    Ok(())
}

/// Creates `dir` (and missing parents) if it is missing, and makes its entry durable.
fn ensure_dir(vfs: &dyn Vfs, dir: &Path) -> Result<(), CreateError> {
    if !vfs.exists(dir).map_err(|e| create_io(dir, "stat", e))? {
        vfs.create_dir_all(dir)
            .map_err(|e| create_io(dir, "create directory", e))?;
        // The new directory's own entry must be durable too.
        let up = parent_dir(dir);
        vfs.sync_dir(&up)
            .map_err(|e| create_io(&up, "sync directory", e))?;
    }
    Ok(())
}

/// A fresh temporary file in `dir` under an unpredictable name starting with
/// `prefix`, locked by the returned handle (removed again if it cannot be locked).
fn create_locked_temp(
    vfs: &dyn Vfs,
    dir: &Path,
    prefix: &str,
) -> Result<(PathBuf, Box<dyn VfsFile>), CreateError> {
    let (tmp, file) = vfs
        .create_temp(dir, prefix)
        .map_err(|e| create_io(dir, "create temporary journal", e))?;
    match file.try_lock() {
        Ok(true) => Ok((tmp, file)),
        Ok(false) => {
            let _ = vfs.remove_file(&tmp);
            Err(create_io(
                &tmp,
                "lock",
                std::io::Error::other("a fresh temporary journal is locked by another process"),
            ))
        }
        Err(e) => {
            let _ = vfs.remove_file(&tmp);
            Err(create_io(&tmp, "lock", e))
        }
    }
}

/// The header of a new journal, its frame key, and the signature and header frame
/// as written at offset 0.
/// What a just-created journal's writer starts from: its header, written and `end`
/// bytes long.
struct Fresh {
    key: FrameKey,
    header: JournalHeader,
    end: u64,
    created_ms: u64,
    header_check: [u8; 8],
}

fn header_bytes(
    id: JournalId,
    options: &CreateOptions,
) -> (JournalHeader, FrameKey, Vec<u8>, BodyCheck) {
    let header = JournalHeader {
        journal_id: id,
        session_id: options.session_id.clone(),
        created_at: options.clock.now(),
        max_payload: options.max_payload,
        format_version: FORMAT_VERSION,
    };
    let key = FrameKey::derive(&id);
    let payload = encode_header_payload(&header);
    let mut buf = SIGNATURE.to_vec();
    let check = encode_frame(
        &key,
        &FrameSpec {
            offset: HEADER_FRAME_OFFSET,
            kind: KIND_HEADER,
            seq: 0,
            synced_to: 0,
            time_ms: header.created_at.0,
            tag: id.0,
            payload: &payload,
        },
        &mut buf,
    );
    (header, key, buf, check)
}

fn create_io(path: &Path, op: &'static str, source: std::io::Error) -> CreateError {
    CreateError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

fn open_io(
    path: &Path,
    op: &'static str,
    offset: Option<u64>,
    source: std::io::Error,
) -> OpenError {
    OpenError::Io {
        path: path.to_path_buf(),
        op,
        offset: offset.map(Offset),
        source,
    }
}

/// Verifies the journal's frames: all of them, or — when a trusted witness is offered
/// and holds (checked here, or already by a reader of this very file) — only those
/// after it.
fn verify_prefix(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &crate::header::Prefix,
    len: u64,
    options: &OpenOptions,
    known: Option<&crate::read::Known>,
) -> Result<(crate::recover::Scan, WitnessOutcome), OpenError> {
    let Some(w) = &options.trusted else {
        return Ok((scan(file, path, prefix, len)?, WitnessOutcome::NotOffered));
    };
    let start = known
        .and_then(|k| k.frame)
        .filter(|f| witnessed(f, w, len))
        .map(|f| Ok(trusted_scan(w, f)))
        .unwrap_or_else(|| trust(file, prefix, len, w));
    Ok(match start {
        Ok(start) => (
            scan_from(file, path, prefix, len, start)?,
            WitnessOutcome::Accepted,
        ),
        Err(why) => (
            scan(file, path, prefix, len)?,
            WitnessOutcome::Rejected(why),
        ),
    })
}

/// Classifies what follows the valid frames and settles it: a clean end is synced; a
/// torn tail is copied aside, cut and synced (refused in strict mode); corruption is
/// refused, or cut in point-in-time mode.
fn settle_tail(
    file: &dyn VfsFile,
    path: &Path,
    prefix: &crate::header::Prefix,
    s: &crate::recover::Scan,
    len: u64,
    options: &OpenOptions,
) -> Result<TailState, OpenError> {
    let Some(fault) = &s.stop else {
        // What was written before we took over may not be durable yet.
        file.sync_data()
            .map_err(|e| open_io(path, "sync", Some(s.end), e))?;
        return Ok(TailState::Clean);
    };
    let verdict = classify(file, path, prefix, s, fault, len, options.tail_repair_limit)?;
    let discard = match (options.recovery, verdict) {
        (RecoveryMode::Strict, Verdict::Torn) => {
            return Err(OpenError::TornTail {
                path: path.to_path_buf(),
                offset: Offset(s.end),
                len: len - s.end,
                fault: fault.clone(),
            });
        }
        (RecoveryMode::PointInTime, Verdict::Corrupt(_)) => true,
        (_, Verdict::Corrupt(e)) => return Err(e),
        (_, Verdict::Torn) => false,
    };
    let vfs = options.vfs.as_ref();
    let quarantine = quarantine(vfs, file, path, s.end, len, options.clock.now().0)?;
    file.set_len(s.end)
        .map_err(|e| open_io(path, "truncate", Some(s.end), e))?;
    file.sync_all()
        .map_err(|e| open_io(path, "sync", Some(s.end), e))?;
    let (offset, bytes, fault) = (Offset(s.end), len - s.end, fault.clone());
    Ok(if discard {
        TailState::Discarded {
            offset,
            bytes,
            fault,
            quarantine,
        }
    } else {
        TailState::TornTail {
            offset,
            bytes,
            fault,
            quarantine,
        }
    })
}

/// The prefix of the temporary name a journal is created under before it is linked
/// into place: hidden (a leading `.`), naming the journal (at most its first 64
/// characters, so a journal name near the 255-byte limit still has a temporary name),
/// so a leftover after a crash is recognised: `.<name>.new-<16 hex digits>.tmp`.
pub(crate) fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(64).collect::<String>())
        .unwrap_or_default();
    format!(".{name}{TEMP_MARK}")
}

/// What marks a journal's temporary name (see [`is_leftover_temp`]).
const TEMP_MARK: &str = ".new-";

/// Whether `name` is the temporary name of a journal whose creation never finished
/// (the process died between creating it and linking it into place). Such a file
/// holds no entry: only the signature and the header, or less.
pub fn is_leftover_temp(name: &std::ffi::OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    rest.rsplit_once(TEMP_MARK)
        .is_some_and(|(_, hex)| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

impl Writer {
    /// Creates a new journal durably: writes the signature and the header frame into
    /// a fresh temporary file (`0600`, an unpredictable name in the same directory;
    /// missing parent directories `0700`) locked by this writer, syncs it, links it into
    /// place (never replacing anything), removes the temporary name and syncs the
    /// directory. `path` never names a journal without its header.
    ///
    /// Fails with [`CreateError::Exists`] if anything is already there.
    pub fn create(
        path: &Path,
        id: JournalId,
        options: CreateOptions,
    ) -> Result<Writer, CreateError> {
        check_max_payload(path, &options)?;
        let vfs = options.vfs.as_ref();
        let dir = parent_dir(path);
        ensure_dir(vfs, &dir)?;
        // Fast refusal; the link below is what decides.
        if vfs
            .identity(path)
            .map_err(|e| create_io(path, "stat", e))?
            .is_some()
        {
            return Err(CreateError::Exists {
                path: path.to_path_buf(),
            });
        }
        // The journal is written under an unpredictable temporary name and linked into
        // place complete: no process ever sees `path` without its header.
        let (tmp, file) = create_locked_temp(vfs, &dir, &temp_prefix(path))?;
        let (header, key, buf, header_check) = header_bytes(id, &options);
        let created_ms = header.created_at.0;
        let written = file
            .write_all_at(0, &buf)
            .map_err(|e| create_io(&tmp, "write", e))
            .and_then(|()| file.sync_all().map_err(|e| create_io(&tmp, "sync", e)))
            .and_then(|()| match vfs.hard_link(&tmp, path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    Err(CreateError::Exists {
                        path: path.to_path_buf(),
                    })
                }
                Err(e) => Err(create_io(path, "link into place", e)),
            });
        // Ours alone (an unpredictable name, created exclusively): removing it is safe
        // whether or not the journal was published.
        let removed = vfs.remove_file(&tmp);
        written?;
        removed.map_err(|e| create_io(&tmp, "remove temporary journal", e))?;
        vfs.sync_dir(&dir)
            .map_err(|e| create_io(&dir, "sync directory", e))?;
        let record = record_holder(vfs, path);
        let end = buf.len() as u64;
        let fresh = Fresh {
            key,
            header,
            end,
            created_ms,
            header_check: header_check.0,
        };
        // Published only once its header was synced: durable up to `end`.
        Ok(Writer::fresh(
            path.to_path_buf(),
            record,
            file,
            fresh,
            end,
            options.clock,
        ))
    }

    /// Creates a journal under a fresh temporary name in `dir` (`<prefix><16 hex
    /// digits>.tmp`, created exclusively `0600`, never through a link; a missing `dir`
    /// is created `0700`), locked by this writer, with the signature and the header
    /// frame written but **nothing synced**. For a caller that writes the whole journal,
    /// makes it durable with [`sync`](Self::sync) and then publishes it under its real
    /// name itself: a bulk import writes many temporaries, syncs them together, then
    /// links each into place (one directory sync for all). Nothing may read the file as
    /// a journal before that sync, and the caller removes the temporary name.
    ///
    /// The header is not counted as durable: frames appended before the first sync
    /// carry `synced_to` 0, and [`durable_capture`](Self::durable_capture) is empty
    /// until then.
    pub fn create_unpublished(
        dir: &Path,
        prefix: &str,
        id: JournalId,
        options: CreateOptions,
    ) -> Result<(PathBuf, Writer), CreateError> {
        check_max_payload(dir, &options)?;
        let vfs = options.vfs.as_ref();
        ensure_dir(vfs, dir)?;
        let (tmp, file) = create_locked_temp(vfs, dir, prefix)?;
        let (header, key, buf, header_check) = header_bytes(id, &options);
        let created_ms = header.created_at.0;
        if let Err(e) = file.write_all_at(0, &buf) {
            let _ = vfs.remove_file(&tmp);
            return Err(create_io(&tmp, "write", e));
        }
        let end = buf.len() as u64;
        let fresh = Fresh {
            key,
            header,
            end,
            created_ms,
            header_check: header_check.0,
        };
        // Nothing synced yet: the caller syncs and publishes.
        let writer = Writer::fresh(
            tmp.clone(),
            HolderRecord::none(),
            file,
            fresh,
            0,
            options.clock,
        );
        Ok((tmp, writer))
    }

    /// A writer of a journal that holds only its header (`fresh.end` bytes), durable
    /// up to `durable_end`.
    fn fresh(
        path: PathBuf,
        record: HolderRecord,
        file: Box<dyn VfsFile>,
        fresh: Fresh,
        durable_end: u64,
        clock: Clock,
    ) -> Writer {
        Writer {
            path,
            _record: record,
            file: Arc::from(file),
            background: None,
            key: fresh.key,
            header: fresh.header,
            data_start: fresh.end,
            end: fresh.end,
            last_seq: 0,
            durable_end,
            durable_seq: 0,
            last_frame: None,
            prev: Prev {
                seq: 0,
                synced_to: 0,
                time_ms: fresh.created_ms,
                check: fresh.header_check,
            },
            poisoned: None,
            clock,
            buf: Vec::new(),
            reserved_to: 0,
            reserved: false,
            device: None,
        }
    }

    /// Opens an existing journal for appending: takes the lock, verifies every frame,
    /// classifies the end of the file and (in the default mode) repairs a torn tail.
    /// Everything in the valid prefix is synced before this returns.
    pub fn open(path: &Path, options: OpenOptions) -> Result<(Writer, RecoveryReport), OpenError> {
        let vfs = options.vfs.as_ref();
        let file = open_for_lock(vfs, path)?;
        let locked = lock_journal(vfs, path, file.as_ref()).map_err(|f| lock_error(path, f))?;
        // A reader's evidence counts only for the very file now locked.
        let known = options.known.as_ref().filter(|k| k.file == locked);
        let len = file.len().map_err(|e| open_io(path, "stat", None, e))?;
        let prefix = match known {
            Some(k) => k.prefix.clone(),
            None => read_prefix(file.as_ref(), path, len)?,
        };
        // A journal, and ours: only now is the holder record beside it written (a
        // plain JSONL file or a missing one leaves nothing behind).
        let record = record_holder(vfs, path);
        let (s, witness) = verify_prefix(file.as_ref(), path, &prefix, len, &options, known)?;
        let verified_from = match witness {
            WitnessOutcome::Accepted => {
                options.trusted.map_or(Offset(prefix.data_start), |w| w.end)
            }
            _ => Offset(prefix.data_start),
        };
        let tail = settle_tail(file.as_ref(), path, &prefix, &s, len, &options)?;
        let report = RecoveryReport {
            header: prefix.header.clone(),
            frames: s.frames,
            last_seq: Seq(s.last_seq()),
            last_frame: s.last_frame,
            sealed: s.sealed(),
            end: Offset(s.end),
            tail,
            verified_from,
            witness,
        };
        let writer = Writer {
            path: path.to_path_buf(),
            _record: record,
            file: Arc::from(file),
            background: None,
            key: prefix.key,
            header: prefix.header,
            data_start: prefix.data_start,
            end: s.end,
            last_seq: s.last_seq(),
            durable_end: s.end,
            durable_seq: s.last_seq(),
            last_frame: s.last_frame,
            prev: s.prev,
            poisoned: None,
            clock: options.clock,
            buf: Vec::new(),
            reserved_to: 0,
            reserved: false,
            device: None,
        };
        Ok((writer, report))
    }

    /// The identity of the journal file this writer locked, when the file system can
    /// tell.
    pub fn file_id(&self) -> Option<crate::vfs::FileId> {
        self.file.status().ok().map(|s| s.id)
    }

    /// Appends one untagged entry.
    pub fn append(
        &mut self,
        kind: FrameKind,
        payload: &[u8],
        durability: Durability,
    ) -> Result<Appended, AppendError> {
        self.append_frame(NewFrame::new(kind, payload), durability)
    }

    /// Appends one entry.
    pub fn append_frame(
        &mut self,
        frame: NewFrame<'_>,
        durability: Durability,
    ) -> Result<Appended, AppendError> {
        self.append_encoded(frame.kind, frame.tag, durability, |b| {
            b.extend_from_slice(frame.payload)
        })
        .map(|(a, _)| a)
    }

    /// Appends one entry whose payload `encode` writes straight into the buffer the
    /// writer checks and writes, so the payload is never held (or copied) anywhere
    /// else; the buffer is reused from call to call. Returns what was appended and the
    /// payload as written (for a caller that derives state from it).
    ///
    /// The payload is opaque to the journal, as with [`append_frame`](Self::append_frame);
    /// an empty or too-large payload is refused after `encode` ran, with nothing written.
    ///
    /// ```
    /// # use session_journal::{CreateOptions, Durability, FrameKind, JournalId, Tag, Writer};
    /// # let dir = tempfile::tempdir()?;
    /// # let opts = CreateOptions::default();
    /// let mut w = Writer::create(&dir.path().join("a.jsonl"), JournalId([1; 16]), opts)?;
    /// let (a, payload) = w.append_encoded(FrameKind::FIRST_CALLER, Tag::default(), Durability::Buffered, |b| {
    ///     b.extend_from_slice(b"{\"n\":");
    ///     b.extend_from_slice(b"1}");
    /// })?;
    /// assert_eq!(payload, b"{\"n\":1}");
    /// assert_eq!(a.seq.0, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append_encoded(
        &mut self,
        kind: FrameKind,
        tag: Tag,
        durability: Durability,
        encode: impl FnOnce(&mut PayloadBuf<'_>),
    ) -> Result<(Appended, &[u8]), AppendError> {
        let time = self.clock.now();
        self.append_encoded_at(kind, tag, time, durability, encode)
    }

    /// [`append_encoded`](Self::append_encoded) with the frame's time given (its
    /// `time_ms`, informational) instead of read from the writer's clock: for a
    /// caller that reads the clock for its payload already (an entry's timestamp),
    /// so that one append reads it once.
    pub fn append_encoded_at(
        &mut self,
        kind: FrameKind,
        tag: Tag,
        time: UnixMillis,
        durability: Durability,
        encode: impl FnOnce(&mut PayloadBuf<'_>),
    ) -> Result<(Appended, &[u8]), AppendError> {
        self.check_poison()?;
        self.harvest(false)?;
        self.check_kind(kind)?;
        let mut buf = take_buffer(&mut self.buf);
        buf.resize(FRAME_HEADER_LEN, 0);
        encode(&mut PayloadBuf { buf: &mut buf });
        let payload_len = buf.len() - FRAME_HEADER_LEN;
        if let Err(e) = self.check_payload_len(payload_len) {
            self.buf = buf;
            return Err(e);
        }
        let synced_to = self.durable_end;
        let seq = self.last_seq + 1;
        let body_check = seal_frame(
            &self.key,
            &FrameSpec {
                offset: self.end,
                kind: kind.get(),
                seq,
                synced_to,
                time_ms: time.0,
                tag: tag.0,
                payload: &[],
            },
            &mut buf,
            0,
        );
        let appended = Appended {
            seq: Seq(seq),
            offset: Offset(self.end),
            len: buf.len() as u64,
            body_check,
            durability,
        };
        if durability == Durability::Buffered {
            self.reserve_to(appended.end().0);
        }
        let written = self.write_at_end(&buf);
        self.buf = buf;
        written?;
        self.end = appended.end().0;
        self.last_seq = seq;
        self.took(FrameInfo {
            offset: appended.offset,
            kind,
            seq: appended.seq,
            tag,
            time,
            synced_to: Offset(synced_to),
            payload_len: payload_len as u32,
            body_check,
        });
        if durability == Durability::Durable {
            self.sync_inner()?;
        }
        Ok((
            appended,
            &self.buf[FRAME_HEADER_LEN..FRAME_HEADER_LEN + payload_len],
        ))
    }

    /// Reserves the journal's blocks up to at least `end` (best effort; see
    /// [`RESERVE_MIN`]): what a buffered append about to write up to `end` asks.
    fn reserve_to(&mut self, end: u64) {
        if end <= self.reserved_to {
            return;
        }
        let from = self.reserved_to.max(self.end);
        let chunk = (self.end - self.data_start).clamp(RESERVE_MIN, RESERVE_MAX);
        match self.file.preallocate(from, chunk.max(end - from)) {
            Ok(true) => {
                self.reserved_to = from + chunk.max(end - from);
                self.reserved = true;
            }
            // Not supported, or refused (no space: the write will say): not asked again.
            Ok(false) | Err(_) => self.reserved_to = u64::MAX,
        }
    }

    /// Releases the blocks reserved past the end (truncating the file to its length
    /// changes no byte): a closed journal keeps none.
    fn release_reserved(&mut self) {
        if self.reserved {
            let _ = self.file.set_len(self.end);
            self.reserved = false;
            self.reserved_to = self.reserved_to.min(self.end);
        }
    }

    /// Records the frame just written as the last one.
    fn took(&mut self, info: FrameInfo) {
        self.prev = advance(&self.prev, &info);
        self.last_frame = Some(info);
    }

    /// Callers append their own kinds only (`0x10..=0xff`); the seal is the journal's.
    fn check_kind(&self, kind: FrameKind) -> Result<(), AppendError> {
        if kind.get() < FIRST_ENTRY_KIND {
            return Err(AppendError::ReservedKind {
                path: self.path.clone(),
                kind: kind.get(),
            });
        }
        Ok(())
    }

    fn check_payload_len(&self, len: usize) -> Result<(), AppendError> {
        if len == 0 {
            return Err(AppendError::Empty {
                path: self.path.clone(),
            });
        }
        if len as u64 > u64::from(self.header.max_payload) {
            return Err(AppendError::TooLarge {
                path: self.path.clone(),
                len: len as u64,
                max: self.header.max_payload,
            });
        }
        Ok(())
    }

    /// Writes encoded frames at the end of the journal; on failure takes back what it
    /// can and poisons the writer.
    fn write_at_end(&mut self, buf: &[u8]) -> Result<(), AppendError> {
        if let Err(e) = self.file.write_all_at(self.end, buf) {
            // Best effort: take back whatever part of the frames reached the file.
            let _ = self.file.set_len(self.end);
            self.poisoned = Some(self.end);
            return Err(AppendError::Io {
                path: self.path.clone(),
                op: "write",
                offset: Offset(self.end),
                source: e,
            });
        }
        Ok(())
    }

    /// Appends several entries with one write (and, if `Durable`, one `fdatasync`):
    /// the group mode for bulk work. Either every frame is acknowledged or none is.
    pub fn append_batch(
        &mut self,
        frames: &[NewFrame<'_>],
        durability: Durability,
    ) -> Result<Vec<Appended>, AppendError> {
        self.check_poison()?;
        self.harvest(false)?;
        for f in frames {
            self.check_kind(f.kind)?;
            self.check_payload_len(f.payload.len())?;
        }
        let time = self.clock.now();
        let synced_to = self.durable_end;
        let mut buf = take_buffer(&mut self.buf);
        let mut out = Vec::with_capacity(frames.len());
        let mut at = self.end;
        for (i, f) in frames.iter().enumerate() {
            let seq = self.last_seq + 1 + i as u64;
            let body_check = encode_frame(
                &self.key,
                &FrameSpec {
                    offset: at,
                    kind: f.kind.get(),
                    seq,
                    synced_to,
                    time_ms: time.0,
                    tag: f.tag.0,
                    payload: f.payload,
                },
                &mut buf,
            );
            let len = frame_len(f.payload.len() as u64);
            out.push(Appended {
                seq: Seq(seq),
                offset: Offset(at),
                len,
                body_check,
                durability,
            });
            at += len;
        }
        let written = self.write_at_end(&buf);
        self.buf = buf;
        written?;
        self.end = at;
        self.last_seq += frames.len() as u64;
        if let (Some(a), Some(f)) = (out.last(), frames.last()) {
            self.took(FrameInfo {
                offset: a.offset,
                kind: f.kind,
                seq: a.seq,
                tag: f.tag,
                time,
                synced_to: Offset(synced_to),
                payload_len: f.payload.len() as u32,
                body_check: a.body_check,
            });
        }
        if durability == Durability::Durable {
            self.sync_inner()?;
        }
        Ok(out)
    }

    fn check_poison(&self) -> Result<(), AppendError> {
        match self.poisoned {
            Some(offset) => Err(AppendError::Poisoned {
                path: self.path.clone(),
                offset: Offset(offset),
            }),
            None => Ok(()),
        }
    }

    fn sync_inner(&mut self) -> Result<(), AppendError> {
        // A background sync's failure must be seen before anything is called durable:
        // after a failed `fdatasync` a second one may succeed without the lost pages.
        self.harvest(true)?;
        if self.durable_end == self.end {
            return Ok(());
        }
        let outcome = self.file.sync_data();
        self.settle_sync(self.end, self.last_seq, outcome, "sync")
    }

    /// Records a sync's outcome, wherever it ran: success makes everything up to
    /// `end` (seq `seq`) durable (never moving the watermark back); failure poisons
    /// the writer and names the sync (fsyncgate: never retried, nothing after the
    /// last durable byte reported as durable).
    fn settle_sync(
        &mut self,
        end: u64,
        seq: u64,
        outcome: std::io::Result<()>,
        op: &'static str,
    ) -> Result<(), AppendError> {
        match outcome {
            Ok(()) => {
                if end > self.durable_end {
                    self.durable_end = end;
                    self.durable_seq = seq;
                }
                Ok(())
            }
            Err(e) => {
                self.poisoned = Some(self.durable_end);
                Err(AppendError::Io {
                    path: self.path.clone(),
                    op,
                    offset: Offset(self.durable_end),
                    source: e,
                })
            }
        }
    }

    /// Starts making everything written so far durable on a thread of its own (one
    /// `fdatasync` of the journal), and returns without waiting for it: the periodic
    /// sync of a buffered writer, kept off the appending thread. Later appends go on
    /// meanwhile (each is still handed to the OS before it returns); the durable
    /// watermark advances, and later frames' `synced_to` with it, once an append or
    /// [`durable_capture`](Self::durable_capture) caller's next call finds the sync
    /// done.
    ///
    /// Returns whether a sync was started: not when one is already running (at most
    /// one at a time; it is not waited for) or nothing is pending. The rules
    /// (`docs/format.md` §2.4): a failed background sync poisons the writer — the next
    /// call (append, sync, seal, close) returns its error and nothing after it is
    /// durable; a durable append, [`sync`](Self::sync), [`seal`](Self::seal) and
    /// [`close`](Self::close) wait for it first; dropping the writer joins it, so no
    /// thread outlives the writer (or its lock).
    pub fn sync_in_background(&mut self) -> Result<bool, AppendError> {
        self.start_background(None)
    }

    /// [`sync_in_background`](Self::sync_in_background), then `after` on the same
    /// thread, handed the capture the sync made durable, if the sync succeeded (and
    /// only then). Runs `after` even when nothing was pending (no sync then); when a
    /// background sync is already running, starts nothing and drops `after` (returns
    /// `false`). What a derived file that may only claim durable bytes (the session
    /// index) is saved with, off the appending thread.
    pub fn sync_in_background_then(&mut self, after: AfterSync) -> Result<bool, AppendError> {
        self.start_background(Some(after))
    }

    fn start_background(&mut self, after: Option<AfterSync>) -> Result<bool, AppendError> {
        self.check_poison()?;
        self.harvest(false)?;
        if self.background.is_some() || (self.durable_end == self.end && after.is_none()) {
            return Ok(false);
        }
        let pending = self.durable_end != self.end;
        let capture = self.capture();
        let file = self.file.clone();
        let spawned = std::thread::Builder::new()
            .name("journal-sync".into())
            .spawn(move || {
                if pending {
                    file.sync_data()?;
                }
                if let Some(after) = after {
                    after(capture);
                }
                Ok(())
            });
        match spawned {
            Ok(thread) => {
                self.background = Some(BackgroundSync {
                    end: capture.len.0,
                    seq: capture.last_seq.0,
                    thread,
                });
                Ok(true)
            }
            // No thread to be had: sync here instead (its follow-up is dropped).
            Err(_) => self.sync_inner().map(|()| false),
        }
    }

    /// Takes the background sync's outcome when it is done (or, with `wait`, waits
    /// for it): success advances the durable watermark; failure poisons the writer
    /// and is returned (never retried: fsyncgate).
    fn harvest(&mut self, wait: bool) -> Result<(), AppendError> {
        let Some(bg) = self
            .background
            .take_if(|bg| wait || bg.thread.is_finished())
        else {
            return Ok(());
        };
        let outcome = bg.thread.join().unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the background sync's thread panicked",
            ))
        });
        self.settle_sync(bg.end, bg.seq, outcome, "background sync")
    }

    /// Makes everything written so far durable (one `fdatasync`, skipped when nothing
    /// is pending); returns the durable watermark.
    pub fn sync(&mut self) -> Result<Capture, AppendError> {
        self.check_poison()?;
        self.buf.clear();
        self.buf.shrink_to(IDLE_BUFFER);
        self.sync_inner()?;
        Ok(self.durable_capture())
    }

    /// Starts a sync of everything written so far that runs without the writer: the
    /// returned [`PendingSync`] holds the file and the end it covers, and its
    /// [`run`](PendingSync::run) performs the `fdatasync` on any thread while this
    /// writer goes on appending (what a group commit needs to write its next batch
    /// while the previous batch's sync runs). Hand its outcome back to
    /// [`finish_sync`](Self::finish_sync). `None` when everything written is durable.
    pub fn start_sync(&mut self) -> Result<Option<PendingSync>, AppendError> {
        self.check_poison()?;
        self.harvest(false)?;
        if self.durable_end == self.end {
            return Ok(None);
        }
        if self.device.is_none() {
            self.device = self.file.status().ok().map(|st| st.id.dev);
        }
        Ok(Some(PendingSync {
            file: Arc::clone(&self.file),
            device: self.device,
            end: self.end,
            seq: self.last_seq,
        }))
    }

    /// Records the outcome of a sync started by [`start_sync`](Self::start_sync):
    /// on success everything written before it started is durable (appends made
    /// while it ran are not: they need the next sync); on failure the writer is
    /// poisoned as by any failed sync (fsyncgate: never retried, nothing after the
    /// last durable byte reported as durable) and the error names the sync.
    ///
    /// A sync that succeeds after the writer was poisoned (by another sync that
    /// failed meanwhile) proves nothing and is refused as the writer is.
    pub fn finish_sync(&mut self, done: SyncDone) -> Result<(), AppendError> {
        self.check_poison()?;
        // A background sync's failure must be seen before anything is called
        // durable (fsyncgate), as in every sync.
        self.harvest(true)?;
        let SyncDone { sync, outcome } = done;
        self.settle_sync(sync.end, sync.seq, outcome, "sync")
    }

    /// Seals the journal: syncs everything written, then writes the seal frame and
    /// syncs it (`docs/format.md` §2.4). While the seal stands, damage to any frame
    /// before it is corruption, never a torn tail. Nothing is written if the journal
    /// already ends with a seal. The writer stays usable: a later append follows the
    /// seal (which stays in the journal, covering what came before it).
    ///
    /// A version 1 journal is sealed too: from the first seal on it holds a version 2
    /// frame, which version 1 readers refuse as reserved (they never modify it).
    pub fn seal(&mut self) -> Result<Capture, AppendError> {
        self.check_poison()?;
        self.buf.clear();
        self.buf.shrink_to(IDLE_BUFFER);
        self.sync_inner()?;
        // Before the seal is written: what changes the file's times is done by the
        // time the seal is durable.
        self.release_reserved();
        if self.is_sealed() {
            return Ok(self.durable_capture());
        }
        // A sealed writer is at rest: its buffer stays at most IDLE_BUFFER.
        let mut buf = take_buffer(&mut self.buf);
        let at = self.end;
        let body_check = encode_seal(&self.key, &self.prev, at, &mut buf);
        let written = self.write_at_end(&buf);
        let len = buf.len() as u64;
        buf.clear();
        self.buf = buf;
        written?;
        self.end = at + len;
        self.took(FrameInfo {
            offset: Offset(at),
            kind: FrameKind::SEAL,
            seq: Seq(self.prev.seq),
            tag: Tag::default(),
            time: UnixMillis(self.prev.time_ms),
            synced_to: Offset(at),
            payload_len: SEAL_PAYLOAD_LEN,
            body_check,
        });
        self.sync_inner()?;
        Ok(self.durable_capture())
    }

    /// Whether the journal ends with a seal (closed cleanly, nothing appended since).
    pub fn is_sealed(&self) -> bool {
        self.last_frame.is_some_and(|f| f.kind.is_seal())
    }

    /// Seals the journal ([`seal`](Self::seal)) and releases the lock. Dropping a
    /// writer without closing it releases the lock too, but writes no seal and leaves
    /// `Buffered` frames unsynced.
    pub fn close(mut self) -> Result<Capture, AppendError> {
        self.seal()
    }

    /// Everything written (handed to the OS) so far: what a reader may be bounded by.
    pub fn capture(&self) -> Capture {
        Capture {
            journal_id: self.header.journal_id,
            len: Offset(self.end),
            last_seq: Seq(self.last_seq),
        }
    }

    /// Everything made durable so far: what a derived index may claim. A background
    /// sync still running (or finished but not yet taken up by a call that needs
    /// `&mut self`) is not counted.
    pub fn durable_capture(&self) -> Capture {
        Capture {
            journal_id: self.header.journal_id,
            len: Offset(self.durable_end),
            last_seq: Seq(self.durable_seq),
        }
    }

    /// The journal's header.
    pub fn header(&self) -> &JournalHeader {
        &self.header
    }

    /// The journal's id.
    pub fn journal_id(&self) -> JournalId {
        self.header.journal_id
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the first entry frame starts.
    pub fn data_start(&self) -> Offset {
        Offset(self.data_start)
    }

    /// The last frame written after the header frame: an entry, or the seal
    /// ([`FrameKind::SEAL`]) when the journal ends sealed. Its body check is what an
    /// index records as the end of what it covers.
    pub fn last_frame(&self) -> Option<FrameInfo> {
        self.last_frame
    }

    /// Whether an I/O error has poisoned the writer (a failed background sync counts
    /// once a later call has taken up its outcome).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// The timestamp the next append will carry.
    pub fn now(&self) -> UnixMillis {
        self.clock.now()
    }
}

impl Drop for Writer {
    /// Joins a background sync still running, so that no thread outlives the writer:
    /// the lock (held by the journal's open file) is released only after it.
    fn drop(&mut self) {
        if let Some(bg) = self.background.take() {
            let _ = bg.thread.join();
        }
    }
}
