//! Listing sessions through a per-directory catalog (`<sessions>/.catalog`).
//!
//! The catalog holds, per journal file, the journal's status when it was recorded
//! (device, inode, length, change time), the last frame at that length (offset, seq,
//! body check) and the listing summary at that length; its bytes are in [`wire`]
//! (`docs/format.md` §3). A listing reads the directory, `lstat`s each journal and
//! reads the catalog. A record is used as it is when the journal's status equals the
//! record's and the record is not *racy* (its change time is not within
//! [`wire::RACY_WINDOW_NS`] of the catalog's stamp, the change time of the catalog's
//! temporary file taken before the listing that wrote it looked at any journal) —
//! git's "racily clean" rule: a fresh catalog opens no journal. Otherwise the record
//! is checked against the journal's content in O(1) (the journal id in its header
//! frame, the last frame verified where the record says it is, with its seq and
//! check), and a journal it does not describe is opened through its index (O(1)
//! validation plus the tail); its record is replaced when everything the index
//! covers was durable. A missing or damaged catalog is rebuilt (from the per-session
//! indexes) and the reason reported.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use session_journal::vfs::{ChangeTime, EntryKind, OpenMode, PathStatus, StdVfs, Vfs};
use session_journal::{Offset, Reader, ReaderOptions};

use crate::error::SaveError;
use crate::index::{Index, IndexStatus, OpenIndexOptions};
use crate::summary::SessionSummary;

/// The catalog's file name inside a sessions directory.
pub const CATALOG_FILE: &str = ".catalog";

pub(crate) mod wire;

/// Options of [`list_sessions`].
#[derive(Debug, Clone)]
pub struct ListOptions {
    /// The file system for directories, journals, indexes and the catalog.
    pub vfs: Arc<dyn Vfs>,
    /// Read and write the catalog (default true). Without it every journal is opened.
    pub use_catalog: bool,
    /// Write nothing (default false): a fresh catalog is still used, but stale or
    /// missing records are computed in memory and neither the catalog nor any index
    /// sidecar is saved. For reading tools that promise not to modify a store. A
    /// listing that is allowed to write but cannot (a read-only directory or file
    /// system) behaves the same and says why in [`ListReport::save_error`].
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

/// Serializes as [`SessionInfo::to_json`]: the reference's `SessionInfo` shape
/// (written straight from the fields, no JSON value built).
impl Serialize for SessionInfo {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::summary::ReferenceJson {
            summary: &self.summary,
            path: &self.path.to_string_lossy(),
            file_mtime_ms: self.file_mtime_ms,
        }
        .serialize(serializer)
    }
}

impl SessionInfo {
    /// `modified` in ms.
    pub fn modified_ms(&self) -> Option<i64> {
        self.summary.modified_ms(self.file_mtime_ms)
    }

    /// The latest `session_state` entry's state (`active`, `archived`, …), if any.
    /// Not in the reference's `SessionInfo` (nor in [`to_json`](Self::to_json)).
    pub fn session_state(&self) -> Option<&str> {
        self.summary.session_state.as_deref()
    }

