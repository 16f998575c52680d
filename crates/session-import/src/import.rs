//! The import: legacy plain JSONL (v1, v2, v3) → a new native journal.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use session_journal::format::{DEFAULT_MAX_PAYLOAD, MAX_PAYLOAD_CAP};
use session_journal::vfs::{EntryKind, OpenMode, StdVfs, Vfs};
use session_journal::{
    Clock, CreateOptions, Durability, FrameKind, JournalId, NewFrame, Tag, Writer,
};
use session_types::json::{find_lone_surrogates, replace_lone_surrogates};
use session_types::{EntryType, Envelope, ParseErrorKind};

use crate::error::ImportError;
use crate::format::{
    BATCH_BYTES, DEFAULT_MAX_LISTED_ISSUES, ENTRY, KIND_IMPORT_SOURCE, KIND_RETENTION,
    RetentionRecord, SESSION_HEADER, SourceRecord, id_tag,
};
use crate::lines::{LineMeta, LineReader, SourceScan, scan_source};
use crate::migrate::{
    Slot, V1State, header_version, migrate_header, migrate_v1_entry, rename_hook_message,
    to_js_json,
};
use crate::outcome::{ImportOutcome, IssueKind, LineIssue, SourceInfo};
use crate::registry;
use crate::tree_check::TreeCheck;

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

