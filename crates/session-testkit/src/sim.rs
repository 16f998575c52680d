//! A simulated file system with crash semantics and error injection.
//!
//! [`SimFs`] implements [`Vfs`] in memory. Each file (an inode) keeps a **durable
//! image** and a list of **pending operations** (writes and truncations since its last
//! `sync_data`/`sync_all`); each directory keeps a log of **pending namespace
//! operations** (creations, renames, removals since its last `sync_dir`). A crash then
//! decides what reached the disk:
//!
//! - [`SimFs::crash`] models power loss: for every file, each pending write is
//!   independently applied, dropped, torn (a random prefix), zero-filled,
//!   garbage-filled, or mixed sector by sector (512 B); truncations are applied or
//!   dropped; a random prefix of each directory's pending namespace log survives (a file
//!   created without a directory sync may vanish). Writes that survive after a dropped
//!   one model reordering. Bytes outside a write's range never change (powersafe
//!   overwrite, as SQLite, RocksDB and etcd assume).
//! - [`SimFs::crash_process`] models kill -9: everything handed to the "kernel" stays.
//!
//! Either way, locks are released and every open handle becomes stale (its operations
//! fail), as after a real crash. Unlike POSIX, a file that is removed and whose removal
//! is made durable by `sync_dir` is freed at once: handles still open on it go stale.
//!
//! Error injection: [`SimFs::fail_sync_after`] makes the n-th next sync fail with EIO
//! and — like Linux after a writeback error (fsyncgate) — the pending data of that file
//! never becomes durable, even if a later sync succeeds. [`SimFs::fail_writes_after`]
//! makes writes fail with ENOSPC once a byte budget is spent, after writing the part
//! that fit.
//!
//! All randomness comes from a caller-supplied seed, so every failing run replays.
//!
//! ```
//! use std::path::Path;
//! use session_testkit::sim::SimFs;
//! use session_journal::vfs::{OpenMode, Vfs};
//!
//! let fs = SimFs::new();
//! let path = Path::new("/s/a.bin");
//! fs.create_dir_all(Path::new("/s")).unwrap();
//! let f = fs.open(path, OpenMode::CreateNew).unwrap();
//! f.write_all_at(0, b"hello").unwrap();
//! f.sync_data().unwrap();
//! fs.sync_dir(Path::new("/s")).unwrap();
//! f.write_all_at(5, b" world").unwrap(); // never synced
//! drop(f);
//! fs.crash(7);
//! let bytes = fs.read_raw(path).unwrap();
//! assert!(bytes.starts_with(b"hello"));
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use session_journal::vfs::{
    ChangeTime, DirEntry, EntryKind, FileId, FileStatus, OpenMode, PathStatus, Vfs, VfsFile,
    VfsFileSystem,
};

/// A small deterministic PRNG (SplitMix64), for crash decisions and for tests.
#[derive(Debug, Clone)]
pub struct SimRng(u64);

impl SimRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// Counters of what went through a [`SimFs`], for tests that bound I/O.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimStats {
    /// Bytes returned by `read_at`.
    pub bytes_read: u64,
    /// Bytes accepted by `write_all_at`.
    pub bytes_written: u64,
    /// Successful `sync_data`/`sync_all` calls.
    pub syncs: u64,
    /// Successful `sync_dir` calls.
    pub dir_syncs: u64,
    /// Successful file-system syncs (`syncfs`, through [`SimFs::offer_file_system`]).
    pub fs_syncs: u64,
}

#[derive(Debug, Clone)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

#[derive(Debug, Default, Clone)]
struct Inode {
    current: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<Pending>,
    /// A file-system sync lost this file's pending writes: its next sync reports it.
    write_back_failed: bool,
    /// The status change time (`st_ctime`), in ns of the simulated clock.
    changed: i128,
}

#[derive(Debug, Clone)]
enum DirOp {
    Link(PathBuf, u64),
    Unlink(PathBuf),
    Rename(PathBuf, PathBuf),
}

