//! `bcs` through a running owner: when an owner answers on the store's socket, it
//! holds the locks of the sessions its clients have open, so a writing command goes
//! through it (`bcs append` to a session a client holds works) instead of failing
//! on the lock. With no owner (no socket, or a dead owner's), commands use the files
//! directly, as before. Reading commands always read the files: they take no lock,
//! and every append an owner acknowledges is already written to its journal.

use std::path::Path;

use anyhow::{Context as _, Result};
use session_client::session_protocol::{self, Durability};
use session_client::{Client, ClientError, ClientOptions};
use session_types::{AgentMessage, Entry};
use tokio::runtime::Runtime;

use crate::location::{Location, session_id_of};

/// A connection to the store's owner, on a runtime of its own.
pub(crate) struct Owner {
    runtime: Runtime,
    client: Client,
}

impl Owner {
    /// The store's running owner, if one answers.
    pub(crate) fn connect(store: &Location) -> Result<Option<Owner>> {
        let home = store.layout().root();
        if std::fs::symlink_metadata(session_client::socket::socket_path(home)).is_err() {
            return Ok(None); // no owner has run here: no runtime either
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let options = ClientOptions::default().with_client_info("bcs", env!("CARGO_PKG_VERSION"));
        match runtime.block_on(Client::connect_with(home, options)) {
            Ok(client) => Ok(Some(Owner { runtime, client })),
            // A socket nobody answers on (its owner died), or an owner dying as we
            // reach it.
            Err(ClientError::Connect { .. } | ClientError::OwnerGone { .. }) => Ok(None),
            Err(e) => Err(e).context("connecting to the store's owner"),
        }
    }

    /// The store's owner, started (`bcs serve` of this executable, detached) when none
    /// answers: for commands that need one (`bcs follow`).
    pub(crate) fn connect_or_start(store: &Location) -> Result<Owner> {
        let home = store.layout().root();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let mut options =
            ClientOptions::default().with_client_info("bcs", env!("CARGO_PKG_VERSION"));
        if let Ok(me) = std::env::current_exe() {
            options = options.with_bcs(me);
        }
        let client = runtime
            .block_on(Client::connect_or_start_with(home, options))
            .context("connecting to the store's owner")?;
        Ok(Owner { runtime, client })
    }

    /// The connection and the runtime it runs on.
    pub(crate) fn parts(&self) -> (&Runtime, &Client) {
        (&self.runtime, &self.client)
    }

    /// Opens the session at `path` in the owner (shared with its other clients);
    /// returns the id later calls name it by.
    pub(crate) fn open(&self, store: &Location, path: &Path) -> Result<String> {
        // The owner keys a session by how it is named: by id for a journal of the
        // store's sessions directory (as its clients name it), else by absolute path.
        // An owner whose sessions directory is another (`BASE_CONTEXT_SESSION_DIR`)
        // resolves the id elsewhere: then the path is what names the journal.
        if path.parent() == Some(store.sessions_dir()) {
            match self
                .runtime
                .block_on(self.client.open(&session_id_of(path)))
            {
                Ok(o) if same_file(Path::new(&o.session_file), path) => return Ok(o.session_id),
                Ok(o) => self.close(&o.session_id)?,
                Err(ClientError::Owner(session_protocol::Error::NotFound { .. })) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let abs = std::path::absolute(path)?;
        let opened = self
            .runtime
            .block_on(self.client.open_path(&abs.to_string_lossy()))?;
        Ok(opened.session_id)
    }

    pub(crate) fn append_entry(
        &self,
        session_id: &str,
        entry: Entry,
        buffered: bool,
    ) -> Result<String, ClientError> {
        self.runtime
            .block_on(
                self.client
                    .append_entry(session_id, entry, durability(buffered)),
            )
            .map(|id| id.as_str().to_owned())
    }

    pub(crate) fn append_message(
        &self,
        session_id: &str,
        message: AgentMessage,
        buffered: bool,
    ) -> Result<String, ClientError> {
        self.runtime
            .block_on(
                self.client
                    .append_message(session_id, message, durability(buffered)),
            )
            .map(|id| id.as_str().to_owned())
    }

    /// This connection stops using the session (the owner keeps it open for its
    /// other clients).
    pub(crate) fn close(&self, session_id: &str) -> Result<()> {
        Ok(self.runtime.block_on(self.client.close(session_id))?)
    }
}

/// Whether two names lead to one file: by identity (device and inode, through the
/// store's seam, never following a link at either name), as ownership is decided.
fn same_file(a: &Path, b: &Path) -> bool {
    use session_journal::vfs::{StdVfs, Vfs as _};
    match (StdVfs.stat(a), StdVfs.stat(b)) {
        (Ok(Some(a)), Ok(Some(b))) => a.id == b.id,
        _ => a == b,
    }
}

fn durability(buffered: bool) -> Option<Durability> {
    buffered.then_some(Durability::Buffered)
}
