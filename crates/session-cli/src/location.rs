//! Where sessions are and how a `<session>` argument names one: the layout from the
//! global options and environment, id / unique prefix / path resolution, and the
//! read-only view of one session (journal reader, derived index opened without
//! saving, records for context building).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use session_index::{Index, IndexReport, IndexStatus, OpenIndexOptions, kinds};
use session_journal::vfs::{EntryKind, StdVfs, Vfs as _};
use session_journal::{Reader, ReaderOptions};
use session_manager::Layout;

/// Where the store is, as the global options and the environment name it (the
/// manager's `session_manager::Store` is the store itself).
#[derive(Debug, Clone)]
pub struct Location {
    layout: Layout,
}

impl Location {
    /// Resolves the layout: `--home` / `--session-dir` win over `BASE_CONTEXT_HOME` /
    /// `BASE_CONTEXT_SESSION_DIR`; relative option values are taken relative to the
    /// current directory (relative environment values are refused, as the manager does).
    pub(crate) fn resolve(home: Option<&Path>, session_dir: Option<&Path>) -> Result<Self> {
        let mut layout = match home {
            Some(home) => {
                let env_dir = std::env::var_os(session_manager::layout::SESSION_DIR_VAR)
                    .filter(|v| !v.is_empty());
                let root = Layout::with_root(absolute(home)?)?;
                match env_dir {
                    Some(dir) => root
                        .with_session_dir(PathBuf::from(dir))
                        .map_err(|e| anyhow!(e))?,
                    None => root,
                }
            }
            None => Layout::from_env().map_err(|e| anyhow!(e))?,
        };
        if let Some(dir) = session_dir {
            layout = layout
                .with_session_dir(absolute(dir)?)
                .map_err(|e| anyhow!(e))?;
        }
        // A home or sessions directory that is a file would otherwise read as an empty
        // store ("no sessions", exit 0). `metadata` follows a link on purpose: a home
        // that is a link to a directory is the user's choice (nothing is written here).
        for (dir, what) in [
            (layout.root(), "the store's home"),
            (layout.sessions_dir(), "the sessions directory"),
        ] {
            if let Ok(m) = std::fs::metadata(dir)
                && !m.is_dir()
            {
                bail!("{}: {what} is not a directory", dir.display());
            }
        }
        Ok(Self { layout })
    }

    /// A store with this layout.
    pub fn with_layout(layout: Layout) -> Self {
        Self { layout }
    }

    /// The layout.
    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The sessions directory.
    pub fn sessions_dir(&self) -> &Path {
        self.layout.sessions_dir()
    }

    /// Every journal of the sessions directory (`*.jsonl`, hidden files excluded), by
    /// file name. A missing directory holds no session.
    pub(crate) fn journals(&self) -> Result<Vec<PathBuf>> {
        let dir = self.sessions_dir();
        let entries = match StdVfs.read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("{}: cannot read the sessions directory", dir.display())
                });
            }
        };
        let mut out = Vec::new();
        for e in entries {
            let name = e.name.to_string_lossy();
            // Regular files only, as `lstat` sees them: a link is never listed.
            if !name.starts_with('.') && name.ends_with(".jsonl") && e.kind == EntryKind::File {
                out.push(dir.join(&e.name));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Resolves a `<session>` argument: a journal path (contains a path separator or
    /// names an existing file ending in `.jsonl`), an exact session id, or a unique
    /// prefix of one (an ambiguous prefix is an error listing the candidates).
    pub(crate) fn find(&self, arg: &str) -> Result<PathBuf> {
        if arg.is_empty() {
            bail!("empty session argument");
        }
        let as_path = Path::new(arg);
        if arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/') {
            if as_path.is_file() {
                return Ok(as_path.to_path_buf());
            }
            bail!("{arg}: no such session file");
        }
        if arg.ends_with(".jsonl") && as_path.is_file() {
            return Ok(as_path.to_path_buf());
        }
        let exact = self.sessions_dir().join(format!("{arg}.jsonl"));
        if session_manager::SafeSessionId::new(arg).is_ok() && exact.is_file() {
            return Ok(exact);
        }
        let matches: Vec<PathBuf> = self
            .journals()?
            .into_iter()
            .filter(|p| session_id_of(p).starts_with(arg))
            .collect();
        match matches.len() {
            0 => bail!(
                "no session {arg:?} in {} (not an id, an id prefix or a file)",
                self.sessions_dir().display()
            ),
            1 => Ok(matches.into_iter().next().expect("one match")),
            n => {
                let shown: Vec<String> =
                    matches.iter().take(10).map(|p| session_id_of(p)).collect();
                let more = if n > 10 {
                    format!(" and {} more", n - 10)
                } else {
                    String::new()
                };
                bail!(
                    "session prefix {arg:?} is ambiguous: {n} sessions match: {}{more}",
                    shown.join(", ")
                )
            }
        }
    }
}

/// The session id a journal's file name gives (`<id>.jsonl`).
pub(crate) fn session_id_of(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".jsonl").unwrap_or(&name).to_owned()
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(cwd.join(p))
}