/// `<id>-<first 8 hex of the source's BLAKE3>`, or `legacy-<hash>` if that is too long.
fn derived_session_id(id: &str, source_hash_hex: &str) -> String {
    let candidate = format!("{id}-{}", &source_hash_hex[..8]);
    if is_safe_session_id(&candidate) {
        candidate
    } else {
        format!("legacy-{}", &source_hash_hex[..32])
    }
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
    let shown_source = std::path::absolute(source).unwrap_or_else(|_| source.to_path_buf());
    let scan = scan_source(options.vfs.as_ref(), source)?;
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
    let hash_hex = scan.blake3.to_hex().to_string();
    let dir = destination.dir();
    let info = |version: u32| SourceInfo {
        path: shown_source.clone(),
        blake3: hash_hex.clone(),
        version,
        bytes: scan.bytes,
        lines: scan.lines,
    };
    let vfs = &options.vfs;
    if let Some(done) = registry::find(vfs, &dir, &hash_hex) {
        let version = done.version;
        return Ok(already(done, info(version)));
    }

    let mut reader = LineReader::open(options.vfs.as_ref(), source)?;
    let mut run = Run::new(source, &scan, options);
    let header = run.read_header(&mut reader)?;
    let session_id = if is_safe_session_id(&header.id) {
        header.id.clone()
    } else {
        let h = blake3::hash(
            &[
                b"session-import session id".as_slice(),
                scan.blake3.as_bytes(),
            ]
            .concat(),
        );
        format!("legacy-{}", &h.to_hex()[..32])
    };
    let mut session_id = session_id;
    let mut journal = match destination {
        Destination::Dir(d) => d.join(format!("{session_id}.jsonl")),
        Destination::Journal(p) => p.clone(),
    };
    let exists = |p: &Path| {
        vfs.exists(p).map_err(|source| ImportError::Io {
            path: p.to_path_buf(),
            op: "stat",
            source,
        })
    };
    if exists(&journal)? {
        if let Some(done) = registry::check_journal(vfs, &journal, &hash_hex) {
            registry::record(vfs.as_ref(), &dir, &done, &hash_hex);
            return Ok(already(done, info(header.version)));
        }
        // Another source already holds this session id in the directory (legacy
        // files can share ids, e.g. copies edited by hand). Import under an id
        // derived from this source's content, and say so; the header record itself
        // stays byte-exact.
        let Destination::Dir(d) = destination else {
            return Err(ImportError::DestinationExists { path: journal });
        };
        let derived = derived_session_id(&session_id, &hash_hex);
        journal = d.join(format!("{derived}.jsonl"));
        if exists(&journal)? {
            if let Some(done) = registry::check_journal(vfs, &journal, &hash_hex) {
                registry::record(vfs.as_ref(), &dir, &done, &hash_hex);
                return Ok(already(done, info(header.version)));
            }
            return Err(ImportError::DestinationExists { path: journal });
        }
        run.issue(
            header.line.number,
            IssueKind::SessionIdTaken {
                id: session_id.clone(),
                used: derived.clone(),
            },
        );
        session_id = derived;
    }

    let tmp = temp_path(&journal);
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
    let writer = Writer::create(
        &tmp,
        journal_id,
        CreateOptions {
            session_id: Some(session_id.clone()),
            max_payload,
            clock: options.clock.clone(),
            vfs: vfs.clone(),
        },
    )
    .map_err(|source| ImportError::Create {
        path: tmp.clone(),
        source,
    });
    let writer = match writer {
        Ok(w) => w,
        Err(e) => {
            cleanup(vfs.as_ref(), &tmp);
            return Err(e);
        }
    };
    let written = run.write_all(&mut reader, writer, &tmp, header, &shown_source, &hash_hex);
    // The temporary stays locked by its writer until it is linked into place and its
    // name removed, so no leftover cleanup ([`crate::remove_leftover_imports`]) can
    // take it from a live import.
    let published = written.and_then(|writer| {
        let linked = publish(vfs.as_ref(), &tmp, &journal);
        cleanup(vfs.as_ref(), &tmp);
        drop(writer);
        linked
    });
    let published = match published {
        Err(e) => {
            cleanup(vfs.as_ref(), &tmp);
            return Err(e);
        }
        Ok(p) => p,
    };
    sync_dir(vfs.as_ref(), &journal)?;
    if published == Published::Raced {
        // Another import of the same source (or another session of that id) got
        // there first: concurrent imports of one source converge on one journal.
        return match registry::check_journal(vfs, &journal, &hash_hex) {
            Some(done) => {
                registry::record(vfs.as_ref(), &dir, &done, &hash_hex);
                Ok(already(done, info(run.version)))
            }
            None => Err(ImportError::DestinationExists { path: journal }),
        };
    }
    let done = registry::Done {
        session_id: session_id.clone(),
        journal: journal.clone(),
        version: run.version,
    };
    registry::record(vfs.as_ref(), &dir, &done, &hash_hex);
    Ok(ImportOutcome {
        session_id,
        journal,
        source: info(run.version),
        already_imported: false,
        entries: run.entries,
        blank_lines: run.blank_lines,
        crlf_lines: run.crlf_lines,
        ids_assigned: run.ids_assigned,
        issues: run.issues,
        issues_not_listed: run.issues_not_listed,
    })
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

/// What marks an import's temporary journal: `.<journal name>.import-<16 hex>.tmp`.
const TEMP_MARK: &str = ".import-";

/// A fresh, unpredictable temporary name for the journal `journal`, in its directory.
fn temp_path(journal: &Path) -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = journal
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(128).collect::<String>())
        // tidy: not an entry type (a file name for a journal path without one)
        .unwrap_or_else(|| "session".to_owned());
    // std's per-process random SipHash keys over a counter, the process and the time.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    journal.with_file_name(format!(".{name}{TEMP_MARK}{:016x}.tmp", h.finish()))
}

