//! One session journal's index: opened by validating the sidecar in O(1), catching up
//! the tail or rebuilding (`open`, `replay`), kept current while appending
//! (`observe`), saved atomically (`save`), and queried (`query`; the session's own
//! queries are [`Derived`]'s, which an [`Index`] dereferences to).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::JournalId;
use session_journal::vfs::Vfs;

use crate::derived::Derived;

mod observe;
mod open;
mod options;
mod query;
mod replay;
mod report;
mod save;

pub use options::{OnRegression, OpenIndexOptions};
pub use report::{IndexReport, IndexStatus, RebuildReason};
pub use save::PreparedSave;
pub(crate) use save::write_atomic;

/// The sidecar path of a journal: `<journal>.idx`.
pub fn sidecar_path(journal: &Path) -> PathBuf {
    let mut s = journal.as_os_str().to_owned();
    s.push(".idx");
    PathBuf::from(s)
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

impl Index {
    /// The empty index of a journal being written from its first entry frame on
    /// (`data_start`, the writer's): fed each frame as it is appended
    /// ([`observe`](Self::observe), [`observe_seal`](Self::observe_seal)), it is the
    /// index a rebuild from the finished journal derives, without reading it again.
    /// `journal` is where the journal will be found (its sidecar is saved beside it).
    pub fn for_new_journal(
        journal: &Path,
        journal_id: JournalId,
        data_start: session_journal::Offset,
        vfs: Arc<dyn Vfs>,
    ) -> Index {
        Index {
            journal: journal.to_path_buf(),
            journal_id,
            data_start: data_start.0,
            vfs,
            derived: Derived::from_state(crate::state::State::new(data_start)),
        }
    }
}

/// An index answers every query of the state its journal derives.
impl std::ops::Deref for Index {
    type Target = Derived;

    fn deref(&self) -> &Derived {
        &self.derived
    }
}
