//! Opening an index: validate the sidecar in O(1), catch up the tail, or rebuild; and
//! keeping it current while appending.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::{OpenMode, StdVfs, Vfs};
use session_journal::{
    Appended, Capture, Frame, FrameInfo, FrameKind, JournalId, Offset, Reader, ReaderOptions, Seq,
    Tag, Timestamp,
};
use session_types::{Entry, Record};

use crate::derived::{Derived, EntryIndex};
use crate::error::{IndexError, LoadError, ObserveError, SaveError};
use crate::sidecar::{self, DecodeFault};
use crate::state::State;

/// The sidecar path of a journal: `<journal>.idx`.
pub fn sidecar_path(journal: &Path) -> PathBuf {
    let mut s = journal.as_os_str().to_owned();
    s.push(".idx");
    PathBuf::from(s)
}

/// What to do when the journal is shorter than the index's durable coverage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnRegression {
    /// Rebuild and report [`RebuildReason::JournalShorter`] (the default).
    #[default]
    Rebuild,
    /// Fail with [`IndexError::JournalRegressed`].
    Error,
}

/// Options of [`Index::open_or_rebuild`].
#[derive(Debug, Clone)]
pub struct OpenIndexOptions {
    /// The file system (tests wrap it in `session_testkit::CountingVfs` to count reads).
    pub vfs: Arc<dyn Vfs>,
    /// The writer's durable capture, if the caller holds the writer: bytes below it
    /// may be claimed by the saved sidecar. Without it, only bytes a later frame's
    /// `synced_to` proves durable are claimed.
    pub durable: Option<Capture>,
    /// Journal shorter than the index's coverage: rebuild (default) or fail.
    pub on_regression: OnRegression,
    /// Write the sidecar after a rebuild or catch-up (default true).
    pub save: bool,
    /// Before a rebuild or catch-up, `fdatasync` the journal (one call, read-only
    /// handle) so that every frame read may be claimed by the saved sidecar (default
    /// true). If the sync fails, only what frames prove durable is claimed.
    pub sync_journal: bool,
}

impl Default for OpenIndexOptions {
    fn default() -> Self {
        Self {
            vfs: Arc::new(StdVfs),
            durable: None,
            on_regression: OnRegression::default(),
            save: true,
            sync_journal: true,
        }
    }
}

/// Why an index was rebuilt from the whole journal.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebuildReason {
    /// No sidecar exists.
    Missing,
    /// The sidecar could not be read.
    Unreadable {
        /// The I/O error.
        detail: String,
    },
    /// The sidecar is damaged (truncated, bit-flipped, inconsistent).
    Corrupt {
        /// What check failed.
        detail: String,
    },
    /// The sidecar has a format version this build does not read.
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// The version supported.
        supported: u32,
    },
    /// The sidecar belongs to another journal.
    ForeignJournal {
        /// This journal's id.
        expected: JournalId,
        /// The sidecar's journal id.
        found: JournalId,
    },
    /// The journal is shorter than the bytes the sidecar covered.
    JournalShorter {
        /// Bytes the sidecar covered.
        covered: u64,
        /// The journal's length.
        actual: u64,
    },
    /// The last covered frame does not match the sidecar's witness (journal rewritten
    /// or replaced).
    WitnessMismatch {
        /// The frame offset checked.
        offset: u64,
        /// What differed.
        detail: String,
    },
}

impl fmt::Display for RebuildReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("index missing"),
            Self::Unreadable { detail } => write!(f, "index unreadable: {detail}"),
            Self::Corrupt { detail } => write!(f, "index corrupt: {detail}"),
            Self::UnsupportedVersion { found, supported } => {
                write!(
                    f,
                    "index version {found} unsupported (supported: {supported})"
                )
            }
            Self::ForeignJournal { expected, found } => {
                write!(f, "index belongs to journal {found}, expected {expected}")
            }
            Self::JournalShorter { covered, actual } => {
                write!(f, "journal is {actual} bytes, index covered {covered}")
            }
            Self::WitnessMismatch { offset, detail } => {
                write!(f, "last covered frame at offset {offset} differs: {detail}")
            }
        }
    }
}