/// Whether `name` is an import's temporary journal (`.<name>.import-<id>.tmp`, where
/// `<id>` is 16 hex digits, or `<pid>-<nanos>` as written before).
pub(crate) fn is_import_temp(name: &str) -> bool {
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
enum Published {
    /// The journal is in place.
    Linked,
    /// Something was already at the journal's name.
    Raced,
}

/// Gives the synced temporary journal its final name without replacing anything.
fn publish(vfs: &dyn Vfs, tmp: &Path, journal: &Path) -> Result<Published, ImportError> {
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

/// Syncs the directory of `journal`.
fn sync_dir(vfs: &dyn Vfs, journal: &Path) -> Result<(), ImportError> {
    let dir = match journal.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    vfs.sync_dir(&dir).map_err(|source| ImportError::Io {
        path: dir.clone(),
        op: "sync directory",
        source,
    })
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

/// The session header as read from the source.
pub(crate) struct Header {
    id: String,
    version: u32,
    line: LineMeta,
    payload: Vec<u8>,
    changed: bool,
    /// JavaScript whitespace after the header record: only the file's end may hold it.
    trail: bool,
}

/// How a line reads as JSON.
enum Parsed<'a> {
    Object(Line<'a>),
    Bad(IssueKind),
}

/// A line that reads as a JSON object, and what is odd about its bytes.
struct Line<'a> {
    env: Envelope<'a>,
    /// Column of the first lone surrogate escape.
    surrogate: Option<usize>,
    /// Column of the first invalid UTF-8 byte.
    invalid_utf8: Option<usize>,
    /// JavaScript whitespace JSON refuses before the object (only allowed on the
    /// file's first record: the reference trims the whole file).
    lead: bool,
    /// The same after the object (only allowed on the file's last record).
    trail: bool,
}

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

    /// Reads lines up to and including the header; refuses what is not a session.
    fn read_header(&mut self, reader: &mut LineReader<'_>) -> Result<Header, ImportError> {
        let mut first_bad: Option<(u64, String)> = None;
        loop {
            let Some((meta, buf)) = reader.next_line()? else {
                let (line, reason) = first_bad.unwrap_or((0, "no content".to_owned()));
                return Err(ImportError::NotJsonl {
                    path: self.path.to_path_buf(),
                    line,
                    reason,
                });
            };
            if is_blank(buf) {
                self.count_blank(meta);
                continue;
            }
            if meta.crlf {
                self.crlf_lines += 1;
            }
            let parsed = parse_line(buf, meta, first_bad.is_none());
            let Line {
                env,
                surrogate,
                invalid_utf8,
                lead,
                trail,
            } = match parsed {
                Parsed::Bad(kind) => {
                    first_bad.get_or_insert((meta.number, kind.to_string()));
                    self.issue(meta.number, kind);
                    continue;
                }
                Parsed::Object(line) => line,
            };
            let found = describe(&env);
            let header_id = match (env.is_header(), env.id.as_deref()) {
                (true, Some(id)) => id.to_owned(),
                _ => {
                    return Err(ImportError::NoHeader {
                        path: self.path.to_path_buf(),
                        line: meta.number,
                        found,
                    });
                }
            };
            drop(env);
            if lead {
                self.issue(meta.number, IssueKind::OuterWhitespace { place: "before" });
            }
            if let Some(column) = invalid_utf8 {
                self.issue(meta.number, IssueKind::InvalidUtf8 { column });
            }
            let Some(mut map) = parse_map(buf) else {
                return Err(ImportError::NoHeader {
                    path: self.path.to_path_buf(),
                    line: meta.number,
                    found: "a session header nested too deeply to read".to_owned(),
                });
            };
            let (version, odd) = header_version(map.get("version"));
            if odd {
                let found = map
                    .get("version")
                    .map(ToString::to_string)
                    .unwrap_or_default();
                self.issue(
                    meta.number,
                    IssueKind::HeaderVersionRead {
                        found,
                        read_as: version,
                    },
                );
            }
            self.version = version;
            let (payload, changed) = if version < 3 {
                migrate_header(&mut map);
                self.issue(meta.number, IssueKind::HeaderVersionSet { from: version });
                if let Some(column) = surrogate {
                    self.issue(meta.number, IssueKind::LoneSurrogateReplaced { column });
                }
                (to_js_json(map).into_bytes(), true)
            } else {
                if let Some(column) = surrogate {
                    self.issue(meta.number, IssueKind::LoneSurrogate { column });
                }
                (buf.to_vec(), false)
            };
            if version == 1 {
                self.v1 = Some(V1State::new(*self.scan_hash.as_bytes()));
            }
            return Ok(Header {
                id: header_id,
                version,
                line: meta,
                payload,
                changed,
                trail,
            });
        }
    }

    fn count_blank(&mut self, meta: LineMeta) {
        self.blank_lines += 1;
        if meta.crlf {
            self.crlf_lines += 1;
        }
    }

    /// Streams the header, the source record and every entry into `writer`, then syncs
    /// it; returns it still holding the temporary's lock.
    fn write_all(
        &mut self,
        reader: &mut LineReader<'_>,
        mut writer: Writer,
        tmp: &Path,
        header: Header,
        shown_source: &Path,
        hash_hex: &str,
    ) -> Result<Writer, ImportError> {
        let source_record = SourceRecord {
            record_type: "import_source".to_owned(),
            path: shown_source.to_string_lossy().into_owned(),
            blake3: hash_hex.to_owned(),
            source_version: header.version,
            bytes: self.bytes,
            header_line: header.line.number,
            header_changed: header.changed,
        };
        let mut batch = Batch::default();
        batch.push(SESSION_HEADER, Tag::default(), &header.payload);
        batch.push(
            KIND_IMPORT_SOURCE,
            Tag::default(),
            serde_json::to_string(&source_record)
                .unwrap_or_default()
                .as_bytes(),
        );
        // A record followed by JavaScript whitespace that JSON refuses (U+00A0…) is the
        // reference's only if nothing but whitespace follows it (its `trim()` of the
        // whole file removes the whitespace; `JSON.parse` refuses it anywhere else): it
        // waits here until the next non-blank line or the end of the file decides.
        let mut pending: Option<(LineMeta, Vec<u8>)> = None;
        let header_line = header.line.number;
        let header_trail = header.trail;
        while let Some((meta, buf)) = reader.next_line()? {
            if is_blank(buf) {
                self.count_blank(meta);
                continue;
            }
            if header_trail {
                return Err(ImportError::NoHeader {
                    path: self.path.to_path_buf(),
                    line: header_line,
                    found: "a session header followed by whitespace that JSON.parse refuses (only the file's end may hold it)".to_owned(),
                });
            }
            if let Some((m, line)) = pending.take() {
                self.issue(m.number, trailing_whitespace_refused(&line));
            }
            if meta.crlf {
                self.crlf_lines += 1;
            }
            if odd_trailing_whitespace(buf) {
                pending = Some((meta, buf.to_vec()));
                continue;
            }
            self.take_line(buf, meta, &mut batch);
            if batch.bytes.len() >= BATCH_BYTES {
                batch.flush_all_but_last(&mut writer, tmp, meta.number)?;
            }
        }
        if header_trail {
            self.issue(header_line, IssueKind::OuterWhitespace { place: "after" });
        }
        if let Some((meta, buf)) = pending {
            self.take_line(&buf, meta, &mut batch);
        }
        batch.finish(&mut writer, tmp, reader.lines())?;
        let found = reader.hash();
        if found != self.scan_hash {
            return Err(ImportError::SourceChanged {
                path: self.path.to_path_buf(),
                expected: self.scan_hash.to_hex().to_string(),
                found: found.to_hex().to_string(),
            });
        }
        writer.sync().map_err(|source| ImportError::Append {
            path: tmp.to_path_buf(),
            line: reader.lines(),
            source,
        })?;
        let tree = std::mem::take(&mut self.tree);
        for issue in tree.finish() {
            self.issue(issue.line, issue.kind);
        }
        self.issues.sort_by_key(|i| i.line);
        Ok(writer)
    }

    /// Takes one non-blank line after the header: validates it, migrates it if the
    /// source version requires, and queues its record and retention frames.
    fn take_line(&mut self, buf: &[u8], meta: LineMeta, batch: &mut Batch) {
        let n = meta.number;
        let Line {
            env,
            surrogate,
            invalid_utf8,
            trail,
            ..
        } = match parse_line(buf, meta, false) {
            Parsed::Bad(IssueKind::NotAnObject) if self.v1.is_none() => {
                // JSON.parse takes it and getEntries() holds it (the default leaf
                // when it is last): kept byte-exact as an entry without an id.
                self.entries += 1;
                self.issue(n, IssueKind::NotAnObjectKept);
                batch.push(ENTRY, Tag::default(), buf);
                batch.push_retention(n, false);
                return;
            }
            Parsed::Bad(kind) => {
                if let Some(v1) = &mut self.v1
                    && matches!(kind, IssueKind::NotAnObject)
                {
                    // JSON.parse takes it: it holds a slot in the v1 index array.
                    v1.slots.push(Slot::Other);
                }
                self.issue(n, kind);
                return;
            }
            Parsed::Object(line) => line,
        };
        if trail {
            // Only the file's last record gets here with it (see `write_all`).
            self.issue(n, IssueKind::OuterWhitespace { place: "after" });
        }
        if let Some(column) = invalid_utf8 {
            self.issue(n, IssueKind::InvalidUtf8 { column });
        }
        let is_session = env.is_header();
        match env.known_type() {
            None if is_session => self.issue(n, IssueKind::ExtraHeader),
            Some(EntryType::SessionState) => {
                let state = session_state(buf);
                self.issue(n, IssueKind::LifecycleClaim { state });
            }
            Some(_) => {}
            None => {
                let entry_type = env.entry_type.as_deref().map(str::to_owned);
                self.issue(n, IssueKind::UnknownType { entry_type });
            }
        }
        let needs_change = match self.version {
            1 => true,
            2 => {
                is_session
                    || (env.known_type() == Some(EntryType::Message)
                        && env.role() == Some("hookMessage"))
            }
            _ => false,
        };
        self.entries += 1;
        if !needs_change {
            if let Some(column) = surrogate {
                self.issue(n, IssueKind::LoneSurrogate { column });
            }
            if !is_session {
                match env.id.as_deref() {
                    Some(id) => {
                        if let Some(dup) = self.tree.add(n, id, env.parent_id.as_deref()) {
                            self.issue(n, dup);
                        }
                    }
                    None => self.issue(n, IssueKind::MissingId),
                }
            }
            let (kind, tag) = kind_and_tag(is_session, env.id.as_deref());
            batch.push(kind, tag, buf);
            batch.push_retention(n, false);
            return;
        }
        drop(env);
        let Some(mut map) = parse_map(buf) else {
            self.entries -= 1;
            self.issue(
                n,
                IssueKind::InvalidJson {
                    column: 1,
                    message: "nesting too deep to migrate".to_owned(),
                },
            );
            return;
        };
        if let Some(column) = surrogate {
            self.issue(n, IssueKind::LoneSurrogateReplaced { column });
        }
        if is_session {
            migrate_header(&mut map);
            if let Some(v1) = &mut self.v1 {
                v1.slots.push(Slot::Session);
            }
            self.issue(n, IssueKind::HeaderVersionSet { from: self.version });
        } else if let Some(v1) = &mut self.v1 {
            let notes = migrate_v1_entry(&mut map, n, v1);
            self.ids_assigned += 1;
            for note in notes {
                self.issue(n, note);
            }
            let id = map.get("id").and_then(Value::as_str).unwrap_or_default();
            let parent = map.get("parentId").and_then(Value::as_str);
            // Derived ids are unique within the file: no duplicate can arise.
            let _ = self.tree.add(n, id, parent);
        } else {
            if rename_hook_message(&mut map) {
                self.issue(n, IssueKind::HookMessageRenamed);
            }
            match map.get("id").and_then(Value::as_str) {
                Some(id) => {
                    let parent = map.get("parentId").and_then(Value::as_str);
                    if let Some(dup) = self.tree.add(n, id, parent) {
                        self.issue(n, dup);
                    }
                }
                None => self.issue(n, IssueKind::MissingId),
            }
        }
        let (kind, tag) = kind_and_tag(is_session, map.get("id").and_then(Value::as_str));
        batch.push(kind, tag, to_js_json(map).as_bytes());
        batch.push_retention(n, true);
    }
}

/// A later `session` line is a header frame (readers take the first one); an entry
/// frame is tagged with its id.
fn kind_and_tag(is_session: bool, id: Option<&str>) -> (FrameKind, Tag) {
    match (is_session, id) {
        (true, _) => (SESSION_HEADER, Tag::default()),
        (false, Some(id)) => (ENTRY, id_tag(id)),
        (false, None) => (ENTRY, Tag::default()),
    }
}

/// Whether a line is blank to the reference (`!line.trim()`: JavaScript whitespace,
/// U+00A0 and U+3000 included).
fn is_blank(buf: &[u8]) -> bool {
    match buf.iter().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(b) if b.is_ascii() && *b != 0x0b => false,
        Some(_) => session_types::js::is_blank(&String::from_utf8_lossy(buf)),
    }
}