/// Read-only index options: the sidecar is read and validated, never written, and the
/// journal is not synced.
pub(crate) fn read_only_index() -> OpenIndexOptions {
    OpenIndexOptions {
        save: false,
        sync_journal: false,
        ..OpenIndexOptions::default()
    }
}

/// A read-only view of one session.
#[derive(Debug)]
pub struct SessionView {
    /// The journal.
    pub(crate) path: PathBuf,
    /// The journal's reader.
    pub(crate) reader: Reader,
    /// The derived index (opened read-only).
    pub index: Index,
    /// How the index was obtained.
    pub(crate) report: IndexReport,
}

impl SessionView {
    /// Opens the session at `path` without modifying anything.
    pub fn open(path: &Path) -> Result<Self> {
        let reader = Reader::open(path, ReaderOptions::default()).map_err(|e| anyhow!(e))?;
        let name = session_id_of(path);
        if let Some(id) = &reader.header().session_id
            && *id != name
        {
            bail!(
                "{}: journal of session {id:?} under the name of session {name:?} (copied or renamed?); refusing to serve it as {name:?}",
                path.display()
            );
        }
        let (index, report) = Index::open_or_rebuild_with(&reader, read_only_index())
            .map_err(|e| crate::out::at_path(path, "cannot index the journal", e))?;
        // A journal whose session header record was never written (or torn) holds no
        // session: its creation was never acknowledged.
        let created = index
            .info(session_index::EntryIndex(0))
            .is_some_and(|i| i.kind == kinds::SESSION_HEADER_KIND);
        if !created {
            bail!(
                "{}: the session was never created: no session header record (the journal's frames end at offset {})",
                path.display(),
                index.covered_len().0
            );
        }
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            index,
            report,
        })
    }

    /// The session header record (the first header-kind frame), if readable.
    pub(crate) fn header(&self) -> Option<serde_json::Value> {
        for f in self.reader.frames(None) {
            let f = f.ok()?;
            if f.info.kind == kinds::SESSION_HEADER {
                return serde_json::from_slice(&f.payload).ok();
            }
            if f.info.kind == kinds::ENTRY {
                return None;
            }
        }
        None
    }

    /// The index status as one word and a detail.
    pub(crate) fn index_status(&self) -> (&'static str, Option<String>) {
        index_status(&self.report.status)
    }
}

/// `fresh`, `caught-up` or `rebuilt`, with a detail.
pub(crate) fn index_status(status: &IndexStatus) -> (&'static str, Option<String>) {
    match status {
        IndexStatus::Fresh => ("fresh", None),
        IndexStatus::CaughtUp { frames, bytes_read } => (
            "caught-up",
            Some(format!(
                "sidecar behind by {frames} frames ({bytes_read} bytes)"
            )),
        ),
        IndexStatus::Rebuilt { reason } => ("rebuilt", Some(reason.to_string())),
        _ => ("unknown", None),
    }
}