    /// The latest `agent_status` entry's `status` value, as written (`summary`,
    /// `taskState`, …), if any. Not in the reference's `SessionInfo` (nor in
    /// [`to_json`](Self::to_json)).
    pub fn agent_status(&self) -> Option<&serde_json::Value> {
        self.summary.agent_status.as_deref()
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
    /// Journals opened through their index, their records being stale or missing
    /// (0 when the catalog was fresh).
    pub journals_opened: u64,
    /// Records checked against their journal's content (its header and last frame):
    /// racy records, and records whose journal's status changed (0 when the
    /// catalog was fresh and not racy).
    pub journals_checked: u64,
    /// Files skipped, with the reason (not a journal, no session header, unreadable).
    pub skipped: Vec<(PathBuf, String)>,
    /// Why the catalog was not written although the listing was allowed to write
    /// (the directory is read-only, the disk full), if it was not.
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

impl wire::Key {
    /// Whether these status fields are those of `st`: same device, inode, length and
    /// change time (a file system without change times matches nothing).
    fn same_status(&self, st: &PathStatus) -> bool {
        self.dev == st.id.dev
            && self.ino == st.id.ino
            && self.len == st.len
            && self.ctime.is_some()
            && self.ctime == st.changed
    }

    /// Whether the journal at `path` is the one this record describes, by content:
    /// same length, same journal id, and the frame at `last_offset` verifies with
    /// the recorded seq and check and ends at the length. Reads the journal's header
    /// and that one frame.
    fn describes(&self, vfs: &Arc<dyn Vfs>, path: &Path, len: u64) -> bool {
        if self.len != len {
            return false;
        }
        let Ok(reader) = Reader::open(path, ReaderOptions { vfs: vfs.clone() }) else {
            return false;
        };
        if self.journal_id != reader.journal_id().0 {
            return false;
        }
        match reader.verify_frame_at(Offset(self.last_offset)) {
            Ok(info) => {
                info.seq.0 == self.last_seq
                    && info.end().0 == len
                    && info.body_check.0 == self.last_check
            }
            Err(_) => false,
        }
    }

    /// Takes `st`'s status fields.
    fn restat(&mut self, st: &PathStatus) {
        self.dev = st.id.dev;
        self.ino = st.id.ino;
        self.len = st.len;
        self.ctime = st.changed;
    }

    /// The key of a journal whose index covers exactly `st.len` bytes and has a
    /// session header.
    fn of_index(st: &PathStatus, index: &Index, summary: &SessionSummary) -> Option<Self> {
        let last = index.witness()?;
        if index.covered_len().0 != st.len || !summary.has_header {
            return None;
        }
        let mut k = wire::Key {
            dev: 0,
            ino: 0,
            len: 0,
            ctime: None,
            journal_id: index.journal_id().0,
            last_offset: last.frame.0,
            last_seq: last.seq.0,
            last_check: last.body_check.0,
        };
        k.restat(st);
        Some(k)
    }
}

/// Whether a record whose journal changed at `ctime` is "racy" under a catalog
/// stamped `stamp`: a change within the same clock tick as the record's status could
/// leave that status unchanged, so only the journal's content can tell.
fn racy(ctime: Option<ChangeTime>, stamp: Option<ChangeTime>) -> bool {
    match (ctime, stamp) {
        (Some(c), Some(t)) => c.as_nanos() + wire::RACY_WINDOW_NS > t.as_nanos(),
        _ => true,
    }
}

/// A catalog's encoding: header, the base records (under `stamp`), then records
/// as if appended after it (unstamped).
fn encode_catalog(
    stamp: Option<ChangeTime>,
    base: &[wire::Record],
    appended: &[wire::Record],
) -> Vec<u8> {
    let mut out = vec![0u8; wire::HEADER_LEN];
    for r in base {
        wire::frame_into(r, &mut out);
    }
    let header = wire::Header {
        stamp,
        base_end: out.len() as u64,
    };
    for r in appended {
        wire::frame_into(r, &mut out);
    }
    out[..wire::HEADER_LEN].copy_from_slice(&header.encode());
    out
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
    match wire::decode(&bytes) {
        Ok(d) if d.stopped.is_none() => {
            let before = d.records.len();
            let kept: Vec<(wire::Record, bool)> = d
                .records
                .into_iter()
                .filter(|(r, _)| r.file != journal_file)
                .collect();
            if kept.len() == before {
                return Ok(());
            }
            // Base records keep their stamp, appended ones stay appended (unstamped).
            let (base, appended): (Vec<_>, Vec<_>) = kept.into_iter().partition(|(_, b)| *b);
            let strip = |v: Vec<(wire::Record, bool)>| -> Vec<wire::Record> {
                v.into_iter().map(|(r, _)| r).collect()
            };
            let bytes = encode_catalog(d.header.stamp, &strip(base), &strip(appended));
            crate::index::write_atomic(vfs, &path, &bytes)?;
            Ok(())
        }
        // Damaged (another version, a bad record): removed, since it may still
        // hold the session's text.
        _ => remove_catalog(vfs, dir, &path).map_err(io("remove")),
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
    // Newest first; ties in path order (the order they were listed in: directories,
    // then file names). Invalid dates compare as the reference's NaN comparisons do
    // not reorder: treated as equal to everything would break the total order, so
    // they go last. The keys are sorted, then the entries moved once each into
    // place (following the permutation's cycles): entries are a few hundred bytes,
    // and a stable sort of them would allocate half of them again as scratch.
    let key = |i: &SessionInfo| i.modified_ms().map_or(i64::MIN, |m| m);
    let mut order: Vec<(i64, usize)> = infos.iter().map(key).zip(0..).collect();
    order.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| infos[a.1].path.cmp(&infos[b.1].path))
    });
    // `infos[k]` is to receive what is now at `order[k].1`.
    let mut from: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
    for start in 0..from.len() {
        let mut at = start;
        while from[at] != usize::MAX {
            let src = from[at];
            from[at] = usize::MAX;
            if src == start {
                break;
            }
            infos.swap(at, src);
            at = src;
        }
    }
}

