//! A connection's outgoing lines: one bounded queue for answers and notifications,
//! and the "lagged" bookkeeping that keeps a slow follower from slowing anyone.
//!
//! Answers wait for room in the queue (a client that does not read stalls only its
//! own requests). Notifications never wait: [`Outbox::notify`] tries the queue and,
//! when it is full, drops the notification and marks its topic as lagging. While a
//! topic lags, its notifications are dropped without trying. The writer task writes
//! one `session/lagged` (or `store/lagged`) notice per lagging topic as soon as the
//! queue is empty (it is, eventually: the lagging topics add nothing to it), and the
//! topic's notifications resume after the notice. So a follower sees every entry or a
//! notice telling it to re-read, and a writer never waits for a follower.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use session_protocol::{Notification, SessionLaggedParams, StoreLaggedParams, encode_notification};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{Notify, OwnedSemaphorePermit, mpsc};

/// What a notification is about: a followed session (by id) or the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Topic {
    /// `session/appended` of this session id.
    Session(String),
    /// `store/changed`.
    Store,
}

impl Topic {
    /// The notice that tells a follower of this topic to re-read.
    fn lagged_line(&self) -> String {
        encode_notification(&match self {
            Topic::Session(id) => Notification::SessionLagged(SessionLaggedParams {
                session_id: id.clone(),
            }),
            Topic::Store => Notification::StoreLagged(StoreLaggedParams {}),
        })
    }
}

/// One connection's outgoing queue, shared by its request tasks (answers) and by the
/// sessions and store events it follows (notifications, through a `Weak`: the
/// queue closes, and the writer ends, when the connection lets go of it).
#[derive(Debug)]
pub(crate) struct Outbox {
    /// Tells subscriptions apart (a connection's identity).
    pub(crate) id: u64,
    tx: mpsc::Sender<String>,
    lag: Arc<Lag>,
    /// Answers queued by [`answer`](Outbox::answer) that found the queue full, in
    /// order, each with its in-flight permit.
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    lines: VecDeque<(String, OwnedSemaphorePermit)>,
    /// A task moves them into the queue as room frees.
    moving: bool,
}

/// The lagging topics, shared with the writer task.
#[derive(Debug, Default)]
pub(crate) struct Lag {
    /// Topics whose notifications were dropped, their notice not yet written.
    lagging: Mutex<Vec<Topic>>,
    /// Wakes the writer when a topic starts lagging.
    wake: Notify,
}

impl Lag {
    fn lagging(&self) -> MutexGuard<'_, Vec<Topic>> {
        // A plain list changed in single statements: a panic cannot leave it torn.
        self.lagging.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The lagged notices to write now, each topic's lag ended (its notifications
    /// resume, queued after the notice).
    pub(crate) fn take_lagged(&self) -> Vec<String> {
        let topics = std::mem::take(&mut *self.lagging());
        topics.iter().map(Topic::lagged_line).collect()
    }

    /// Resolves when a topic may have started lagging (a permit is kept when nobody
    /// waits, so no wake-up is lost).
    pub(crate) async fn woken(&self) {
        self.wake.notified().await;
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Outbox {
    /// An outbox whose lines go to `tx` (the writer task reads the other end).
    pub(crate) fn new(tx: mpsc::Sender<String>) -> Outbox {
        Outbox {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            tx,
            lag: Arc::default(),
            held: Mutex::default(),
        }
    }

    /// The lag state, for the writer task.
    pub(crate) fn lag(&self) -> Arc<Lag> {
        self.lag.clone()
    }

    /// Sends an answer (or any line that must not be dropped), waiting for room;
    /// `false` when the writer is gone.
    pub(crate) async fn send(&self, line: String) -> bool {
        self.tx.send(line).await.is_ok()
    }

    /// Queues an answer without waiting, after every answer queued this way before
    /// it: at once when the queue has room, else held with its in-flight `permit`
    /// (so a connection whose client does not read stops being read, as with
    /// [`send`](Outbox::send)) and moved into the queue, in order, by a task as
    /// room frees. What a session's writer uses to answer its batches in order from
    /// whatever thread performs them.
    pub(crate) fn answer(self: &Arc<Self>, line: String, permit: OwnedSemaphorePermit) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if held.lines.is_empty() {
            match self.tx.try_send(line) {
                Ok(()) | Err(TrySendError::Closed(_)) => return,
                Err(TrySendError::Full(line)) => held.lines.push_back((line, permit)),
            }
        } else {
            held.lines.push_back((line, permit));
        }
        if !held.moving {
            // Outside a runtime (its shutdown) nothing is written any more anyway.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                held.moving = true;
                runtime.spawn(self.clone().move_held());
            }
        }
    }

