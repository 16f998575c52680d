//! The import: legacy plain JSONL (v1, v2, v3) → a new native journal.
//!
//! [`import_many`] runs the sequence over batches of sources and [`import`] over a
//! batch of one; `bulk` is the sequence (stage each source, sync the batch, publish
//! it), and each step is a module: `header` reads the session header and the version,
//! `entries` streams the lines after it (each validated, migrated if its version
//! requires, queued, its line noted in the retention table), `parse` is how the reference reads one
//! line, `batch` appends one journal's queued frames, and `publish` chooses the
//! journal's name, creates its temporary and links it into place (and finds what
//! killed imports left).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::{StdVfs, Vfs};
use session_journal::{Clock, JournalId};

use crate::error::ImportError;
use crate::format::DEFAULT_MAX_LISTED_ISSUES;
use crate::lines::{LineMeta, SourceScan, scan_source};
use crate::migrate::V1State;
use crate::outcome::{ImportOutcome, IssueKind, LineIssue, SourceInfo};
use crate::registry;
use crate::table::TableBuilder;
use crate::tree_check::TreeCheck;

mod batch;
mod bulk;
mod entries;
mod header;
mod parse;
mod publish;

pub use bulk::BulkOptions;
pub use publish::{leftover_imports, remove_leftover_imports};

use bulk::Bulk;

/// Where the imported journal goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A sessions directory: the journal is `<dir>/<session-id>.jsonl`.
    Dir(PathBuf),
    /// An explicit journal path (its directory holds the imports registry).
    Journal(PathBuf),
}

impl Destination {
    fn dir(&self) -> PathBuf {
        match self {
            Destination::Dir(d) => d.clone(),
            Destination::Journal(p) => match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            },
        }
    }
}

/// Options of [`import`].
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Frame timestamps and the journal's creation time.
    pub clock: Clock,
    /// The new journal's id; by default derived from the source hash and the
    /// destination path (so a repeated import is byte-stable).
    pub journal_id: Option<JournalId>,
    /// Issues listed individually in the outcome; later ones are only counted.
    pub max_listed_issues: usize,
    /// The file system for the journal, its temporary and the imports registry (the
    /// source is read through std: it is the caller's file, wherever it is).
    pub vfs: Arc<dyn Vfs>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            clock: Clock::system(),
            journal_id: None,
            max_listed_issues: DEFAULT_MAX_LISTED_ISSUES,
            vfs: Arc::new(StdVfs),
        }
    }
}

/// Whether `id` can name a file: `[A-Za-z0-9._-]`, 1–128 bytes, not starting with
/// `.` (so never `.`, `..` or a hidden file) — the session manager's rule.
pub fn is_safe_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Imports the legacy session at `source` into a new native journal.
///
/// The source is only ever read. On any error nothing is left behind. Importing a
/// source whose BLAKE3 was imported before returns that import with
/// `already_imported: true` and writes nothing.
pub fn import(
    source: &Path,
    destination: &Destination,
    options: &ImportOptions,
) -> Result<ImportOutcome, ImportError> {
    let scan = scan_legacy(options.vfs.as_ref(), source)?;
    let single = BulkOptions {
        max_files: 1,
        sync_threads: 1,
        ..BulkOptions::default()
    };
    let mut bulk = Bulk::new(destination.clone(), options, single);
    let hash_hex = scan.blake3.to_hex();
    bulk.known = registry::Known::read(options.vfs.as_ref(), bulk.dir(), Some(&hash_hex));
    bulk.add(0, source, &scan);
    bulk.flush();
    bulk.take_done()
        .pop()
        .map(|(_, r)| r)
        .expect("a batch of one source finishes it when published")
}

