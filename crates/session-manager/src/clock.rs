//! Time and identity sources, injected so fixtures and tests are byte-stable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use session_types::{EntryId, Timestamp};

/// Where the manager gets "now" from. The journal's frame clock
/// (`session_journal::Clock`) is made from it by [`Sources::journal_clock`].
pub trait TimeSource: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// The time without taking a reading: what the journal stamps its frames with
    /// (informational), so that writing a frame does not move a stepping test clock
    /// and an owned session's entries get the same times as a resident one's. By
    /// default simply now.
    fn peek_ms(&self) -> i64 {
        self.now_ms()
    }

    /// Now as the reference writes it (`toISOString()`).
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_ms(self.now_ms())
    }

    /// One append's times: its entry's (a reading, as [`now_ms`](Self::now_ms)) and
    /// its frame's (as [`peek_ms`](Self::peek_ms) right after). By default exactly
    /// those two calls; a clock whose peek is simply another reading gives the one
    /// reading for both, so an append reads the clock once.
    fn stamp_ms(&self) -> (i64, i64) {
        let entry = self.now_ms();
        (entry, self.peek_ms())
    }
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl TimeSource for SystemClock {
    fn now_ms(&self) -> i64 {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }

    /// One reading for the entry and its frame (a second would differ by at most
    /// the microseconds between them: the frame's time is informational).
    fn stamp_ms(&self) -> (i64, i64) {
        let now = self.now_ms();
        (now, now)
    }
}

/// A clock for tests: starts at a fixed instant and advances by a fixed step on
/// every reading.
#[derive(Debug)]
pub struct FixedClock {
    next: AtomicU64,
    step_ms: u64,
}

impl FixedClock {
    /// Starts at `start_ms`, advancing `step_ms` per reading.
    pub fn new(start_ms: u64, step_ms: u64) -> Self {
        Self {
            next: AtomicU64::new(start_ms),
            step_ms,
        }
    }
}

impl TimeSource for FixedClock {
    fn now_ms(&self) -> i64 {
        let v = self.next.fetch_add(self.step_ms, Ordering::Relaxed);
        i64::try_from(v).unwrap_or(i64::MAX)
    }

    fn peek_ms(&self) -> i64 {
        i64::try_from(self.next.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
    }
}

/// Where new session ids, entry ids and journal ids come from.
pub trait IdSource: Send + Sync + std::fmt::Debug {
    /// A new session id (UUIDv7 text by default).
    fn session_id(&self, now_ms: i64) -> String;
    /// A candidate entry id (8 lowercase hex characters, as the reference).
    fn entry_id(&self) -> EntryId;
    /// 16 random bytes for a journal's identity.
    fn journal_id(&self) -> [u8; 16];
}

/// Random ids: UUIDv7 session ids, 8-hex entry ids from UUIDv4.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomIds;

impl IdSource for RandomIds {
    fn session_id(&self, now_ms: i64) -> String {
        let secs = u64::try_from(now_ms.max(0)).unwrap_or(0) / 1000;
        let nanos = u32::try_from(now_ms.rem_euclid(1000)).unwrap_or(0) * 1_000_000;
        let ts = uuid::Timestamp::from_unix(uuid::NoContext, secs, nanos);
        uuid::Uuid::new_v7(ts).to_string()
    }

    fn entry_id(&self) -> EntryId {
        // Entry ids need to be distinct within a session (the manager retries on a
        // collision), not secret: a process-wide generator seeded once from the OS
        // spares a `getrandom` system call on every append.
        static STATE: std::sync::OnceLock<AtomicU64> = std::sync::OnceLock::new();
        let state = STATE.get_or_init(|| {
            let b = *uuid::Uuid::new_v4().as_bytes();
            AtomicU64::new(u64::from_le_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ]))
        });
        let z = splitmix64(state.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed));
        EntryId::new(hex8(z >> 32))
    }

    fn journal_id(&self) -> [u8; 16] {
        *uuid::Uuid::new_v4().as_bytes()
    }
}