impl DirOp {
    fn touches(&self, dir: &Path) -> bool {
        match self {
            DirOp::Link(p, _) | DirOp::Unlink(p) => parent_dir(p) == dir,
            DirOp::Rename(a, b) => parent_dir(a) == dir || parent_dir(b) == dir,
        }
    }

    fn apply(&self, names: &mut BTreeMap<PathBuf, u64>) {
        match self {
            DirOp::Link(p, ino) => {
                names.insert(p.clone(), *ino);
            }
            DirOp::Unlink(p) => {
                names.remove(p);
            }
            DirOp::Rename(a, b) => {
                if let Some(ino) = names.remove(a) {
                    names.insert(b.clone(), ino);
                }
            }
        }
    }
}

impl State {
    /// Drops inodes that no name, current or durable, refers to any more.
    fn collect_garbage(&mut self) {
        let live: BTreeSet<u64> = self
            .names
            .values()
            .chain(self.durable_names.values())
            .copied()
            .chain(self.dir_log.iter().filter_map(|op| match op {
                DirOp::Link(_, ino) => Some(*ino),
                _ => None,
            }))
            .collect();
        self.inodes.retain(|ino, _| live.contains(ino));
    }
}

#[derive(Debug, Default)]
struct State {
    inodes: BTreeMap<u64, Inode>,
    next_ino: u64,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    dir_log: Vec<DirOp>,
    dirs: BTreeSet<PathBuf>,
    /// Inode → the handle holding its lock.
    locks: BTreeMap<u64, u64>,
    /// The next handle number (each open file is one handle).
    next_handle: u64,
    /// The next temporary name's number (deterministic, unlike the real system's).
    next_temp: u64,
    generation: u64,
    sync_countdown: Option<u32>,
    write_budget: Option<u64>,
    stats: SimStats,
    /// The simulated clock (ns since the epoch) that stamps change times.
    clock: SimClock,
    /// Whether files take `preallocate` (as ext4 does), and each inode's reserved end.
    preallocates: bool,
    reserved: BTreeMap<u64, u64>,
    /// Whether [`Vfs::file_system`] offers a handle, the next file-system sync fails,
    /// and the write-back backlog the handle reports.
    file_system: Option<u64>,
    fail_fs_sync: bool,
    backlog: Option<u64>,
}

/// The clock of change times: every change of an inode (creation, write, truncation,
/// rename, link, unlink) is stamped with `now`, then `now` moves on by `step`.
#[derive(Debug, Clone, Copy)]
struct SimClock {
    now: i128,
    step: i128,
}

impl Default for SimClock {
    fn default() -> Self {
        Self {
            // 2025-06-15T00:00:00Z, one millisecond a change.
            now: 1_749_945_600 * 1_000_000_000,
            step: 1_000_000,
        }
    }
}

impl State {
    /// Stamps `ino`'s change time with the clock (a change of the inode).
    fn touch(&mut self, ino: u64) {
        let now = self.clock.now;
        self.clock.now += self.clock.step;
        if let Some(node) = self.inodes.get_mut(&ino) {
            node.changed = now;
        }
    }
}

/// An in-memory [`Vfs`] with crash semantics and error injection. Cloning shares the
/// same file system.
#[derive(Clone, Default)]
pub struct SimFs {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for SimFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SimFs")
    }
}

fn injected_eio() -> io::Error {
    io::Error::other("input/output error (injected by SimFs)")
}

fn stale() -> io::Error {
    io::Error::other("stale file handle: the simulated system crashed")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("no such file: {}", path.display()),
    )
}

