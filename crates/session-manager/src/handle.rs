//! What a store is — its layout, clock and id sources, and file system — apart from
//! what it does (`store.rs`). Sessions hold it to reach their store's layout, sources
//! and files; it knows no session type, so `owned.rs` and `resident.rs` depend on it
//! and `store.rs` on them, without a cycle.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::SharedSync;
use session_journal::vfs::{StdVfs, Vfs};

use crate::clock::Sources;
use crate::error::OpenError;
use crate::layout::{InvalidSessionId, Layout, SafeSessionId};

/// Options of [`Store::create_with`] and [`OwnedSession::new_session`](crate::OwnedSession::new_session)
/// (the seed's `newSession({id?, parentSession?})`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewSessionOptions {
    /// A caller-chosen session id; it must be a safe file name
    /// ([`SafeSessionId`]). Default: a UUIDv7 from the store's id source.
    pub id: Option<String>,
    /// Recorded as the header's `parentSession`.
    pub parent_session: Option<String>,
}

impl NewSessionOptions {
    /// Options with this session id.
    pub fn with_id(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ..Self::default()
        }
    }

    /// Options with this parent session.
    pub fn with_parent_session(parent: impl Into<String>) -> Self {
        Self {
            parent_session: Some(parent.into()),
            ..Self::default()
        }
    }

    /// The same options with this session id (the options struct is
    /// `#[non_exhaustive]`: set fields by chaining,
    /// `NewSessionOptions::default().id("a").parent_session("p")`).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The same options with this parent session.
    pub fn parent_session(mut self, parent: impl Into<String>) -> Self {
        self.parent_session = Some(parent.into());
        self
    }
}

/// The optional arguments of `appendCompaction` (the seed's positional `details?` and
/// `fromHook?`), set by chaining: `CompactionOptions::default().details(json!(…))`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct CompactionOptions {
    /// Extension data stored with the compaction.
    pub details: Option<serde_json::Value>,
    /// Whether an extension (hook) produced it.
    pub from_hook: Option<bool>,
}

impl CompactionOptions {
    /// The same options with these details.
    pub fn details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The same options marking the compaction as a hook's.
    pub fn from_hook(mut self, from_hook: bool) -> Self {
        self.from_hook = Some(from_hook);
        self
    }
}

/// The optional arguments of `branchWithSummary` (`details?`, `fromHook?`): the same
/// shape as [`CompactionOptions`].
pub type BranchSummaryOptions = CompactionOptions;

/// A session store: one [`Layout`] (the seed's optional `sessionDir` argument becomes
/// [`Layout::with_session_dir`]), the injected [`Sources`] and the file system.
///
/// The seed's static methods are its methods (`store.rs`); the session handles it
/// returns are
/// [`OwnedSession`](crate::OwnedSession) (persisted, locked) and
/// [`ResidentSession`](crate::ResidentSession) (in memory).
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) layout: Layout,
    pub(crate) sources: Sources,
    pub(crate) vfs: Arc<dyn Vfs>,
}

impl Store {
    /// A store over `layout` with real clock, random ids and the real file system.
    pub fn new(layout: Layout) -> Self {
        Self {
            layout,
            sources: Sources::default(),
            vfs: Arc::new(StdVfs),
        }
    }

    /// A store over the layout of the process environment (`BASE_CONTEXT_HOME`,
    /// `BASE_CONTEXT_SESSION_DIR`).
    pub fn from_env() -> Result<Self, OpenError> {
        Ok(Self::new(Layout::from_env()?))
    }

    /// The same store with these clock and id sources.
    pub fn with_sources(mut self, sources: Sources) -> Self {
        self.sources = sources;
        self
    }

    /// The same store over another file system: every file it touches — journals,
    /// derived files, the registry, artifact directories, import sources, export
    /// destinations — goes through `vfs` (the simulated one in tests, a counting one to
    /// bound I/O). Feature `internals`: the file system is the workspace's seam, not
    /// part of the agent-facing API.
    #[cfg(feature = "internals")]
    pub fn with_vfs(mut self, vfs: Arc<dyn Vfs>) -> Self {
        self.vfs = vfs;
        self
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The sources.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// A [`SharedSync`] on the file system of the sessions directory (created when
    /// missing, `0700`, as the first session would create it), for making many
    /// sessions' journals durable with one file-system sync: what an owner holding
    /// many sessions does. `None` where the platform offers none (each journal then
    /// syncs on its own). Open it before the journals it will cover are written: it
    /// hears only of write-back failures after it was opened.
    /// An error names the directory and what failed there.
    pub fn open_shared_sync(&self) -> std::io::Result<Option<SharedSync>> {
        let dir = self.layout.sessions_dir();
        let located = |what: &str, e: std::io::Error| {
            std::io::Error::new(e.kind(), format!("{}: {what}: {e}", dir.display()))
        };
        self.vfs
            .create_dir_all(dir)
            .map_err(|e| located("creating the sessions directory", e))?;
        let handle = self
            .vfs
            .file_system(dir)
            .map_err(|e| located("opening it for file-system syncs", e))?;
        Ok(handle.map(SharedSync::new))
    }

    /// The artifact directory of the journal at `journal`: the one of the session id
    /// its file name carries, which must be a valid id (a journal named `...jsonl`,
    /// stem `..`, has none: its artifact directory would be the store's root).
    pub(crate) fn artifact_dir_for(&self, journal: &Path) -> Result<PathBuf, InvalidSessionId> {
        let stem = journal
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = stem.strip_suffix(".jsonl").unwrap_or(&stem);
        Ok(self.layout.artifact_dir(&SafeSessionId::new(stem)?))
    }

    /// The artifact directory of the session with this id (not created).
    pub fn session_artifact_dir(&self, id: &SafeSessionId) -> PathBuf {
        self.layout.artifact_dir(id)
    }
}
