//! The Unix socket transport: `<home>/owner/owner.sock`.
//!
//! The directory is created 0700 (and refused if it exists with other permissions or
//! another owner), the socket is made 0600, and every connection's peer uid
//! (`SO_PEERCRED`) must be the uid that owns the directory: only the user's own
//! processes are served.
//!
//! A socket address holds at most 107 bytes of path. When the socket's path is
//! longer, both the owner and its clients name the directory through an open
//! descriptor, `/proc/self/fd/<n>/owner.sock` (Linux): the address stays short
//! whatever the home's length, without `chdir` (which would move the whole process).
//!
//! **Election.** Several owners may start at once (clients start one on demand). The
//! one that takes an exclusive lock (`flock`) on `<home>/owner/owner.lock` is the
//! owner; the others get [`AddrInUse`](io::ErrorKind::AddrInUse) naming the winner's
//! pid, before touching the socket. The lock is held for as long as the [`Bound`]
//! lives and is released by the kernel when the process dies, so a socket file found
//! by the lock's holder is always stale (its owner died) and is replaced.
//!
//! **Life.** [`serve`] accepts until the owner has been idle (no connection, no open
//! session) for [`OwnerOptions::idle_timeout`](crate::OwnerOptions::idle_timeout);
//! then it removes the socket and returns, and dropping the `Bound` releases the
//! lock. An `accept` error (out of descriptors, say) is retried after a pause that
//! doubles up to a second, never ends the owner.
//!
//! This module calls `std::fs` directly rather than the journal's `Vfs`: a socket, its
//! lock and their private directory are not store files (the seam opens regular files
//! only). Nothing here follows a planted name: the directory is checked with `lstat`
//! (a directory, mode 0700) before anything in it is touched, only this user can put a
//! name inside it, and the lock file is opened with `O_NOFOLLOW`.

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio::time::Instant;

use crate::Owner;

/// The directory under the home that holds the socket.
pub const DIR_NAME: &str = "owner";
/// The socket's file name.
pub const SOCKET_NAME: &str = "owner.sock";
/// The election lock's file name (beside the socket).
pub const LOCK_NAME: &str = "owner.lock";
/// The longest pause between two `accept` attempts after an error.
const MAX_ACCEPT_PAUSE: Duration = Duration::from_secs(1);
/// The longest path a socket address holds (`sun_path` less its NUL).
const SUN_PATH_MAX: usize = 107;

/// The socket's directory under `home`.
pub fn socket_dir(home: &Path) -> PathBuf {
    home.join(DIR_NAME)
}

/// The socket's path under `home`.
pub fn socket_path(home: &Path) -> PathBuf {
    socket_dir(home).join(SOCKET_NAME)
}

/// The election lock's path under `home`.
pub fn lock_path(home: &Path) -> PathBuf {
    socket_dir(home).join(LOCK_NAME)
}

/// A bound socket: the listener, the uid allowed to connect, the election lock (held
/// while this lives) and, for long paths, the open directory its address goes
/// through.
#[derive(Debug)]
pub struct Bound {
    listener: UnixListener,
    uid: u32,
    path: PathBuf,
    _dir: Option<File>,
    _lock: File,
}

impl Bound {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The address to bind or connect to for `path` in `dir`: the path itself when it
/// fits, else the directory's descriptor path (the `File` must stay open).
fn address(dir: &Path, path: &Path) -> io::Result<(PathBuf, Option<File>)> {
    if path.as_os_str().len() <= SUN_PATH_MAX {
        return Ok((path.to_path_buf(), None));
    }
    let d = File::open(dir)?;
    let short = PathBuf::from(format!("/proc/self/fd/{}/{SOCKET_NAME}", d.as_raw_fd()));
    Ok((short, Some(d)))
}

/// Creates (or checks) the private directory, takes the election lock and binds the
/// socket. When another owner holds the lock this fails with `AddrInUse` (naming its
/// pid when it wrote one) and touches nothing; the lock's holder replaces a socket
/// file left by an owner that died.
pub async fn bind(home: &Path) -> io::Result<Bound> {
    let dir = socket_dir(home);
    match DirBuilder::new().mode(0o700).recursive(false).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new().mode(0o700).recursive(true).create(home)?;
            DirBuilder::new().mode(0o700).create(&dir)?;
        }
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.mode() & 0o777 != 0o700 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: must be a directory with mode 0700 (found mode {:o})",
                dir.display(),
                meta.mode() & 0o7777
            ),
        ));
    }
    let lock = elect(home)?;
    let path = socket_path(home);
    let (addr, dir_file) = address(&dir, &path)?;
    match std::fs::symlink_metadata(&path) {
        // We hold the lock, so no owner serves this socket: its owner died.
        Ok(_) => std::fs::remove_file(&path)
            .map_err(|e| with_path(e, &path, "removing the stale socket"))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(&addr)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Bound {
        listener,
        uid: meta.uid(),
        path,
        _dir: dir_file,
        _lock: lock,
    })
}