/// The low 32 bits of `v` as 8 lowercase hex digits (`format!("{:08x}")` without the
/// formatting machinery: every append draws an id).
fn hex8(v: u64) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(8);
    for shift in (0..8).rev() {
        s.push(char::from(DIGITS[((v >> (shift * 4)) & 0xf) as usize]));
    }
    s
}

/// The splitmix64 output function.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Deterministic ids for tests and fixtures: a counter mixed through a small
/// permutation, so ids look random but repeat exactly from run to run.
#[derive(Debug)]
pub struct SeededIds {
    state: AtomicU64,
}

impl SeededIds {
    /// Ids derived from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            state: AtomicU64::new(seed),
        }
    }

    fn next(&self) -> u64 {
        splitmix64(
            self.state
                .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed),
        )
    }
}

impl IdSource for SeededIds {
    fn session_id(&self, now_ms: i64) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next().to_be_bytes());
        bytes[8..].copy_from_slice(&self.next().to_be_bytes());
        let ms = u64::try_from(now_ms.max(0)).unwrap_or(0);
        bytes[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
        bytes[6] = 0x70 | (bytes[6] & 0x0f);
        bytes[8] = 0x80 | (bytes[8] & 0x3f);
        uuid::Uuid::from_bytes(bytes).to_string()
    }

    fn entry_id(&self) -> EntryId {
        EntryId::new(hex8(self.next() >> 32))
    }

    fn journal_id(&self) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next().to_le_bytes());
        bytes
    }
}

/// The injected sources a manager uses.
#[derive(Debug, Clone)]
pub struct Sources {
    /// The clock.
    pub clock: Arc<dyn TimeSource>,
    /// The id source.
    pub ids: Arc<dyn IdSource>,
}

impl Sources {
    /// This clock as the journal reads it: every frame a store writes (journal headers,
    /// entries, imports) is stamped from the store's one clock, so two stores with the
    /// same sources making the same calls write the same bytes.
    pub fn journal_clock(&self) -> session_journal::Clock {
        let clock = self.clock.clone();
        session_journal::Clock::from_fn(move || {
            session_journal::UnixMillis(u64::try_from(clock.peek_ms()).unwrap_or(0))
        })
    }
}

impl Default for Sources {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
        }
    }
}

impl Sources {
    /// Deterministic sources: a fixed clock (1 s steps from `start_ms`) and seeded ids.
    pub fn deterministic(start_ms: u64, seed: u64) -> Self {
        Self {
            clock: Arc::new(FixedClock::new(start_ms, 1000)),
            ids: Arc::new(SeededIds::new(seed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_entry_ids_are_8_hex_and_distinct() {
        let ids: std::collections::HashSet<String> =
            (0..10_000).map(|_| RandomIds.entry_id().0).collect();
        assert!(ids.len() >= 9_990, "{} distinct of 10,000", ids.len());
        assert!(
            ids.iter()
                .all(|i| i.len() == 8 && i.bytes().all(|b| b.is_ascii_hexdigit()))
        );
    }

    #[test]
    fn hex8_is_format_08x_of_the_low_32_bits() {
        for v in [
            0u64,
            1,
            0xa,
            0xdead_beef,
            0xffff_ffff,
            0x1234_5678_9abc_def0,
            u64::MAX,
        ] {
            assert_eq!(hex8(v), format!("{:08x}", v & 0xffff_ffff));
        }
    }

    #[test]
    fn seeded_ids_repeat_exactly() {
        let a = SeededIds::new(42);
        let b = SeededIds::new(42);
        for _ in 0..100 {
            assert_eq!(a.entry_id(), b.entry_id());
        }
        assert_eq!(
            SeededIds::new(7).entry_id().0,
            SeededIds::new(7).entry_id().0
        );
    }
}
