//! The imports registry: which source hashes this directory already holds.
//!
//! A derived file ([`REGISTRY_FILE`]): every line is checked against the journal it
//! names (whose import-source frame carries the same hash), and losing the file only
//! loses the shortcut — an import to the same journal path is still recognised from
//! that journal's own source frame.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::format::{REGISTRY_FILE, RegistryLine};
use crate::retention::import_source;

/// A completed import.
#[derive(Debug, Clone)]
pub(crate) struct Done {
    pub(crate) session_id: String,
    pub(crate) journal: PathBuf,
    pub(crate) version: u32,
}

/// The live import of `hash` recorded in `dir`'s registry, if any.
pub(crate) fn find(dir: &Path, hash: &str) -> Option<Done> {
    let file = std::fs::File::open(dir.join(REGISTRY_FILE)).ok()?;
    let mut found = None;
    for line in BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        let Ok(entry) = serde_json::from_str::<RegistryLine>(&line) else {
            continue;
        };
        if entry.blake3 == hash {
            found = Some(entry);
        }
    }
    let entry = found?;
    check_journal(&dir.join(&entry.journal), hash, &entry.session_id)
}

/// `Some` if `journal` is a native journal imported from a source with `hash`.
pub(crate) fn check_journal(journal: &Path, hash: &str, session_id: &str) -> Option<Done> {
    let source = import_source(journal).ok().flatten()?;
    (source.blake3 == hash).then(|| Done {
        session_id: session_id.to_owned(),
        journal: journal.to_path_buf(),
        version: source.source_version,
    })
}

/// Appends a registry line (best effort: the registry is only a shortcut).
pub(crate) fn record(dir: &Path, done: &Done) {
    let journal = done
        .journal
        .strip_prefix(dir)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| std::path::absolute(&done.journal).unwrap_or(done.journal.clone()));
    let Ok(hash) = import_source(&done.journal).map(|s| s.map(|s| s.blake3)) else {
        return;
    };
    let Some(blake3) = hash else { return };
    let line = RegistryLine {
        blake3,
        session_id: done.session_id.clone(),
        journal: journal.to_string_lossy().into_owned(),
    };
    let Ok(mut text) = serde_json::to_string(&line) else {
        return;
    };
    text.push('\n');
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    // Source paths and hashes are as private as the sessions themselves.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(dir.join(REGISTRY_FILE));
    if let Ok(mut f) = file {
        let _ = f.write_all(text.as_bytes()).and_then(|()| f.sync_data());
    }
}