/// How the index was obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexStatus {
    /// The sidecar was valid and covered the whole journal.
    Fresh,
    /// The sidecar was valid; the tail after it was read.
    CaughtUp {
        /// Journal bytes of the tail that were decoded.
        bytes_read: u64,
        /// Frames added.
        frames: u64,
    },
    /// The sidecar was unusable; the whole journal was read.
    Rebuilt {
        /// Why.
        reason: RebuildReason,
    },
}

/// What [`Index::open_or_rebuild`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexReport {
    /// Fresh, caught up or rebuilt.
    pub status: IndexStatus,
    /// Journal bytes the saved sidecar now covers (`None`: nothing was saved).
    pub saved_coverage: Option<u64>,
    /// Why saving the sidecar failed, if it did (the index is still usable).
    pub save_error: Option<String>,
    /// Where an invalid frame ended the readable journal early, if one did.
    pub tail_stop: Option<Offset>,
    /// The sidecar's last covered frame as this open verified it (a usable sidecar
    /// covering at least one frame): what a writer's open of the same file need not
    /// read again (`session_journal::Known::with_verified_frame`).
    pub witness_frame: Option<session_journal::FrameInfo>,
}

/// The derived index of one session journal.
#[derive(Debug, Clone)]
pub struct Index {
    pub(crate) journal: PathBuf,
    pub(crate) journal_id: JournalId,
    pub(crate) data_start: u64,
    pub(crate) vfs: Arc<dyn Vfs>,
    pub(crate) derived: Derived,
}

/// Frames beyond the durable point kept in memory while replaying, at most.
const PENDING_CAP: u64 = 64 << 20;

struct Replay {
    frames: u64,
    bytes: u64,
    snapshot: Option<Vec<u8>>,
    stop: Option<Offset>,
}

enum Loaded {
    /// The sidecar's state, and its last covered frame as verified (`None` when it
    /// covers no frame).
    Usable(Box<State>, Option<session_journal::FrameInfo>),
    Rebuild(RebuildReason),
}

/// An index answers every query of the state its journal derives.
impl std::ops::Deref for Index {
    type Target = Derived;

    fn deref(&self) -> &Derived {
        &self.derived
    }
}

impl Index {
    /// Opens the index of the journal at `path`: validates the sidecar in O(1) (journal
    /// identity, covered length, the last covered frame's check), catches up the tail
    /// or rebuilds, and saves the sidecar for the durable part.
    pub fn open_or_rebuild(
        path: &Path,
        options: OpenIndexOptions,
    ) -> Result<(Index, IndexReport), IndexError> {
        let reader = Reader::open(
            path,
            ReaderOptions {
                vfs: options.vfs.clone(),
            },
        )?;
        Self::open_or_rebuild_with(&reader, options)
    }