    /// Moves the held answers into the queue, in order, waiting for room.
    async fn move_held(self: Arc<Self>) {
        loop {
            let Ok(room) = self.tx.reserve().await else {
                let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
                held.lines.clear(); // the writer is gone
                held.moving = false;
                return;
            };
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let Some((line, permit)) = held.lines.pop_front() else {
                held.moving = false;
                return;
            };
            room.send(line);
            drop(permit);
        }
    }

    /// Sends a line that may be dropped (advisory progress) without waiting.
    pub(crate) fn try_send(&self, line: String) {
        let _ = self.tx.try_send(line);
    }

    /// Sends a notification of `topic` without ever waiting: dropped, and the topic
    /// marked lagging, when the queue is full; dropped while the topic lags.
    pub(crate) fn notify(&self, topic: &Topic, line: String) {
        let mut lagging = self.lag.lagging();
        if lagging.contains(topic) {
            return;
        }
        match self.tx.try_send(line) {
            Ok(()) | Err(TrySendError::Closed(_)) => {}
            Err(TrySendError::Full(_)) => {
                lagging.push(topic.clone());
                drop(lagging);
                self.lag.wake.notify_one();
            }
        }
    }
}

/// A follower: a connection's outbox, held weakly (a follower that went away is
/// forgotten at the next notification).
#[derive(Debug, Clone)]
pub(crate) struct Follower {
    /// The outbox's id.
    pub(crate) id: u64,
    outbox: Weak<Outbox>,
}

impl Follower {
    /// A follower writing to `outbox`.
    pub(crate) fn of(outbox: &Arc<Outbox>) -> Follower {
        Follower {
            id: outbox.id,
            outbox: Arc::downgrade(outbox),
        }
    }

    /// Notifies it; `false` when it is gone.
    pub(crate) fn notify(&self, topic: &Topic, line: String) -> bool {
        match self.outbox.upgrade() {
            Some(o) => {
                o.notify(topic, line);
                true
            }
            None => false,
        }
    }

    /// Whether its connection is gone.
    pub(crate) fn is_gone(&self) -> bool {
        self.outbox.strong_count() == 0
    }
}

/// The connections following something (the store): notified without waiting.
#[derive(Debug, Default)]
pub(crate) struct Followers(Mutex<Vec<Follower>>);

impl Followers {
    fn list(&self) -> MutexGuard<'_, Vec<Follower>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `outbox` follows (once, however often it asks).
    pub(crate) fn add(&self, outbox: &Arc<Outbox>) {
        let mut list = self.list();
        if !list.iter().any(|f| f.id == outbox.id) {
            list.push(Follower::of(outbox));
        }
    }

    /// The outbox `id` no longer follows.
    pub(crate) fn remove(&self, id: u64) {
        self.list().retain(|f| f.id != id);
    }

    /// Nobody follows.
    pub(crate) fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    /// Notifies every follower (never waiting); forgets the closed ones.
    pub(crate) fn notify(&self, topic: &Topic, line: String) {
        self.list().retain(|f| f.notify(topic, line.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_marks_once_and_resumes_after_the_notice() {
        let (tx, mut rx) = mpsc::channel(2);
        let out = Outbox::new(tx);
        let s = Topic::Session("s1".into());
        out.notify(&s, "1".into());
        out.notify(&s, "2".into());
        out.notify(&s, "3".into()); // full: dropped, lagging
        assert_eq!(rx.try_recv().ok().as_deref(), Some("1"));
        out.notify(&s, "4".into()); // room now, but the topic lags: dropped
        out.notify(&Topic::Store, "store".into()); // another topic is not held back
        let lagged = out.lag().take_lagged();
        assert_eq!(lagged.len(), 1);
        assert!(
            lagged[0].contains(r#""method":"session/lagged""#),
            "{lagged:?}"
        );
        assert!(lagged[0].contains(r#""sessionId":"s1""#));
        assert!(
            out.lag().take_lagged().is_empty(),
            "one notice per overflow"
        );
        assert_eq!(rx.try_recv().ok().as_deref(), Some("2"));
        assert_eq!(rx.try_recv().ok().as_deref(), Some("store"));
        out.notify(&s, "5".into()); // resumed
        assert_eq!(rx.try_recv().ok().as_deref(), Some("5"));
    }
}
