//! Appended entries freed off the appending thread.
//!
//! An append takes its message by value and is done with it once the frame is
//! written and indexed; freeing it (every string and block of a message: a few
//! hundred nanoseconds of `free`) is work the caller would wait for. [`Release`]
//! collects a session's spent entries and hands them in batches to one process-wide
//! thread that drops them. Memory stays bounded: a session holds at most
//! [`BATCH`] entries or [`BATCH_BYTES`] of payload before handing them over, the
//! hand-over queue holds [`QUEUED`] batches, and when it is full (or the thread
//! could not be started) the batch is dropped right here, as before.

use std::sync::OnceLock;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

use session_types::Entry;

/// Entries per batch handed over.
pub(crate) const BATCH: usize = 64;
/// Payload bytes after which a batch is handed over whatever its count.
pub(crate) const BATCH_BYTES: usize = 1 << 20;
/// Batches waiting for the releasing thread before a session drops its own.
const QUEUED: usize = 8;

/// A session's spent entries, waiting to be handed over.
#[derive(Debug, Default)]
pub(crate) struct Release {
    batch: Vec<Entry>,
    bytes: usize,
}

impl Release {
    /// Takes `entry`, whose payload was `bytes` long, to be freed later on the
    /// releasing thread.
    pub(crate) fn push(&mut self, entry: Entry, bytes: usize) {
        if self.batch.capacity() == 0 {
            self.batch.reserve_exact(BATCH);
        }
        self.batch.push(entry);
        self.bytes += bytes;
        if self.batch.len() >= BATCH || self.bytes >= BATCH_BYTES {
            self.hand_over();
        }
    }

    /// Hands the batch to the releasing thread (or drops it here when it cannot).
    pub(crate) fn hand_over(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        self.bytes = 0;
        match releaser() {
            Some(tx) => match tx.try_send(batch) {
                Ok(()) => {}
                // Behind, or gone: free them here, as without the thread.
                Err(TrySendError::Full(batch) | TrySendError::Disconnected(batch)) => {
                    drop(batch);
                }
            },
            None => drop(batch),
        }
    }

    /// Entries waiting (for tests).
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.batch.len()
    }
}

impl Drop for Release {
    fn drop(&mut self) {
        self.hand_over();
    }
}

/// The releasing thread's queue, started at the first hand-over; `None` when the
/// thread could not be started.
fn releaser() -> Option<&'static SyncSender<Vec<Entry>>> {
    static TX: OnceLock<Option<SyncSender<Vec<Entry>>>> = OnceLock::new();
    TX.get_or_init(|| {
        let (tx, rx) = sync_channel::<Vec<Entry>>(QUEUED);
        std::thread::Builder::new()
            .name("bcs-release".into())
            .spawn(move || {
                for batch in rx {
                    drop(batch);
                }
            })
            .ok()
            .map(|_| tx)
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use session_types::{Entry, EntryBase, EntryId, Timestamp};

    use super::{BATCH, BATCH_BYTES, Release};

    fn entry(i: usize) -> Entry {
        let base = EntryBase::new(EntryId::new(format!("{i:08x}")), None, Timestamp::new("t"));
        Entry::session_info(base, "n")
    }

    /// A session holds at most a batch of entries, or a batch's bytes.
    #[test]
    fn a_session_holds_at_most_a_batch() {
        let mut r = Release::default();
        for i in 0..BATCH * 3 + 5 {
            r.push(entry(i), 10);
            assert!(r.waiting() < BATCH);
        }
        assert_eq!(r.waiting(), 5);
        r.push(entry(0), BATCH_BYTES);
        assert_eq!(r.waiting(), 0);
        r.push(entry(1), 1);
        r.hand_over();
        assert_eq!(r.waiting(), 0);
    }
}
