//! Lower layers' handles for the workspace's own tools (feature `internals`): no
//! stability promise, never needed by an agent.

use std::path::Path;

use session_context::{ContextOptions, Leaf, SessionContext};
use session_index::Index;
use session_journal::{Capture, Reader};

use crate::error::ReadError;
use crate::read::ReadLimits;
use crate::source::{Snapshot, SnapshotReader};
use crate::view::context_in;

/// The context of the session whose journal `reader` reads and whose `index` was
/// opened without saving (e.g. `Index::open_or_rebuild` with `save: false`), at
/// `leaf` (`None`: the last appended entry, as the reference resumes).
///
/// Bounded by what the index covers: frames appended after the index was opened are
/// not seen. Only the entries the context holds are read from the journal, each
/// verified where it is read and counted against `limits`.
pub fn indexed_context(
    path: &Path,
    index: &Index,
    reader: &Reader,
    leaf: Option<&str>,
    limits: ReadLimits,
    options: &ContextOptions,
) -> Result<SessionContext<'static>, ReadError> {
    let snapshot = Snapshot {
        capture: Capture {
            journal_id: index.journal_id(),
            len: index.covered_len(),
            last_seq: index.covered_seq(),
        },
        frames: u32::try_from(index.len()).unwrap_or(u32::MAX),
    };
    let leaf = match leaf {
        None => Leaf::Default,
        Some(id) => Leaf::Id(id),
    };
    let view = SnapshotReader {
        index,
        reader,
        snapshot,
        path,
        prefetched: Default::default(),
    };
    context_in(view, leaf, limits, options)
}