fn is_json_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Columns (1-based, in the decoded text) of JavaScript whitespace that JSON refuses
/// right before and right after the value.
fn odd_edges(text: &str) -> (Option<usize>, Option<usize>) {
    let start = text.len() - text.trim_start_matches(is_json_whitespace).len();
    let core = text.trim_matches(is_json_whitespace);
    let js = session_types::js::is_whitespace;
    let lead = core.chars().next().filter(|c| js(*c)).map(|_| start + 1);
    let trail = core
        .chars()
        .next_back()
        .filter(|c| js(*c))
        .map(|c| start + core.len() - c.len_utf8() + 1);
    (lead, trail)
}

/// Whether a line ends in JavaScript whitespace that JSON refuses (cheap unless its
/// last non-blank byte is not ASCII).
fn odd_trailing_whitespace(buf: &[u8]) -> bool {
    match buf.iter().rev().find(|b| !b.is_ascii_whitespace()) {
        Some(b) if !b.is_ascii() || *b == 0x0b => {
            odd_edges(&String::from_utf8_lossy(buf)).1.is_some()
        }
        _ => false,
    }
}

/// What a line followed by U+00A0 (or the like) and then more records is.
fn trailing_whitespace_refused(buf: &[u8]) -> IssueKind {
    IssueKind::InvalidJson {
        column: odd_edges(&String::from_utf8_lossy(buf)).1.unwrap_or(1),
        message: "JavaScript whitespace after the value, and records after the line: JSON.parse refuses it (the reference skips the line)".to_owned(),
    }
}