    /// [`open_or_rebuild`](Self::open_or_rebuild) through a reader the caller already
    /// opened (so the journal's prefix is read once); the report's `witness_frame` is
    /// the last covered frame as this open verified it, for a writer's open of the same
    /// file (`session_journal::Known`).
    pub fn open_or_rebuild_with(
        reader: &Reader,
        options: OpenIndexOptions,
    ) -> Result<(Index, IndexReport), IndexError> {
        let path = reader.path();
        let journal_id = reader.journal_id();
        let data_start = reader.data_start().0;
        let jlen = reader.len()?.0;
        let side = sidecar_path(path);
        let loaded = load_sidecar(reader, options.vfs.as_ref(), &side, jlen);
        let mut witness_frame = None;
        let (mut state, status_kind) = match loaded {
            Loaded::Usable(s, frame) => {
                witness_frame = frame;
                (*s, None)
            }
            Loaded::Rebuild(reason) => {
                if let RebuildReason::JournalShorter { covered, actual } = reason
                    && options.on_regression == OnRegression::Error
                {
                    return Err(IndexError::JournalRegressed {
                        path: path.to_path_buf(),
                        covered,
                        actual,
                    });
                }
                (State::new(Offset(data_start)), Some(reason))
            }
        };
        let before = state.covered_len;
        let mut durable_hint = options
            .durable
            .filter(|c| c.journal_id == journal_id)
            .map_or(0, |c| c.len.0);
        if options.save && options.sync_journal && jlen > state.covered_len.max(durable_hint) {
            // Everything in the file when the sync starts is durable once it returns.
            if let Ok(f) = options.vfs.open(path, OpenMode::Read)
                && let Ok(len) = f.len()
                && f.sync_data().is_ok()
            {
                durable_hint = durable_hint.max(len);
            }
        }
        let rebuilt = status_kind.is_some();
        let replay = match replay(reader, &mut state, durable_hint, rebuilt) {
            Ok(r) => r,
            Err(reason) => {
                // The tail does not continue the sidecar's frames: rebuild.
                let mut fresh = State::new(Offset(data_start));
                let r = replay(reader, &mut fresh, durable_hint, true).map_err(|_| {
                    IndexError::Read(session_journal::ReadError::Io {
                        path: path.to_path_buf(),
                        offset: Offset(data_start),
                        source: std::io::Error::other("journal frames out of sequence"),
                    })
                })?;
                state = fresh;
                return finish(
                    path,
                    journal_id,
                    data_start,
                    &options,
                    state,
                    r,
                    Some(reason),
                    before,
                );
            }
        };
        let usable = status_kind.is_none();
        let (index, mut report) = finish(
            path,
            journal_id,
            data_start,
            &options,
            state,
            replay,
            status_kind,
            before,
        )?;
        report.witness_frame = witness_frame.filter(|_| usable);
        Ok((index, report))
    }

    /// The journal this index describes.
    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// The journal's id.
    pub fn journal_id(&self) -> JournalId {
        self.journal_id
    }

    /// Journal bytes covered (the end of the last indexed frame).
    pub fn covered_len(&self) -> Offset {
        Offset(self.derived.state.covered_len)
    }

    /// Seq of the last indexed frame (0: none).
    pub fn covered_seq(&self) -> Seq {
        Seq(self.derived.state.covered_seq)
    }

    /// The prefix this index covers, as a claim the journal's writer can check in
    /// O(1) and then verify only what follows (`session_journal::OpenOptions::trusted`).
    /// `None` when no entry frame is covered.
    pub fn witness(&self) -> Option<session_journal::Witness> {
        let (offset, check) = self.derived.state.last_frame?;
        Some(session_journal::Witness {
            frame: Offset(offset),
            seq: Seq(self.derived.state.covered_seq),
            body_check: session_journal::BodyCheck(check),
            end: Offset(self.derived.state.covered_len),
        })
    }

    /// Adds a frame the caller just appended (the manager keeps the index current
    /// without re-reading). `payload` is the frame's payload as appended.
    pub fn observe(
        &mut self,
        kind: FrameKind,
        appended: &Appended,
        payload: &[u8],
    ) -> Result<(), ObserveError> {
        let info = self.appended_info(kind, appended, payload)?;
        self.derived.state.observe(&info, payload);
        Ok(())
    }

