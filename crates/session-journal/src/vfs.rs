//! The file-system seam: every byte the journal reads or writes goes through [`Vfs`].
//!
//! [`StdVfs`] is the real implementation (std `File`, `pread`/`pwrite`, `fdatasync`,
//! `flock`). [`SimFs`](crate::sim::SimFs) is an in-memory implementation with crash
//! semantics and error injection, for tests of this crate and of the crates above it.

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

/// A held exclusive lock; released when dropped (or when the process dies).
pub trait VfsLock: Send + Sync + fmt::Debug {}

/// The outcome of [`Vfs::try_lock`].
#[derive(Debug)]
pub enum LockAttempt {
    /// The lock is ours until the guard is dropped.
    Acquired(Box<dyn VfsLock>),
    /// Someone else holds it; `contents` is what the lock file says about the holder.
    Held {
        /// The lock file's contents (diagnostics only; may be empty or stale).
        contents: Vec<u8>,
    },
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
    /// Whether a file exists at `path`.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Tries to take the exclusive lock on the lock file at `path` (created `0600` if
    /// missing, never deleted) without blocking. On success `holder` replaces the
    /// file's contents.
    fn try_lock(&self, path: &Path, holder: &[u8]) -> io::Result<LockAttempt>;
}

/// How many times (2 ms apart) a refused locker rereads an empty lock file.
const HOLDER_RECORD_WAITS: u32 = 10;

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
}

#[derive(Debug)]
struct StdLock {
    // Held for its lock; the kernel releases it when the descriptor closes.
    _file: File,
}

impl VfsLock for StdLock {}

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
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o
}

impl Vfs for StdVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(StdFile(std_open_options(mode).open(path)?)))
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
        path.try_exists()
    }

    fn try_lock(&self, path: &Path, holder: &[u8]) -> io::Result<LockAttempt> {
        let mut o = fs::OpenOptions::new();
        // Write access matters on NFSv4, where an exclusive lock needs it.
        o.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        let file = o.open(path)?;
        match file.try_lock() {
            Ok(()) => {
                // Diagnostics only: who holds it. Failure to record it is not fatal to
                // the lock itself, but it is an I/O error worth reporting.
                file.set_len(0)?;
                io::Write::write_all(&mut &file, holder)?;
                Ok(LockAttempt::Acquired(Box::new(StdLock { _file: file })))
            }
            Err(fs::TryLockError::WouldBlock) => {
                // The holder records itself just after taking the lock, so a close
                // race can find the file empty: give the record a moment to appear
                // (at most ~20 ms; the refusal must stay fast).
                let mut contents = fs::read(path).unwrap_or_default();
                for _ in 0..HOLDER_RECORD_WAITS {
                    if !contents.is_empty() {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    contents = fs::read(path).unwrap_or_default();
                }
                Ok(LockAttempt::Held { contents })
            }
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// The directory containing `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
