//! The import: legacy plain JSONL (v1, v2, v3) → a new native journal.
//!
//! [`import`] is the sequence; each step is a module: `header` reads the session
//! header and the version, `entries` streams the lines after it (each validated,
//! migrated if its version requires, queued with its retention record), `parse` is
//! how the reference reads one line, `batch` appends queued frames, and `publish`
//! chooses the journal's name, writes it as a temporary and links it into place
//! (and finds what killed imports left).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_journal::vfs::{StdVfs, Vfs};
use session_journal::{Clock, JournalId};

use crate::error::ImportError;
use crate::format::DEFAULT_MAX_LISTED_ISSUES;
use crate::lines::{LineMeta, LineReader, SourceScan, scan_source};
use crate::migrate::V1State;
use crate::outcome::{ImportOutcome, IssueKind, LineIssue, SourceInfo};
use crate::registry;
use crate::tree_check::TreeCheck;

mod batch;
mod entries;
mod header;
mod parse;
mod publish;

pub use publish::{leftover_imports, remove_leftover_imports};

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
    let vfs = &options.vfs;
    let scan = scan_legacy(vfs.as_ref(), source)?;
    let src = Source::new(source, &scan);
    let dir = destination.dir();
    if let Some(done) = registry::find(vfs, &dir, &src.hash_hex) {
        let version = done.version;
        return Ok(already(done, src.info(version)));
    }
    let mut reader = LineReader::open(vfs.as_ref(), source)?;
    let mut run = Run::new(source, &scan, options);
    let mut header = run.read_header(&mut reader)?;
    let (session_id, journal) = match publish::place(vfs, destination, &mut run, &header, &src)? {
        publish::Place::New {
            session_id,
            journal,
        } => (session_id, journal),
        publish::Place::Imported(done) => {
            return Ok(converged(vfs.as_ref(), &dir, done, &src, header.version));
        }
    };
    header.assign_id(&session_id);
    let (tmp, writer) = publish::create_temp(&journal, &session_id, &scan, options)?;
    let written = run.write_all(&mut reader, writer, &tmp, header, &src.shown, &src.hash_hex);
    if publish::publish(vfs.as_ref(), &tmp, &journal, written)? == publish::Published::Raced {
        // Another import of the same source (or another session of that id) got
        // there first: concurrent imports of one source converge on one journal.
        return match registry::check_journal(vfs, &journal, &src.hash_hex) {
            Some(done) => Ok(converged(vfs.as_ref(), &dir, done, &src, run.version)),
            None => Err(ImportError::DestinationExists { path: journal }),
        };
    }
    let done = registry::Done {
        session_id: session_id.clone(),
        journal: journal.clone(),
        version: run.version,
    };
    registry::record(vfs.as_ref(), &dir, &done, &src.hash_hex);
    let info = src.info(run.version);
    Ok(run.outcome(session_id, journal, info))
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

/// An import of this source that is already in place: recorded in the registry (it
/// was found another way) and returned as the outcome.
fn converged(
    vfs: &dyn Vfs,
    dir: &Path,
    done: registry::Done,
    src: &Source<'_>,
    version: u32,
) -> ImportOutcome {
    registry::record(vfs, dir, &done, &src.hash_hex);
    already(done, src.info(version))
}

fn already(done: registry::Done, source: SourceInfo) -> ImportOutcome {
    ImportOutcome {
        session_id: done.session_id,
        journal: done.journal,
        source,
        already_imported: true,
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
            entries: self.entries,
            blank_lines: self.blank_lines,
            crlf_lines: self.crlf_lines,
            ids_assigned: self.ids_assigned,
            issues: self.issues,
            issues_not_listed: self.issues_not_listed,
        }
    }
}