fn with_path(e: io::Error, path: &Path, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {what}: {e}", path.display()))
}

/// Takes the election lock: opens (creating, 0600, never through a link) the lock
/// file in the checked directory and locks it without waiting. The winner writes its
/// pid into it, for the losers' message.
fn elect(home: &Path) -> io::Result<File> {
    let path = lock_path(home);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| with_path(e, &path, "opening the owner's lock"))?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: the owner's lock is not a regular file", path.display()),
        ));
    }
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            // A short read: the holder may not have written its pid yet.
            let mut text = String::new();
            let _ = (&file).take(32).read_to_string(&mut text);
            let holder = match text.trim().parse::<u32>() {
                Ok(pid) => format!(" (pid {pid})"),
                Err(_) => String::new(),
            };
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "{}: another owner{holder} is serving this home",
                    socket_dir(home).display()
                ),
            ));
        }
        Err(TryLockError::Error(e)) => return Err(with_path(e, &path, "locking")),
    }
    // Best effort: the pid only improves the losers' message.
    let _ = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()));
    Ok(file)
}

/// Accepts connections, serving each on its own task, until the owner has been idle
/// (no connection, no open session) for its `idle_timeout` (never, when `None`);
/// then removes the socket and returns (dropping `bound` releases the lock). A peer
/// of another uid is dropped unanswered. An `accept` error is retried after a pause
/// (10 ms, doubling up to 1 s); it never ends the owner.
pub async fn serve(owner: Arc<Owner>, bound: Bound) -> io::Result<()> {
    let idle = owner.options.idle_timeout;
    let mut pause = Duration::ZERO;
    let mut retry_at: Option<Instant> = None;
    loop {
        // Registered before the state is read: a change after this wakes us.
        let changed = owner.activity.notified();
        let idle_now = idle.is_some() && owner.is_idle().await;
        let idle_for = idle.unwrap_or(Duration::MAX);
        tokio::select! {
            accepted = bound.listener.accept(), if retry_at.is_none() => match accepted {
                Ok((stream, _)) => {
                    pause = Duration::ZERO;
                    match stream.peer_cred() {
                        Ok(cred) if cred.uid() == bound.uid => {}
                        _ => continue,
                    }
                    let connection = owner.connection();
                    let owner = owner.clone();
                    tokio::spawn(async move {
                        let (r, w) = stream.into_split();
                        let _ = owner.serve_counted(connection, r, w).await;
                    });
                }
                Err(_) => {
                    // EMFILE, ENFILE, ENOBUFS, ECONNABORTED…: the pending connection
                    // stays queued; try again once something may have changed.
                    pause = (pause * 2).clamp(Duration::from_millis(10), MAX_ACCEPT_PAUSE);
                    owner.accept_errors.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    retry_at = Some(Instant::now() + pause);
                }
            },
            () = sleep_until(retry_at), if retry_at.is_some() => retry_at = None,
            () = tokio::time::sleep(idle_for), if idle_now => {
                // Idle: nothing is open. New clients find no socket and start an owner.
                let _ = std::fs::remove_file(&bound.path);
                return Ok(());
            }
            () = changed => {}
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

/// Connects to the owner serving `home`.
pub async fn connect(home: &Path) -> io::Result<UnixStream> {
    let path = socket_path(home);
    let (addr, _dir) = address(&socket_dir(home), &path)?;
    UnixStream::connect(&addr).await
}
