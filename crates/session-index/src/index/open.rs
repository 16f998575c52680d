//! Opening an index: validate the sidecar in O(1), catch up the tail, or rebuild.

use std::path::Path;
use std::sync::Arc;

use session_journal::vfs::{OpenMode, Vfs};
use session_journal::{FrameInfo, JournalId, Offset, Reader, ReaderOptions};

use super::replay::{Replay, replay};
use super::{
    Index, IndexReport, IndexStatus, OnRegression, OpenIndexOptions, RebuildReason, sidecar_path,
};
use crate::derived::Derived;
use crate::error::IndexError;
use crate::sidecar::{self, Checkpoint, DecodeFault, ReadFault};
use crate::state::State;

/// What the sidecar gave: a state to continue from, or the reason to rebuild.
enum Loaded {
    /// The sidecar's state, and its last covered frame as verified (`None` when it
    /// covers no frame).
    Usable(Box<State>, Option<FrameInfo>),
    Rebuild(RebuildReason),
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
        let jlen = reader.len()?.0;
        let (state, rebuild, witness_frame) = start_state(path, reader, &options, jlen)?;
        let journal_id = reader.journal_id();
        let durable_hint = durable_hint(path, journal_id, &options, jlen, state.covered_len);
        let (state, replay, rebuild) =
            replay_or_rebuild(path, reader, state, durable_hint, rebuild)?;
        let index = Index {
            journal: path.to_path_buf(),
            journal_id,
            data_start: reader.data_start().0,
            vfs: options.vfs.clone(),
            derived: Derived::from_state(state),
        };
        let usable = rebuild.is_none();
        let mut report = finish(&index, &options, replay, rebuild);
        report.witness_frame = witness_frame.filter(|_| usable);
        Ok((index, report))
    }
}

/// The state to replay from: the sidecar's (with its last covered frame as verified),
/// or an empty one and why (an error if the journal regressed and the caller asked
/// for that).
fn start_state(
    path: &Path,
    reader: &Reader,
    options: &OpenIndexOptions,
    jlen: u64,
) -> Result<(State, Option<RebuildReason>, Option<FrameInfo>), IndexError> {
    let side = sidecar_path(path);
    match load_sidecar(reader, &options.vfs, &side, jlen) {
        Loaded::Usable(s, frame) => Ok((*s, None, frame)),
        Loaded::Rebuild(RebuildReason::JournalShorter { covered, actual })
            if options.on_regression == OnRegression::Error =>
        {
            Err(IndexError::JournalRegressed {
                path: path.to_path_buf(),
                covered,
                actual,
            })
        }
        Loaded::Rebuild(reason) => Ok((State::new(reader.data_start()), Some(reason), None)),
    }
}

/// How far the journal is known durable: the caller's capture of its own writer, or,
/// when frames past what is known will be read and saved, everything in the file once
/// one `fdatasync` returns.
fn durable_hint(
    path: &Path,
    journal_id: JournalId,
    options: &OpenIndexOptions,
    jlen: u64,
    covered: u64,
) -> u64 {
    let mut hint = options
        .durable
        .filter(|c| c.journal_id == journal_id)
        .map_or(0, |c| c.len.0);
    if options.save && options.sync_journal && jlen > covered.max(hint) {
        // Everything in the file when the sync starts is durable once it returns.
        if let Ok(f) = options.vfs.open(path, OpenMode::Read)
            && let Ok(len) = f.len()
            && f.sync_data().is_ok()
        {
            hint = hint.max(len);
        }
    }
    hint
}

/// Replays the tail after `state`; if the tail does not continue the sidecar's frames,
/// replays the whole journal instead and says why.
fn replay_or_rebuild(
    path: &Path,
    reader: &Reader,
    mut state: State,
    durable_hint: u64,
    rebuild: Option<RebuildReason>,
) -> Result<(State, Replay, Option<RebuildReason>), IndexError> {
    match replay(reader, &mut state, durable_hint, rebuild.is_some()) {
        Ok(r) => Ok((state, r, rebuild)),
        Err(reason) => {
            let data_start = reader.data_start();
            let mut fresh = State::new(data_start);
            let r = replay(reader, &mut fresh, durable_hint, true).map_err(|_| {
                IndexError::Read(session_journal::ReadError::Io {
                    path: path.to_path_buf(),
                    offset: data_start,
                    source: std::io::Error::other("journal frames out of sequence"),
                })
            })?;
            Ok((fresh, r, Some(reason)))
        }
    }
}