impl SimFs {
    /// An empty file system (the root directory `/` and the current directory `.`
    /// exist).
    pub fn new() -> Self {
        let fs = Self::default();
        {
            let mut s = fs.lock_state();
            s.dirs.insert(PathBuf::from("/"));
            s.dirs.insert(PathBuf::from("."));
        }
        fs
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next `n`-th sync (`sync_data` or `sync_all`, any file; `n >= 1`) fails with
    /// EIO, and the pending writes of that file are lost for good.
    pub fn fail_sync_after(&self, n: u32) {
        self.lock_state().sync_countdown = Some(n.max(1));
    }

    /// Makes [`Vfs::file_system`] offer a handle whose sync makes every file's written
    /// bytes durable, as `syncfs` does (directory entries excepted: they stay with
    /// `sync_dir`). It says it is on `device` (every file here is on device 0: a
    /// handle on another one covers none of them) and reports `backlog` as the
    /// write-back backlog.
    pub fn offer_file_system(&self, device: u64, backlog: Option<u64>) {
        let mut s = self.lock_state();
        s.file_system = Some(device);
        s.backlog = backlog;
    }

    /// The next file-system sync fails with EIO: every file's pending writes are lost
    /// for good, and each such file's next `sync_data` reports EIO (as Linux reports a
    /// write-back failure both to `syncfs` and to the file's own next sync).
    pub fn fail_next_file_system_sync(&self) {
        self.lock_state().fail_fs_sync = true;
    }

    /// Writes fail with ENOSPC once `bytes` more bytes have been written; the write that
    /// crosses the budget stores the part that fits.
    pub fn fail_writes_after(&self, bytes: u64) {
        self.lock_state().write_budget = Some(bytes);
    }

    /// Removes all injected faults.
    pub fn clear_faults(&self) {
        let mut s = self.lock_state();
        s.sync_countdown = None;
        s.fail_fs_sync = false;
        s.write_budget = None;
    }

    /// Sets how far the change-time clock moves after each change (default 1 ms);
    /// zero freezes it, as a coarse file-system clock stands still within a tick, so
    /// changes get equal change times.
    pub fn set_clock_step(&self, step: std::time::Duration) {
        self.lock_state().clock.step = step.as_nanos().try_into().unwrap_or(i128::MAX);
    }

    /// Moves the change-time clock forward by `by`.
    pub fn advance_clock(&self, by: std::time::Duration) {
        let by: i128 = by.as_nanos().try_into().unwrap_or(i128::MAX);
        let mut s = self.lock_state();
        s.clock.now = s.clock.now.saturating_add(by);
    }

    /// I/O counters since creation.
    pub fn stats(&self) -> SimStats {
        self.lock_state().stats
    }

    /// The current bytes of the file at `path` (what a reader would see now).
    pub fn read_raw(&self, path: &Path) -> Option<Vec<u8>> {
        let s = self.lock_state();
        let ino = s.names.get(path)?;
        s.inodes.get(ino).map(|i| i.current.clone())
    }

    /// Replaces (or creates) the file at `path` with `bytes`, durably — as if the bytes
    /// had been on disk all along. For tests that craft damaged files.
    pub fn write_raw(&self, path: &Path, bytes: &[u8]) {
        let mut s = self.lock_state();
        s.dirs.insert(parent_dir(path));
        let ino = match s.names.get(path) {
            Some(ino) => *ino,
            None => {
                let ino = s.next_ino;
                s.next_ino += 1;
                s.names.insert(path.to_path_buf(), ino);
                s.durable_names.insert(path.to_path_buf(), ino);
                ino
            }
        };
        s.durable_names.insert(path.to_path_buf(), ino);
        s.inodes.insert(
            ino,
            Inode {
                current: bytes.to_vec(),
                durable: bytes.to_vec(),
                pending: Vec::new(),
                write_back_failed: false,
                changed: 0,
            },
        );
        s.touch(ino);
    }

    /// The paths of all files, sorted.
    pub fn list(&self) -> Vec<PathBuf> {
        self.lock_state().names.keys().cloned().collect()
    }

    /// Files take `preallocate` from now on (block reservations past the end, as
    /// ext4's `fallocate(FALLOC_FL_KEEP_SIZE)`: no byte or length changes; a
    /// `set_len` releases them).
    pub fn allow_preallocation(&self) {
        self.lock_state().preallocates = true;
    }

    /// How far the file at `path` has blocks reserved (`None`: nothing reserved past
    /// its length).
    pub fn reserved_end(&self, path: &Path) -> Option<u64> {
        let s = self.lock_state();
        let ino = s.names.get(path)?;
        let len = s.inodes.get(ino)?.current.len() as u64;
        s.reserved.get(ino).copied().filter(|end| *end > len)
    }

    /// Whether someone holds the lock on the file at `path`.
    pub fn lock_held(&self, path: &Path) -> bool {
        let s = self.lock_state();
        s.names
            .get(path)
            .is_some_and(|ino| s.locks.contains_key(ino))
    }

    /// Simulates kill -9 of every process using this file system: written data stays,
    /// locks are released, open handles go stale.
    pub fn crash_process(&self) {
        let mut s = self.lock_state();
        s.locks.clear();
        s.generation += 1;
    }

    /// Simulates power loss, with decisions drawn from `seed` (see the module docs).
    pub fn crash(&self, seed: u64) {
        let mut rng = SimRng::new(seed);
        let mut s = self.lock_state();
        let keep = rng.below(s.dir_log.len() as u64 + 1) as usize;
        let log = std::mem::take(&mut s.dir_log);
        let mut names = s.durable_names.clone();
        for op in &log[..keep] {
            op.apply(&mut names);
        }
        let live: BTreeSet<u64> = names.values().copied().collect();
        let mut inodes = BTreeMap::new();
        for (ino, inode) in std::mem::take(&mut s.inodes) {
            if !live.contains(&ino) {
                continue;
            }
            let mut image = inode.durable;
            for op in &inode.pending {
                apply_with_fate(&mut image, op, &mut rng);
            }
            inodes.insert(
                ino,
                Inode {
                    current: image.clone(),
                    durable: image,
                    pending: Vec::new(),
                    write_back_failed: false,
                    changed: inode.changed,
                },
            );
        }
        s.inodes = inodes;
        s.names = names.clone();
        s.durable_names = names;
        s.locks.clear();
        s.generation += 1;
    }

    fn file_handle(&self, s: &mut State, ino: u64) -> SimFile {
        let handle = s.next_handle;
        s.next_handle += 1;
        SimFile {
            fs: self.clone(),
            ino,
            handle,
            generation: s.generation,
        }
    }
}

fn write_into(image: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = offset as usize;
    let end = start + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[start..end].copy_from_slice(data);
}

fn apply_op(image: &mut Vec<u8>, op: &Pending) {
    match op {
        Pending::Write { offset, data } => write_into(image, *offset, data),
        Pending::SetLen(len) => image.resize(*len as usize, 0),
    }
}

const SECTOR: usize = 512;

fn apply_with_fate(image: &mut Vec<u8>, op: &Pending, rng: &mut SimRng) {
    match op {
        Pending::SetLen(_) => {
            if !rng.one_in(3) {
                apply_op(image, op);
            }
        }
        Pending::Write { offset, data } => match rng.below(7) {
            // Reached the disk whole (the most common outcome).
            0 | 1 => write_into(image, *offset, data),
            // Dropped.
            2 => {}
            // Torn: a random prefix.
            3 => {
                let cut = rng.below(data.len() as u64 + 1) as usize;
                write_into(image, *offset, &data[..cut]);
            }
            // The size reached the disk, the data did not.
            4 => write_into(image, *offset, &vec![0; data.len()]),
            // Garbage over a contiguous part of the range.
            5 => {
                let mut bytes = data.clone();
                let a = rng.below(bytes.len() as u64 + 1) as usize;
                let b = a + rng.below((bytes.len() - a) as u64 + 1) as usize;
                rng.fill(&mut bytes[a..b]);
                write_into(image, *offset, &bytes);
            }
            // Sector by sector: each sector written, left as it was, or zeroed.
            _ => {
                let base = *offset as usize;
                for (i, sector) in data.chunks(SECTOR).enumerate() {
                    let at = (base + i * SECTOR) as u64;
                    match rng.below(3) {
                        0 => write_into(image, at, sector),
                        1 => {
                            if image.len() < at as usize + sector.len() {
                                write_into(image, at, &vec![0; sector.len()]);
                            }
                        }
                        _ => write_into(image, at, &vec![0; sector.len()]),
                    }
                }
            }
        },
    }
}

impl Vfs for SimFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let mut s = self.lock_state();
        if s.dirs.contains(path) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (a directory)",
            ));
        }
        match (mode, s.names.get(path).copied()) {
            (OpenMode::CreateNew, Some(_)) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("file exists: {}", path.display()),
            )),
            (OpenMode::CreateNew | OpenMode::CreateOrOpen, None) => {
                if !s.dirs.contains(&parent_dir(path)) {
                    return Err(not_found(&parent_dir(path)));
                }
                let ino = s.next_ino;
                s.next_ino += 1;
                s.inodes.insert(ino, Inode::default());
                s.touch(ino);
                s.names.insert(path.to_path_buf(), ino);
                s.dir_log.push(DirOp::Link(path.to_path_buf(), ino));
                Ok(Box::new(self.file_handle(&mut s, ino)))
            }
            (_, Some(ino)) => Ok(Box::new(self.file_handle(&mut s, ino))),
            (_, None) => Err(not_found(path)),
        }
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock_state();
        for a in path.ancestors() {
            if !a.as_os_str().is_empty() {
                s.dirs.insert(a.to_path_buf());
            }
        }
        Ok(())
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock_state();
        if !s.dirs.contains(path) {
            return Err(not_found(path));
        }
        let log = std::mem::take(&mut s.dir_log);
        let mut rest = Vec::new();
        for op in log {
            if op.touches(path) {
                op.apply(&mut s.durable_names);
            } else {
                rest.push(op);
            }
        }
        s.dir_log = rest;
        s.stats.dir_syncs += 1;
        s.collect_garbage();
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.lock_state();
        let ino = s.names.remove(from).ok_or_else(|| not_found(from))?;
        s.touch(ino);
        if let Some(old) = s.names.insert(to.to_path_buf(), ino) {
            s.touch(old);
        }
        s.dir_log
            .push(DirOp::Rename(from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock_state();
        let ino = s.names.remove(path).ok_or_else(|| not_found(path))?;
        s.touch(ino);
        s.dir_log.push(DirOp::Unlink(path.to_path_buf()));
        Ok(())
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        let s = self.lock_state();
        Ok(s.names.contains_key(path) || s.dirs.contains(path))
    }

    fn identity(&self, path: &Path) -> io::Result<Option<FileId>> {
        let s = self.lock_state();
        if let Some(ino) = s.names.get(path) {
            return Ok(Some(FileId { dev: 0, ino: *ino }));
        }
        // Directories have no inode here; their rank in the set stands in for one.
        Ok(s.dirs.iter().position(|d| d == path).map(|i| FileId {
            dev: 1,
            ino: i as u64,
        }))
    }

    fn stat(&self, path: &Path) -> io::Result<Option<PathStatus>> {
        let Some(id) = self.identity(path)? else {
            return Ok(None);
        };
        let s = self.lock_state();
        let (kind, len, changed) = match s.names.get(path).and_then(|ino| s.inodes.get(ino)) {
            Some(i) => (EntryKind::File, i.current.len() as u64, Some(i.changed)),
            None => (EntryKind::Dir, 0, None),
        };
        let changed = changed.and_then(|ns| {
            Some(ChangeTime {
                secs: i64::try_from(ns.div_euclid(1_000_000_000)).ok()?,
                nanos: u32::try_from(ns.rem_euclid(1_000_000_000)).ok()?,
            })
        });
        Ok(Some(PathStatus {
            id,
            kind,
            len,
            modified_ms: None,
            changed,
        }))
    }

    fn hard_link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        let mut s = self.lock_state();
        let ino = *s.names.get(existing).ok_or_else(|| not_found(existing))?;
        if s.names.contains_key(new) || s.dirs.contains(new) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("file exists: {}", new.display()),
            ));
        }
        if !s.dirs.contains(&parent_dir(new)) {
            return Err(not_found(&parent_dir(new)));
        }
        s.names.insert(new.to_path_buf(), ino);
        s.touch(ino);
        s.dir_log.push(DirOp::Link(new.to_path_buf(), ino));
        Ok(())
    }

    fn create_temp(&self, dir: &Path, prefix: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)> {
        let n = {
            let mut s = self.lock_state();
            s.next_temp += 1;
            s.next_temp
        };
        let path = dir.join(format!("{prefix}{n:016x}.tmp"));
        let f = self.open(&path, OpenMode::CreateNew)?;
        Ok((path, f))
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        let s = self.lock_state();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let name = |p: &Path| p.file_name().map(|n| n.to_owned());
        let files = s
            .names
            .keys()
            .filter(|p| parent_dir(p) == dir)
            .filter_map(|p| name(p))
            .map(|name| DirEntry {
                name,
                kind: EntryKind::File,
            });
        let dirs = s
            .dirs
            .iter()
            .filter(|p| p.as_path() != dir && parent_dir(p) == dir)
            .filter_map(|p| name(p))
            .map(|name| DirEntry {
                name,
                kind: EntryKind::Dir,
            });
        Ok(files.chain(dirs).collect())
    }

    fn file_system(&self, dir: &Path) -> io::Result<Option<Arc<dyn VfsFileSystem>>> {
        let s = self.lock_state();
        if !s.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(s.file_system.map(|device| {
            Arc::new(SimFileSystem {
                fs: self.clone(),
                generation: s.generation,
                device,
            }) as Arc<dyn VfsFileSystem>
        }))
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut s = self.lock_state();
        if s.names.contains_key(path) {
            s.names.remove(path);
            s.dir_log.push(DirOp::Unlink(path.to_path_buf()));
            return Ok(());
        }
        if !s.dirs.contains(path) {
            return Err(not_found(path));
        }
        let under: Vec<PathBuf> = s
            .names
            .keys()
            .filter(|p| p.starts_with(path))
            .cloned()
            .collect();
        for p in under {
            s.names.remove(&p);
            s.dir_log.push(DirOp::Unlink(p));
        }
        s.dirs.retain(|d| !d.starts_with(path));
        Ok(())
    }
}

