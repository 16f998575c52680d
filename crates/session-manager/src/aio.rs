//! The seed's API, awaited: [`AsyncStore`] and [`AsyncSession`] (feature `tokio`).
//!
//! Every call runs the synchronous operation on tokio's blocking pool
//! (`spawn_blocking`), so a durable append's `fdatasync` (about 170 µs on the
//! machines we measure on) and a bounded read never block the executor's worker
//! threads. A session is shared behind a mutex: calls on one session run one at a
//! time, in the order they take the lock; calls on different sessions run in parallel.
//!
//! **Dropping a future** never loses an acknowledged entry or exposes a half-written
//! one: once started, the blocking operation runs to its end whether or not anyone
//! awaits it (an append that was not awaited may still be written — exactly as a
//! synchronous append whose caller crashed after the call), and an entry is visible
//! to readers only once its frame is complete.
//!
//! **Durable or buffered.** Appends are durable by default: acknowledged only after the
//! journal is synced, so they survive power loss. An agent that appends many entries
//! in a burst (streamed tool output) and can afford to lose the last few on power loss
//! (never on a process crash) can set [`Durability::Buffered`] with
//! [`AsyncSession::set_durability`] and call [`AsyncSession::sync`] at the points
//! that matter (end of a turn).
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use session_manager::aio::AsyncStore;
//! use session_manager::{Layout, Store};
//! use session_types::{AgentMessage, UserContent, UserMessage};
//!
//! let root = tempfile::tempdir()?;
//! let store = AsyncStore::new(Store::new(Layout::with_root(root.path())?));
//! let session = store.continue_recent("/work").await?;
//! let user: AgentMessage = serde_json::from_value(serde_json::json!(
//!     {"role": "user", "content": "hello", "timestamp": 1}
//! ))?;
//! session.append_message(user).await?;
//! let context = session.build_session_context().await?;
//! assert_eq!(context.messages.len(), 1);
//! session.close().await?;
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use session_journal::Durability;
use session_types::{AgentMessage, Entry, EntryId, SessionHeader, Usage, UserContent};

use crate::error::{AppendError, OpenError, ReadError};
use crate::read::ReadLimits;
use crate::{DeleteReport, NewSessionOptions, OwnedSession, SessionInfo, Store};

/// Runs `f` on the blocking pool and waits for it. A panic inside `f` is resumed in
/// the caller, as the synchronous call would have panicked there.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels a blocking task that already started.
        Err(e) => panic!("the runtime shut down during a session operation: {e}"),
    }
}

/// A [`Store`] whose operations are awaited.
#[derive(Debug, Clone)]
pub struct AsyncStore {
    store: Store,
}

impl AsyncStore {
    /// Wraps `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The synchronous store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    async fn with<T: Send + 'static>(&self, f: impl FnOnce(&Store) -> T + Send + 'static) -> T {
        let store = self.store.clone();
        blocking(move || f(&store)).await
    }

    /// [`Store::create`].
    pub async fn create(&self, cwd: impl Into<String>) -> Result<AsyncSession, OpenError> {
        let cwd = cwd.into();
        self.with(move |s| s.create(&cwd))
            .await
            .map(AsyncSession::new)
    }

    /// [`Store::create_with`].
    pub async fn create_with(
        &self,
        cwd: impl Into<String>,
        options: NewSessionOptions,
    ) -> Result<AsyncSession, OpenError> {
        let cwd = cwd.into();
        self.with(move |s| s.create_with(&cwd, options))
            .await
            .map(AsyncSession::new)
    }

    /// [`Store::open`].
    pub async fn open(&self, path: impl Into<PathBuf>) -> Result<AsyncSession, OpenError> {
        let path = path.into();
        self.with(move |s| s.open(&path))
            .await
            .map(AsyncSession::new)
    }

    /// [`Store::open_id`].
    pub async fn open_id(&self, id: impl Into<String>) -> Result<AsyncSession, OpenError> {
        let id = id.into();
        self.with(move |s| s.open_id(&id))
            .await
            .map(AsyncSession::new)
    }

    /// [`Store::continue_recent`].
    pub async fn continue_recent(&self, cwd: impl Into<String>) -> Result<AsyncSession, OpenError> {
        let cwd = cwd.into();
        self.with(move |s| s.continue_recent(&cwd))
            .await
            .map(AsyncSession::new)
    }

    /// [`Store::fork_from`].
    pub async fn fork_from(
        &self,
        source: impl Into<PathBuf>,
        target_cwd: impl Into<String>,
    ) -> Result<AsyncSession, OpenError> {
        let (source, cwd) = (source.into(), target_cwd.into());
        self.with(move |s| s.fork_from(&source, &cwd))
            .await
            .map(AsyncSession::new)
    }

    /// [`Store::list`]: the sessions of `cwd`, newest first.
    pub async fn list(&self, cwd: impl Into<String>) -> Result<Vec<SessionInfo>, OpenError> {
        let cwd = cwd.into();
        self.with(move |s| s.list(&cwd, &mut ())).await
    }

    /// [`Store::list_all`]: every session, newest first.
    pub async fn list_all(&self) -> Result<Vec<SessionInfo>, OpenError> {
        self.with(|s| s.list_all(&mut ())).await
    }

    /// [`Store::import`].
    pub async fn import(
        &self,
        legacy: impl Into<PathBuf>,
    ) -> Result<crate::ImportOutcome, OpenError> {
        let legacy = legacy.into();
        self.with(move |s| s.import(&legacy)).await
    }

    /// [`Store::export`].
    pub async fn export(
        &self,
        journal: impl Into<PathBuf>,
        dest: impl Into<PathBuf>,
    ) -> Result<session_import::ExportOutcome, session_import::ExportError> {
        let (journal, dest) = (journal.into(), dest.into());
        self.with(move |s| s.export(&journal, &dest)).await
    }

    /// [`Store::delete`].
    pub async fn delete(&self, journal: impl Into<PathBuf>) -> Result<DeleteReport, OpenError> {
        let journal = journal.into();
        self.with(move |s| s.delete(&journal)).await
    }
}

