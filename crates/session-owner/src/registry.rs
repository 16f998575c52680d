//! The sessions the owner holds open, shared by every connection: one shared cell
//! (the session, its write gate) per journal, counted references, closed when the
//! last connection lets go.
//!
//! Opens and closes hold the registry's lock across the library call, so two clients
//! opening one session at once end with one shared cell, and a session being closed is
//! closed (its lock released) before anyone can open it again. The price is that
//! opens and closes of different sessions wait for each other; reads and appends never
//! take this lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_manager::OwnedSession;
use session_protocol::Error;
use tokio::sync::{Mutex, oneshot};

use crate::OwnerOptions;
use crate::actor::{self, Command, Shared, Submitted};
use crate::outbox::Followers;

/// A connection's handle on an open session.
#[derive(Clone)]
pub(crate) struct Handle {
    /// The journal path: the registry's key.
    pub(crate) key: PathBuf,
    /// The session itself: its writes go through its gate, its reads beside it.
    pub(crate) shared: Arc<Shared>,
}

struct Slot {
    shared: Arc<Shared>,
    refs: usize,
}

#[derive(Default)]
pub(crate) struct Registry {
    slots: Mutex<HashMap<PathBuf, Slot>>,
    /// The connections following the store (`store/follow`).
    pub(crate) store_followers: Arc<Followers>,
    /// Syncs running on a runtime worker itself now (at most one: `actor`).
    worker_syncs: Arc<std::sync::atomic::AtomicUsize>,
    /// The connections served now, each counted once from its `accept` (the
    /// owner's `Connection`): the idle check reads it, and a sync on a worker wakes
    /// another only when there are others to serve meanwhile (`actor`).
    pub(crate) connections: Arc<std::sync::atomic::AtomicUsize>,
    /// The owner's shared syncs (`None`: each journal syncs on its own).
    syncs: Option<Arc<crate::syncs::Syncs>>,
}

impl Registry {
    /// No session open yet; `syncs`: the owner's shared syncs, if any.
    pub(crate) fn new(syncs: Option<Arc<crate::syncs::Syncs>>) -> Self {
        Self {
            syncs,
            ..Self::default()
        }
    }

    /// A handle on the session at `key`: the open one (one more reference), or one
    /// `open` opens (run on the blocking pool).
    pub(crate) async fn acquire<F>(
        &self,
        key: PathBuf,
        options: &OwnerOptions,
        open: F,
    ) -> Result<Handle, Error>
    where
        F: FnOnce() -> Result<OwnedSession, Error> + Send + 'static,
    {
        let mut slots = self.slots.lock().await;
        if let Some(slot) = slots.get_mut(&key)
            && !slot.shared.is_closed()
        {
            slot.refs += 1;
            return Ok(Handle {
                key,
                shared: slot.shared.clone(),
            });
        }
        let session = tokio::task::spawn_blocking(open)
            .await
            .map_err(|e| Error::Internal {
                detail: format!("opening a session: {e}"),
            })??;
        Ok(self.insert(&mut slots, key, session, options))
    }

    /// Registers a session just created (nobody else can hold it yet).
    pub(crate) async fn adopt(&self, session: OwnedSession, options: &OwnerOptions) -> Handle {
        let key = session
            .session_file()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut slots = self.slots.lock().await;
        self.insert(&mut slots, key, session, options)
    }

    fn insert(
        &self,
        slots: &mut HashMap<PathBuf, Slot>,
        key: PathBuf,
        session: OwnedSession,
        options: &OwnerOptions,
    ) -> Handle {
        let shared = actor::start(
            session,
            actor::Setup {
                queue: options.session_queue,
                max_batch: options.max_batch,
                max_reads: options.session_queue,
                store: self.store_followers.clone(),
                worker_syncs: self.worker_syncs.clone(),
                connections: self.connections.clone(),
                syncs: self.syncs.clone(),
            },
        );
        slots.insert(
            key.clone(),
            Slot {
                shared: shared.clone(),
                refs: 1,
            },
        );
        Handle { key, shared }
    }

    /// Drops one reference; the last one closes the session (synced, lock released)
    /// before this returns.
    pub(crate) async fn release(&self, handle: Handle) -> Result<(), Error> {
        let mut slots = self.slots.lock().await;
        let Some(slot) = slots.get_mut(&handle.key) else {
            return Ok(());
        };
        if !Arc::ptr_eq(&slot.shared, &handle.shared) {
            return Ok(()); // a handle on a session that died and was replaced
        }
        slot.refs = slot.refs.saturating_sub(1);
        if slot.refs > 0 {
            return Ok(());
        }
        let Some(slot) = slots.remove(&handle.key) else {
            return Ok(());
        };
        let (done, closed) = oneshot::channel();
        if slot.shared.submit(Command::Close { done }, false) == Submitted::Closed {
            return Ok(()); // closed already (the library panicked), the lock with it
        }
        closed.await.unwrap_or(Ok(()))
    }

    /// The owner's shared syncs, if it has any.
    pub(crate) fn syncs(&self) -> Option<&crate::syncs::Syncs> {
        self.syncs.as_deref()
    }

    /// The syncs handed in to the shared syncs and not yet taken.
    pub(crate) fn syncs_waiting(&self) -> usize {
        self.syncs.as_ref().map_or(0, |s| s.waiting())
    }

    /// How many sessions are open.
    pub(crate) async fn len(&self) -> usize {
        self.slots.lock().await.len()
    }
}
