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
//! This module calls `std::fs` directly rather than the journal's `Vfs`: a socket and
//! its private directory are not store files (the seam opens regular files only).
//! Nothing here follows a planted name: the directory is checked with `lstat`
//! (a directory, mode 0700) before anything in it is touched, and only this user can
//! put a name inside it.

use std::fs::{DirBuilder, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::net::{UnixListener, UnixStream};

use crate::Owner;

/// The directory under the home that holds the socket.
pub const DIR_NAME: &str = "owner";
/// The socket's file name.
pub const SOCKET_NAME: &str = "owner.sock";
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

/// A bound socket: the listener, the uid allowed to connect, and (for long paths) the
/// open directory its address goes through.
#[derive(Debug)]
pub struct Bound {
    listener: UnixListener,
    uid: u32,
    path: PathBuf,
    _dir: Option<File>,
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

/// Creates (or checks) the private directory and binds the socket in it. A socket
/// left by an owner that died is replaced; one that answers is refused
/// (`AddrInUse`): another owner serves this home.
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
    let path = socket_path(home);
    let (addr, dir_file) = address(&dir, &path)?;
    if std::fs::symlink_metadata(&path).is_ok() {
        if UnixStream::connect(&addr).await.is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{}: another owner is serving this home", path.display()),
            ));
        }
        std::fs::remove_file(&path)?; // stale: its owner is gone
    }
    let listener = UnixListener::bind(&addr)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(Bound {
        listener,
        uid: meta.uid(),
        path,
        _dir: dir_file,
    })
}

/// Accepts connections forever, serving each on its own task. A peer of another uid
/// is dropped unanswered.
pub async fn serve(owner: Arc<Owner>, bound: Bound) -> io::Result<()> {
    loop {
        let (stream, _) = bound.listener.accept().await?;
        match stream.peer_cred() {
            Ok(cred) if cred.uid() == bound.uid => {}
            _ => continue,
        }
        let owner = owner.clone();
        tokio::spawn(async move {
            let (r, w) = stream.into_split();
            let _ = owner.serve(r, w).await;
        });
    }
}

/// Connects to the owner serving `home`.
pub async fn connect(home: &Path) -> io::Result<UnixStream> {
    let path = socket_path(home);
    let (addr, _dir) = address(&socket_dir(home), &path)?;
    UnixStream::connect(&addr).await
}
