//! The options of [`Index::open_or_rebuild`](super::Index::open_or_rebuild).

use std::sync::Arc;

use session_journal::Capture;
use session_journal::vfs::{StdVfs, Vfs};

/// What to do when the journal is shorter than the index's durable coverage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnRegression {
    /// Rebuild and report [`RebuildReason::JournalShorter`](super::RebuildReason::JournalShorter) (the default).
    #[default]
    Rebuild,
    /// Fail with [`IndexError::JournalRegressed`](crate::IndexError::JournalRegressed).
    Error,
}

/// Options of [`Index::open_or_rebuild`](super::Index::open_or_rebuild).
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
    /// Sync a saved sidecar (its temporary file, then the directory after the rename;
    /// default true). A bulk import turns it off: the sidecar is derived, and one lost
    /// or torn by a crash is rebuilt by the next open.
    pub sync_sidecar: bool,
}

impl Default for OpenIndexOptions {
    fn default() -> Self {
        Self {
            vfs: Arc::new(StdVfs),
            durable: None,
            on_regression: OnRegression::default(),
            save: true,
            sync_journal: true,
            sync_sidecar: true,
        }
    }
}