/// Imports many legacy sessions into the sessions directory `dir`, in batches
/// ([`BulkOptions`]): each batch's temporary journals are made durable together, then
/// linked into place with one directory sync and one registry append — the same
/// guarantees as [`import`] of each source in turn (nothing published before its
/// bytes are durable, sources only read, a re-run converges), at a fraction of the
/// syncs. Sources that share a header id get ids as if imported one after another,
/// in order.
///
/// `on_done(i, result)` is called once per source (`sources[i]`) as it finishes (not
/// necessarily in order: after its batch is published); the results come back in the
/// sources' order.
pub fn import_many(
    sources: &[PathBuf],
    dir: &Path,
    options: &ImportOptions,
    bulk: &BulkOptions,
    on_done: &mut dyn FnMut(usize, &Result<ImportOutcome, ImportError>),
) -> Vec<Result<ImportOutcome, ImportError>> {
    let mut results: Vec<Option<Result<ImportOutcome, ImportError>>> =
        sources.iter().map(|_| None).collect();
    let mut batch = Bulk::new(Destination::Dir(dir.to_path_buf()), options, *bulk);
    batch.known = registry::Known::read(options.vfs.as_ref(), dir, None);
    let mut report = |batch: &mut Bulk<'_>, results: &mut Vec<Option<_>>| {
        for (i, r) in batch.take_done() {
            on_done(i, &r);
            results[i] = Some(r);
        }
    };
    for (i, source) in sources.iter().enumerate() {
        match scan_legacy(options.vfs.as_ref(), source) {
            Ok(scan) => batch.add(i, source, &scan),
            Err(e) => batch.refuse(i, e),
        }
        report(&mut batch, &mut results);
    }
    batch.flush();
    report(&mut batch, &mut results);
    results
        .into_iter()
        .map(|r| r.expect("every source finishes once its batch is published"))
        .collect()
}

/// Scans the source and refuses what is not legacy JSONL with content.
fn scan_legacy(vfs: &dyn Vfs, source: &Path) -> Result<SourceScan, ImportError> {
    let scan = scan_source(vfs, source)?;
    if scan.native_signature {
        return Err(ImportError::NativeJournal {
            path: source.to_path_buf(),
        });
    }
    if scan.only_whitespace {
        return Err(ImportError::Empty {
            path: source.to_path_buf(),
        });
    }
    Ok(scan)
}

/// The source as outcomes name it.
struct Source<'a> {
    /// Its absolute path.
    shown: PathBuf,
    /// Its BLAKE3, hex.
    hash_hex: String,
    scan: &'a SourceScan,
}

impl<'a> Source<'a> {
    fn new(source: &Path, scan: &'a SourceScan) -> Self {
        Self {
            shown: std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf()),
            hash_hex: scan.blake3.to_hex().to_string(),
            scan,
        }
    }

    fn info(&self, version: u32) -> SourceInfo {
        SourceInfo {
            path: self.shown.clone(),
            blake3: self.hash_hex.clone(),
            version,
            bytes: self.scan.bytes,
            lines: self.scan.lines,
        }
    }
}

fn already(done: registry::Done, source: SourceInfo) -> ImportOutcome {
    ImportOutcome {
        session_id: done.session_id,
        journal: done.journal,
        source,
        already_imported: true,
        durable: None,
        indexed: false,
        entries: 0,
        blank_lines: 0,
        crlf_lines: 0,
        ids_assigned: 0,
        issues: Vec::new(),
        issues_not_listed: 0,
    }
}

/// One import's progress: what it has read, and the issues it found.
struct Run<'a> {
    path: &'a Path,
    scan_hash: blake3::Hash,
    bytes: u64,
    version: u32,
    entries: u64,
    blank_lines: u64,
    crlf_lines: u64,
    ids_assigned: u64,
    issues: Vec<LineIssue>,
    issues_not_listed: u64,
    max_issues: usize,
    v1: Option<V1State>,
    tree: TreeCheck,
    /// The source line of every record queued so far.
    table: TableBuilder,
}

impl<'a> Run<'a> {
    fn new(path: &'a Path, scan: &SourceScan, options: &ImportOptions) -> Self {
        Self {
            path,
            scan_hash: scan.blake3,
            bytes: scan.bytes,
            version: 3,
            entries: 0,
            blank_lines: 0,
            crlf_lines: 0,
            ids_assigned: 0,
            issues: Vec::new(),
            issues_not_listed: 0,
            max_issues: options.max_listed_issues,
            v1: None,
            tree: TreeCheck::default(),
            table: TableBuilder::default(),
        }
    }

    fn issue(&mut self, line: u64, kind: IssueKind) {
        if self.issues.len() < self.max_issues {
            self.issues.push(LineIssue { line, kind });
        } else {
            self.issues_not_listed += 1;
        }
    }

    fn count_blank(&mut self, meta: LineMeta) {
        self.blank_lines += 1;
        if meta.crlf {
            self.crlf_lines += 1;
        }
    }

    /// The outcome of the finished import.
    fn outcome(self, session_id: String, journal: PathBuf, source: SourceInfo) -> ImportOutcome {
        ImportOutcome {
            session_id,
            journal,
            source,
            already_imported: false,
            durable: None,
            indexed: false,
            entries: self.entries,
            blank_lines: self.blank_lines,
            crlf_lines: self.crlf_lines,
            ids_assigned: self.ids_assigned,
            issues: self.issues,
            issues_not_listed: self.issues_not_listed,
        }
    }
}
