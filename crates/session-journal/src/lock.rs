//! The writer lock: an OS lock on `<journal>.lock`, held for the writer's lifetime.
//!
//! The lock file is never deleted (deleting it lets two processes lock two different
//! inodes). Its contents — `pid=<pid>\nhost=<host>\n` — exist only to name the holder in
//! errors; nothing ever decides a lock is stale from them: the kernel releases the lock
//! when the holder dies, even after SIGKILL.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::LockHolder;
use crate::vfs::{LockAttempt, Vfs, VfsLock};

/// The lock file of the journal at `journal`: the same path with `.lock` appended.
pub fn lock_path(journal: &Path) -> PathBuf {
    let mut s: OsString = journal.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// A held writer lock.
#[derive(Debug)]
pub(crate) struct WriterLock {
    _guard: Box<dyn VfsLock>,
}

pub(crate) enum LockFailure {
    Held(LockHolder),
    Io(io::Error),
}

fn hostname() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The bytes this process writes into a lock file it holds.
pub(crate) fn holder_record() -> Vec<u8> {
    let mut s = format!("pid={}\n", std::process::id());
    if let Some(h) = hostname() {
        s.push_str(&format!("host={h}\n"));
    }
    s.into_bytes()
}

/// Parses a lock file's contents; unknown or damaged lines are ignored.
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

pub(crate) fn acquire(vfs: &dyn Vfs, journal: &Path) -> Result<WriterLock, LockFailure> {
    match vfs.try_lock(&lock_path(journal), &holder_record()) {
        Ok(LockAttempt::Acquired(guard)) => Ok(WriterLock { _guard: guard }),
        Ok(LockAttempt::Held { contents }) => Err(LockFailure::Held(parse_holder(&contents))),
        Err(e) => Err(LockFailure::Io(e)),
    }
}