    /// [`observe`](Self::observe) for an entry frame ([`kinds::ENTRY`](crate::kinds::ENTRY))
    /// whose payload the caller serialized from `entry` (`serde_json` of the
    /// [`Entry`], as [`Entry::to_json`] writes it): the index takes what it needs from
    /// the typed entry instead of parsing the payload again. The result is the same
    /// as [`observe`](Self::observe) of the payload (a replay of the journal gives the
    /// same index); for the few entries whose text could read differently from their
    /// types (unknown entry types or roles, `extra` fields repeating a modelled key),
    /// the payload is parsed.
    ///
    /// ```
    /// # use std::{path::Path, sync::Arc};
    /// # use session_index::{Index, OpenIndexOptions, kinds};
    /// # use session_journal::{Durability, OpenOptions, Writer};
    /// # use session_testkit::{legacy, sim::SimFs};
    /// # use session_types::{Entry, EntryBase, EntryId, Timestamp};
    /// # let fs = Arc::new(SimFs::new());
    /// # let path = Path::new("/s/a.jsonl");
    /// # let head = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
    /// # legacy::write_journal_from_jsonl(path, legacy::fixture_journal_id("a"), head, fs.clone())?;
    /// # let (mut index, _) = Index::open_or_rebuild(path, OpenIndexOptions { vfs: fs.clone(), ..OpenIndexOptions::default() })?;
    /// # let (mut writer, _) = Writer::open(path, OpenOptions { vfs: fs.clone(), ..OpenOptions::default() })?;
    /// let base = EntryBase::new(EntryId::new("a1"), None, Timestamp::new("2025-01-01T00:00:01.000Z"));
    /// let entry = Entry::session_info(base, "named");
    /// let (appended, payload) = writer.append_encoded(
    ///     kinds::ENTRY,
    ///     kinds::id_tag("a1"),
    ///     Durability::Buffered,
    ///     |buf| serde_json::to_writer(buf, &entry).expect("entries serialize"),
    /// )?;
    /// index.observe_entry(&appended, payload, &entry)?;
    /// assert_eq!(index.name(), Some("named"));
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// ```
    pub fn observe_entry(
        &mut self,
        appended: &Appended,
        payload: &[u8],
        entry: &Entry,
    ) -> Result<(), ObserveError> {
        let info = self.appended_info(crate::kinds::ENTRY, appended, payload)?;
        self.derived
            .state
            .observe_entry(&info, entry, || Cow::Borrowed(payload));
        Ok(())
    }

    fn appended_info(
        &self,
        kind: FrameKind,
        appended: &Appended,
        payload: &[u8],
    ) -> Result<FrameInfo, ObserveError> {
        if appended.seq.0 != self.derived.state.covered_seq + 1
            || appended.offset.0 != self.derived.state.covered_len
        {
            return Err(ObserveError::OutOfOrder {
                expected_seq: Seq(self.derived.state.covered_seq + 1),
                expected_offset: Offset(self.derived.state.covered_len),
                found_seq: appended.seq,
                found_offset: appended.offset,
            });
        }
        Ok(FrameInfo {
            offset: appended.offset,
            kind,
            seq: appended.seq,
            tag: Tag::default(),
            time: Timestamp(0),
            synced_to: Offset(0),
            payload_len: payload.len() as u32,
            body_check: appended.body_check,
        })
    }

    /// Writes the sidecar atomically (temp file, sync, rename, directory sync).
    /// `durable` is the writer's durable capture: the index must not cover more.
    pub fn save(&self, durable: Capture) -> Result<(), SaveError> {
        let side = sidecar_path(&self.journal);
        if durable.journal_id != self.journal_id {
            return Err(SaveError::ForeignCapture { path: side });
        }
        if self.derived.state.covered_len > durable.len.0 {
            return Err(SaveError::NotDurable {
                path: side,
                covered: self.derived.state.covered_len,
                durable: durable.len.0,
            });
        }
        let bytes = sidecar::encode(&self.derived.state, self.journal_id, self.data_start);
        write_atomic(self.vfs.as_ref(), &side, &bytes)
    }

    /// Reads and verifies one entry's frame through `reader` and parses it.
    pub fn load(&self, reader: &Reader, i: EntryIndex) -> Result<Record, LoadError> {
        let r = self
            .derived
            .state
            .recs
            .get(i.0 as usize)
            .ok_or_else(|| LoadError::NotFound {
                id: format!("#{}", i.0),
            })?;
        let frame: Frame = reader.read_frame_at(Offset(r.offset))?;
        if frame.info.seq.0 != r.seq || frame.info.body_check.0 != r.body_check {
            return Err(LoadError::Stale {
                path: self.journal.clone(),
                offset: Offset(r.offset),
                expected: Seq(r.seq),
                found: frame.info.seq,
            });
        }
        let text = String::from_utf8_lossy(&frame.payload);
        Record::parse(&text).map_err(|source| LoadError::Parse {
            path: self.journal.clone(),
            offset: Offset(r.offset),
            source,
        })
    }
}