/// One journal found in the directory.
struct Found {
    name: String,
    status: PathStatus,
}

/// The names in `dir` that can be journals: regular files named `*.jsonl`, not
/// hidden, as the directory lists them.
fn journal_names(vfs: &dyn Vfs, dir: &Path) -> Result<Vec<String>, ListError> {
    let entries = vfs.read_dir(dir).map_err(|source| ListError::ReadDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut names = Vec::new();
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
        names.push(name);
    }
    Ok(names)
}

/// The journals among `names` in `dir`, sorted by name, with their status.
fn journals_in(vfs: &dyn Vfs, dir: &Path, mut names: Vec<String>) -> Vec<Found> {
    // Sorted first (in place, no scratch), so the statuses come out in order.
    names.sort_unstable();
    let mut files = Vec::with_capacity(names.len());
    // `lstat` through the Vfs (never following a link), each name relative to one
    // handle of the directory: identity, length and change time (the record's
    // freshness), and the mtime fallback.
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let statuses = vfs.stat_in(dir, &refs);
    for (name, status) in names.into_iter().zip(statuses) {
        let Ok(Some(status)) = status else {
            continue;
        };
        if status.kind != EntryKind::File {
            continue;
        }
        files.push(Found { name, status });
    }
    files
}

/// What a listing holds of a catalog record besides its listing entry.
#[derive(Clone, Copy)]
struct Held {
    key: wire::Key,
    /// Written with the header (stamped), not appended.
    base: bool,
    slot: Slot,
}

/// What became of a catalog record in a listing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// No journal of its name (yet): dropped.
    Gone,
    /// Listed, with this record (as read, re-stamped or replaced).
    Listed,
    /// Listed, with no record (its journal's index does not cover it durably).
    ListedBare,
}

/// The catalog's records, sorted by file name, one per file (a later record
/// replaces an earlier one): each as the listing entry it gives (`infos`: its path in
/// the directory and its summary) and what else the listing needs of it (`held`,
/// side by side); the catalog's stamp; whether any record was appended (or left
/// out); and why the catalog must be rewritten whole, if it must. Decoded straight
/// into listing entries, so a listing of a fresh catalog copies nothing after it.
struct OldCatalog {
    infos: Vec<SessionInfo>,
    held: Vec<Held>,
    stamp: Option<ChangeTime>,
    appended: bool,
    rebuilt: Option<String>,
}

impl OldCatalog {
    fn empty(rebuilt: Option<String>) -> Self {
        OldCatalog {
            infos: Vec::new(),
            held: Vec::new(),
            stamp: None,
            appended: false,
            rebuilt,
        }
    }
}

/// The file name a listing entry was made for.
fn file_of(info: &SessionInfo) -> &str {
    info.path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
}

/// The bytes of a listing entry's path: the entries of one directory share its
/// prefix, so these order as their file names do (no path parsing in the loops).
fn path_bytes(info: &SessionInfo) -> &[u8] {
    info.path.as_os_str().as_encoded_bytes()
}

