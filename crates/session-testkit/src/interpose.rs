//! A [`Vfs`] that forwards every call to another and lets a test see the files it
//! opens: the one place the forwarding is written, for every test file system that
//! only needs to watch or hold file operations ([`CountingVfs`](crate::CountingVfs),
//! the owner tests' held syncs).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::{
    DirEntry, FileId, FileStatus, OpenMode, PathStatus, Vfs, VfsFile, VfsFileSystem,
};

/// What a test puts between the store and its file system: each file opened or
/// created through [`Interposed`] is handed to it, to be wrapped or returned as is.
pub trait Interpose: Send + Sync + fmt::Debug {
    /// A file opened at `path` with [`Vfs::open`].
    fn opened(&self, path: &Path, file: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        let _ = path;
        file
    }
    /// A temporary file created at `path` with [`Vfs::create_temp`].
    fn created(&self, path: &Path, file: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        let _ = path;
        file
    }
}

/// `inner` with `hook` seeing every file opened or created; every other call is
/// forwarded as is.
#[derive(Debug, Clone)]
pub struct Interposed<I> {
    inner: Arc<dyn Vfs>,
    hook: I,
}

impl<I> Interposed<I> {
    /// `inner`, its files handed to `hook`.
    pub fn wrap(inner: Arc<dyn Vfs>, hook: I) -> Self {
        Self { inner, hook }
    }

    /// The hook.
    pub fn hook(&self) -> &I {
        &self.hook
    }
}

impl<I: Interpose> Vfs for Interposed<I> {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        let file = self.inner.open(path, mode)?;
        Ok(self.hook.opened(path, file))
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.sync_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
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
    fn stat_in(&self, dir: &Path, names: &[&str]) -> Vec<io::Result<Option<PathStatus>>> {
        self.inner.stat_in(dir, names)
    }
    fn hard_link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.inner.hard_link(existing, new)
    }
    fn create_temp(&self, dir: &Path, prefix: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)> {
        let (path, file) = self.inner.create_temp(dir, prefix)?;
        let file = self.hook.created(&path, file);
        Ok((path, file))
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        self.inner.read_dir(dir)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir_all(path)
    }
    fn file_system(&self, dir: &Path) -> io::Result<Option<Arc<dyn VfsFileSystem>>> {
        self.inner.file_system(dir)
    }
}

/// What a test does around each `sync_data` of a file wrapped by [`on_sync`]: hold
/// it, count it, see which thread made it. Clones share their state.
pub trait SyncHook: Clone + Send + Sync + fmt::Debug + 'static {
    /// Before the file's `sync_data` runs (a hook that holds syncs waits here).
    fn before(&self, path: &Path) {
        let _ = path;
    }
    /// After it returned, whatever it returned.
    fn after(&self, path: &Path) {
        let _ = path;
    }
}

/// `file` (opened or created at `path`), its `sync_data` calls passed through
/// `hook`; every other call forwarded as is. The one forwarding file of the tests
/// that hold or watch syncs ([`HeldSyncs`](crate::HeldSyncs), the owner's gates):
/// an [`Interpose`] returns it from `opened` and `created`.
pub fn on_sync<H: SyncHook>(path: &Path, file: Box<dyn VfsFile>, hook: H) -> Box<dyn VfsFile> {
    Box::new(SyncHooked {
        inner: file,
        path: path.to_path_buf(),
        hook,
    })
}

#[derive(Debug)]
struct SyncHooked<H> {
    inner: Box<dyn VfsFile>,
    path: PathBuf,
    hook: H,
}

impl<H: SyncHook> VfsFile for SyncHooked<H> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read_at(offset, buf)
    }
    fn write_all_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all_at(offset, buf)
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.hook.before(&self.path);
        let r = self.inner.sync_data();
        self.hook.after(&self.path);
        r
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn status(&self) -> io::Result<FileStatus> {
        self.inner.status()
    }
    fn try_lock(&self) -> io::Result<bool> {
        self.inner.try_lock()
    }
    fn preallocate(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.inner.preallocate(offset, len)
    }
}
