//! Where the new journal goes and how it gets there: the session id and journal name
//! (a derived one when the header's is unsafe or another source holds it), a temporary
//! journal created exclusively beside it, linked into place without replacing anything
//! once its batch synced it; and the temporaries killed imports left.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::format::{DEFAULT_MAX_PAYLOAD, MAX_PAYLOAD_CAP};
use session_journal::vfs::{EntryKind, OpenMode, Vfs};
use session_journal::{CreateOptions, JournalId, Writer};

use super::header::Header;
use super::{Destination, ImportOptions, Run, Source, is_safe_session_id};
use crate::error::ImportError;
use crate::lines::SourceScan;
use crate::outcome::IssueKind;
use crate::registry;

/// Where an import goes.
pub(super) enum Place {
    /// A new journal, under this session id.
    New {
        session_id: String,
        journal: PathBuf,
    },
    /// The journal of this source's import, already in place.
    Imported(registry::Done),
}

/// Chooses the session id and journal: the header's id if it can name a file (else
/// one derived from the source's hash). Another source's journal already holding that
/// id in a sessions directory makes it an id derived from this source's content. An
/// issue on the header line names the id assigned; the caller writes it into the
/// header record ([`Header::assign_id`]).
///
/// `claimed` holds the journals other sources of the same batch will be published
/// as: taken, as if they were already in place.
pub(super) fn place(
    vfs: &Arc<dyn Vfs>,
    destination: &Destination,
    run: &mut Run<'_>,
    header: &Header,
    src: &Source<'_>,
    claimed: &HashSet<PathBuf>,
) -> Result<Place, ImportError> {
    let exists = |path: &Path| -> Result<bool, ImportError> {
        Ok(claimed.contains(path) || exists(vfs.as_ref(), path)?)
    };
    let safe = is_safe_session_id(&header.id);
    let session_id = if safe {
        header.id.clone()
    } else {
        let h = blake3::hash(
            &[
                b"session-import session id".as_slice(),
                src.scan.blake3.as_bytes(),
            ]
            .concat(),
        );
        format!("legacy-{}", &h.to_hex()[..32])
    };
    let journal = match destination {
        Destination::Dir(d) => d.join(format!("{session_id}.jsonl")),
        Destination::Journal(p) => p.clone(),
    };
    let (session_id, journal) = if !exists(&journal)? {
        (session_id, journal)
    } else if let Some(done) = registry::check_journal(vfs, &journal, &src.hash_hex) {
        return Ok(Place::Imported(done));
    } else {
        // Legacy files can share ids (e.g. copies edited by hand).
        let Destination::Dir(d) = destination else {
            return Err(ImportError::DestinationExists { path: journal });
        };
        let derived = derived_session_id(&session_id, &src.hash_hex);
        let journal = d.join(format!("{derived}.jsonl"));
        if exists(&journal)? {
            return match registry::check_journal(vfs, &journal, &src.hash_hex) {
                Some(done) => Ok(Place::Imported(done)),
                None => Err(ImportError::DestinationExists { path: journal }),
            };
        }
        (derived, journal)
    };
    let (id, used) = (header.id.clone(), session_id.clone());
    if !safe {
        run.issue(header.line.number, IssueKind::SessionIdUnsafe { id, used });
    } else if id != used {
        run.issue(header.line.number, IssueKind::SessionIdTaken { id, used });
    }
    Ok(Place::New {
        session_id,
        journal,
    })
}

fn exists(vfs: &dyn Vfs, path: &Path) -> Result<bool, ImportError> {
    vfs.exists(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        op: "stat",
        source,
    })
}

/// `<id>-<first 8 hex of the source's BLAKE3>`, or `legacy-<hash>` if that is too long.
fn derived_session_id(id: &str, source_hash_hex: &str) -> String {
    let candidate = format!("{id}-{}", &source_hash_hex[..8]);
    if is_safe_session_id(&candidate) {
        candidate
    } else {
        format!("legacy-{}", &source_hash_hex[..32])
    }
}

/// What marks an import's temporary journal: `.<journal name>.import-<16 hex>.tmp`.
const TEMP_MARK: &str = ".import-";

/// The prefix of the temporary name of the journal `journal`:
/// `.<journal name>.import-` (the name cut to 128 characters); the file system adds
/// 16 unpredictable hex digits and `.tmp`.
fn temp_prefix(journal: &Path) -> String {
    let name = journal
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(128).collect::<String>())
        // tidy: not an entry type (a file name for a journal path without one)
        .unwrap_or_else(|| "session".to_owned());
    format!(".{name}{TEMP_MARK}")
}

/// Whether `name` is an import's temporary journal (`.<name>.import-<id>.tmp`, where
/// `<id>` is 16 hex digits, or `<pid>-<nanos>` as written before).
fn is_import_temp(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    rest.rsplit_once(TEMP_MARK).is_some_and(|(journal, id)| {
        !journal.is_empty()
            && !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
    })
}

/// Removes the temporary journal's name and its holder record (both ours alone: the
/// name is unique).
fn cleanup(vfs: &dyn Vfs, tmp: &Path) {
    let _ = vfs.remove_file(tmp);
    let _ = vfs.remove_file(&session_journal::lock::lock_path(tmp));
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Published {
    /// The journal is in place.
    Linked,
    /// Something was already at the journal's name.
    Raced,
}

/// Gives the synced temporary journal its final name without replacing anything.
fn link_into_place(vfs: &dyn Vfs, tmp: &Path, journal: &Path) -> Result<Published, ImportError> {
    match vfs.hard_link(tmp, journal) {
        Ok(()) => Ok(Published::Linked),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Published::Raced),
        Err(source) => Err(ImportError::Io {
            path: journal.to_path_buf(),
            op: "link into place",
            source,
        }),
    }
}

