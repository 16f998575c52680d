//! Integration tests of session-journal; modules mirror `src/`.
#![allow(unsafe_code)] // the counting allocator below
// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod alloc;
mod append;
mod background;
mod capture;
mod decode;
mod format;
mod fuzz;
mod golden;
mod lock;
mod process;
mod read;
mod recover;
mod relocate;
mod seal;
mod shared_sync;
mod sim;
mod verify;
mod versions;
mod vfs;
mod witness;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::Vfs;
use session_journal::{
    Clock, CreateOptions, Durability, FrameKind, JournalId, OpenOptions, Reader, ReaderOptions,
    VerifyOptions, Writer,
};
use session_testkit::sim::SimFs;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// A simulated file system and a journal path on it.
pub(crate) struct Env {
    pub(crate) fs: SimFs,
    pub(crate) path: PathBuf,
    /// Recovery clock: starts at 2000 ms and ticks 1 ms per read, so quarantine file
    /// names stay unique across many recoveries.
    clock: Arc<std::sync::atomic::AtomicU64>,
}

impl Env {
    pub(crate) fn new() -> Self {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/s")).unwrap();
        Self {
            fs,
            path: PathBuf::from("/s/j.jsonl"),
            clock: Arc::new(std::sync::atomic::AtomicU64::new(2_000)),
        }
    }

    pub(crate) fn vfs(&self) -> Arc<dyn Vfs> {
        Arc::new(self.fs.clone())
    }

    pub(crate) fn create(&self) -> Writer {
        self.create_with(u32::MAX >> 2)
    }

    pub(crate) fn create_with(&self, max_payload: u32) -> Writer {
        Writer::create(
            &self.path,
            JOURNAL,
            CreateOptions {
                session_id: Some("s-1".into()),
                max_payload,
                clock: Clock::fixed(1_000),
                vfs: self.vfs(),
            },
        )
        .unwrap()
    }

    pub(crate) fn open_opts(&self) -> OpenOptions {
        OpenOptions {
            clock: {
                let c = self.clock.clone();
                Clock::from_fn(move || {
                    session_journal::UnixMillis(
                        c.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    )
                })
            },
            vfs: self.vfs(),
            ..OpenOptions::default()
        }
    }

    pub(crate) fn open(
        &self,
    ) -> Result<(Writer, session_journal::RecoveryReport), session_journal::OpenError> {
        Writer::open(&self.path, self.open_opts())
    }

    pub(crate) fn reader(&self) -> Reader {
        Reader::open(&self.path, ReaderOptions { vfs: self.vfs() }).unwrap()
    }

    pub(crate) fn verify_opts(&self) -> VerifyOptions {
        VerifyOptions {
            vfs: self.vfs(),
            journal_id: None,
        }
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.fs.read_raw(&self.path).unwrap()
    }

    /// Removes a file (e.g. a quarantined tail) and makes that durable, so long loops
    /// keep memory flat.
    pub(crate) fn remove(&self, path: &Path) {
        self.fs.remove_file(path).unwrap();
        self.fs.sync_dir(Path::new("/s")).unwrap();
    }

    pub(crate) fn set_bytes(&self, bytes: &[u8]) {
        self.fs.write_raw(&self.path, bytes);
    }

    /// All entry payloads a reader sees now.
    pub(crate) fn payloads(&self) -> Vec<Vec<u8>> {
        self.reader()
            .frames(None)
            .map(|f| f.unwrap().payload)
            .collect()
    }
}

pub(crate) const JOURNAL: JournalId = JournalId(*b"journal-id-0001!");

/// Deterministic payload `i` of `len` bytes.
pub(crate) fn payload(i: u64, len: usize) -> Vec<u8> {
    let mut rng = session_testkit::sim::SimRng::new(i.wrapping_mul(0x9e37) ^ len as u64);
    let mut v = vec![0u8; len];
    rng.fill(&mut v);
    v
}

pub(crate) fn entry() -> FrameKind {
    FrameKind::FIRST_CALLER
}

pub(crate) const DURABLE: Durability = Durability::Durable;
pub(crate) const BUFFERED: Durability = Durability::Buffered;

/// How many iterations heavy loops run: small under `cargo test`, larger on request.
pub(crate) fn scale(default: u64, var: &str) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
