//! Read-only, index-backed reads of a session someone else may own: no lock is taken
//! and nothing is written, yet the context costs what it holds, as on resume.

use std::path::Path;

use session_context::{ContextOptions, Leaf, SessionContext, build_context};
use session_index::{Derived, Index};
use session_journal::{Capture, Reader};
use session_types::EntryId;

use crate::error::ReadError;
use crate::read::{Accounting, ReadLimits};
use crate::source::{IndexSource, Records, Snapshot, SnapshotReader};

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
    };
    context_in(view, leaf, limits, options)
}

/// Where a context read starts for a session whose leaf is `leaf`: the usual resume
/// (the leaf is the last appended entry) finds it without an id lookup, so no id map
/// is built just to resume.
pub(crate) fn context_leaf<'a>(derived: &Derived, leaf: Option<&'a EntryId>) -> Leaf<'a> {
    let last = derived.leaf().and_then(|l| derived.id_of(l));
    match leaf {
        None => Leaf::None,
        Some(id) if last == Some(id.as_str()) => Leaf::Default,
        Some(id) => Leaf::Id(id.as_str()),
    }
}

/// The context at `leaf` of what `records` hold: the index-backed source, counted
/// against `limits`; shared by owned sessions, read-only views and resident sessions.
pub(crate) fn context_in(
    records: impl Records,
    leaf: Leaf<'_>,
    limits: ReadLimits,
    options: &ContextOptions,
) -> Result<SessionContext<'static>, ReadError> {
    let acct = Accounting::new(limits, records.session());
    let source = IndexSource {
        records,
        acct: &acct,
        deferred: Default::default(),
    };
    let ctx = build_context(&source, leaf, options).map_err(|e| match e {
        session_context::ContextError::Load { source, .. } => source,
        session_context::ContextError::Cycle { at, .. } => ReadError::Cycle { id: at.0 },
        other => ReadError::Context(Box::new(other)),
    })?;
    let ctx = crate::read::detach(ctx);
    if let Some(e) = source.deferred.take() {
        return Err(e);
    }
    Ok(ctx)
}
