//! The writer lock: an OS lock on the journal file itself, held for the writer's
//! lifetime, and a holder record beside it.
//!
//! Ownership follows the file, not its name. The lock is taken on the open journal
//! (`flock`, through [`VfsFile::try_lock`]), so every name of one journal — a hard link,
//! a second path to the same directory, the name after a rename — meets the same lock,
//! and deleting or replacing any other file cannot let a second owner in. After the
//! lock is taken the name is checked again: the path must still name the locked file
//! and the file must still have a name ([`crate::vfs::FileStatus::links`]); otherwise the journal
//! was deleted or replaced while it was being opened, and the attempt fails closed
//! (`LockFailure::Replaced`) instead of appending to a file nobody will read.
//!
//! `<journal>.lock` holds only the holder record — `pid=<pid>\nhost=<host>\n` — to name
//! the holder in errors; it is opened without following links and only if it is a
//! regular file, and nothing ever decides a lock is stale from it: the kernel releases
//! the lock when the holder dies, even after SIGKILL.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::LockHolder;
use crate::vfs::{FileId, OpenMode, Vfs, VfsFile};

/// The holder record of the journal at `journal`: the same path with `.lock` appended.
pub fn lock_path(journal: &Path) -> PathBuf {
    let mut s: OsString = journal.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// The most of a holder record that is read (a planted huge file costs nothing).
const MAX_HOLDER_RECORD: usize = 1024;

/// How many times (2 ms apart) a writer refused with an empty holder record tries
/// the lock again (a lock lingering after a clean close; see `lock_journal`).
const LINGERING_LOCK_WAITS: u32 = 50;

/// Why a lock could not be taken.
#[derive(Debug)]
pub(crate) enum LockFailure {
    /// Another open handle holds it.
    Held(LockHolder),
    /// The path no longer names the file that was locked (deleted or replaced).
    Replaced,
    /// An I/O error, with the operation.
    Io(&'static str, io::Error),
}

fn hostname() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The bytes this process writes into the holder record of a journal it holds.
pub(crate) fn holder_record() -> Vec<u8> {
    let mut s = format!("pid={}\n", std::process::id());
    if let Some(h) = hostname() {
        s.push_str(&format!("host={h}\n"));
    }
    s.into_bytes()
}

/// Parses a holder record; unknown or damaged lines are ignored.
pub fn parse_holder(contents: &[u8]) -> LockHolder {
    let text = String::from_utf8_lossy(contents);
    let mut holder = LockHolder::default();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("pid=") {
            holder.pid = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("host=") {
            let v = v.trim();
            if !v.is_empty() {
                holder.host = Some(v.to_owned());
            }
        }
    }
    holder
}

/// Takes the lock on `file`, the journal opened from `path`, and checks that `path`
/// still names it. On success the file is ours until it is dropped.
pub(crate) fn lock_journal(
    vfs: &dyn Vfs,
    path: &Path,
    file: &dyn VfsFile,
) -> Result<FileId, LockFailure> {
    if !file.try_lock().map_err(|e| LockFailure::Io("lock", e))? {
        // Refused with an empty holder record: the holder is either recording itself
        // (it does so just after taking the lock) or gone after a clean close, its
        // lock lingering for a moment in a child that another thread of its process
        // forked and that has not exec'd yet (the child's copy of the descriptor
        // keeps the open file description, and so the `flock`, until the exec). Try
        // the lock again while the record stays empty, for at most ~100 ms; a
        // recorded holder is refused at once.
        let mut waits = 0;
        loop {
            let contents = read_record(vfs, path);
            if !contents.is_empty() || waits == LINGERING_LOCK_WAITS {
                return Err(LockFailure::Held(parse_holder(&contents)));
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            waits += 1;
            if file.try_lock().map_err(|e| LockFailure::Io("lock", e))? {
                break;
            }
        }
    }
    let status = file.status().map_err(|e| LockFailure::Io("stat", e))?;
    let named = vfs.identity(path).map_err(|e| LockFailure::Io("stat", e))?;
    if status.links == 0 || named != Some(status.id) {
        return Err(LockFailure::Replaced);
    }
    Ok(status.id)
}

/// This process's holder record, emptied again when dropped — before the lock it
/// describes is released, so the next refused opener never reads a former holder's
/// record as the current one's (it waits briefly for an empty record to fill).
#[derive(Debug)]
pub(crate) struct HolderRecord(Option<Box<dyn VfsFile>>);

impl HolderRecord {
    /// No record: for a journal nobody else is meant to open yet (an unpublished
    /// temporary), whose holder would name nothing useful.
    pub(crate) fn none() -> Self {
        Self(None)
    }
}

impl Drop for HolderRecord {
    fn drop(&mut self) {
        if let Some(f) = &self.0 {
            let _ = f.set_len(0);
        }
    }
}

/// Records this process as the holder of the journal at `path`. Diagnostics only: a
/// record that cannot be written (a link or a FIFO planted at its name, a read-only
/// directory) leaves the lock as it is and only makes a refused writer's error name
/// "an unknown process".
pub(crate) fn record_holder(vfs: &dyn Vfs, path: &Path) -> HolderRecord {
    let record = lock_path(path);
    let Ok(f) = vfs.open(&record, OpenMode::CreateOrOpen) else {
        return HolderRecord(None);
    };
    let holder = holder_record();
    let written = f
        .set_len(0)
        .and_then(|()| f.write_all_at(0, &holder))
        .and_then(|()| f.set_len(holder.len() as u64));
    HolderRecord(written.is_ok().then_some(f))
}

/// What the holder record of the journal at `path` says, waiting briefly for a holder
/// that has just taken the lock to write it.
/// The holder record of the journal at `path` as it is now (empty when absent or
/// unreadable; at most [`MAX_HOLDER_RECORD`] bytes).
fn read_record(vfs: &dyn Vfs, path: &Path) -> Vec<u8> {
    let Ok(f) = vfs.open(&lock_path(path), OpenMode::Read) else {
        return Vec::new();
    };
    let mut buf = vec![0; MAX_HOLDER_RECORD];
    let n = f.read_at(0, &mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// An exclusive hold on a journal that writes nothing: what a deleter takes so that no
/// writer can own the session while its parts are removed. Released when dropped.
#[derive(Debug)]
pub struct Hold {
    _record: HolderRecord,
    _file: Box<dyn VfsFile>,
    id: FileId,
}

impl Hold {
    /// Opens the journal at `path` (never through a link, only a regular file), locks
    /// it and checks that `path` still names it.
    pub fn take(vfs: &dyn Vfs, path: &Path) -> Result<Hold, crate::OpenError> {
        let file = open_for_lock(vfs, path)?;
        let id = lock_journal(vfs, path, file.as_ref()).map_err(|f| lock_error(path, f))?;
        Ok(Hold {
            _record: HolderRecord(None),
            _file: file,
            id,
        })
    }

    /// The held file's identity.
    pub fn id(&self) -> FileId {
        self.id
    }

    /// Whether `path` still names the held file.
    pub fn still_at(&self, vfs: &dyn Vfs, path: &Path) -> io::Result<bool> {
        Ok(vfs.identity(path)? == Some(self.id))
    }
}

/// Opens a journal read-write for locking (write access matters on NFSv4, where an
/// exclusive lock needs it), mapping a missing file to `NotFound`.
pub(crate) fn open_for_lock(
    vfs: &dyn Vfs,
    path: &Path,
) -> Result<Box<dyn VfsFile>, crate::OpenError> {
    match vfs.open(path, OpenMode::ReadWrite) {
        Ok(f) => Ok(f),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(crate::OpenError::NotFound {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(crate::OpenError::Io {
            path: path.to_path_buf(),
            op: "open",
            offset: None,
            source,
        }),
    }
}

/// The [`OpenError`](crate::OpenError) for a lock that could not be taken.
pub(crate) fn lock_error(path: &Path, failure: LockFailure) -> crate::OpenError {
    match failure {
        LockFailure::Held(holder) => crate::OpenError::Locked {
            path: path.to_path_buf(),
            lock_path: lock_path(path),
            holder,
        },
        LockFailure::Replaced => crate::OpenError::Replaced {
            path: path.to_path_buf(),
        },
        LockFailure::Io(op, source) => crate::OpenError::Io {
            path: path.to_path_buf(),
            op,
            offset: None,
            source,
        },
    }
}
