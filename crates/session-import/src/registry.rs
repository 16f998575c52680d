//! The imports registry (`<dir>/.imports.jsonl`): which sources this directory already
//! holds an import of. This module is the one owner of its format: [`read`], [`append_all`],
//! [`append`], [`remove`].
//!
//! The registry is derived data and never trusted: a line is only a shortcut to a
//! journal that must prove it. A line is used only when its `journal` is a plain file
//! name ([`is_journal_name`]: no separator, no `..`, not absolute, not hidden) of a
//! regular file in the registry's own directory, whose import-source frame has the
//! line's `blake3` and whose header names the line's `sessionId`. Any other line is
//! ignored and the import proceeds as new. Losing the file loses only the shortcut:
//! an import to the same journal path is still recognised from that journal's own
//! source frame.
//!
//! Every access goes through a [`Vfs`] (never through a link, never blocking, regular
//! files only), and at most [`MAX_REGISTRY_BYTES`] are read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::{OpenMode, Vfs};
use session_journal::{Reader, ReaderOptions};

pub use crate::format::{REGISTRY_FILE, RegistryLine};
use crate::retention::source_record;

/// The largest registry that is read (a line is ~300 bytes: about 200,000 imports).
/// A larger file was not written by this crate; it is ignored, and [`remove`] deletes
/// it.
pub const MAX_REGISTRY_BYTES: u64 = 64 << 20;

/// How a registry operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Reading or writing the registry failed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The registry or its temporary file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The registry is larger than [`MAX_REGISTRY_BYTES`].
    #[error("{path}: {len} bytes, more than the {max} a registry is read up to")]
    TooLarge {
        /// The registry.
        path: PathBuf,
        /// Its length.
        len: u64,
        /// The limit.
        max: u64,
    },
}

/// Whether `name` may name a journal in a registry line: one plain file name (no `/`
/// or `\`, not `.` or `..`, not hidden, no NUL), 1–255 bytes.
pub fn is_journal_name(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && Path::new(name).components().count() == 1
}

/// The registry's bytes, `None` when there is none.
fn read_bytes(vfs: &dyn Vfs, dir: &Path) -> Result<Option<Vec<u8>>, RegistryError> {
    let path = dir.join(REGISTRY_FILE);
    let io = |op: &'static str| {
        let path = path.clone();
        move |source| RegistryError::Io { path, op, source }
    };
    let file = match vfs.open(&path, OpenMode::Read) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("open")(e)),
    };
    let len = file.len().map_err(io("stat"))?;
    if len > MAX_REGISTRY_BYTES {
        return Err(RegistryError::TooLarge {
            path,
            len,
            max: MAX_REGISTRY_BYTES,
        });
    }
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(0, &mut bytes).map_err(io("read"))?;
    Ok(Some(bytes))
}

/// A registry line of this version ([`crate::format::REGISTRY_VERSION`]), if `l` is one.
fn parse_line(l: &[u8]) -> Option<RegistryLine> {
    serde_json::from_slice::<RegistryLine>(l)
        .ok()
        .filter(|line| line.version == crate::format::REGISTRY_VERSION)
}

/// The registry's lines that parse, in file order (unvalidated: see the module
/// comment). No registry reads as empty.
pub fn read(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<RegistryLine>, RegistryError> {
    let Some(bytes) = read_bytes(vfs, dir)? else {
        return Ok(Vec::new());
    };
    Ok(bytes
        .split(|b| *b == b'\n')
        .filter_map(parse_line)
        .collect())
}

/// Appends one line (the registry is created `0600` if missing, never through a
/// link) and syncs it. Concurrent appenders may lose a line (it is only a shortcut)
/// but never produce one that validates wrongly: a torn mixture does not parse, and
/// every line is checked against its journal before use.
pub fn append(vfs: &dyn Vfs, dir: &Path, line: &RegistryLine) -> Result<(), RegistryError> {
    append_all(vfs, dir, std::slice::from_ref(line))
}

/// Appends `lines` as [`append`] appends one: one write and one sync for all (a bulk
/// import records a whole batch at once). No lines writes nothing.
pub fn append_all(vfs: &dyn Vfs, dir: &Path, lines: &[RegistryLine]) -> Result<(), RegistryError> {
    if lines.is_empty() {
        return Ok(());
    }
    let path = dir.join(REGISTRY_FILE);
    let io = |op: &'static str| {
        let path = path.clone();
        move |source| RegistryError::Io { path, op, source }
    };
    let mut text = Vec::new();
    for line in lines {
        serde_json::to_writer(&mut text, line).map_err(|e| io("encode")(e.into()))?;
        text.push(b'\n');
    }
    let file = vfs
        .open(&path, OpenMode::CreateOrOpen)
        .map_err(io("open"))?;
    let len = file.len().map_err(io("stat"))?;
    if len > MAX_REGISTRY_BYTES {
        return Err(RegistryError::TooLarge {
            path,
            len,
            max: MAX_REGISTRY_BYTES,
        });
    }
    file.write_all_at(len, &text).map_err(io("write"))?;
    file.sync_data().map_err(io("sync"))?;
    Ok(())
}

