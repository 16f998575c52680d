//! Listing sessions through a per-directory catalog (`<sessions>/.catalog`).
//!
//! The catalog holds, per journal file, the journal's id, the length its record
//! describes, the last frame at that length (offset, seq, body check), and the listing
//! summary at that length. A listing reads the directory, `stat`s each journal and
//! reads the catalog. A record whose length equals the journal's length is checked
//! against the journal itself, in O(1): the journal's id (from its header frame) and
//! the last frame (verified where the record says it is, with the record's seq and
//! check). Only then is it used, and no more of the journal is read. Any other journal
//! is opened through its index (O(1) validation plus the tail), and its record is
//! replaced when everything the index covers was durable. A missing or damaged
//! catalog is rebuilt (from the per-session indexes) and the reason reported.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use session_journal::vfs::{EntryKind, OpenMode, StdVfs, Vfs};
use session_journal::{JournalId, Offset, Reader, ReaderOptions};

use crate::error::SaveError;
use crate::index::{Index, IndexStatus, OpenIndexOptions};
use crate::summary::SessionSummary;

/// The catalog's file name inside a sessions directory.
pub const CATALOG_FILE: &str = ".catalog";
/// The first 8 bytes of a catalog.
pub(crate) const CATALOG_MAGIC: [u8; 8] = [0x89, b'B', b'C', b'S', b'C', b'A', b'T', b'\n'];
/// The catalog format version.
pub(crate) const CATALOG_VERSION: u32 = 3;

/// Options of [`list_sessions`].
#[derive(Debug, Clone)]
pub struct ListOptions {
    /// The file system for directories, journals, indexes and the catalog. (Only the
    /// journal's modification time is read through std: the `Vfs` has no `stat`.)
    pub vfs: Arc<dyn Vfs>,
    /// Read and write the catalog (default true). Without it every journal is opened.
    pub use_catalog: bool,
    /// Write nothing (default false): a fresh catalog is still used, but stale or
    /// missing records are computed in memory and neither the catalog nor any index
    /// sidecar is saved. For reading tools that promise not to modify a store.
    pub read_only: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            vfs: Arc::new(StdVfs),
            use_catalog: true,
            read_only: false,
        }
    }
}

/// One listed session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The journal's path.
    pub path: PathBuf,
    /// Its summary.
    pub summary: SessionSummary,
    /// The journal file's modification time (ms), used only when the summary has no
    /// time of its own (the reference's mtime fallback).
    pub file_mtime_ms: Option<i64>,
}

/// Serializes as [`SessionInfo::to_json`]: the reference's `SessionInfo` shape.
impl Serialize for SessionInfo {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl SessionInfo {
    /// `modified` in ms.
    pub fn modified_ms(&self) -> Option<i64> {
        self.summary.modified_ms(self.file_mtime_ms)
    }

    /// The reference's JSON rendering of this `SessionInfo` (without `allMessagesText`).
    /// It is also how a `SessionInfo` serializes.
    pub fn to_json(&self) -> serde_json::Value {
        self.summary
            .to_json(&self.path.to_string_lossy(), self.file_mtime_ms)
    }
}

/// What happened to the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogStatus {
    /// Every record was fresh.
    Fresh,
    /// Some records were refreshed from indexes.
    Updated {
        /// How many.
        refreshed: u64,
    },
    /// The catalog was missing or unusable and was rebuilt.
    Rebuilt {
        /// Why.
        reason: String,
    },
    /// The catalog was not used.
    Disabled,
}

/// What a listing did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListReport {
    /// The catalog's fate.
    pub catalog: CatalogStatus,
    /// Journals opened (0 when the catalog was fresh).
    pub journals_opened: u64,
    /// Files skipped, with the reason (not a journal, no session header, unreadable).
    pub skipped: Vec<(PathBuf, String)>,
    /// Why writing the catalog failed, if it did.
    pub save_error: Option<String>,
}

/// How a listing failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// The directory could not be read.
    #[error("{path}: reading directory failed: {source}")]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct CatalogRecord {
    file: String,
    journal_id: String,
    journal_len: u64,
    /// The last frame the record covers: its offset, seq and body check (hex). It
    /// ends at `journal_len`.
    last_offset: u64,
    last_seq: u64,
    last_body_check: String,
    summary: SessionSummary,
}

