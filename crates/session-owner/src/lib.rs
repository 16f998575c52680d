//! The Base Context session owner: one process that holds every open session of a
//! store and serves any number of clients over the `session-protocol` wire protocol.
//!
//! It sits above `session-manager` (which does every session operation) and
//! `session-protocol` (the messages), beside `session-cli`'s other commands (`bcs
//! serve` runs it). `docs/owner.md` describes the design; what is not done yet is
//! listed there too.
//!
//! Tour:
//! - [`Owner`] — the store, the registry of open sessions (one shared cell each, its
//!   writes one batch at a time, shared by every connection that opens the session) and the [`OwnerOptions`] bounds;
//!   [`Owner::serve`] serves one connection over any `AsyncRead`/`AsyncWrite` pair.
//! - [`serve_stdio`] — one client on standard input and output (`bcs serve --stdio`).
//! - [`socket`] — the Unix socket in the store's home: a private directory (0700), a
//!   socket (0600), and the peer's uid checked on every connection.
//!
//! ```
//! use session_manager::{Layout, Store};
//! use session_owner::{Owner, OwnerOptions};
//! use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let home = tempfile::tempdir()?;
//! let owner = Owner::new(Store::new(Layout::with_root(home.path())?), OwnerOptions::default());
//! let (client, server) = tokio::io::duplex(1 << 16);
//! let (server_r, server_w) = tokio::io::split(server);
//! tokio::spawn(async move { owner.serve(server_r, server_w).await });
//!
//! let (r, mut w) = tokio::io::split(client);
//! let mut answers = BufReader::new(r).lines();
//! w.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":{"major":1,"minor":0}}}"#).await?;
//! w.write_all(b"\n").await?;
//! let answer = answers.next_line().await?.expect("an answer");
//! assert!(answer.starts_with(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":{"major":1,"minor":1}"#));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod actor;
mod conn;
mod errors;
mod lines;
mod outbox;
mod registry;
pub mod socket;
mod syncs;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use session_manager::Store;
use session_protocol::LineLimits;
use tokio::io::{AsyncRead, AsyncWrite};

/// The owner's bounds. Every queue is bounded; a full one is answered, never grown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OwnerOptions {
    /// Writes queued for one session (behind the batch running now); past this a
    /// request is answered `overloaded` (retryable). Default 1,024.
    pub session_queue: usize,
    /// The most commands one batch (one sync) carries. Default 256.
    pub max_batch: usize,
    /// Requests of one connection awaiting their answer; past this the connection
    /// is not read until one is answered. Default 64.
    pub connection_in_flight: usize,
    /// Lines (answers and notifications) queued for one connection's writer; a
    /// notification that finds it full is dropped and its follower told it lagged.
    /// Default 64.
    pub outgoing_queue: usize,
    /// The incoming line size limit and nesting bound.
    pub line_limits: LineLimits,
    /// How long [`socket::serve`] waits with no connection and no open session
    /// before it removes the socket and returns (`None`: never). Default `None`;
    /// `bcs serve` sets 5 minutes unless told otherwise.
    pub idle_timeout: Option<Duration>,
    /// Whether the syncs of different sessions that meet are run as one file-system
    /// sync (`syncfs`, where the platform reports its failures: Linux 5.8 and later),
    /// instead of one `fdatasync` each. Default `true`; `docs/owner.md`, "Syncs of
    /// many sessions".
    pub shared_syncs: bool,
}

impl Default for OwnerOptions {
    fn default() -> Self {
        Self {
            session_queue: 1024,
            max_batch: 256,
            connection_in_flight: 64,
            outgoing_queue: 64,
            line_limits: LineLimits::default(),
            idle_timeout: None,
            shared_syncs: true,
        }
    }
}

impl OwnerOptions {
    /// These options with a session queue of `n` commands.
    pub fn with_session_queue(mut self, n: usize) -> Self {
        self.session_queue = n;
        self
    }

