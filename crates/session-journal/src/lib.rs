//! The native-framed, self-verifying, append-only journal every session lives in.
//!
//! Layer 1 of Base Context sessions: it owns the bytes (file signature, frames and
//! their checks, durability, torn-tail recovery, the writer lock, captures) and knows
//! nothing about what an entry means — payloads are opaque bytes with a caller-chosen
//! [`FrameKind`] and an optional 16-byte [`Tag`]. The byte format is specified in
//! `docs/format.md` §2.
//!
//! Tour:
//!
//! - [`Writer`] — [`create`](Writer::create) a journal durably,
//!   [`open`](Writer::open) one with recovery (a [`RecoveryReport`] says what the end of
//!   the file held), [`append`](Writer::append) /
//!   [`append_batch`](Writer::append_batch) /
//!   [`append_encoded`](Writer::append_encoded) (the payload written in place) with a
//!   [`Durability`], [`sync`](Writer::sync), [`seal`](Writer::seal),
//!   [`close`](Writer::close) (a clean close seals the journal: damage to any of its
//!   frames is then corruption, never a torn tail). A writer holds the OS lock on the
//!   journal.
//! - [`Capture`] — a committed length a [`Reader`] is bounded by.
//! - [`Reader`] — lock-free and read-only: [`read_frame_at`](Reader::read_frame_at),
//!   [`verify_frame_at`](Reader::verify_frame_at), [`read_run`](Reader::read_run)
//!   (neighbouring frames in one read, each verified),
//!   [`read_frames_into`](Reader::read_frames_into) (frames a few bytes apart in one
//!   read, into a reused buffer), [`frames`](Reader::frames).
//! - [`verify()`] and [`salvage()`] — read-only whole-file checks and the export of every
//!   intact frame of a damaged journal.
//! - [`verify_relocated`] — one frame held outside its journal (a segment, an object),
//!   verified by its logical offset without re-hashing.
//! - [`vfs`] — the file-system seam (`StdVfs` for real files). The simulated file
//!   system with crash semantics that tests use (`SimFs`), the fuzz harness and the
//!   golden journals live in the `session-testkit` crate, not here; the non-default
//!   `testing` feature adds the one module they need from the inside (`testing`:
//!   frames forged with valid checks, the header frame as stored).
//!
//! ```
//! use session_journal::{
//!     CreateOptions, Durability, FrameKind, JournalId, OpenOptions, Reader, ReaderOptions,
//!     TailState, Writer,
//! };
//!
//! let dir = tempfile::tempdir()?;
//! let path = &dir.path().join("s1.jsonl");
//! let mut w = Writer::create(path, JournalId([7; 16]), CreateOptions::default())?;
//! let a = w.append(FrameKind::FIRST_CALLER, br#"{"type":"message"}"#, Durability::Durable)?;
//! w.append(FrameKind::FIRST_CALLER, b"second", Durability::Buffered)?;
//! let capture = w.capture();
//! w.append(FrameKind::FIRST_CALLER, b"not in the capture", Durability::Buffered)?;
//!
//! let r = Reader::open(path, ReaderOptions::default())?;
//! assert_eq!(r.read_frame_at(a.offset)?.payload, br#"{"type":"message"}"#);
//! let seen: Vec<Vec<u8>> = r.frames(Some(capture)).map(|f| f.map(|f| f.payload)).collect::<Result<_, _>>()?;
//! assert_eq!(seen.len(), 2);
//!
//! drop(w);
//! let (_w, report) = Writer::open(path, OpenOptions::default())?;
//! assert_eq!(report.frames, 3);
//! assert_eq!(report.tail, TailState::Clean);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod append;
mod capture;
mod decode;
mod encode;
mod error;
pub mod format;
mod frame;
mod header;
pub mod lock;
mod read;
mod recover;
mod relocate;
mod seal;
mod shared_sync;
#[cfg(feature = "testing")]
pub mod testing;
mod types;
mod verify;
pub mod vfs;

pub use append::{
    AfterSync, Appended, CreateOptions, NewFrame, OpenOptions, PayloadBuf, PendingSync, SyncDone,
    Writer, is_leftover_temp,
};
pub use capture::Capture;
pub use error::{AppendError, CreateError, FrameFault, LockHolder, OpenError, ReadError};
pub use frame::{Frame, FrameInfo};
pub use header::JournalHeader;
pub use read::{FrameRun, Frames, Known, Reader, ReaderOptions, Stop};
pub use recover::{RecoveryMode, RecoveryReport, TailState, Witness, WitnessOutcome};
pub use relocate::{RelocatedError, verify_relocated};
pub use shared_sync::{DEFAULT_BACKLOG_LIMIT, DEFAULT_DRAIN_INTERVAL, SharedSync, Together};
pub use types::{BodyCheck, Clock, Durability, FrameKind, JournalId, Offset, Seq, Tag, UnixMillis};
pub use verify::{Gap, SalvageReport, VerifyOptions, VerifyReport, salvage, verify};