impl CatalogRecord {
    /// Whether the journal at `path` (of length `len`) is the one this record
    /// describes: same length, same journal id, and the frame at `last_offset`
    /// verifies with the recorded seq and check and ends at `len`. Reads the journal's
    /// header and that one frame.
    fn describes(&self, vfs: &Arc<dyn Vfs>, path: &Path, len: u64) -> bool {
        if self.journal_len != len {
            return false;
        }
        let Ok(reader) = Reader::open(path, ReaderOptions { vfs: vfs.clone() }) else {
            return false;
        };
        if JournalId::parse(&self.journal_id) != Some(reader.journal_id()) {
            return false;
        }
        match reader.verify_frame_at(Offset(self.last_offset)) {
            Ok(info) => {
                info.seq.0 == self.last_seq
                    && info.end().0 == len
                    && info.body_check.to_string() == self.last_body_check
            }
            Err(_) => false,
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CatalogBody {
    records: Vec<CatalogRecord>,
}

fn encode_catalog(body: &CatalogBody) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&CATALOG_MAGIC);
    out.extend_from_slice(&CATALOG_VERSION.to_le_bytes());
    out.extend_from_slice(&serde_json::to_vec(body).unwrap_or_default());
    let h = blake3::hash(&out);
    out.extend_from_slice(h.as_bytes());
    out
}

fn decode_catalog(bytes: &[u8]) -> Result<CatalogBody, String> {
    if bytes.len() < 12 + 32 || bytes[..8] != CATALOG_MAGIC {
        return Err("not a catalog (bad magic or too short)".into());
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != CATALOG_VERSION {
        return Err(format!(
            "catalog version {version} unsupported (supported: {CATALOG_VERSION})"
        ));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 32);
    if blake3::hash(body).as_bytes() != trailer {
        return Err("catalog checksum mismatch".into());
    }
    serde_json::from_slice(&body[12..]).map_err(|e| format!("catalog body: {e}"))
}

/// The largest catalog read for a directory of `journals` journals: a record holds
/// a bounded excerpt of the first message plus the header's few fields, so a larger
/// file is not a catalog this crate wrote (it is rebuilt, not read into memory).
fn catalog_read_limit(journals: usize) -> u64 {
    (1 << 20) + (journals as u64).saturating_mul(64 * 1024)
}

/// Reads a derived file whole, refusing one longer than `limit` bytes.
fn read_file(vfs: &dyn Vfs, path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let f = vfs.open(path, OpenMode::Read)?;
    let len = f.len()?;
    if len > limit {
        return Err(std::io::Error::other(format!(
            "{len} bytes, more than the {limit} a catalog of this directory can need"
        )));
    }
    let n = usize::try_from(len).map_err(std::io::Error::other)?;
    let mut b = vec![0u8; n];
    f.read_exact_at(0, &mut b)?;
    Ok(b)
}

/// How [`forget`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ForgetError {
    /// The catalog could not be read or removed.
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The catalog.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The catalog could not be rewritten.
    #[error(transparent)]
    Save(#[from] SaveError),
}

/// Removes the record of the journal `journal_file` (a file name in `dir`, e.g.
/// `"<session-id>.jsonl"`) from `dir`'s catalog, durably: the catalog is rewritten
/// atomically (`0600`, synced, renamed, directory synced). A catalog that cannot be
/// decoded (damaged, another version) is removed instead, since it may still hold the
/// session's text; it is rebuilt by the next listing. No catalog, or no record for the
/// journal, is not an error. For deleting a session: call it after the journal is gone.
pub fn forget(vfs: &dyn Vfs, dir: &Path, journal_file: &str) -> Result<(), ForgetError> {
    let path = dir.join(CATALOG_FILE);
    let io = |op: &'static str| {
        let path = path.clone();
        move |source| ForgetError::Io { path, op, source }
    };
    // A catalog is read whole to be rewritten; the bound is generous, not tied to
    // the directory (whose journals are not counted here).
    let bytes = match read_file(vfs, &path, 1 << 30) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            // Unreadable (too large, not a regular file): remove it all the same.
            let _ = e;
            return remove_catalog(vfs, dir, &path).map_err(io("remove"));
        }
    };
    match decode_catalog(&bytes) {
        Ok(mut body) => {
            let before = body.records.len();
            body.records.retain(|r| r.file != journal_file);
            if body.records.len() == before {
                return Ok(());
            }
            crate::index::write_atomic(vfs, &path, &encode_catalog(&body))?;
            Ok(())
        }
        Err(_) => remove_catalog(vfs, dir, &path).map_err(io("remove")),
    }
}

fn remove_catalog(vfs: &dyn Vfs, dir: &Path, path: &Path) -> std::io::Result<()> {
    match vfs.remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        r => r?,
    }
    vfs.sync_dir(dir)
}

fn sort_infos(infos: &mut [SessionInfo]) {
    // Newest first (stable: ties keep file-name order). Invalid dates compare as the
    // reference's NaN comparisons do not reorder: treated as equal to everything would
    // break the total order, so they go last.
    infos.sort_by(|a, b| {
        let k = |i: &SessionInfo| i.modified_ms().map_or(i64::MIN, |m| m);
        k(b).cmp(&k(a))
    });
}