/// [`SimFs`]'s file-system handle.
#[derive(Debug)]
struct SimFileSystem {
    fs: SimFs,
    generation: u64,
    device: u64,
}

impl VfsFileSystem for SimFileSystem {
    fn device(&self) -> u64 {
        self.device
    }

    fn sync(&self) -> io::Result<()> {
        let mut s = self.fs.lock_state();
        if s.generation != self.generation {
            return Err(stale());
        }
        let fail = std::mem::take(&mut s.fail_fs_sync);
        for node in s.inodes.values_mut() {
            if node.pending.is_empty() {
                continue;
            }
            let pending = std::mem::take(&mut node.pending);
            if fail {
                node.write_back_failed = true;
            } else {
                for op in &pending {
                    apply_op(&mut node.durable, op);
                }
            }
        }
        if fail {
            return Err(injected_eio());
        }
        s.stats.fs_syncs += 1;
        Ok(())
    }

    fn backlog(&self) -> Option<u64> {
        self.fs.lock_state().backlog
    }
}

struct SimFile {
    fs: SimFs,
    ino: u64,
    /// This open file's number: a lock belongs to one handle.
    handle: u64,
    generation: u64,
}

impl Drop for SimFile {
    fn drop(&mut self) {
        let mut s = self.fs.lock_state();
        if s.generation == self.generation && s.locks.get(&self.ino) == Some(&self.handle) {
            s.locks.remove(&self.ino);
        }
    }
}