#[allow(clippy::too_many_arguments)]
fn finish(
    path: &Path,
    journal_id: JournalId,
    data_start: u64,
    options: &OpenIndexOptions,
    state: State,
    replay: Replay,
    rebuild: Option<RebuildReason>,
    before: u64,
) -> Result<(Index, IndexReport), IndexError> {
    let index = Index {
        journal: path.to_path_buf(),
        journal_id,
        data_start,
        vfs: options.vfs.clone(),
        derived: Derived::from_state(state),
    };
    let mut saved_coverage = None;
    let mut save_error = None;
    if options.save
        && let Some(bytes) = replay.snapshot
    {
        let side = sidecar_path(path);
        let covered = u64::from_le_bytes(bytes[32..40].try_into().unwrap_or([0; 8]));
        match write_atomic(options.vfs.as_ref(), &side, &bytes) {
            Ok(()) => saved_coverage = Some(covered),
            Err(e) => save_error = Some(e.to_string()),
        }
    }
    let status = match rebuild {
        Some(reason) => IndexStatus::Rebuilt { reason },
        None if replay.frames == 0 => IndexStatus::Fresh,
        None => IndexStatus::CaughtUp {
            bytes_read: replay.bytes,
            frames: replay.frames,
        },
    };
    let _ = before;
    Ok((
        index,
        IndexReport {
            status,
            saved_coverage,
            save_error,
            tail_stop: replay.stop,
            witness_frame: None,
        },
    ))
}

fn load_sidecar(reader: &Reader, vfs: &dyn Vfs, side: &Path, jlen: u64) -> Loaded {
    let file = match vfs.open(side, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Loaded::Rebuild(RebuildReason::Missing);
        }
        Err(e) => {
            return Loaded::Rebuild(RebuildReason::Unreadable {
                detail: e.to_string(),
            });
        }
    };
    let read = file.len().map_err(sidecar::ReadFault::Io).and_then(|n| {
        // Every byte of a sidecar derives from the journal's (72 bytes per frame of
        // at least 72; ids, strings and aggregates from payloads): a larger file was
        // not written by this crate, and is not read into memory.
        let limit = jlen.saturating_mul(4).saturating_add(1 << 20);
        if n > limit {
            return Err(sidecar::ReadFault::Decode(DecodeFault::Corrupt(format!(
                "{n} bytes, more than any index of a {jlen}-byte journal"
            ))));
        }
        sidecar::read(file.as_ref(), n, reader.journal_id())
    });
    let (cp, state) = match read {
        Ok(x) => x,
        Err(sidecar::ReadFault::Io(e)) => {
            return Loaded::Rebuild(RebuildReason::Unreadable {
                detail: e.to_string(),
            });
        }
        Err(sidecar::ReadFault::Decode(DecodeFault::Corrupt(detail))) => {
            return Loaded::Rebuild(RebuildReason::Corrupt { detail });
        }
        Err(sidecar::ReadFault::Decode(DecodeFault::Version(found))) => {
            return Loaded::Rebuild(RebuildReason::UnsupportedVersion {
                found,
                supported: sidecar::VERSION,
            });
        }
        Err(sidecar::ReadFault::Decode(DecodeFault::Foreign(found))) => {
            return Loaded::Rebuild(RebuildReason::ForeignJournal {
                expected: reader.journal_id(),
                found,
            });
        }
    };
    if cp.data_start != reader.data_start().0 {
        return Loaded::Rebuild(RebuildReason::WitnessMismatch {
            offset: cp.data_start,
            detail: format!(
                "index says entries start at {}, journal at {}",
                cp.data_start,
                reader.data_start().0
            ),
        });
    }
    if cp.covered_len > jlen {
        return Loaded::Rebuild(RebuildReason::JournalShorter {
            covered: cp.covered_len,
            actual: jlen,
        });
    }
    if cp.covered_seq == 0 {
        if cp.covered_len != cp.data_start {
            return Loaded::Rebuild(RebuildReason::Corrupt {
                detail: "no frame covered but coverage is not the data start".into(),
            });
        }
        return Loaded::Usable(Box::new(state), None);
    }
    match reader.verify_frame_within(Offset(cp.last_offset), Offset(cp.covered_len)) {
        Ok(info)
            if info.body_check.0 == cp.last_body_check
                && info.seq.0 == cp.covered_seq
                && info.end().0 == cp.covered_len =>
        {
            Loaded::Usable(Box::new(state), Some(info))
        }
        Ok(info) => Loaded::Rebuild(RebuildReason::WitnessMismatch {
            offset: cp.last_offset,
            detail: format!(
                "expected seq {} check {} ending at {}, found seq {} check {} ending at {}",
                cp.covered_seq,
                session_journal::BodyCheck(cp.last_body_check),
                cp.covered_len,
                info.seq,
                info.body_check,
                info.end()
            ),
        }),
        Err(e) => Loaded::Rebuild(RebuildReason::WitnessMismatch {
            offset: cp.last_offset,
            detail: e.to_string(),
        }),
    }
}

