//! Errors and warnings of context building.

use session_types::EntryId;

use crate::kind::ContextKind;

/// Why a context could not be built. `E` is the source's load error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContextError<E: std::error::Error + 'static> {
    /// The parent links from the leaf come back to an entry already on the path
    /// (a self-parent is the shortest case). The reference loops forever here.
    #[error(
        "parent cycle: entry `{at}` is its own ancestor (walking from leaf `{leaf}`, {path_len} entries walked)"
    )]
    Cycle {
        /// The entry reached twice.
        at: EntryId,
        /// The leaf the walk started from.
        leaf: EntryId,
        /// How many entries the walk had visited when it reached `at` again.
        path_len: usize,
    },
    /// The source could not load an entry the context needs.
    #[error("cannot load entry `{id}`: {source}")]
    Load {
        /// The entry.
        id: EntryId,
        /// The source's error.
        #[source]
        source: E,
    },
    /// The source's node kind and the loaded entry disagree.
    #[error("entry `{id}`: the source indexed a {expected} but loaded a {found}")]
    KindMismatch {
        /// The entry.
        id: EntryId,
        /// The kind the source's node reported.
        expected: ContextKind,
        /// The kind of the entry it loaded.
        found: ContextKind,
    },
}

impl<E: std::error::Error + 'static> ContextError<E> {
    /// The same error with the source's load error converted by `f`.
    pub fn map_source<F: std::error::Error + 'static>(
        self,
        f: impl FnOnce(E) -> F,
    ) -> ContextError<F> {
        match self {
            ContextError::Cycle { at, leaf, path_len } => {
                ContextError::Cycle { at, leaf, path_len }
            }
            ContextError::Load { id, source } => ContextError::Load {
                id,
                source: f(source),
            },
            ContextError::KindMismatch {
                id,
                expected,
                found,
            } => ContextError::KindMismatch {
                id,
                expected,
                found,
            },
        }
    }
}

/// Something context building noticed and handled the reference's way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContextWarning {
    /// The requested leaf does not exist, so the default leaf (the entry appended last)
    /// was used, as the reference does.
    UnknownLeaf {
        /// The id asked for.
        requested: EntryId,
    },
    /// An entry on the path names a parent that does not exist; the path starts at
    /// that entry, as in the reference.
    MissingParent {
        /// The entry whose parent is missing.
        id: EntryId,
        /// The missing parent id.
        parent: EntryId,
    },
}

impl std::fmt::Display for ContextWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContextWarning::UnknownLeaf { requested } => write!(
                f,
                "leaf `{requested}` does not exist; used the entry appended last"
            ),
            ContextWarning::MissingParent { id, parent } => write!(
                f,
                "entry `{id}` names missing parent `{parent}`; the path starts at `{id}`"
            ),
        }
    }
}
