//! The file-system seam: every byte the journal reads or writes goes through [`Vfs`].
//!
//! [`StdVfs`] is the real implementation (std `File`, `pread`/`pwrite`, `fdatasync`,
//! `flock`). `session_testkit::sim::SimFs` is an in-memory implementation with crash
//! semantics and error injection, for tests of this crate and of the crates above it.
//!
//! # Nothing planted is followed, blocked on or trusted
//!
//! A store's directory can hold what its owner never made: a symlink at a journal's
//! or a derived file's name, a FIFO or a device where a sidecar should be, a directory
//! at a temporary name. Every implementation keeps these rules, so no caller has to:
//!
//! - [`Vfs::open`] never follows a symbolic link in the last component of the path
//!   (`O_NOFOLLOW`): a link there is refused with an error saying so;
//! - it never blocks in `open` (`O_NONBLOCK`) and refuses anything that is not a
//!   regular file (a FIFO, a socket, a device, a directory) before any byte is read;
//! - temporary files are created exclusively under unpredictable names
//!   ([`Vfs::create_temp`]) in the directory they will be renamed or linked within,
//!   never in a shared temporary directory.
//!
//! Identity is by file, not by name: [`VfsFile::status`] and [`Vfs::identity`] give a
//! file's [`FileId`] (device and inode), and [`VfsFile::try_lock`] locks the open file
//! itself, so every name of one file (hard links, the name after a rename) shares one
//! lock.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// How [`Vfs::open`] opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    ReadWrite,
    /// Read and write; the file must not exist. Created `0600` on Unix.
    CreateNew,
    /// Read and write; created `0600` on Unix if missing, never truncated.
    CreateOrOpen,
    /// Read only, following a symbolic link: for the caller's own input (an import
    /// source given by path), never for a file of the store. Still never blocking and
    /// regular files only.
    ReadFollow,
}

/// A file's identity: the device it lives on and its inode number there. Two names
/// with one identity are one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    /// The device (`st_dev`).
    pub dev: u64,
    /// The inode number (`st_ino`).
    pub ino: u64,
}

/// What [`VfsFile::status`] reports about an open file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStatus {
    /// The file's identity.
    pub id: FileId,
    /// How many names (hard links) the file has; `0` once every name was removed.
    pub links: u64,
    /// The file's length.
    pub len: u64,
}

/// What kind of file a directory entry names (without following links).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// Anything else: a FIFO, a socket, a device.
    Other,
}

/// What [`Vfs::stat`] reports about a path (without following a link there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathStatus {
    /// The identity of what is there.
    pub id: FileId,
    /// What it is.
    pub kind: EntryKind,
    /// Its length.
    pub len: u64,
    /// Its modification time in Unix milliseconds, where the file system keeps one
    /// (a hint for ordering only: nothing is decided by it).
    pub modified_ms: Option<i64>,
    /// Its status change time (`st_ctime`), where the file system keeps one. Unlike
    /// the modification time it cannot be set by a caller (`utimes`): the kernel sets
    /// it to its own clock on every write, truncation, rename and link change, so a
    /// derived file can tell "unchanged since I looked" from it (`docs/format.md` §3).
    pub changed: Option<ChangeTime>,
}

/// A status change time: seconds and nanoseconds since the Unix epoch, in the file
/// system's own clock and granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChangeTime {
    /// Whole seconds (negative before 1970).
    pub secs: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nanos: u32,
}

impl ChangeTime {
    /// The time in nanoseconds since the epoch.
    pub fn as_nanos(self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }
}

/// One entry of [`Vfs::read_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's file name (not necessarily UTF-8).
    pub name: std::ffi::OsString,
    /// What it is, as `lstat` sees it.
    pub kind: EntryKind,
}