/// Reads a line's envelope as the reference reads the line: invalid UTF-8 decoded
/// as U+FFFD, lone surrogates read through their U+FFFD view. JavaScript whitespace
/// JSON refuses is accepted before the object only on the file's `first` record
/// (and after it only on the last, which the caller decides).
fn parse_line(buf: &[u8], meta: LineMeta, first: bool) -> Parsed<'_> {
    let torn = !meta.newline;
    let decoded = String::from_utf8_lossy(buf);
    let invalid_utf8 = match &decoded {
        Cow::Borrowed(_) => None,
        Cow::Owned(_) => std::str::from_utf8(buf).err().map(|e| e.valid_up_to() + 1),
    };
    let bad = |e: session_types::ParseError| match e.kind {
        ParseErrorKind::NotAnObject => IssueKind::NotAnObject,
        _ if torn => IssueKind::TornLastLine { bytes: buf.len() },
        _ => IssueKind::InvalidJson {
            column: e.column,
            message: match invalid_utf8 {
                Some(c) => format!("{} (and invalid UTF-8 at column {c})", e.message),
                None => e.message,
            },
        },
    };
    let (lead, trail) = odd_edges(&decoded);
    if let Some(column) = lead
        && !first
    {
        return Parsed::Bad(IssueKind::InvalidJson {
            column,
            message: "JavaScript whitespace before the value: JSON.parse refuses it (only the file's start is trimmed)".to_owned(),
        });
    }
    let line = |env, surrogate| {
        Parsed::Object(Line {
            env,
            surrogate,
            invalid_utf8,
            lead: lead.is_some(),
            trail: trail.is_some(),
        })
    };
    let text: &str = &decoded;
    let parsed = match Envelope::parse(text) {
        // The envelope skips most of the line without decoding its strings: look for
        // lone surrogates only where a `\u` escape exists at all.
        Ok(env) if memchr::memmem::find(buf, b"\\u").is_some() => {
            let column = find_lone_surrogates(text).first().map(|s| s.offset + 1);
            Ok((owned(env), column))
        }
        Ok(env) => Ok((owned(env), None)),
        Err(e) if e.kind == ParseErrorKind::LoneSurrogate => {
            let column = find_lone_surrogates(text)
                .first()
                .map_or(1, |s| s.offset + 1);
            let (view, _) = replace_lone_surrogates(text);
            match Envelope::parse(&view) {
                Ok(env) => Ok((owned(env), Some(column))),
                Err(e) => Err(bad(e)),
            }
        }
        Err(e) => Err(bad(e)),
    };
    match parsed {
        Ok((env, surrogate)) => line(env, surrogate),
        Err(kind) => Parsed::Bad(kind),
    }
}