impl fmt::Debug for SimFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SimFile(inode {})", self.ino)
    }
}

impl SimFile {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> io::Result<R>) -> io::Result<R> {
        let mut s = self.fs.lock_state();
        if s.generation != self.generation || !s.inodes.contains_key(&self.ino) {
            return Err(stale());
        }
        f(&mut s)
    }
}

fn inode(s: &mut State, ino: u64) -> io::Result<&mut Inode> {
    s.inodes.get_mut(&ino).ok_or_else(stale)
}

impl VfsFile for SimFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.with(|s| {
            let cur = &inode(s, self.ino)?.current;
            let start = (offset as usize).min(cur.len());
            let n = buf.len().min(cur.len() - start);
            buf[..n].copy_from_slice(&cur[start..start + n]);
            s.stats.bytes_read += n as u64;
            Ok(n)
        })
    }

    fn write_all_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.with(|s| {
            let (fits, fail) = match s.write_budget {
                Some(budget) if (buf.len() as u64) > budget => (budget as usize, true),
                Some(budget) => {
                    s.write_budget = Some(budget - buf.len() as u64);
                    (buf.len(), false)
                }
                None => (buf.len(), false),
            };
            if fail {
                s.write_budget = Some(0);
            }
            let data = buf[..fits].to_vec();
            let node = inode(s, self.ino)?;
            write_into(&mut node.current, offset, &data);
            node.pending.push(Pending::Write { offset, data });
            s.touch(self.ino);
            s.stats.bytes_written += fits as u64;
            if fail {
                Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "no space left on device (injected by SimFs)",
                ))
            } else {
                Ok(())
            }
        })
    }

    fn len(&self) -> io::Result<u64> {
        self.with(|s| Ok(inode(s, self.ino)?.current.len() as u64))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(|s| {
            s.reserved.remove(&self.ino);
            let node = inode(s, self.ino)?;
            node.current.resize(len as usize, 0);
            node.pending.push(Pending::SetLen(len));
            s.touch(self.ino);
            Ok(())
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        self.with(|s| {
            let fail = match s.sync_countdown {
                Some(1) => {
                    s.sync_countdown = None;
                    true
                }
                Some(n) => {
                    s.sync_countdown = Some(n - 1);
                    false
                }
                None => false,
            };
            let node = inode(s, self.ino)?;
            let pending = std::mem::take(&mut node.pending);
            if std::mem::take(&mut node.write_back_failed) || fail {
                // fsyncgate: the kernel dropped these pages; they never reach the disk.
                return Err(injected_eio());
            }
            for op in &pending {
                apply_op(&mut node.durable, op);
            }
            s.stats.syncs += 1;
            Ok(())
        })
    }

    fn sync_all(&self) -> io::Result<()> {
        self.sync_data()
    }

    fn status(&self) -> io::Result<FileStatus> {
        self.with(|s| {
            let len = inode(s, self.ino)?.current.len() as u64;
            let links = s.names.values().filter(|i| **i == self.ino).count() as u64;
            Ok(FileStatus {
                id: FileId {
                    dev: 0,
                    ino: self.ino,
                },
                links,
                len,
            })
        })
    }

    fn preallocate(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.with(|s| {
            if !s.preallocates {
                return Ok(false);
            }
            let end = s.reserved.entry(self.ino).or_insert(0);
            *end = (*end).max(offset + len);
            Ok(true)
        })
    }

    fn try_lock(&self) -> io::Result<bool> {
        self.with(|s| match s.locks.get(&self.ino) {
            Some(h) => Ok(*h == self.handle),
            None => {
                s.locks.insert(self.ino, self.handle);
                Ok(true)
            }
        })
    }
}

/// The directory containing `path` (`.` for a bare file name), as the journal's
/// `StdVfs` computes it.
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
