//! Test support for Base Context sessions, kept out of the library crates' APIs (as
//! gitoxide keeps `gix-testtools`).
//!
//! Outside the layer stack: it may depend on every library crate, and library crates
//! use it only as a dev-dependency (`cargo xtask layers` checks both). Never
//! published. Its users are the crates' integration tests, doctests and benchmarks,
//! the workspace `tests/` crate, the cargo-fuzz targets in `fuzz/` and `xtask`.
//!
//! Tour:
//!
//! - [`sim`] — [`SimFs`](sim::SimFs), an in-memory [`Vfs`](session_journal::vfs::Vfs)
//!   with crash semantics and error injection, and [`SimRng`](sim::SimRng), the seeded
//!   generator behind it.
//! - [`count`] — [`CountingVfs`], a `Vfs` wrapper counting opens and bytes read per
//!   file, so tests assert I/O bounds.
//! - [`held`] — [`HeldSyncs`], an [`Interpose`] that records which thread made each
//!   `sync_data` and holds the next one until released.
//! - [`readonly`] — [`ReadOnlyVfs`], a `Vfs` that reads through another and refuses
//!   every write with `EROFS` (a read-only file system or directory).
//! - [`fuzz`] — the journal decoder's fuzz harness, shared by `fuzz/` and the replay
//!   of its committed findings.
//! - [`golden`] — the golden native journals (`cargo xtask fixtures` writes them) and
//!   a readable [`dump`](golden::dump) of any journal.
//! - [`formats`] — the format goldens of every file kind and version
//!   (`tests/fixtures/formats/<kind>/v<N>/`): generated for the current versions,
//!   pinned for older ones, and rendered as the current code reads them.
//! - [`legacy`] — writes a native journal holding a legacy JSONL text's records
//!   verbatim (not the import: no migration, no checks).
//! - [`compare`] — our context JSON against the reference's, under JavaScript number
//!   semantics.
//! - [`corpus`] — the golden corpus's reference oracles and the inputs they answer.
//!
//! Frames forged with valid checks come from `session_journal::testing` (the
//! `testing` feature this crate turns on), since they need the journal's internals.
//!
//! ```
//! use std::path::Path;
//! use session_journal::vfs::{OpenMode, Vfs};
//! use session_testkit::sim::SimFs;
//!
//! let fs = SimFs::new();
//! fs.create_dir_all(Path::new("/s"))?;
//! let f = fs.open(Path::new("/s/a.bin"), OpenMode::CreateNew)?;
//! f.write_all_at(0, b"never synced")?;
//! drop(f);
//! fs.crash(7); // the file was never made durable: it may be gone, or hold less
//! assert!(fs.read_raw(Path::new("/s/a.bin")).is_none_or(|b| b.len() <= 12));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod compare;
pub mod corpus;
pub mod count;
pub mod formats;
pub mod fuzz;
pub mod golden;
pub mod held;
pub mod interpose;
pub mod legacy;
pub mod readonly;
pub mod sim;

pub use count::CountingVfs;
pub use held::HeldSyncs;
pub use interpose::{Interpose, Interposed, SyncHook, on_sync};
pub use readonly::ReadOnlyVfs;