/// An open file. Offsets are explicit: nothing depends on a file cursor.
#[allow(clippy::len_without_is_empty)] // a fallible length; emptiness is never asked
pub trait VfsFile: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read (0 at EOF).
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes all of `buf` at `offset`, or fails (possibly after writing a prefix).
    fn write_all_at(&self, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// The current length as this process sees it.
    fn len(&self) -> io::Result<u64>;
    /// Truncates or extends (with zeros) to `len`.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// `fdatasync`: data and the size needed to read it back are durable when it
    /// returns `Ok`.
    fn sync_data(&self) -> io::Result<()>;
    /// `fsync`: data and all metadata are durable when it returns `Ok`.
    fn sync_all(&self) -> io::Result<()>;
    /// The open file's identity, link count and length (`fstat`).
    fn status(&self) -> io::Result<FileStatus>;
    /// Tries to take an exclusive lock on this open file without blocking: `Ok(true)`
    /// when it is ours until this handle is dropped (or the process dies), `Ok(false)`
    /// when another open handle holds it. The lock belongs to the file, not to the
    /// name it was opened by.
    fn try_lock(&self) -> io::Result<bool>;

    /// Reserves the file's blocks for `offset..offset + len` without changing its
    /// length or contents (`fallocate(FALLOC_FL_KEEP_SIZE)`); `Ok(false)` where the
    /// file system cannot (the default). Truncating the file to its length (`set_len`)
    /// releases what is reserved past its end.
    fn preallocate(&self, offset: u64, len: u64) -> io::Result<bool> {
        let _ = (offset, len);
        Ok(false)
    }

    /// Reads exactly `buf.len()` bytes at `offset`, or fails with `UnexpectedEof`.
    fn read_exact_at(&self, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(offset, buf) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file ended before the requested range",
                    ));
                }
                Ok(n) => {
                    offset += n as u64;
                    buf = &mut buf[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The file system a store lives on, as one handle: what syncs many journals with one
/// call ([`SharedSync`](crate::SharedSync)). Opened before any journal it will cover
/// is written, so that it hears of every write-back failure on them.
pub trait VfsFileSystem: Send + Sync + fmt::Debug {
    /// The file system's device (`st_dev`): a journal on another device is synced on
    /// its own.
    fn device(&self) -> u64;
    /// `syncfs(2)`: everything written to any file of the file system before the call
    /// is written back, and the device's cache flushed, when it returns `Ok`. An error
    /// reports a write-back failure somewhere on the file system since this handle was
    /// opened (or since the last call that reported one): which file lost data is not
    /// said, so the caller syncs each of its files on its own to find out.
    fn sync(&self) -> io::Result<()>;
    /// Bytes the system still has to write back (dirty or being written), when known:
    /// a file-system sync writes them all first, whoever wrote them.
    fn backlog(&self) -> Option<u64> {
        None
    }
}

/// The file-system operations the journal needs.
pub trait Vfs: Send + Sync + fmt::Debug {
    /// Opens a file.
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>>;
    /// Creates a directory and its missing parents (`0700` on Unix).
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Renames a file (atomically replacing `to`).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Whether anything (a file, a directory, a link) exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// The identity of what is at `path`, without following a link in its last
    /// component (`lstat`); `None` when nothing is there.
    fn identity(&self, path: &Path) -> io::Result<Option<FileId>>;
    /// What is at `path`, without following a link in its last component (`lstat`);
    /// `None` when nothing is there.
    fn stat(&self, path: &Path) -> io::Result<Option<PathStatus>>;
    /// [`Vfs::stat`] of each of `names` in the directory `dir`, in order: what a
    /// listing asks of every journal of a directory. The standard file system opens
    /// `dir` once and stats each name relative to it, so the kernel walks the
    /// directory's path once rather than once per name.
    fn stat_in(&self, dir: &Path, names: &[&str]) -> Vec<io::Result<Option<PathStatus>>> {
        names.iter().map(|n| self.stat(&dir.join(n))).collect()
    }
    /// Gives the file at `existing` a second name `new`; fails with `AlreadyExists`
    /// when `new` exists (nothing is replaced) and never follows a link at `existing`.
    fn hard_link(&self, existing: &Path, new: &Path) -> io::Result<()>;
    /// Creates a new empty file (`0600`) in `dir` under an unpredictable name starting
    /// with `prefix` and ending with `.tmp`, exclusively (never an existing file, never
    /// through a link). Returns its path and the open file (read and write).
    fn create_temp(&self, dir: &Path, prefix: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)>;
    /// The entries of the directory `dir` (without `.` and `..`), in no given order.
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>>;
    /// Removes the directory `path` and everything under it, without following links
    /// (a link is removed, never what it points to). A link or a file at `path` itself
    /// is removed as such.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;

    /// A handle on the file system holding the directory `dir`, for syncing many
    /// journals at once ([`SharedSync`](crate::SharedSync)). `None` (the default)
    /// where one file system cannot be synced alone, or its write-back failures would
    /// go unreported: there each journal syncs on its own. A link at `dir` is not
    /// followed (`None`).
    fn file_system(&self, dir: &Path) -> io::Result<Option<std::sync::Arc<dyn VfsFileSystem>>> {
        let _ = dir;
        Ok(None)
    }
}

/// A [`VfsFile`] read from its start as a stream ([`std::io::Read`]).
#[derive(Debug)]
pub struct VfsReader {
    file: Box<dyn VfsFile>,
    at: u64,
}

impl VfsReader {
    /// Reads `file` from offset 0.
    pub fn new(file: Box<dyn VfsFile>) -> Self {
        Self { file, at: 0 }
    }
}

impl io::Read for VfsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(self.at, buf)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// How many times [`Vfs::create_temp`] draws a new name after a collision.
const TEMP_NAME_TRIES: u32 = 16;

/// An unpredictable 64-bit value for temporary names: std's per-process random
/// SipHash keys over the time, the process and a counter (no dependency, no global
/// state beyond the counter).
pub(crate) fn unpredictable() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    h.finish()
}

/// The name [`Vfs::create_temp`] gives a temporary file.
pub(crate) fn temp_name(prefix: &str) -> String {
    format!("{prefix}{:016x}.tmp", unpredictable())
}

/// The real file system, through std.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdVfs;

#[derive(Debug)]
struct StdFile(File);

#[cfg(unix)]
impl VfsFile for StdFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(&self.0, buf, offset)
    }
    fn write_all_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(&self.0, buf, offset)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn status(&self) -> io::Result<FileStatus> {
        use std::os::unix::fs::MetadataExt;
        let m = self.0.metadata()?;
        Ok(FileStatus {
            id: FileId {
                dev: m.dev(),
                ino: m.ino(),
            },
            links: m.nlink(),
            len: m.len(),
        })
    }
    fn try_lock(&self) -> io::Result<bool> {
        lock_file(&self.0)
    }
    #[cfg(target_os = "linux")]
    fn preallocate(&self, offset: u64, len: u64) -> io::Result<bool> {
        rustix::fs::fallocate(&self.0, rustix::fs::FallocateFlags::KEEP_SIZE, offset, len)
            .map(|()| true)
            .map_err(io::Error::from)
    }
}