/// Replays frames after `state`'s coverage. Frames are applied as soon as they are
/// known durable (below the caller's hint or a later frame's `synced_to`); the state
/// at that point is encoded as the sidecar snapshot; then the rest is applied.
fn replay(
    reader: &Reader,
    state: &mut State,
    durable_hint: u64,
    rebuilt: bool,
) -> Result<Replay, RebuildReason> {
    let start = state.covered_len;
    let mut durable = durable_hint.max(start);
    let mut pending: VecDeque<Frame> = VecDeque::new();
    let mut pending_bytes = 0u64;
    let mut blocked = false;
    let mut frames = 0u64;
    let mut next_seq = state.covered_seq + 1;
    let mut iter = reader.frames_from(Offset(start), None);
    #[allow(clippy::explicit_counter_loop)]
    for item in iter.by_ref() {
        let frame = match item {
            Ok(f) => f,
            Err(e) => {
                return Err(RebuildReason::WitnessMismatch {
                    offset: start,
                    detail: e.to_string(),
                });
            }
        };
        if frame.info.seq.0 != next_seq {
            return Err(RebuildReason::WitnessMismatch {
                offset: frame.info.offset.0,
                detail: format!("expected seq {next_seq}, found {}", frame.info.seq),
            });
        }
        next_seq += 1;
        frames += 1;
        durable = durable.max(frame.info.synced_to.0);
        pending_bytes += frame.payload.len() as u64;
        pending.push_back(frame);
        while pending.front().is_some_and(|f| f.info.end().0 <= durable) {
            if let Some(f) = pending.pop_front() {
                pending_bytes -= f.payload.len() as u64;
                state.observe(&f.info, &f.payload);
            }
        }
        if pending_bytes > PENDING_CAP {
            blocked = true;
            while let Some(f) = pending.pop_front() {
                state.observe(&f.info, &f.payload);
            }
            pending_bytes = 0;
        }
    }
    let stop = iter.stop().map(|s| s.offset);
    let end = iter.position().0;
    let snapshot = (!blocked && (state.covered_len > start || rebuilt))
        .then(|| sidecar::encode(state, reader.journal_id(), reader.data_start().0));
    for f in pending {
        state.observe(&f.info, &f.payload);
    }
    Ok(Replay {
        frames,
        bytes: end - start,
        snapshot,
        stop,
    })
}

/// Writes `bytes` to `path` atomically through `vfs`: into a temporary created
/// exclusively under an unpredictable name beside it (`.<name>.save-<16 hex>.tmp`, at
/// most 64 characters of the name, so no planted file or link is ever written through
/// and two concurrent savers never clobber each other's temporary), synced, renamed
/// over `path` (`0600`), then the directory synced.
pub(crate) fn write_atomic(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    let io = |op: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| SaveError::Io {
            path: p,
            op,
            source,
        }
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(64).collect())
        .unwrap_or_default();
    let (tmp, f) = vfs
        .create_temp(&dir, &format!(".{name}.save-"))
        .map_err(io("create a temporary file", &dir))?;
    let written = f
        .write_all_at(0, bytes)
        .map_err(io("write", &tmp))
        .and_then(|()| f.sync_data().map_err(io("sync", &tmp)));
    drop(f);
    if let Err(e) = written.and_then(|()| vfs.rename(&tmp, path).map_err(io("rename", path))) {
        let _ = vfs.remove_file(&tmp);
        return Err(e);
    }
    vfs.sync_dir(&dir).map_err(io("sync directory", &dir))?;
    Ok(())
}
