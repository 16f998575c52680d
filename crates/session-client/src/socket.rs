//! Where the owner of a store's home listens, and how to reach it: the same rules as
//! the owner's `socket.rs` (`<home>/owner/owner.sock`; a path longer than a socket
//! address holds is reached through the directory's descriptor,
//! `/proc/self/fd/<n>/owner.sock`, Linux). A test in `session-tests` checks that both
//! sides name the same path.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tokio::net::UnixStream;

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

/// A connected stream and what the kernel says about its other end.
#[derive(Debug)]
pub(crate) struct Connected {
    pub(crate) stream: UnixStream,
    /// The owner's process id (`SO_PEERCRED`).
    pub(crate) pid: Option<u32>,
}

/// Connects to the socket of `home`'s owner. The peer must run as the uid that owns
/// the socket's directory (the owner checks its clients the same way); any other
/// peer is refused with `PermissionDenied`.
pub(crate) async fn connect(home: &Path) -> io::Result<Connected> {
    let dir = socket_dir(home);
    let path = socket_path(home);
    let meta = std::fs::symlink_metadata(&dir)?;
    // The owner makes it a real 0700 directory; anything else planted there (a link, a
    // FIFO an open would block on) is refused before it is opened or connected through.
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{}: the owner's socket directory is not a directory",
                dir.display()
            ),
        ));
    }
    let stream = if path.as_os_str().len() <= SUN_PATH_MAX {
        UnixStream::connect(&path).await?
    } else {
        // The descriptor stays open until the connection is made.
        let d = File::open(&dir)?;
        let short = PathBuf::from(format!("/proc/self/fd/{}/{SOCKET_NAME}", d.as_raw_fd()));
        let stream = UnixStream::connect(&short).await;
        drop(d);
        stream?
    };
    let cred = stream.peer_cred()?;
    if cred.uid() != meta.uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{}: served by uid {}, not by the directory's owner (uid {})",
                path.display(),
                cred.uid(),
                meta.uid()
            ),
        ));
    }
    let pid = cred.pid().and_then(|p| u32::try_from(p).ok());
    Ok(Connected { stream, pid })
}