/// `flock(LOCK_EX | LOCK_NB)` on an open file.
fn lock_file(file: &File) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(fs::TryLockError::WouldBlock) => Ok(false),
        Err(fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(windows)]
impl VfsFile for StdFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        std::os::windows::fs::FileExt::seek_read(&self.0, buf, offset)
    }
    fn write_all_at(&self, mut offset: u64, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let n = std::os::windows::fs::FileExt::seek_write(&self.0, buf, offset)?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::WriteZero, "short write"));
            }
            offset += n as u64;
            buf = &buf[n..];
        }
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn status(&self) -> io::Result<FileStatus> {
        // No stable file index through std on Windows: the length stands alone and
        // identity checks compare equal (documented in docs/format.md).
        let m = self.0.metadata()?;
        Ok(FileStatus {
            id: FileId { dev: 0, ino: 0 },
            links: 1,
            len: m.len(),
        })
    }
    fn try_lock(&self) -> io::Result<bool> {
        lock_file(&self.0)
    }
}

fn std_open_options(mode: OpenMode) -> fs::OpenOptions {
    let mut o = fs::OpenOptions::new();
    match mode {
        OpenMode::Read => {
            o.read(true);
        }
        OpenMode::ReadWrite => {
            o.read(true).write(true);
        }
        OpenMode::CreateNew => {
            o.read(true).write(true).create_new(true);
        }
        OpenMode::CreateOrOpen => {
            o.read(true).write(true).create(true).truncate(false);
        }
        OpenMode::ReadFollow => {
            o.read(true);
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
        // Never through a link (but for the caller's own input), never blocked by a
        // FIFO's missing writer.
        let follow = if mode == OpenMode::ReadFollow {
            0
        } else {
            libc::O_NOFOLLOW
        };
        o.custom_flags(follow | libc::O_NONBLOCK);
    }
    o
}

/// Opens `path` by the rules of the module docs: no link followed, no blocking, a
/// regular file or an error that says what is there instead.
fn open_regular(path: &Path, mode: OpenMode) -> io::Result<File> {
    let file = std_open_options(mode).open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a symbolic link (links are not followed)",
            );
        }
        e
    })?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", describe(kind)),
        ));
    }
    Ok(file)
}