/// Syncs the directory `dir` (once per batch: it makes every link of the batch durable).
pub(super) fn sync_dir(vfs: &dyn Vfs, dir: &Path) -> Result<(), ImportError> {
    vfs.sync_dir(dir).map_err(|source| ImportError::Io {
        path: dir.to_path_buf(),
        op: "sync directory",
        source,
    })
}

/// Creates the temporary journal for `journal` (under a fresh name beside it, locked,
/// nothing synced: the batch syncs it), with the journal id (by default derived from
/// the source's hash and `journal`, so a repeated import is byte-stable) and a payload
/// limit the source's longest line fits.
pub(super) fn create_temp(
    journal: &Path,
    session_id: &str,
    scan: &SourceScan,
    options: &ImportOptions,
) -> Result<(PathBuf, Writer), ImportError> {
    let journal_id = options.journal_id.unwrap_or_else(|| {
        let mut h = blake3::Hasher::new();
        h.update(b"session-import journal id");
        h.update(scan.blake3.as_bytes());
        h.update(journal.as_os_str().as_encoded_bytes());
        let mut id = [0u8; 16];
        id.copy_from_slice(&h.finalize().as_bytes()[..16]);
        JournalId(id)
    });
    let max_payload = (scan.longest_line.saturating_mul(2).saturating_add(4096))
        .max(u64::from(DEFAULT_MAX_PAYLOAD))
        .min(u64::from(MAX_PAYLOAD_CAP)) as u32;
    let dir = parent(journal);
    Writer::create_unpublished(
        &dir,
        &temp_prefix(journal),
        journal_id,
        CreateOptions {
            session_id: Some(session_id.to_owned()),
            max_payload,
            clock: options.clock.clone(),
            vfs: options.vfs.clone(),
        },
    )
    .map_err(|source| ImportError::Create {
        path: dir.join(temp_prefix(journal)),
        source,
    })
}

/// Publishes the synced temporary journal `tmp` (its `writer` still holding the lock,
/// so no leftover cleanup, [`crate::remove_leftover_imports`], can take it from a
/// live import): links it into place as `journal` without replacing anything, then
/// removes the temporary's name and releases the lock. The directory is not synced:
/// the batch syncs it once for all its journals. On any error the temporary is
/// removed.
pub(super) fn link(
    vfs: &dyn Vfs,
    tmp: &Path,
    journal: &Path,
    writer: Writer,
) -> Result<Published, ImportError> {
    let linked = link_into_place(vfs, tmp, journal);
    cleanup(vfs, tmp);
    drop(writer);
    linked
}

/// Removes a temporary journal whose import failed (the name is ours alone).
pub(super) fn discard(vfs: &dyn Vfs, tmp: &Path, writer: Option<Writer>) {
    cleanup(vfs, tmp);
    drop(writer);
}

/// The directory of `journal`.
pub(super) fn parent(journal: &Path) -> PathBuf {
    match journal.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The temporary journals that imports left in `dir` (`.<name>.import-<id>.tmp`,
/// regular files only), whether or not an import is still writing them, sorted. Their
/// holder records (`<temporary>.lock`) are listed too, also when the temporary is gone.
pub fn leftover_imports(vfs: &dyn Vfs, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = vfs
        .read_dir(dir)?
        .into_iter()
        .filter(|e| e.kind == EntryKind::File)
        .filter(|e| {
            e.name.to_str().is_some_and(|n| {
                is_import_temp(n) || n.strip_suffix(".lock").is_some_and(is_import_temp)
            })
        })
        .map(|e| dir.join(e.name))
        .collect();
    out.sort();
    Ok(out)
}

/// Removes the import temporaries of `dir` that no live import holds (a live import
/// keeps its temporary locked until it is published), with their holder records;
/// returns what was removed. A temporary some process holds is left alone.
pub fn remove_leftover_imports(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let io = |op: &'static str, p: &Path| {
        let path = p.to_path_buf();
        move |source| ImportError::Io { path, op, source }
    };
    let mut removed = Vec::new();
    for path in leftover_imports(vfs, dir).map_err(io("read directory", dir))? {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".lock") {
            continue;
        }
        let file = match vfs.open(&path, OpenMode::ReadWrite) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io("open", &path)(e)),
        };
        if !file.try_lock().map_err(io("lock", &path))? {
            continue;
        }
        // Ours now: nobody is writing it, and nobody can start (an import never
        // reopens its temporary). Remove the name while holding the lock, and only if
        // it still names the file we locked.
        let status = file.status().map_err(io("stat", &path))?;
        if vfs.identity(&path).map_err(io("stat", &path))? == Some(status.id) {
            vfs.remove_file(&path).map_err(io("remove", &path))?;
            removed.push(path);
        }
    }
    // Holder records whose temporary is gone (removed above, or by a killed import).
    for path in leftover_imports(vfs, dir).map_err(io("read directory", dir))? {
        let Some(tmp) = path
            .to_str()
            .and_then(|p| p.strip_suffix(".lock"))
            .map(PathBuf::from)
        else {
            continue;
        };
        if !vfs.exists(&tmp).map_err(io("stat", &tmp))? {
            match vfs.remove_file(&path) {
                Ok(()) => removed.push(path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("remove", &path)(e)),
            }
        }
    }
    if !removed.is_empty() {
        vfs.sync_dir(dir).map_err(io("sync directory", dir))?;
    }
    removed.sort();
    Ok(removed)
}