fn owned(e: Envelope<'_>) -> Envelope<'static> {
    fn o(c: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
        c.map(|c| Cow::Owned(c.into_owned()))
    }
    Envelope {
        entry_type: o(e.entry_type),
        id: o(e.id),
        parent_id: o(e.parent_id),
        timestamp: o(e.timestamp),
        message: e
            .message
            .map(|m| session_types::MessageEnvelope { role: o(m.role) }),
    }
}

/// The object of a line whose envelope parsed, as `JSON.parse` reads it: invalid
/// UTF-8 and lone surrogates as U+FFFD, surrounding JavaScript whitespace ignored,
/// the last of repeated keys, numbers beyond a double's range as `null`.
fn parse_map(buf: &[u8]) -> Option<Map<String, Value>> {
    let text = String::from_utf8_lossy(buf);
    let (view, _) = replace_lone_surrogates(session_types::js::trim(&text));
    serde_json::from_str(&session_types::js::finite_view(&view)).ok()
}

fn session_state(buf: &[u8]) -> Option<String> {
    parse_map(buf).and_then(|m| match m.get("state") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
        None => None,
    })
}

fn describe(env: &Envelope<'_>) -> String {
    match (env.entry_type.as_deref(), env.id.as_deref()) {
        (Some(_), None) if env.is_header() => "a session header without a string id".to_owned(),
        (Some(t), _) => format!("a {t:?} record"),
        (None, _) => "an object without a string type".to_owned(),
    }
}