/// Removes every line naming the journal `journal_name` (a file name in `dir`; a line
/// naming it through a path counts too) by an atomic rewrite: a temporary with an
/// unpredictable name in `dir`, created exclusively `0600`, written, `fsync`ed,
/// renamed over the registry, and the directory synced. Other lines are kept byte for
/// byte. Returns whether a line was removed. A registry too large to read is removed
/// whole (it is derived). No registry, or no such line, changes nothing.
pub fn remove(vfs: &dyn Vfs, dir: &Path, journal_name: &str) -> Result<bool, RegistryError> {
    let path = dir.join(REGISTRY_FILE);
    let io = |op: &'static str, p: &Path| {
        let path = p.to_path_buf();
        move |source| RegistryError::Io { path, op, source }
    };
    let bytes = match read_bytes(vfs, dir) {
        Ok(Some(b)) => b,
        Ok(None) => return Ok(false),
        Err(RegistryError::TooLarge { .. }) => {
            vfs.remove_file(&path).map_err(io("remove", &path))?;
            vfs.sync_dir(dir).map_err(io("sync directory", dir))?;
            return Ok(true);
        }
        Err(e) => return Err(e),
    };
    let mut kept = Vec::with_capacity(bytes.len());
    let mut removed = false;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let names_it = serde_json::from_slice::<RegistryLine>(body).is_ok_and(|l| {
            l.journal == journal_name
                || Path::new(&l.journal).file_name() == Some(std::ffi::OsStr::new(journal_name))
        });
        if names_it {
            removed = true;
        } else {
            kept.extend_from_slice(line);
        }
    }
    if !removed {
        return Ok(false);
    }
    let (tmp, file) = vfs
        .create_temp(dir, &format!("{REGISTRY_FILE}."))
        .map_err(io("create temporary file in", dir))?;
    let written = file
        .write_all_at(0, &kept)
        .map_err(io("write", &tmp))
        .and_then(|()| file.sync_all().map_err(io("sync", &tmp)));
    drop(file);
    let renamed = written.and_then(|()| vfs.rename(&tmp, &path).map_err(io("rename", &path)));
    if renamed.is_err() {
        let _ = vfs.remove_file(&tmp);
    }
    renamed?;
    vfs.sync_dir(dir).map_err(io("sync directory", dir))?;
    Ok(true)
}

/// A completed import.
#[derive(Debug, Clone)]
pub(crate) struct Done {
    pub(crate) session_id: String,
    pub(crate) journal: PathBuf,
    pub(crate) version: u32,
}

/// The registry's lines by source hash, read once: what an import looks its source up
/// in before doing any work (unvalidated until [`Known::find`] checks a line against
/// its journal).
#[derive(Debug, Default)]
pub(crate) struct Known(HashMap<String, Vec<RegistryLine>>);

impl Known {
    /// The lines of `dir`'s registry (only those naming `only`, when given: a single
    /// import parses just the lines holding its hash). A registry that cannot be read
    /// reads as empty: it is only a shortcut.
    pub(crate) fn read(vfs: &dyn Vfs, dir: &Path, only: Option<&str>) -> Self {
        let mut known = Self::default();
        let Ok(Some(bytes)) = read_bytes(vfs, dir) else {
            return known;
        };
        let finder = only.map(|h| memchr::memmem::Finder::new(h.as_bytes()));
        for l in bytes.split(|b| *b == b'\n') {
            if finder.as_ref().is_some_and(|f| f.find(l).is_none()) {
                continue;
            }
            if let Some(line) = parse_line(l) {
                known.add(line);
            }
        }
        known
    }

    /// Adds a line (an import this run just recorded).
    pub(crate) fn add(&mut self, line: RegistryLine) {
        self.0.entry(line.blake3.clone()).or_default().push(line);
    }

    /// The import of `hash` in `dir` whose journal proves it (the latest such line),
    /// if any.
    pub(crate) fn find(&self, vfs: &Arc<dyn Vfs>, dir: &Path, hash: &str) -> Option<Done> {
        self.0
            .get(hash)?
            .iter()
            .rev()
            .filter(|l| is_journal_name(&l.journal))
            .find_map(|l| {
                check_journal(vfs, &dir.join(&l.journal), hash)
                    .filter(|d| d.session_id == l.session_id)
            })
    }
}

/// `Some` if `journal` is a native journal (a regular file, reached without a link)
/// imported from a source with `hash`; the session id is the journal header's.
pub(crate) fn check_journal(vfs: &Arc<dyn Vfs>, journal: &Path, hash: &str) -> Option<Done> {
    let reader = Reader::open(journal, ReaderOptions { vfs: vfs.clone() }).ok()?;
    let session_id = reader.header().session_id.clone()?;
    let source = source_record(&reader).ok().flatten()?;
    (source.blake3 == hash).then(|| Done {
        session_id,
        journal: journal.to_path_buf(),
        version: source.source_version,
    })
}

/// The registry line of a completed import, `None` when its journal's name cannot be
/// recorded (not a plain file name).
pub(crate) fn line_of(done: &Done, hash: &str) -> Option<RegistryLine> {
    let name = done.journal.file_name().and_then(|n| n.to_str())?;
    is_journal_name(name).then(|| RegistryLine {
        version: crate::format::REGISTRY_VERSION,
        blake3: hash.to_owned(),
        session_id: done.session_id.clone(),
        journal: name.to_owned(),
    })
}
