//! [`ReadOnlyVfs`]: a [`Vfs`] that reads through another and refuses every write
//! with `EROFS`, as a read-only file system (or a read-only directory) does.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::{DirEntry, FileId, OpenMode, PathStatus, Vfs, VfsFile};

/// Reads through `inner`; every creation, write, rename, removal and sync of a
/// directory fails with "read-only file system". Files open only for reading.
#[derive(Debug, Clone)]
pub struct ReadOnlyVfs {
    inner: Arc<dyn Vfs>,
}

impl ReadOnlyVfs {
    /// A read-only view of `inner`.
    pub fn new(inner: Arc<dyn Vfs>) -> Self {
        Self { inner }
    }
}

fn erofs() -> io::Error {
    io::Error::from_raw_os_error(30) // EROFS
}

impl Vfs for ReadOnlyVfs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        match mode {
            OpenMode::Read | OpenMode::ReadFollow => self.inner.open(path, mode),
            _ => Err(erofs()),
        }
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        match self.inner.exists(path)? {
            true => Ok(()),
            false => Err(erofs()),
        }
    }
    fn sync_dir(&self, _: &Path) -> io::Result<()> {
        Err(erofs())
    }
    fn rename(&self, _: &Path, _: &Path) -> io::Result<()> {
        Err(erofs())
    }
    fn remove_file(&self, _: &Path) -> io::Result<()> {
        Err(erofs())
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.exists(path)
    }
    fn identity(&self, path: &Path) -> io::Result<Option<FileId>> {
        self.inner.identity(path)
    }
    fn stat(&self, path: &Path) -> io::Result<Option<PathStatus>> {
        self.inner.stat(path)
    }
    fn hard_link(&self, _: &Path, _: &Path) -> io::Result<()> {
        Err(erofs())
    }
    fn create_temp(&self, _: &Path, _: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)> {
        Err(erofs())
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        self.inner.read_dir(dir)
    }
    fn remove_dir_all(&self, _: &Path) -> io::Result<()> {
        Err(erofs())
    }
}