/// Frames waiting to be appended together (one write; the sync comes at the end).
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    frames: Vec<(FrameKind, Tag, usize, usize)>,
}

impl Batch {
    fn push(&mut self, kind: FrameKind, tag: Tag, payload: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        self.frames.push((kind, tag, start, self.bytes.len()));
    }

    fn push_retention(&mut self, line: u64, changed: bool) {
        let record = RetentionRecord { line, changed };
        let start = self.bytes.len();
        // Serializing two plain fields cannot fail.
        let _ = serde_json::to_writer(&mut self.bytes, &record);
        self.frames
            .push((KIND_RETENTION, Tag::default(), start, self.bytes.len()));
    }

    /// Appends the frames `range` of the batch with one write.
    fn append(
        &self,
        writer: &mut Writer,
        tmp: &Path,
        line: u64,
        range: std::ops::Range<usize>,
        durability: Durability,
    ) -> Result<(), ImportError> {
        if range.is_empty() {
            return Ok(());
        }
        let frames: Vec<NewFrame<'_>> = self.frames[range]
            .iter()
            .map(|&(kind, tag, s, e)| NewFrame::new(kind, &self.bytes[s..e]).with_tag(tag))
            .collect();
        writer
            .append_batch(&frames, durability)
            .map_err(|source| ImportError::Append {
                path: tmp.to_path_buf(),
                line,
                source,
            })?;
        Ok(())
    }

    /// Writes every queued frame but the last, which stays queued: the journal's last
    /// frame must be written after a sync (see [`Batch::finish`]).
    fn flush_all_but_last(
        &mut self,
        writer: &mut Writer,
        tmp: &Path,
        line: u64,
    ) -> Result<(), ImportError> {
        let Some(&(kind, tag, s, e)) = self.frames.last() else {
            return Ok(());
        };
        self.append(
            writer,
            tmp,
            line,
            0..self.frames.len() - 1,
            Durability::Buffered,
        )?;
        let last = self.bytes[s..e].to_vec();
        self.bytes.clear();
        self.frames.clear();
        self.push(kind, tag, &last);
        Ok(())
    }

    /// Writes the queued frames, syncs, then writes the last frame durably. A frame's
    /// `synced_to` records what a completed sync covered, and recovery treats damage
    /// as corruption of durable data (never as a torn tail to cut) only when a later
    /// frame's `synced_to` covers it (`docs/format.md` §2.5). Written in one batch and
    /// synced once, every frame of an import would be covered by none, so one flipped
    /// bit in its first entry would make the next open cut the whole session as a
    /// "torn tail". With the last frame written after the sync, only that frame (a
    /// retention or import-source record, never an entry record) is unprotected.
    fn finish(&mut self, writer: &mut Writer, tmp: &Path, line: u64) -> Result<(), ImportError> {
        let n = self.frames.len();
        if n == 0 {
            return Ok(());
        }
        self.append(writer, tmp, line, 0..n - 1, Durability::Buffered)?;
        writer.sync().map_err(|source| ImportError::Append {
            path: tmp.to_path_buf(),
            line,
            source,
        })?;
        self.append(writer, tmp, line, n - 1..n, Durability::Durable)?;
        self.bytes.clear();
        self.frames.clear();
        Ok(())
    }
}