/// Lists the sessions (`*.jsonl` native journals) of one directory, newest first.
pub fn list_sessions(
    dir: &Path,
    options: &ListOptions,
) -> Result<(Vec<SessionInfo>, ListReport), ListError> {
    let entries = options
        .vfs
        .read_dir(dir)
        .map_err(|source| ListError::ReadDir {
            path: dir.to_path_buf(),
            source,
        })?;
    let mut files: Vec<(String, u64, Option<i64>)> = Vec::new();
    for e in entries {
        // Regular files only: a link, a FIFO or a directory named `*.jsonl` is not a
        // session (and is never opened). Non-UTF-8 names are not session names.
        if e.kind != EntryKind::File {
            continue;
        }
        let Some(name) = e.name.to_str().map(str::to_owned) else {
            continue;
        };
        // Hidden files are derived or temporary (the imports registry
        // `.imports.jsonl`, an import's `.<name>.import-*.tmp`), never sessions.
        if !name.ends_with(".jsonl") || name.starts_with('.') {
            continue;
        }
        // `lstat` through the Vfs (never following a link): the length and the mtime
        // fallback.
        let Ok(Some(md)) = options.vfs.stat(&dir.join(&name)) else {
            continue;
        };
        if md.kind != EntryKind::File {
            continue;
        }
        files.push((name, md.len, md.modified_ms));
    }
    files.sort();
    let cat_path = dir.join(CATALOG_FILE);
    let mut report = ListReport {
        catalog: CatalogStatus::Disabled,
        journals_opened: 0,
        skipped: Vec::new(),
        save_error: None,
    };
    let mut old: HashMap<String, CatalogRecord> = HashMap::new();
    let mut rebuilt_reason = None;
    if options.use_catalog {
        match read_file(
            options.vfs.as_ref(),
            &cat_path,
            catalog_read_limit(files.len()),
        ) {
            Ok(bytes) => match decode_catalog(&bytes) {
                Ok(body) => {
                    old = body
                        .records
                        .into_iter()
                        .map(|r| (r.file.clone(), r))
                        .collect();
                }
                Err(why) => rebuilt_reason = Some(why),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                rebuilt_reason = Some("catalog missing".into());
            }
            Err(e) => rebuilt_reason = Some(format!("catalog unreadable: {e}")),
        }
    }
    let mut infos = Vec::with_capacity(files.len());
    let mut records = Vec::with_capacity(files.len());
    let mut refreshed = 0u64;
    let mut changed = old.len() != files.len();
    for (name, len, mtime) in files {
        let path = dir.join(&name);
        if let Some(rec) = old.remove(&name)
            && rec.describes(&options.vfs, &path, len)
        {
            infos.push(SessionInfo {
                path,
                summary: rec.summary.clone(),
                file_mtime_ms: mtime,
            });
            records.push(rec);
            continue;
        }
        changed = true;
        report.journals_opened += 1;
        let mut open_options = OpenIndexOptions {
            vfs: options.vfs.clone(),
            ..OpenIndexOptions::default()
        };
        if options.read_only {
            open_options.save = false;
            open_options.sync_journal = false;
        }
        let opened = Index::open_or_rebuild(&path, open_options);
        let (index, ir) = match opened {
            Ok(x) => x,
            Err(e) => {
                report.skipped.push((path, e.to_string()));
                continue;
            }
        };
        let summary = index.summary();
        if !summary.has_header {
            report.skipped.push((
                path,
                "the session was never created (no session header record)".into(),
            ));
            continue;
        }
        let durable = match ir.status {
            IndexStatus::Fresh => Some(index.covered_len().0),
            _ => ir.saved_coverage,
        };
        if durable == Some(len)
            && index.covered_len().0 == len
            && let Some(last) = index.witness()
        {
            refreshed += 1;
            records.push(CatalogRecord {
                file: name,
                journal_id: index.journal_id().to_string(),
                journal_len: len,
                last_offset: last.frame.0,
                last_seq: last.seq.0,
                last_body_check: last.body_check.to_string(),
                summary: summary.clone(),
            });
        }
        infos.push(SessionInfo {
            path,
            summary,
            file_mtime_ms: mtime,
        });
    }
    if options.use_catalog {
        report.catalog = match rebuilt_reason {
            Some(reason) => CatalogStatus::Rebuilt { reason },
            None if refreshed == 0 && !changed => CatalogStatus::Fresh,
            None => CatalogStatus::Updated { refreshed },
        };
        if !options.read_only
            && (changed || matches!(report.catalog, CatalogStatus::Rebuilt { .. }))
        {
            let bytes = encode_catalog(&CatalogBody { records });
            if let Err(e) = crate::index::write_atomic(options.vfs.as_ref(), &cat_path, &bytes) {
                report.save_error = Some(e.to_string());
            }
        }
    }
    sort_infos(&mut infos);
    Ok((infos, report))
}

/// Lists the sessions of every immediate subdirectory of `root` (the reference's
/// `listAll`), newest first.
pub fn list_all(
    root: &Path,
    options: &ListOptions,
) -> Result<(Vec<SessionInfo>, Vec<ListReport>), ListError> {
    let entries = options
        .vfs
        .read_dir(root)
        .map_err(|source| ListError::ReadDir {
            path: root.to_path_buf(),
            source,
        })?;
    // Directories only, never through a link.
    let mut dirs: Vec<PathBuf> = entries
        .into_iter()
        .filter(|e| e.kind == EntryKind::Dir)
        .map(|e| root.join(e.name))
        .collect();
    dirs.sort();
    let mut all = Vec::new();
    let mut reports = Vec::new();
    for d in dirs {
        let (infos, r) = list_sessions(&d, options)?;
        all.extend(infos);
        reports.push(r);
    }
    sort_infos(&mut all);
    Ok((all, reports))
}