    /// These options with these line limits.
    pub fn with_line_limits(mut self, limits: LineLimits) -> Self {
        self.line_limits = limits;
        self
    }

    /// These options with an outgoing queue of `n` lines per connection.
    pub fn with_outgoing_queue(mut self, n: usize) -> Self {
        self.outgoing_queue = n;
        self
    }

    /// These options with shared syncs on or off.
    pub fn with_shared_syncs(mut self, shared: bool) -> Self {
        self.shared_syncs = shared;
        self
    }

    /// These options with this idle timeout (`None`: never exit when idle).
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }
}

/// The owner of a store's open sessions.
pub struct Owner {
    store: Store,
    options: OwnerOptions,
    /// Its sessions, and the count of connections being served (from `accept` on,
    /// once each: the idle check reads it, and a sync on a worker).
    registry: registry::Registry,
    /// Woken when a connection ends (the idle clock may start).
    activity: tokio::sync::Notify,
    /// `accept` errors met so far (each retried after a pause).
    accept_errors: AtomicU64,
    /// Why the shared syncs' handle could not be opened, when it could not.
    shared_syncs_error: Option<String>,
}

/// Whether the syncs of different sessions that meet run as one file-system sync
/// ([`OwnerOptions::shared_syncs`], `docs/owner.md`, "Syncs of many sessions").
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SharedSyncs {
    /// They do.
    On,
    /// Turned off by the options: each journal syncs on its own.
    Off,
    /// The platform or the sessions directory's file system offers no file-system
    /// sync that reports write-back failures: each journal syncs on its own.
    Unsupported,
    /// The handle on the sessions directory could not be opened (why, naming the
    /// directory): each journal syncs on its own.
    Unavailable(String),
    /// A file-system sync failed: sharing ended for the owner's life, and each
    /// journal syncs on its own since (so each hears of its own loss).
    Ended,
}

/// Counts a connection while it lives.
struct Connection(Arc<Owner>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.registry.connections.fetch_sub(1, Ordering::AcqRel);
        self.0.activity.notify_waiters();
    }
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owner")
            .field("store", &self.store)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Owner {
    /// An owner of `store`'s sessions. With [`OwnerOptions::shared_syncs`], it opens
    /// its handle on the sessions directory's file system here, before any session
    /// is written (creating the directory when missing); where that fails, each
    /// journal syncs on its own.
    /// [`Owner::shared_syncs`] says which it is (`bcs serve` warns of a failure).
    pub fn new(store: Store, options: OwnerOptions) -> Arc<Owner> {
        let (shared, shared_syncs_error) =
            match options.shared_syncs.then(|| store.open_shared_sync()) {
                Some(Ok(shared)) => (shared, None),
                Some(Err(e)) => (None, Some(e.to_string())),
                None => (None, None),
            };
        let syncs = shared.map(|shared| Arc::new(syncs::Syncs::new(shared)));
        Arc::new(Owner {
            store,
            options,
            registry: registry::Registry::new(syncs),
            activity: tokio::sync::Notify::new(),
            accept_errors: AtomicU64::new(0),
            shared_syncs_error,
        })
    }

    /// Whether the syncs of different sessions that meet run as one now, and if
    /// not, why.
    pub fn shared_syncs(&self) -> SharedSyncs {
        if !self.options.shared_syncs {
            return SharedSyncs::Off;
        }
        if let Some(e) = &self.shared_syncs_error {
            return SharedSyncs::Unavailable(e.clone());
        }
        match self.registry.syncs() {
            None => SharedSyncs::Unsupported,
            Some(s) if s.is_sharing() => SharedSyncs::On,
            Some(_) => SharedSyncs::Ended,
        }
    }

    fn connection(self: &Arc<Self>) -> Connection {
        self.registry.connections.fetch_add(1, Ordering::AcqRel);
        Connection(self.clone())
    }

    /// No connection is served and no session is open.
    async fn is_idle(&self) -> bool {
        self.registry.connections.load(Ordering::Acquire) == 0 && self.registry.len().await == 0
    }

    /// How many `accept` errors the socket met (each was retried after a pause).
    pub fn accept_errors(&self) -> u64 {
        self.accept_errors.load(Ordering::Relaxed)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Serves one connection until the client closes it; then lets go of the
    /// sessions it opened (the last connection to let go of a session closes it).
    pub async fn serve<R, W>(self: &Arc<Self>, reader: R, writer: W) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_counted(self.connection(), reader, writer).await
    }

    /// [`serve`](Self::serve) of a connection counted already (the socket counts
    /// it when it accepts it, before its task runs).
    async fn serve_counted<R, W>(
        self: &Arc<Self>,
        connection: Connection,
        reader: R,
        writer: W,
    ) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let served = conn::serve(self.clone(), reader, writer).await;
        drop(connection);
        served
    }

    /// The syncs of different sessions handed in to run together that no round has
    /// taken yet (`0` when syncs are not shared): for diagnostics and tests.
    pub fn syncs_waiting(&self) -> usize {
        self.registry.syncs_waiting()
    }

    /// How many sessions the owner holds open now.
    pub async fn open_sessions(&self) -> usize {
        self.registry.len().await
    }
}