/// A file type in words, for errors.
fn describe(kind: fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

fn entry_kind(kind: fs::FileType) -> EntryKind {
    if kind.is_file() {
        EntryKind::File
    } else if kind.is_dir() {
        EntryKind::Dir
    } else if kind.is_symlink() {
        EntryKind::Symlink
    } else {
        EntryKind::Other
    }
}

impl Vfs for StdVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(StdFile(open_regular(path, mode)?)))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        let mut b = fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            b.mode(0o700);
        }
        b.create(path)
    }

    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            File::open(path)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            // Directory handles cannot be synced through std on Windows; NTFS journals
            // its metadata. Documented in docs/format.md.
            let _ = path;
            Ok(())
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        match fs::symlink_metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn identity(&self, path: &Path) -> io::Result<Option<FileId>> {
        match fs::symlink_metadata(path) {
            #[cfg(unix)]
            Ok(m) => {
                use std::os::unix::fs::MetadataExt;
                Ok(Some(FileId {
                    dev: m.dev(),
                    ino: m.ino(),
                }))
            }
            #[cfg(not(unix))]
            Ok(_) => Ok(Some(FileId { dev: 0, ino: 0 })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn stat(&self, path: &Path) -> io::Result<Option<PathStatus>> {
        let m = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        #[cfg(unix)]
        let id = {
            use std::os::unix::fs::MetadataExt;
            FileId {
                dev: m.dev(),
                ino: m.ino(),
            }
        };
        #[cfg(not(unix))]
        let id = FileId { dev: 0, ino: 0 };
        let modified_ms = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        #[cfg(unix)]
        let changed = {
            use std::os::unix::fs::MetadataExt;
            u32::try_from(m.ctime_nsec())
                .ok()
                .filter(|n| *n < 1_000_000_000)
                .map(|nanos| ChangeTime {
                    secs: m.ctime(),
                    nanos,
                })
        };
        // Windows has a change time but std does not expose it: nothing is fresh by
        // its status there (every record is checked by content).
        #[cfg(not(unix))]
        let changed = None;
        Ok(Some(PathStatus {
            id,
            kind: entry_kind(m.file_type()),
            len: m.len(),
            modified_ms,
            changed,
        }))
    }

    #[cfg(unix)]
    fn stat_in(&self, dir: &Path, names: &[&str]) -> Vec<io::Result<Option<PathStatus>>> {
        use rustix::fs::{AtFlags, FileType, Mode, OFlags};
        // The directory as `stat` reaches it (links on its path followed, as there).
        let fd = match rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                let e = io::Error::from(e);
                return names
                    .iter()
                    .map(|_| Err(io::Error::new(e.kind(), e.to_string())))
                    .collect();
            }
        };
        names
            .iter()
            .map(|name| {
                let st = match rustix::fs::statat(&fd, *name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => st,
                    Err(rustix::io::Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(e.into()),
                };
                let kind = match FileType::from_raw_mode(st.st_mode) {
                    FileType::RegularFile => EntryKind::File,
                    FileType::Directory => EntryKind::Dir,
                    FileType::Symlink => EntryKind::Symlink,
                    _ => EntryKind::Other,
                };
                let ms =
                    |secs: i64, nanos: i64| secs.checked_mul(1000)?.checked_add(nanos / 1_000_000);
                Ok(Some(PathStatus {
                    id: FileId {
                        dev: st.st_dev,
                        ino: st.st_ino,
                    },
                    kind,
                    len: u64::try_from(st.st_size).unwrap_or(0),
                    modified_ms: ms(st.st_mtime, st.st_mtime_nsec as i64),
                    changed: u32::try_from(st.st_ctime_nsec)
                        .ok()
                        .filter(|n| *n < 1_000_000_000)
                        .map(|nanos| ChangeTime {
                            secs: st.st_ctime,
                            nanos,
                        }),
                }))
            })
            .collect()
    }

    fn hard_link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        // link(2) does not follow a link at `existing` on Linux (no AT_SYMLINK_FOLLOW).
        fs::hard_link(existing, new)
    }

    fn create_temp(&self, dir: &Path, prefix: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)> {
        let mut last = None;
        for _ in 0..TEMP_NAME_TRIES {
            let path = dir.join(temp_name(prefix));
            match open_regular(&path, OpenMode::CreateNew) {
                Ok(f) => return Ok((path, Box::new(StdFile(f)))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }

    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            // DirEntry::file_type does not follow links.
            let kind = e.file_type().map_or(EntryKind::Other, entry_kind);
            out.push(DirEntry {
                name: e.file_name(),
                kind,
            });
        }
        Ok(out)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        // std removes a link at `path` as a link and never follows links below it.
        match fs::symlink_metadata(path)?.file_type() {
            t if t.is_dir() => fs::remove_dir_all(path),
            _ => fs::remove_file(path),
        }
    }

    #[cfg(target_os = "linux")]
    fn file_system(&self, dir: &Path) -> io::Result<Option<std::sync::Arc<dyn VfsFileSystem>>> {
        use rustix::fs::{Mode, OFlags};
        // Before 5.8, syncfs(2) did not report write-back failures (Linux commit
        // 735e4ae5ba28): a journal's lost pages would pass for durable.
        if !reports_syncfs_errors(&rustix::system::uname().release().to_string_lossy()) {
            return Ok(None);
        }
        let fd = match rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        // Only where `syncfs` writes back and flushes every file as its own
        // `fdatasync` would: a FUSE file system's `syncfs` never asks the daemon to
        // sync a file, and a network file system's commits are its own.
        if !syncs_whole_files(rustix::fs::fstatfs(&fd)?.f_type as i64) {
            return Ok(None);
        }
        let device = rustix::fs::fstat(&fd)?.st_dev;
        Ok(Some(std::sync::Arc::new(StdFileSystem { fd, device })))
    }
}

/// A directory of the file system, held open (`O_RDONLY`) for `syncfs`.
#[cfg(target_os = "linux")]
#[derive(Debug)]
struct StdFileSystem {
    fd: rustix::fd::OwnedFd,
    device: u64,
}

#[cfg(target_os = "linux")]
impl VfsFileSystem for StdFileSystem {
    fn device(&self) -> u64 {
        self.device
    }

    fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::syncfs(&self.fd)?)
    }

    fn backlog(&self) -> Option<u64> {
        let meminfo = fs::read_to_string("/proc/meminfo").ok()?;
        write_back_backlog(&meminfo)
    }
}

