//! Read-only, index-backed reads of a session someone else may own: no lock is taken
//! and nothing is written, yet the context costs what it holds, as on resume.

use session_context::{ContextOptions, Leaf, SessionContext, build_context};
use session_index::Derived;
use session_types::EntryId;

use crate::error::ReadError;
use crate::read::{Accounting, ReadLimits};
use crate::source::{IndexSource, Records};

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
