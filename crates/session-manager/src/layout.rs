//! Where sessions live: the product root, the sessions directory, journals,
//! derived files and artifact directories.
//!
//! - Product root: `$BASE_CONTEXT_HOME`, else `~/.base-context`.
//! - Sessions directory: `$BASE_CONTEXT_SESSION_DIR` if set (must be absolute; a
//!   relative value is an error, not a guess), else `<root>/sessions`.
//! - Journal: `<sessions>/<session-id>.jsonl`; artifacts:
//!   `<root>/session-artifacts/<session-id>/`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The environment variable that selects the product root.
pub const HOME_VAR: &str = "BASE_CONTEXT_HOME";
/// The environment variable that selects the sessions directory.
pub const SESSION_DIR_VAR: &str = "BASE_CONTEXT_SESSION_DIR";
/// The longest session id accepted, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Resolved storage locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
    sessions: PathBuf,
}

/// Why a layout could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LayoutError {
    /// `BASE_CONTEXT_SESSION_DIR` (or an explicit sessions directory) is relative.
    #[error("{var} must be an absolute path, found `{}`", value.display())]
    RelativeSessionDir {
        /// The variable (or option) name.
        var: &'static str,
        /// The value found.
        value: PathBuf,
    },
    /// `BASE_CONTEXT_HOME` is relative.
    #[error("{HOME_VAR} must be an absolute path, found `{}`", value.display())]
    RelativeHome {
        /// The value found.
        value: PathBuf,
    },
    /// A product root given to [`Layout::with_root`] is relative.
    #[error("the product root must be an absolute path, found `{}`", value.display())]
    RelativeRoot {
        /// The value found.
        value: PathBuf,
    },
    /// Neither `BASE_CONTEXT_HOME` nor a home directory is known.
    #[error("no product root: set {HOME_VAR} (no home directory is known either)")]
    NoHome,
}

impl Layout {
    /// A layout rooted at `root`, with sessions in `<root>/sessions`. The root must be
    /// absolute, as `BASE_CONTEXT_HOME` and the sessions directory must: a relative one
    /// would move with the process's working directory.
    pub fn with_root(root: impl Into<PathBuf>) -> Result<Self, LayoutError> {
        let root = root.into();
        if !root.is_absolute() {
            return Err(LayoutError::RelativeRoot { value: root });
        }
        Ok(Self::rooted(root))
    }

    fn rooted(root: PathBuf) -> Self {
        Self {
            sessions: root.join("sessions"),
            root,
        }
    }

    /// Replaces the sessions directory, which must be absolute.
    pub fn with_session_dir(mut self, dir: impl Into<PathBuf>) -> Result<Self, LayoutError> {
        let dir = dir.into();
        if !dir.is_absolute() {
            return Err(LayoutError::RelativeSessionDir {
                var: "the sessions directory",
                value: dir,
            });
        }
        self.sessions = dir;
        Ok(self)
    }

    /// Resolves the layout from the process environment.
    pub fn from_env() -> Result<Self, LayoutError> {
        Self::from_vars(|name| std::env::var_os(name), std::env::home_dir())
    }

    /// Resolves the layout from the given variable lookup and home directory (for
    /// tests and embedders that keep their own environment).
    pub fn from_vars(
        var: impl Fn(&str) -> Option<OsString>,
        home: Option<PathBuf>,
    ) -> Result<Self, LayoutError> {
        let non_empty = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let root = match non_empty(HOME_VAR) {
            Some(root) if root.is_absolute() => root,
            Some(root) => return Err(LayoutError::RelativeHome { value: root }),
            None => home.ok_or(LayoutError::NoHome)?.join(".base-context"),
        };
        let mut layout = Self::rooted(root);
        if let Some(dir) = non_empty(SESSION_DIR_VAR) {
            if !dir.is_absolute() {
                return Err(LayoutError::RelativeSessionDir {
                    var: SESSION_DIR_VAR,
                    value: dir,
                });
            }
            layout.sessions = dir;
        }
        Ok(layout)
    }

    /// The product root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The sessions directory.
    pub fn sessions_dir(&self) -> &Path {
        &self.sessions
    }

    /// `<sessions>/<id>.jsonl`
    pub fn journal_path(&self, id: &SafeSessionId) -> PathBuf {
        self.sessions.join(format!("{}.jsonl", id.as_str()))
    }

    /// `<root>/session-artifacts/<id>/`
    pub fn artifact_dir(&self, id: &SafeSessionId) -> PathBuf {
        self.root.join("session-artifacts").join(id.as_str())
    }
}

/// A session id that is safe as a file name: 1–128 bytes of `[A-Za-z0-9._-]`, not
/// starting with `.` (so never `.` or `..` or a hidden file), so no id can name a path
/// outside the sessions directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SafeSessionId(String);

/// Why a session id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid session id {id:?}: {reason} (allowed: 1-{MAX_SESSION_ID_LEN} characters of A-Z a-z 0-9 . _ -, not starting with `.`)"
)]
pub struct InvalidSessionId {
    /// The id as given.
    pub id: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl SafeSessionId {
    /// Validates `id`.
    ///
    /// ```
    /// use session_manager::SafeSessionId;
    /// assert!(SafeSessionId::new("019c1a00-1234-7567-89ab-cdef01234567").is_ok());
    /// assert!(SafeSessionId::new("../etc/passwd").is_err());
    /// ```
    pub fn new(id: &str) -> Result<Self, InvalidSessionId> {
        let bad = |reason| {
            Err(InvalidSessionId {
                id: id.to_owned(),
                reason,
            })
        };
        if id.is_empty() {
            return bad("it is empty");
        }
        if id.len() > MAX_SESSION_ID_LEN {
            return bad("it is too long");
        }
        if id.starts_with('.') {
            return bad("it starts with `.`");
        }
        if let Some(c) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
        {
            return match c {
                '/' | '\\' => bad("it contains a path separator"),
                '\0' => bad("it contains a NUL byte"),
                _ => bad("it contains a character outside the allowed set"),
            };
        }
        Ok(Self(id.to_owned()))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SafeSessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Creates `dir` and its missing parents with mode `0700` (on Unix), through the real
/// file system's seam (`StdVfs::create_dir_all`).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use session_journal::vfs::Vfs as _;
    session_journal::vfs::StdVfs.create_dir_all(dir)
}
