//! `bcs` through a running owner: when an owner answers on the store's socket, it
//! holds the locks of the sessions its clients have open, so a writing command goes
//! through it (`bcs append` to a session a client holds works) instead of failing
//! on the lock, and the store's changes (`bcs new`, `import`, `rm`) are announced to
//! its store followers (`store/changed`). With no owner (no socket, or a dead
//! owner's), or an owner serving another sessions directory, commands use the files
//! directly, as before. Reading commands always read the files: they take no lock,
//! and every append an owner acknowledges is already written to its journal.
//!
//! Every call waits at most [`TIMEOUT_VAR`] (default 60 s; an import longer, by its
//! source's size): an owner that accepts and never answers fails the command.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow};
use session_client::session_protocol::{self, CreateParams, DeleteParams, Durability, call};
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
        let options = options()?;
        if std::fs::symlink_metadata(session_client::socket::socket_path(home)).is_err() {
            return Ok(None); // no owner has run here: no runtime either
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
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
        let mut options = options()?;
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

    /// Whether this owner's sessions directory is `store`'s: only then does a session
    /// id name the same journal on both sides, and do `new`, `import` and `rm` go
    /// through it. Asked by opening an id no session has: the owner's `notFound`
    /// names the journal it looked for, in its sessions directory.
    pub(crate) fn serves(&self, store: &Location) -> Result<bool> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let probe = format!("bcs-probe-{}-{nanos}", std::process::id());
        match self.runtime.block_on(self.client.open(&probe)) {
            Err(ClientError::Owner(session_protocol::Error::NotFound { path })) => {
                Ok(Path::new(&path)
                    .parent()
                    .is_some_and(|dir| same_dir(dir, store.sessions_dir())))
            }
            // Found (someone made it): the answer says nothing; use the files.
            Ok(o) => self.close(&o.session_id).map(|()| false),
            Err(ClientError::Owner(_)) => Ok(false),
            Err(e) => Err(e).context("asking the store's owner for its sessions directory"),
        }
    }

    /// `store/create` (announced to the owner's store followers), closed at once;
    /// returns the new session's id.
    pub(crate) fn create(&self, cwd: &str, id: Option<String>) -> Result<String> {
        let opened = self
            .runtime
            .block_on(self.client.call::<call::StoreCreate>(CreateParams {
                cwd: cwd.to_owned(),
                session_id: id,
                parent_session: None,
            }))?;
        self.close(&opened.session_id)?;
        Ok(opened.session_id)
    }

    /// `store/delete` of a session of the owner's sessions directory (announced);
    /// returns the files removed.
    pub(crate) fn delete(&self, session_id: &str) -> Result<Vec<String>> {
        let deleted = self
            .runtime
            .block_on(self.client.call::<call::StoreDelete>(DeleteParams {
                session_id: session_id.to_owned(),
            }))?;
        Ok(deleted.removed)
    }

    /// `store/importMany` of the sources in chunks (the owner imports each chunk in
    /// batches: a few syncs for many small sessions, not two each), each chunk waiting
    /// the default timeout plus a second per MiB of its sources; `done(i, result)` in
    /// source order.
    pub(crate) fn import(
        &self,
        sources: &[PathBuf],
        done: &mut dyn FnMut(usize, Result<session_protocol::Imported, String>),
    ) {
        let mut first = 0;
        for chunk in sources.chunks(IMPORT_CHUNK) {
            let size: u64 = chunk
                .iter()
                .map(|s| std::fs::metadata(s).map_or(0, |m| m.len()))
                .sum();
            let timeout = self
                .client
                .call_timeout()
                .map(|t| t + Duration::from_secs(size >> 20));
            let paths = chunk
                .iter()
                .map(|s| {
                    std::path::absolute(s)
                        .unwrap_or_else(|_| s.to_path_buf())
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            let client = self.client.clone().with_call_timeout(timeout);
            let answer = self.runtime.block_on(
                client.call::<call::StoreImportMany>(session_protocol::ImportManyParams { paths }),
            );
            match answer {
                Ok(many) => {
                    let mut results = many.results.into_iter();
                    for i in first..first + chunk.len() {
                        let r = match results.next() {
                            Some(item) => match (item.imported, item.error) {
                                (Some(imported), _) => Ok(imported),
                                (None, Some(e)) => Err(e.message),
                                (None, None) => Err("the owner answered nothing for it".to_owned()),
                            },
                            None => Err("the owner answered nothing for it".to_owned()),
                        };
                        done(i, r);
                    }
                }
                // An owner of protocol 1.0 has no `store/importMany`: one
                // `store/import` per source.
                Err(session_client::ClientError::Owner(
                    session_protocol::Error::MethodNotFound { .. },
                )) => {
                    for (i, source) in (first..).zip(chunk) {
                        let path = std::path::absolute(source)
                            .unwrap_or_else(|_| source.to_path_buf())
                            .to_string_lossy()
                            .into_owned();
                        let r =
                            self.runtime.block_on(client.call::<call::StoreImport>(
                                session_protocol::ImportParams { path },
                            ));
                        done(i, r.map_err(|e| e.to_string()));
                    }
                }
                Err(e) => {
                    for i in first..first + chunk.len() {
                        done(i, Err(e.to_string()));
                    }
                }
            }
            first += chunk.len();
        }
    }
}

/// Sources sent to the owner in one `store/importMany` (the progress bar moves once a
/// chunk is answered).
const IMPORT_CHUNK: usize = 256;

/// The environment variable bounding each of `bcs`'s calls to the owner (a duration:
/// `30s`, `250ms`, `5m`, plain seconds; `0` waits forever). Default 60 s.
pub(crate) const TIMEOUT_VAR: &str = "BASE_CONTEXT_OWNER_TIMEOUT";

/// How long a call waits for the owner's answer unless [`TIMEOUT_VAR`] says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The call timeout [`TIMEOUT_VAR`] asks for.
fn call_timeout() -> Result<Option<Duration>> {
    let text = match std::env::var(TIMEOUT_VAR) {
        Ok(t) if !t.is_empty() => t,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(anyhow!("{TIMEOUT_VAR}: not valid UTF-8"));
        }
        _ => return Ok(Some(DEFAULT_TIMEOUT)),
    };
    let d = crate::cli::parse_duration(&text).map_err(|e| anyhow!("{TIMEOUT_VAR}: {e}"))?;
    Ok((!d.is_zero()).then_some(d))
}

/// `bcs`'s client options: named, with its call timeout.
fn options() -> Result<ClientOptions> {
    Ok(ClientOptions::default()
        .with_client_info("bcs", env!("CARGO_PKG_VERSION"))
        .with_call_timeout(call_timeout()?))
}

/// Whether two directory names lead to one directory (by device and inode; by
/// absolute path when either does not exist yet).
pub(crate) fn same_dir(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => match (std::path::absolute(a), std::path::absolute(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
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
