//! The SessionManager API of Base Context sessions (layer 5): storage layout and
//! environment variables, single-owner sessions, bounded captured reads, resident
//! views, injected clocks and ids.
//!
//! It sits on every lower crate: `session-journal` (bytes, lock, captures),
//! `session-index` (derived indexes and the listing catalog), `session-context`
//! (context building, through an index-backed source) and `session-import` (legacy
//! import and provenance). `docs/api-mapping.md` maps every seed method to its Rust
//! item.
//!
//! Tour:
//! - [`Layout`] — `BASE_CONTEXT_HOME`, `BASE_CONTEXT_SESSION_DIR` (absolute only),
//!   `<sessions>/<id>.jsonl`, `<root>/session-artifacts/<id>/`; [`SafeSessionId`].
//! - [`Store`] — the seed's static methods: [`Store::create`], [`Store::open`],
//!   [`Store::continue_recent`], [`Store::fork_from`], [`Store::open_read_only`],
//!   [`Store::list`] / [`Store::list_all`] (with a [`ListObserver`]),
//!   [`Store::delete`], [`Store::import`].
//! - [`OwnedSession`] — persisted and locked: the appends (`append_*`), leaf moves,
//!   and bounded captured reads (`read_*`, [`OwnedSession::build_session_context`])
//!   limited by [`ReadLimits`]; no resident getters.
//! - [`ResidentSession`] — everything in memory ([`ResidentSession::in_memory`], or a
//!   read-only view from [`Store::open_read_only`]) with the synchronous getters.
//! - [`Sources`] — the injected [`TimeSource`] and [`IdSource`].
//! - `aio` (feature `tokio`) — the same API awaited: `AsyncStore` and `AsyncSession`
//!   run every call on tokio's blocking pool, so durable appends and bounded reads
//!   never block the executor; its docs say when to pick durable or buffered appends.
//!
//! ```
//! use session_manager::{Layout, ReadLimits, Sources, Store};
//!
//! let root = tempfile::tempdir()?;
//! let store = Store::new(Layout::with_root(root.path()).expect("absolute root"))
//!     .with_sources(Sources::deterministic(1_735_689_600_000, 1));
//! let mut s = store.create("/work/project")?; // the header is durable now
//! let a = s.append_model_change("anthropic", "claude")?;
//! s.append_thinking_level_change("high")?;
//! s.append_label_change(a.as_str(), Some("start"))?;
//! let path = s.session_file().expect("owned sessions are persisted").to_path_buf();
//!
//! // A second owner is refused while `s` lives; a read-only view works.
//! assert!(store.open(&path).is_err());
//! assert_eq!(store.open_read_only(&path)?.get_entries().len(), 3);
//! drop(s);
//!
//! let resumed = store.open(&path)?;
//! let ctx = resumed.build_session_context()?;
//! assert_eq!(ctx.settings.thinking_level_str(), Some("high"));
//! assert_eq!(resumed.read_label(a.as_str(), ReadLimits::default())?.as_deref(), Some("start"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "tokio")]
pub mod aio;
mod append;
pub mod clock;
mod error;
mod handle;
#[cfg(feature = "internals")]
mod internals;
pub mod layout;
mod navigate;
mod owned;
mod read;
mod resident;
mod source;
mod store;
mod view;

pub use clock::{FixedClock, IdSource, RandomIds, SeededIds, Sources, SystemClock, TimeSource};
pub use error::{AppendError, Limit, OpenError, ReadError};
pub use handle::{BranchSummaryOptions, CompactionOptions, NewSessionOptions, Store};
#[cfg(feature = "internals")]
pub use internals::indexed_context;
pub use layout::{InvalidSessionId, Layout, LayoutError, SafeSessionId};
pub use owned::{INDEX_SAVE_EVERY, OwnedSession, TailRepair, index_save_interval};
pub use read::{
    DEFAULT_MAX_SOURCE_BYTES, DEFAULT_MAX_SOURCE_ENTRIES, NodeEntry, ReadLimits, SessionTree,
    SessionTreeNode,
};
pub use resident::ResidentSession;
pub use session_context::{ContextMessage, ContextOptions, SessionContext, Settings};
pub use session_import::{
    BulkOptions, ExportError, ExportOutcome, ImportError, ImportOutcome, Retention,
};
pub use session_index::SessionInfo;
pub use session_journal::{Durability, PendingSync, SharedSync, SyncDone, Together};
/// The logical model (entries, messages, content blocks, usage), re-exported so an
/// agent depends on this crate alone.
pub use session_types as types;
pub use session_types::{
    AgentMessage, ContentBlock, Entry, EntryId, EntryType, SessionHeader, Usage, UserContent,
};
pub use source::Snapshot;
pub use store::{DeleteReport, ListObserver, Observe};
