//! Replaying journal frames into an index state, and the sidecar snapshot taken at
//! the durable point.

use std::collections::VecDeque;

use session_journal::{Frame, Offset, Reader};

use super::RebuildReason;
use crate::sidecar;
use crate::state::State;

/// Frames beyond the durable point kept in memory while replaying, at most.
const PENDING_CAP: u64 = 64 << 20;

/// What a replay read, and the sidecar to save for its durable part.
pub(super) struct Replay {
    /// Frames read.
    pub(super) frames: u64,
    /// Journal bytes read.
    pub(super) bytes: u64,
    /// The state at the durable point, encoded (`None`: nothing new to save, or the
    /// durable point fell too far behind to hold the frames after it).
    pub(super) snapshot: Option<Snapshot>,
    /// Where an invalid frame ended the readable journal early, if one did.
    pub(super) stop: Option<Offset>,
}

/// An encoded sidecar and the journal bytes it covers.
pub(super) struct Snapshot {
    pub(super) bytes: Vec<u8>,
    pub(super) covered: u64,
}

/// Replays frames after `state`'s coverage. Frames are applied as soon as they are
/// known durable (below the caller's hint or a later frame's `synced_to`); the state
/// at that point is encoded as the sidecar snapshot; then the rest is applied.
pub(super) fn replay(
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
    // Seals too: the index covers a closed journal's seal (no record), so its
    // coverage and witness end where the file does.
    let mut iter = reader.frames_from(Offset(start), None).with_seals();
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
        let seal = frame.info.kind.is_seal();
        let expected = if seal { next_seq - 1 } else { next_seq };
        if frame.info.seq.0 != expected {
            return Err(RebuildReason::WitnessMismatch {
                offset: frame.info.offset.0,
                detail: format!("expected seq {expected}, found {}", frame.info.seq),
            });
        }
        if !seal {
            next_seq += 1;
            frames += 1;
        }
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
    let snapshot = (!blocked && (state.covered_len > start || rebuilt)).then(|| Snapshot {
        bytes: sidecar::encode(state, reader.journal_id(), reader.data_start().0),
        covered: state.covered_len,
    });
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