/// Whether `syncfs` on a file system of this type (`statfs`'s `f_type`) makes every
/// file's written bytes durable as the file's own `fdatasync` would: the local,
/// block-device file systems whose `sync_fs` commits or flushes (ext2/3/4, XFS,
/// Btrfs, F2FS), and tmpfs (nothing to make durable).
#[cfg(any(target_os = "linux", test))]
fn syncs_whole_files(f_type: i64) -> bool {
    const EXT: i64 = 0xef53;
    const XFS: i64 = 0x5846_5342;
    const BTRFS: i64 = 0x9123_683e;
    const F2FS: i64 = 0xf2f5_2010;
    const TMPFS: i64 = 0x0102_1994;
    matches!(f_type, EXT | XFS | BTRFS | F2FS | TMPFS)
}

/// Whether a Linux release (`uname -r`) reports write-back failures to `syncfs`
/// (5.8 and later).
#[cfg(any(target_os = "linux", test))]
fn reports_syncfs_errors(release: &str) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(major), Some(minor)) if (major, minor) >= (5, 8))
}

/// The bytes `/proc/meminfo` counts as `Dirty` plus `Writeback` (`None` when it
/// names neither).
#[cfg(any(target_os = "linux", test))]
fn write_back_backlog(meminfo: &str) -> Option<u64> {
    let mut total = None;
    for line in meminfo.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if name != "Dirty" && name != "Writeback" {
            continue;
        }
        let kib = rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
        total = Some(total.unwrap_or(0) + kib * 1024);
    }
    total
}

/// The directory containing `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::{reports_syncfs_errors, syncs_whole_files, write_back_backlog};

    #[test]
    fn syncfs_reports_write_back_failures_from_linux_5_8() {
        for (release, reports) in [
            ("6.18.44-fc-v857", true),
            ("5.8.0", true),
            ("5.10.0-28-amd64", true),
            ("5.7.19", false),
            ("4.19.0", false),
            ("", false),
            ("garbage", false),
            ("5", false),
        ] {
            assert_eq!(reports_syncfs_errors(release), reports, "{release}");
        }
    }

    #[test]
    fn only_local_file_systems_that_sync_whole_files_are_shared() {
        assert!(syncs_whole_files(0xef53)); // ext4
        assert!(syncs_whole_files(0x5846_5342)); // XFS
        assert!(!syncs_whole_files(0x6573_5546)); // FUSE
        assert!(!syncs_whole_files(0x6969)); // NFS
        assert!(!syncs_whole_files(0x794c_7630)); // overlayfs
    }

    #[test]
    fn the_backlog_is_dirty_plus_writeback() {
        let meminfo = "MemTotal:       24000000 kB\nDirty:              92 kB\nWriteback:           8 kB\nWritebackTmp:        0 kB\n";
        assert_eq!(write_back_backlog(meminfo), Some(100 * 1024));
        assert_eq!(write_back_backlog("MemTotal: 1 kB\n"), None);
        assert_eq!(write_back_backlog("Dirty: lots\n"), None);
    }
}