/// Saves the replay's snapshot (if asked to and there is one) and reports.
fn finish(
    index: &Index,
    options: &OpenIndexOptions,
    replay: Replay,
    rebuild: Option<RebuildReason>,
) -> IndexReport {
    let mut saved_coverage = None;
    let mut save_error = None;
    if options.save
        && let Some(snapshot) = replay.snapshot
    {
        let side = sidecar_path(&index.journal);
        let vfs = options.vfs.as_ref();
        let written = if options.sync_sidecar {
            super::write_atomic(vfs, &side, &snapshot.bytes)
        } else {
            super::save::write_replacing(vfs, &side, &snapshot.bytes, false)
        };
        match written {
            Ok(()) => saved_coverage = Some(snapshot.covered),
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
    IndexReport {
        status,
        saved_coverage,
        save_error,
        tail_stop: replay.stop,
        witness_frame: None,
    }
}

/// Reads the sidecar and checks it against the journal in O(1).
fn load_sidecar(reader: &Reader, vfs: &Arc<dyn Vfs>, side: &Path, jlen: u64) -> Loaded {
    match read_sidecar(reader, vfs, side, jlen) {
        Ok((cp, state)) => match check_checkpoint(reader, &cp, jlen) {
            Ok(frame) => Loaded::Usable(Box::new(state), frame),
            Err(reason) => Loaded::Rebuild(reason),
        },
        Err(reason) => Loaded::Rebuild(reason),
    }
}

/// Reads and decodes the sidecar (bounded by what a journal of `jlen` bytes can
/// derive).
fn read_sidecar(
    reader: &Reader,
    vfs: &Arc<dyn Vfs>,
    side: &Path,
    jlen: u64,
) -> Result<(Checkpoint, State), RebuildReason> {
    let file = match vfs.open(side, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(RebuildReason::Missing);
        }
        Err(e) => {
            return Err(RebuildReason::Unreadable {
                detail: e.to_string(),
            });
        }
    };
    let rebuild = rebuild_prefix(reader, vfs);
    let read = file.len().map_err(ReadFault::Io).and_then(|n| {
        // Every byte of a sidecar derives from the journal's (72 bytes per frame of
        // at least 72; ids, strings and aggregates from payloads): a larger file was
        // not written by this crate, and is not read into memory.
        let limit = jlen.saturating_mul(4).saturating_add(1 << 20);
        if n > limit {
            return Err(ReadFault::Decode(DecodeFault::Corrupt(format!(
                "{n} bytes, more than any index of a {jlen}-byte journal"
            ))));
        }
        sidecar::open(file, n, reader.journal_id(), rebuild)
    });
    read.map_err(|fault| match fault {
        ReadFault::Io(e) => RebuildReason::Unreadable {
            detail: e.to_string(),
        },
        ReadFault::Decode(DecodeFault::Corrupt(detail)) => RebuildReason::Corrupt { detail },
        ReadFault::Decode(DecodeFault::Version(found)) => RebuildReason::UnsupportedVersion {
            found,
            supported: sidecar::VERSION,
        },
        ReadFault::Decode(DecodeFault::Foreign(found)) => RebuildReason::ForeignJournal {
            expected: reader.journal_id(),
            found,
        },
    })
}

/// How a loaded sidecar's prefix is re-derived should one of its pages fail its
/// check after the open: the journal's frames up to the covered length, replayed
/// afresh (by its own reader: the open's is gone by then). The path is opened again,
/// so the reader must find the very file and journal the index was opened on (file
/// identity, where the file system tells it, and journal id): a journal renamed over
/// it since is another session's, and is not replayed as this one.
fn rebuild_prefix(reader: &Reader, vfs: &Arc<dyn Vfs>) -> sidecar::Rebuild {
    let journal = reader.path().to_path_buf();
    let (journal_id, file_id) = (reader.journal_id(), reader.file_id());
    let vfs = vfs.clone();
    Box::new(move |covered| {
        let reader = Reader::open(&journal, ReaderOptions { vfs: vfs.clone() })
            .map_err(|e| e.to_string())?;
        if reader.journal_id() != journal_id || reader.file_id() != file_id {
            return Err(format!(
                "{} is now another journal (id {}), not the one indexed (id {})",
                journal.display(),
                reader.journal_id(),
                journal_id
            ));
        }
        let mut state = State::new(reader.data_start());
        for item in reader.frames_from(reader.data_start(), None).with_seals() {
            let f = item.map_err(|e| e.to_string())?;
            if f.info.end().0 > covered {
                break;
            }
            state.observe(&f.info, &f.payload);
        }
        Ok(state.into_resident())
    })
}

/// Checks a decoded sidecar's checkpoint against the journal: where entries start,
/// that the journal still holds what it covered, and the last covered frame (one
/// frame read). Usable: the last covered frame as verified (`None`: none covered).
fn check_checkpoint(
    reader: &Reader,
    cp: &Checkpoint,
    jlen: u64,
) -> Result<Option<FrameInfo>, RebuildReason> {
    if cp.data_start != reader.data_start().0 {
        return Err(RebuildReason::WitnessMismatch {
            offset: cp.data_start,
            detail: format!(
                "index says entries start at {}, journal at {}",
                cp.data_start,
                reader.data_start().0
            ),
        });
    }
    if cp.covered_len > jlen {
        return Err(RebuildReason::JournalShorter {
            covered: cp.covered_len,
            actual: jlen,
        });
    }
    if cp.covered_seq == 0 {
        if cp.covered_len != cp.data_start {
            return Err(RebuildReason::Corrupt {
                detail: "no frame covered but coverage is not the data start".into(),
            });
        }
        return Ok(None);
    }
    match reader.verify_frame_within(Offset(cp.last_offset), Offset(cp.covered_len)) {
        Ok(info)
            if info.body_check.0 == cp.last_body_check
                && info.seq.0 == cp.covered_seq
                && info.end().0 == cp.covered_len =>
        {
            Ok(Some(info))
        }
        Ok(info) => Err(RebuildReason::WitnessMismatch {
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
        Err(e) => Err(RebuildReason::WitnessMismatch {
            offset: cp.last_offset,
            detail: e.to_string(),
        }),
    }
}