/// Serves one client on standard input and output until standard input ends.
pub async fn serve_stdio(owner: Arc<Owner>) -> io::Result<()> {
    owner.serve(tokio::io::stdin(), tokio::io::stdout()).await
}

#[cfg(test)]
mod tests {
    use session_manager::{AgentMessage, Durability, Layout, Together};
    use session_testkit::sim::SimFs;

    use super::*;

    fn sim_owner(fs: &SimFs, options: OwnerOptions) -> Arc<Owner> {
        let store =
            Store::new(Layout::with_root("/sim").expect("absolute")).with_vfs(Arc::new(fs.clone()));
        Owner::new(store, options)
    }

    /// The owner says whether its sessions share file-system syncs, and why not:
    /// turned off, not offered by the file system, a handle that could not be
    /// opened (naming the directory), or ended by a failed file-system sync.
    #[test]
    fn the_owner_says_whether_syncs_are_shared_and_why_not() {
        let offered = SimFs::new();
        offered.offer_file_system(0, None);
        let owner = sim_owner(&offered, OwnerOptions::default());
        assert_eq!(owner.shared_syncs(), SharedSyncs::On);
        let off = sim_owner(&offered, OwnerOptions::default().with_shared_syncs(false));
        assert_eq!(off.shared_syncs(), SharedSyncs::Off);
        let plain = sim_owner(&SimFs::new(), OwnerOptions::default());
        assert_eq!(plain.shared_syncs(), SharedSyncs::Unsupported);

        let home = tempfile::tempdir().expect("tempdir");
        let layout = Layout::with_root(home.path()).expect("absolute");
        std::fs::write(layout.sessions_dir(), b"a file").expect("file");
        let blocked = Owner::new(Store::new(layout.clone()), OwnerOptions::default());
        let SharedSyncs::Unavailable(why) = blocked.shared_syncs() else {
            panic!("a file where the sessions directory goes");
        };
        assert!(
            why.contains(&layout.sessions_dir().display().to_string()),
            "{why}"
        );

        // Two sessions' syncs meet in a round whose file-system sync fails: each
        // is handed back to sync on its own, and sharing ends for good.
        let syncs = owner.registry.syncs().expect("shared");
        let mut replies = Vec::new();
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let mut s = owner.store().create("/work").expect("created");
            s.set_durability(Durability::Buffered);
            s.append_message(AgentMessage::user("x", 0))
                .expect("appended");
            let pending = s.start_sync().expect("started").expect("something to sync");
            replies.push(syncs.hand_in(pending).1);
            sessions.push(s);
        }
        offered.fail_next_file_system_sync();
        syncs.rounds();
        for mut reply in replies {
            assert!(matches!(reply.try_recv(), Ok(Together::Alone(_))));
        }
        assert_eq!(owner.shared_syncs(), SharedSyncs::Ended);
    }
}