/// An [`OwnedSession`] whose operations are awaited; clones share the session.
#[derive(Debug, Clone)]
pub struct AsyncSession {
    inner: Arc<Mutex<OwnedSession>>,
}

/// The session, whatever a panicking holder left: its writer poisons itself on any
/// failed write, so its state is never half-updated.
fn lock(m: &Mutex<OwnedSession>) -> MutexGuard<'_, OwnedSession> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

macro_rules! appends {
    ($( $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty => $pass:expr),*); )*) => {
        $(
            $(#[$doc])*
            pub async fn $name(&self, $($arg: $ty),*) -> Result<EntryId, AppendError> {
                self.with(move |s| s.$name($($pass),*)).await
            }
        )*
    };
}

impl AsyncSession {
    /// Shares `session`.
    pub fn new(session: OwnedSession) -> Self {
        Self {
            inner: Arc::new(Mutex::new(session)),
        }
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut OwnedSession) -> T + Send + 'static,
    ) -> T {
        let inner = self.inner.clone();
        blocking(move || f(&mut lock(&inner))).await
    }

    appends! {
        /// [`OwnedSession::append_message`].
        fn append_message(message: AgentMessage => message);
        /// [`OwnedSession::append_thinking_level_change`].
        fn append_thinking_level_change(level: String => &level);
        /// [`OwnedSession::append_service_tier_change`].
        fn append_service_tier_change(tier: String => &tier);
        /// [`OwnedSession::append_model_change`].
        fn append_model_change(provider: String => &provider, model_id: String => &model_id);
        /// [`OwnedSession::append_compaction`].
        fn append_compaction(
            summary: String => &summary,
            first_kept_entry_id: String => &first_kept_entry_id,
            tokens_before: u64 => tokens_before,
            details: Option<serde_json::Value> => details,
            from_hook: Option<bool> => from_hook
        );
        /// [`OwnedSession::append_custom_entry`].
        fn append_custom_entry(
            custom_type: String => &custom_type,
            data: Option<serde_json::Value> => data
        );
        /// [`OwnedSession::append_child_usage_attribution`].
        fn append_child_usage_attribution(
            target_id: String => &target_id,
            child_usage: Usage => child_usage,
            aggregate_usage: Usage => aggregate_usage
        );
        /// [`OwnedSession::append_session_info`].
        fn append_session_info(name: String => &name);
        /// [`OwnedSession::append_session_state`].
        fn append_session_state(state: session_types::SessionState => state);
        /// [`OwnedSession::append_agent_status`].
        fn append_agent_status(status: session_types::AgentStatus => status);
        /// [`OwnedSession::append_git_state`].
        fn append_git_state(git: session_types::GitState => git);
        /// [`OwnedSession::append_custom_message_entry`].
        fn append_custom_message_entry(
            custom_type: String => &custom_type,
            content: UserContent => content,
            display: bool => display,
            details: Option<serde_json::Value> => details
        );
        /// [`OwnedSession::append_label_change`].
        fn append_label_change(target_id: String => &target_id, label: Option<String> => label.as_deref());
        /// [`OwnedSession::append_entry`].
        fn append_entry(entry: Entry => entry);
    }

    /// [`OwnedSession::branch_with_summary`].
    pub async fn branch_with_summary(
        &self,
        from: Option<String>,
        summary: String,
        details: Option<serde_json::Value>,
        from_hook: Option<bool>,
    ) -> Result<EntryId, AppendError> {
        self.with(move |s| s.branch_with_summary(from.as_deref(), &summary, details, from_hook))
            .await
    }

    /// [`OwnedSession::branch_to`].
    pub async fn branch_to(&self, id: Option<String>) -> Result<(), AppendError> {
        self.with(move |s| s.branch_to(id.as_deref())).await
    }

    /// [`OwnedSession::set_durability`] (takes effect for the next append).
    pub async fn set_durability(&self, durability: Durability) {
        self.with(move |s| s.set_durability(durability)).await
    }

    /// [`OwnedSession::sync`]: everything appended so far is durable when it returns.
    pub async fn sync(&self) -> Result<(), AppendError> {
        self.with(|s| s.sync().map(|_| ())).await
    }

    /// Closes the session (syncs and releases the lock) once the last clone is
    /// dropped; closing one clone of a shared session only syncs.
    pub async fn close(self) -> Result<(), AppendError> {
        match Arc::try_unwrap(self.inner) {
            Ok(m) => {
                let s = m.into_inner().unwrap_or_else(|e| e.into_inner());
                blocking(move || s.close().map(|_| ())).await
            }
            Err(shared) => blocking(move || lock(&shared).sync().map(|_| ())).await,
        }
    }

    /// [`OwnedSession::get_leaf_id`].
    pub async fn get_leaf_id(&self) -> Option<EntryId> {
        self.with(|s| s.get_leaf_id().cloned()).await
    }

    /// [`OwnedSession::read_leaf_entry`].
    pub async fn read_leaf_entry(&self, limits: ReadLimits) -> Result<Option<Entry>, ReadError> {
        self.with(move |s| s.read_leaf_entry(limits)).await
    }

    /// [`OwnedSession::read_entry`].
    pub async fn read_entry(
        &self,
        id: impl Into<String>,
        limits: ReadLimits,
    ) -> Result<Entry, ReadError> {
        let id = id.into();
        self.with(move |s| s.read_entry(&id, limits)).await
    }

    /// [`OwnedSession::read_label`].
    pub async fn read_label(
        &self,
        id: impl Into<String>,
        limits: ReadLimits,
    ) -> Result<Option<String>, ReadError> {
        let id = id.into();
        self.with(move |s| s.read_label(&id, limits)).await
    }

    /// [`OwnedSession::read_branch`].
    pub async fn read_branch(
        &self,
        from: Option<String>,
        limits: ReadLimits,
    ) -> Result<Vec<Entry>, ReadError> {
        self.with(move |s| s.read_branch(from.as_deref(), limits))
            .await
    }

    /// [`OwnedSession::read_branches`].
    pub async fn read_branches(
        &self,
        leaf_ids: Vec<String>,
        limits: ReadLimits,
    ) -> Result<Vec<Vec<Entry>>, ReadError> {
        self.with(move |s| {
            let ids: Vec<&str> = leaf_ids.iter().map(String::as_str).collect();
            s.read_branches(&ids, limits)
        })
        .await
    }

    /// [`OwnedSession::read_entries`].
    pub async fn read_entries(&self, limits: ReadLimits) -> Result<Vec<Entry>, ReadError> {
        self.with(move |s| s.read_entries(limits)).await
    }

    /// [`OwnedSession::read_tree`].
    pub async fn read_tree(
        &self,
        limits: ReadLimits,
    ) -> Result<crate::SessionTree<'static>, ReadError> {
        self.with(move |s| s.read_tree(limits)).await
    }

    /// [`OwnedSession::read_entry_retention`].
    pub async fn read_entry_retention(
        &self,
        id: impl Into<String>,
    ) -> Result<Option<crate::Retention>, ReadError> {
        let id = id.into();
        self.with(move |s| s.read_entry_retention(&id)).await
    }

    /// [`OwnedSession::build_session_context`].
    pub async fn build_session_context(&self) -> Result<crate::SessionContext<'static>, ReadError> {
        self.with(|s| s.build_session_context()).await
    }

    /// [`OwnedSession::create_branched_session`].
    pub async fn create_branched_session(
        &self,
        leaf: impl Into<String>,
    ) -> Result<AsyncSession, OpenError> {
        let leaf = leaf.into();
        self.with(move |s| s.create_branched_session(&leaf))
            .await
            .map(AsyncSession::new)
    }

    /// [`OwnedSession::new_session`].
    pub async fn new_session(&self, options: NewSessionOptions) -> Result<AsyncSession, OpenError> {
        self.with(move |s| s.new_session(options))
            .await
            .map(AsyncSession::new)
    }

    /// [`OwnedSession::set_session_file`].
    pub async fn set_session_file(&self, path: impl Into<PathBuf>) -> Result<(), OpenError> {
        let path = path.into();
        self.with(move |s| s.set_session_file(&path)).await
    }

    /// [`OwnedSession::header`].
    pub async fn header(&self) -> SessionHeader {
        self.with(|s| s.header().clone()).await
    }

    /// [`OwnedSession::session_id`].
    pub async fn session_id(&self) -> String {
        self.with(|s| s.session_id().to_owned()).await
    }

    /// [`OwnedSession::session_name`].
    pub async fn session_name(&self) -> Option<String> {
        self.with(|s| s.session_name().map(str::to_owned)).await
    }

    /// [`OwnedSession::session_file`].
    pub async fn session_file(&self) -> Option<PathBuf> {
        self.with(|s| s.session_file().map(Path::to_path_buf)).await
    }

    /// [`OwnedSession::session_artifact_dir`].
    pub async fn session_artifact_dir(&self) -> std::io::Result<PathBuf> {
        self.with(|s| s.session_artifact_dir()).await
    }
}