/// The file name's bytes of an entry whose path is its directory's joined with it,
/// `cut` being where names start in such paths.
fn name_in(info: &SessionInfo, cut: usize) -> &[u8] {
    path_bytes(info).get(cut..).unwrap_or_default()
}

/// Reads `dir`'s catalog at `path` in windows (never whole: at 100,000 sessions it
/// is tens of MB), decoding each record into its listing entry.
fn read_catalog(vfs: &dyn Vfs, dir: &Path, path: &Path, journals: usize) -> OldCatalog {
    let opened = vfs
        .open(path, OpenMode::Read)
        .and_then(|f| f.len().map(|len| (f, len)));
    let (file, len) = match opened {
        Ok(x) => x,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return OldCatalog::empty(Some("catalog missing".into()));
        }
        Err(e) => return OldCatalog::empty(Some(format!("catalog unreadable: {e}"))),
    };
    let limit = catalog_read_limit(journals);
    if len > limit {
        return OldCatalog::empty(Some(format!(
            "catalog unreadable: {len} bytes, more than the {limit} a catalog of this directory can need"
        )));
    }
    let mut old = OldCatalog::empty(None);
    // Each record takes at least its frame prefix and fixed part; a catalog this
    // crate wrote holds about one per journal.
    let most = usize::try_from(len)
        .unwrap_or(usize::MAX)
        .saturating_sub(wire::HEADER_LEN)
        / (wire::FRAME_PREFIX_LEN + wire::FIXED_LEN);
    let most = most.min(journals.saturating_add(64));
    old.infos.reserve(most);
    old.held.reserve(most);
    let mut left_out = false;
    let decoded = wire::decode_with(
        len,
        |at, buf| file.read_at(at, buf),
        |r, base| {
            // A name that cannot be a journal's (see `journal_names`) never matches
            // one: not held (and the catalog is rewritten without it).
            if r.file.contains('/') || r.file.starts_with('.') || !r.file.ends_with(".jsonl") {
                left_out = true;
                return;
            }
            old.infos.push(SessionInfo {
                path: dir.join(&r.file),
                summary: r.summary,
                file_mtime_ms: None,
            });
            old.held.push(Held {
                key: r.key,
                base,
                slot: Slot::Gone,
            });
        },
    );
    match decoded {
        Ok((header, stopped)) => {
            old.stamp = header.stamp;
            old.appended = left_out || old.held.iter().any(|h| !h.base);
            match stopped {
                Some((why, true)) => old.rebuilt = Some(why),
                // A torn or clobbered append: the records before it still serve.
                Some((_, false)) => old.appended = true,
                None => {}
            }
        }
        Err(why) => return OldCatalog::empty(Some(why)),
    }
    // Base records are written in file order: only appended ones can be out of it,
    // or repeat a file (the later record wins).
    let in_order = old
        .infos
        .windows(2)
        .all(|w| path_bytes(&w[0]) < path_bytes(&w[1]));
    if !in_order {
        let mut both: Vec<(SessionInfo, Held)> = std::mem::take(&mut old.infos)
            .into_iter()
            .zip(std::mem::take(&mut old.held))
            .collect();
        // Stable, so of two records of one file the later one comes last, and
        // `dedup_by` keeps it (swapped into the place it keeps).
        both.sort_by(|a, b| path_bytes(&a.0).cmp(path_bytes(&b.0)));
        both.dedup_by(|later, kept| {
            let same = path_bytes(&later.0) == path_bytes(&kept.0);
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        (old.infos, old.held) = both.into_iter().unzip();
    }
    old
}

/// Where a writing listing's catalog goes: the temporary file, created before any
/// journal is looked at, and its change time (the new catalog's stamp).
struct Pending {
    tmp: PathBuf,
    file: Box<dyn session_journal::vfs::VfsFile>,
    stamp: Option<ChangeTime>,
}

/// Creates the temporary catalog; `Err` says why this listing cannot write.
fn begin_write(vfs: &dyn Vfs, dir: &Path) -> Result<Pending, String> {
    let (tmp, file) = vfs
        .create_temp(dir, ".catalog.save-")
        .map_err(|e| format!("{}: creating a temporary file failed: {e}", dir.display()))?;
    let stamp = match vfs.stat(&tmp) {
        Ok(Some(st)) => st.changed,
        _ => None,
    };
    Ok(Pending { tmp, file, stamp })
}

/// Writes the catalog through `p` (sync, rename over the catalog, directory sync).
fn finish_write(vfs: &dyn Vfs, dir: &Path, p: Pending, bytes: &[u8]) -> Result<(), String> {
    let cat = dir.join(CATALOG_FILE);
    let written = p
        .file
        .write_all_at(0, bytes)
        .and_then(|()| p.file.sync_data());
    drop(p.file);
    if let Err(e) = written.and_then(|()| vfs.rename(&p.tmp, &cat)) {
        let _ = vfs.remove_file(&p.tmp);
        return Err(format!(
            "{}: writing the catalog failed: {e}",
            cat.display()
        ));
    }
    vfs.sync_dir(dir)
        .map_err(|e| format!("{}: syncing the directory failed: {e}", dir.display()))
}

/// Lists the sessions (`*.jsonl` native journals) of one directory, newest first.
///
/// Each journal is `lstat`ed; its catalog record is used as it is when the status
/// matches the record exactly (device, inode, length, change time) and the record is
/// not racy; otherwise the record is checked against the journal's content (its
/// header and last frame), and a journal it does not describe is opened through its
/// index. Unless [`ListOptions::read_only`], the catalog is rewritten when that
/// changed anything (atomically, `0600`); when the directory cannot be written the
/// listing is read-only and says why in [`ListReport::save_error`].
pub fn list_sessions(
    dir: &Path,
    options: &ListOptions,
) -> Result<(Vec<SessionInfo>, ListReport), ListError> {
    let vfs = options.vfs.as_ref();
    let names = journal_names(vfs, dir)?;
    let mut report = ListReport {
        catalog: CatalogStatus::Disabled,
        journals_opened: 0,
        journals_checked: 0,
        skipped: Vec::new(),
        save_error: None,
    };
    // The new catalog's stamp is taken before any journal is looked at: a journal
    // changed after its status was read then has a change time at or after it.
    let mut pending = None;
    if options.use_catalog && !options.read_only {
        match begin_write(vfs, dir) {
            Ok(p) => pending = Some(p),
            Err(why) => report.save_error = Some(why),
        }
    }
    let new_stamp = pending.as_ref().and_then(|p| p.stamp);
    let cat_path = dir.join(CATALOG_FILE);
    // The journals' statuses and the catalog's records are independent: read them
    // side by side (each is about a quarter of a fresh listing).
    let journals = names.len();
    // The records are decoded on this thread, where the directory was read: the
    // memory its entries were given back is reused for the records (at 100,000
    // sessions the two together are most of a listing's peak).
    let (files, old) = std::thread::scope(|scope| {
        let statuses = scope.spawn(|| journals_in(vfs, dir, names));
        let old = if options.use_catalog {
            read_catalog(vfs, dir, &cat_path, journals)
        } else {
            OldCatalog::empty(None)
        };
        let files = statuses
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (files, old)
    });
    let OldCatalog {
        mut infos,
        mut held,
        stamp,
        appended,
        rebuilt,
    } = old;
    // Journals with no record of their name, listed after the catalog's ones; with
    // their record's key when one can be written.
    let mut added: Vec<(SessionInfo, Option<wire::Key>)> = Vec::new();
    let mut refreshed = 0u64;
    // Whether writing the catalog would change what a later listing does (a
    // journal that gets no record, such as one without a session header, does not
    // make it worth rewriting every time).
    let mut worth_writing = appended;
    // Records and files are both sorted by name: one merge pass pairs them. An
    // entry's name is its path's bytes after `cut` (all are `dir.join(name)`).
    let cut = dir.join("x").as_os_str().len() - 1;
    let mut j = 0;
    for Found { name, status } in files {
        let mtime = status.modified_ms;
        // Records of files before this one name journals that are gone.
        while j < infos.len() && name_in(&infos[j], cut) < name.as_bytes() {
            worth_writing = true;
            j += 1;
        }
        let mine = (j < infos.len() && name_in(&infos[j], cut) == name.as_bytes()).then_some(j);
        if let Some(m) = mine {
            j += 1;
            let h = &mut held[m];
            // Appended records carry no stamp.
            let fresh = h.key.same_status(&status) && !racy(h.key.ctime, stamp.filter(|_| h.base));
            // A record of another length describes another journal: no check.
            let check = !fresh && h.key.len == status.len;
            report.journals_checked += u64::from(check);
            if fresh || (check && h.key.describes(&options.vfs, &infos[m].path, status.len)) {
                if !fresh {
                    // Checked by content: its status as of now, under the new stamp,
                    // spares the next listing the check unless it is still racy.
                    worth_writing |=
                        !racy(status.changed, new_stamp) || !h.key.same_status(&status);
                    h.key.restat(&status);
                }
                h.slot = Slot::Listed;
                infos[m].file_mtime_ms = mtime;
                continue;
            }
            // Its record is replaced or dropped.
            worth_writing = true;
        }
        let path = match mine {
            Some(m) => infos[m].path.clone(),
            None => dir.join(&name),
        };
        report.journals_opened += 1;
        let mut open_options = OpenIndexOptions {
            vfs: options.vfs.clone(),
            ..OpenIndexOptions::default()
        };
        if options.read_only || pending.is_none() {
            open_options.save = false;
            open_options.sync_journal = false;
        }
        let (index, ir) = match Index::open_or_rebuild(&path, open_options) {
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
        // A record only for what the index covers and knows durable: a catalog
        // never describes bytes a crash could take back.
        let key = if durable == Some(status.len) {
            wire::Key::of_index(&status, &index, &summary)
        } else {
            None
        };
        if key.is_some() {
            refreshed += 1;
            worth_writing = true;
        }
        let info = SessionInfo {
            path,
            summary,
            file_mtime_ms: mtime,
        };
        match mine {
            Some(m) => {
                infos[m] = info;
                held[m].slot = match key {
                    Some(k) => {
                        held[m].key = k;
                        Slot::Listed
                    }
                    None => Slot::ListedBare,
                };
            }
            None => added.push((info, key)),
        }
    }
    // Records of journals no longer in the directory are dropped.
    worth_writing |= j < infos.len();
    if options.use_catalog {
        report.catalog = match rebuilt {
            Some(reason) => {
                worth_writing = true;
                CatalogStatus::Rebuilt { reason }
            }
            None if refreshed == 0 && report.journals_opened == 0 => CatalogStatus::Fresh,
            None => CatalogStatus::Updated { refreshed },
        };
    }
    if let Some(p) = pending {
        if worth_writing {
            let bytes = encode_listing(p.stamp, &infos, &held, &added);
            if let Err(e) = finish_write(vfs, dir, p, &bytes) {
                report.save_error = Some(e);
            }
        } else {
            drop(p.file);
            let _ = vfs.remove_file(&p.tmp);
        }
    }
    // The listed entries, in place (a fresh catalog's listing keeps them all).
    let mut slots = held.iter().map(|h| h.slot);
    infos.retain(|_| slots.next().is_some_and(|s| s != Slot::Gone));
    drop(held);
    infos.extend(added.into_iter().map(|(info, _)| info));
    sort_infos(&mut infos);
    Ok((infos, report))
}

/// A listing's new catalog, under `stamp`: the records of the entries listed with
/// one, in file order (the catalog's listed entries and the added ones merged).
fn encode_listing(
    stamp: Option<ChangeTime>,
    infos: &[SessionInfo],
    held: &[Held],
    added: &[(SessionInfo, Option<wire::Key>)],
) -> Vec<u8> {
    let mut out = vec![0u8; wire::HEADER_LEN];
    let mut kept = infos
        .iter()
        .zip(held)
        .filter(|(_, h)| h.slot == Slot::Listed)
        .map(|(i, h)| (i, h.key))
        .peekable();
    let mut new = added
        .iter()
        .filter_map(|(i, k)| k.map(|k| (i, k)))
        .peekable();
    loop {
        let next = match (kept.peek(), new.peek()) {
            (Some(a), Some(b)) if path_bytes(a.0) <= path_bytes(b.0) => kept.next(),
            (Some(_), Some(_)) => new.next(),
            (Some(_), None) => kept.next(),
            (None, _) => new.next(),
        };
        let Some((info, key)) = next else { break };
        wire::frame_parts_into(file_of(info), &key, &info.summary, &mut out);
    }
    let header = wire::Header {
        stamp,
        base_end: out.len() as u64,
    };
    out[..wire::HEADER_LEN].copy_from_slice(&header.encode());
    out
}

/// Records the journal at `journal`, which `index` covers exactly, in its
/// directory's catalog: one record appended to the end of the file, O(1) in the
/// number of sessions (for a session just closed). The appended record carries no
/// stamp, so listings check it against the journal's content until one of them
/// rewrites the catalog. Nothing is done (`Ok(false)`) without a catalog, with one
/// this version cannot read, when the index does not cover the whole journal, or
/// when the catalog's appended records already outweigh its base (the next listing
/// rewrites it). Concurrent appends can clobber each other: a record that does not
/// check is ignored with everything after it, which costs the next listing a look
/// at those journals, never an answer.
pub fn note(vfs: &dyn Vfs, journal: &Path, index: &Index) -> Result<bool, SaveError> {
    let io = SaveError::io;
    let (Some(dir), Some(name)) = (
        journal.parent(),
        journal.file_name().and_then(|n| n.to_str()),
    ) else {
        return Ok(false);
    };
    let Some(status) = vfs.stat(journal).map_err(io("stat", journal))? else {
        return Ok(false);
    };
    let summary = index.summary();
    let Some(key) = wire::Key::of_index(&status, index, &summary) else {
        return Ok(false);
    };
    let mut framed = Vec::new();
    if !wire::frame_parts_into(name, &key, &summary, &mut framed) {
        return Ok(false);
    }
    let cat = dir.join(CATALOG_FILE);
    let f = match vfs.open(&cat, OpenMode::ReadWrite) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io("open", &cat)(e)),
    };
    let len = f.len().map_err(io("stat", &cat))?;
    let mut head = [0u8; wire::HEADER_LEN];
    if f.read_exact_at(0, &mut head).is_err() {
        return Ok(false);
    }
    let Ok(header) = wire::Header::decode(&head, len) else {
        return Ok(false);
    };
    if len - header.base_end > header.base_end + (1 << 20) {
        return Ok(false);
    }
    f.write_all_at(len, &framed).map_err(io("write", &cat))?;
    Ok(true)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Modified;

    /// The in-place sort gives the order of a stable sort by (modified desc) of
    /// entries in path order, ties and Invalid Dates included.
    #[test]
    fn sorting_in_place_matches_a_stable_sort_in_path_order() {
        let mut x = 7u64;
        let mut infos: Vec<SessionInfo> = (0..500)
            .map(|i| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                let m = match (x >> 40) % 7 {
                    0 => Modified::At(None),
                    1 => Modified::FileMtime,
                    r => Modified::At(Some((r as i64) * 1000)),
                };
                let mut s = crate::summary::SessionSummary::from_aggregates(&Default::default());
                s.modified = m;
                SessionInfo {
                    path: PathBuf::from(format!("/s/{:04}.jsonl", (i * 37) % 500)),
                    summary: s,
                    file_mtime_ms: (i % 3 == 0).then_some(5000),
                }
            })
            .collect();
        let mut expected = infos.clone();
        expected.sort_by(|a, b| a.path.cmp(&b.path));
        expected.sort_by(|a, b| {
            let k = |i: &SessionInfo| i.modified_ms().map_or(i64::MIN, |m| m);
            k(b).cmp(&k(a))
        });
        sort_infos(&mut infos);
        assert_eq!(infos, expected);
    }
}
