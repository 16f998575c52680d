//! The syncs of different sessions that meet, run as one: the owner's share of
//! [`SharedSync`].
//!
//! Each session has its own group commit (`actor`): one sync per batch of that
//! session. With many sessions each written by its own client, those syncs meet:
//! 64 sessions, 64 `fdatasync`s at a time, each a flush of the device's cache. A
//! flusher that cannot sync on its worker (another sync holds the one worker that
//! may block) hands its started sync here instead of running it alone on the blocking
//! pool. One thread of the blocking pool at a time runs *rounds*, each taking every
//! sync handed in since the last: a round of one runs its `fdatasync` (the next ones
//! gather meanwhile); a round of several goes through [`SharedSync::share`] (one
//! file-system sync for the journals on the store's file system), and the syncs it
//! hands back run on the blocking pool at once, each on its own. The syncs handed in
//! while a round runs wait for the next, as a session's batches wait for its next
//! sync. Each flusher then records its outcome and answers its batches as before.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use session_manager::{PendingSync, SharedSync, Together};
use tokio::sync::oneshot;

/// The syncs handed in, and the thread that runs them.
#[derive(Debug)]
pub(crate) struct Syncs {
    shared: SharedSync,
    lane: Mutex<Lane>,
}

#[derive(Debug, Default)]
struct Lane {
    /// Handed in since the running round took its syncs.
    queue: Vec<(PendingSync, oneshot::Sender<Together>)>,
    /// A thread runs rounds now.
    running: bool,
}

impl Syncs {
    pub(crate) fn new(shared: SharedSync) -> Self {
        Self {
            shared,
            lane: Mutex::new(Lane::default()),
        }
    }

    /// Whether syncs are still shared (none failed: `SharedSync::is_sharing`).
    pub(crate) fn is_sharing(&self) -> bool {
        self.shared.is_sharing()
    }

    /// Runs `pending` with the other syncs handed in meanwhile (or alone, when it is
    /// the only one: the next ones gather meanwhile); a sync that could not be
    /// shared comes back ([`Together::Alone`]), for the caller to run on its own.
    /// `None` when the thread that ran them failed (nothing is then known of this
    /// sync).
    pub(crate) async fn run(self: &Arc<Self>, pending: PendingSync) -> Option<Together> {
        let (start, done) = self.hand_in(pending);
        if start {
            let syncs = self.clone();
            drop(tokio::task::spawn_blocking(move || syncs.rounds()));
        }
        done.await.ok()
    }

    /// Queues `pending` for the next round; `true` when no thread runs rounds (the
    /// caller starts one).
    pub(crate) fn hand_in(&self, pending: PendingSync) -> (bool, oneshot::Receiver<Together>) {
        let (reply, done) = oneshot::channel();
        let mut lane = self.lane();
        lane.queue.push((pending, reply));
        (!std::mem::replace(&mut lane.running, true), done)
    }

    /// Whether a thread runs rounds now.
    pub(crate) fn is_running(&self) -> bool {
        self.lane().running
    }

    /// The syncs handed in that no round has taken yet.
    pub(crate) fn waiting(&self) -> usize {
        self.lane().queue.len()
    }

    /// Runs rounds until nothing is handed in: each takes every sync handed in.
    pub(crate) fn rounds(&self) {
        loop {
            let round = {
                let mut lane = self.lane();
                if lane.queue.is_empty() {
                    lane.running = false;
                    return;
                }
                std::mem::take(&mut lane.queue)
            };
            let (mut pending, replies): (Vec<_>, Vec<_>) = round.into_iter().unzip();
            // A panic drops the replies: their flushers fail what the syncs covered.
            let done = catch_unwind(AssertUnwindSafe(|| match pending.len() {
                1 => pending
                    .drain(..)
                    .map(|p| Together::Synced(p.run()))
                    .collect(),
                _ => self.shared.share(pending),
            }));
            if let Ok(done) = done {
                for (done, reply) in done.into_iter().zip(replies) {
                    let _ = reply.send(done);
                }
            }
        }
    }

    fn lane(&self) -> MutexGuard<'_, Lane> {
        self.lane.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use session_manager::{AgentMessage, Durability, Layout, Store};
    use session_testkit::sim::SimFs;

    use super::*;

    /// Every sync handed in before a round starts is run by that round: journals of
    /// three sessions, one file-system sync (called twice), no journal's own sync;
    /// each flusher gets its outcome.
    #[test]
    fn a_round_runs_every_sync_handed_in_before_it_together() {
        let fs = SimFs::new();
        fs.offer_file_system(0, None);
        let store =
            Store::new(Layout::with_root("/sim").expect("absolute")).with_vfs(Arc::new(fs.clone()));
        let shared = store.open_shared_sync().expect("handle").expect("offered");
        let syncs = Syncs::new(shared);
        let mut sessions: Vec<_> = (0..3)
            .map(|_| {
                let mut s = store.create("/work").expect("created");
                s.set_durability(Durability::Buffered);
                s
            })
            .collect();
        let before = fs.stats();
        let mut replies = Vec::new();
        for (i, s) in sessions.iter_mut().enumerate() {
            s.append_message(AgentMessage::user("x", 0))
                .expect("appended");
            let pending = s.start_sync().expect("started").expect("something to sync");
            let (start, reply) = syncs.hand_in(pending);
            assert_eq!(start, i == 0, "the first one starts the rounds");
            replies.push(reply);
        }
        assert_eq!(syncs.waiting(), 3);
        syncs.rounds();
        assert_eq!(syncs.waiting(), 0);
        assert!(!syncs.lane().running, "the rounds ended");
        let after = fs.stats();
        assert_eq!(after.syncs, before.syncs, "no journal synced on its own");
        assert_eq!(after.fs_syncs, before.fs_syncs + 2);
        for (s, mut reply) in sessions.iter_mut().zip(replies) {
            let Ok(Together::Synced(done)) = reply.try_recv() else {
                panic!("synced together");
            };
            assert!(done.is_ok());
            s.finish_sync(done).expect("recorded");
        }
    }
}
