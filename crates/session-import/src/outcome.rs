//! What an import did: the session it produced and every line it did not take as is.

use std::fmt;
use std::path::PathBuf;

/// The result of a successful (or recognised-as-done) import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOutcome {
    /// The imported session's id (the legacy header id when it is a safe file name).
    pub session_id: String,
    /// The native journal.
    pub journal: PathBuf,
    /// The source and its identity.
    pub source: SourceInfo,
    /// `true` when this source (same BLAKE3) had been imported before: nothing was
    /// written and `issues` is empty.
    pub already_imported: bool,
    /// Entry records written (the header record not counted).
    pub entries: u64,
    /// Blank or whitespace-only lines (accepted silently, not written).
    pub blank_lines: u64,
    /// Lines ending in `\r\n` (accepted silently; the `\r` is not kept).
    pub crlf_lines: u64,
    /// v1 entries that received a derived id.
    pub ids_assigned: u64,
    /// Every line not taken, taken with a change, or kept with a caveat, in line order.
    pub issues: Vec<LineIssue>,
    /// Issues beyond [`ImportOptions::max_listed_issues`](crate::ImportOptions), counted only.
    pub issues_not_listed: u64,
    /// How much of the new journal the import made durable (all of it: a journal is
    /// linked into place only once synced), as its writer's capture, for a caller that
    /// indexes the journal at once without syncing it again. `None` when
    /// `already_imported`.
    pub durable: Option<session_journal::Capture>,
    /// Whether the import saved the new journal's index sidecar (built from the
    /// frames as it wrote them, byte for byte what a rebuild from the journal saves;
    /// unsynced, claiming `durable`), so the first open resumes instead of reading the
    /// whole journal. `false` when `already_imported`, or when building or saving it
    /// failed: there is then no sidecar, and the first open rebuilds it.
    pub indexed: bool,
}

/// The identity of an import source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    /// The path as given (made absolute when possible).
    pub path: PathBuf,
    /// BLAKE3 of the file's bytes, 64 lower-case hex digits.
    pub blake3: String,
    /// The logical version of the source (1, 2 or 3).
    pub version: u32,
    /// Length in bytes.
    pub bytes: u64,
    /// Number of lines (a final line without `\n` counts).
    pub lines: u64,
}

/// One reported line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIssue {
    /// 1-based line number in the source.
    pub line: u64,
    /// What happened.
    pub kind: IssueKind,
}

/// What happened to a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// The line was not imported.
    Skipped,
    /// Imported byte for byte; the note is informational.
    Kept,
    /// Imported with a change (migration).
    Changed,
}

/// Why a line is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IssueKind {
    /// Not valid JSON (skipped, as the reference skips it).
    InvalidJson {
        /// 1-based byte column of the error.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// Valid JSON that is not an object, in a v1 file (skipped: the reference's v1
    /// migration throws on it, or gives it an id JSON cannot write).
    NotAnObject,
    /// Valid JSON that is not an object, in a v2 or v3 file: kept byte-exact as an
    /// entry without an id, as the reference's `getEntries()` holds it (when it is the
    /// last record it is the default leaf, whose context is empty).
    NotAnObjectKept,
    /// Not valid UTF-8: kept byte-exact; readers decode it as the reference's
    /// `readFileSync(path, "utf8")` does, each invalid sequence as U+FFFD.
    InvalidUtf8 {
        /// 1-based byte column of the first invalid byte.
        column: usize,
    },
    /// JavaScript whitespace that JSON does not allow (a UTF-8 BOM, U+00A0, U+3000,
    /// U+2028…) before the first record or after the last: the reference's `trim()` of
    /// the whole file removes it. Kept byte-exact; readers ignore it as the reference does.
    OuterWhitespace {
        /// `"before"` (the file's start) or `"after"` (the file's end).
        place: &'static str,
    },
    /// The last line has no `\n` and is not valid JSON: an interrupted write (skipped).
    TornLastLine {
        /// Bytes in the torn line.
        bytes: usize,
    },
    /// A lone UTF-16 surrogate escape: kept byte-exact; typed readers see U+FFFD.
    LoneSurrogate {
        /// 1-based byte column of the escape.
        column: usize,
    },
    /// A lone surrogate in a line that migration re-serialised: replaced by U+FFFD.
    LoneSurrogateReplaced {
        /// 1-based byte column of the escape in the source line.
        column: usize,
    },
    /// An id seen before: both records are kept (export stays lossless); like the
    /// reference, the later one is the one the tree resolves the id to.
    DuplicateId {
        /// The id.
        id: String,
        /// The line of the previous record with this id.
        first_line: u64,
    },
    /// An entry without a string `id` (kept; no other entry can refer to it).
    MissingId,
    /// `parentId` names no entry of the file (kept: the entry is an extra root).
    MissingParent {
        /// The entry.
        id: String,
        /// The missing parent.
        parent_id: String,
    },
    /// The entry is on a parent cycle (kept; the tree layer breaks cycles safely).
    Cycle {
        /// The entry.
        id: String,
        /// Lines of every member of the cycle, in walk order.
        members: Vec<u64>,
    },
    /// An entry type this version does not model (kept whole; not an error).
    UnknownType {
        /// The `type`, or `None` when it is missing or not a string.
        entry_type: Option<String>,
    },
    /// A second `session` header (kept as data; only the first identifies the session).
    ExtraHeader,
    /// A `session_state` lifecycle claim: kept as data; it never makes the imported
    /// session look owned or live.
    LifecycleClaim {
        /// The claimed state, when it is a string.
        state: Option<String>,
    },
    /// The header's `version` is not one of absent, `null`, 1, 2, 3: read as the
    /// reference's `version >= 3` / `< 2` / `< 3` comparisons read it (kept as written
    /// when it reads as 3 or as no number at all).
    HeaderVersionRead {
        /// The version as written (JSON text).
        found: String,
        /// The logical version it reads as.
        read_as: u32,
    },
    /// Migration set the header's `version` to 3.
    HeaderVersionSet {
        /// The source version.
        from: u32,
    },
    /// v1 compaction: `firstKeptEntryIndex` became `firstKeptEntryId`.
    FirstKeptIndexConverted {
        /// The index (header = 0).
        index: String,
        /// The id it resolved to.
        id: String,
    },
    /// v1 compaction: `firstKeptEntryIndex` was dropped without an id (header, forward
    /// or out-of-range index), exactly as the reference does.
    FirstKeptIndexDropped {
        /// The index as written.
        index: String,
    },
    /// v2 message: role `hookMessage` renamed to `custom`.
    HookMessageRenamed,
    /// The header's session id is already used in the destination directory by
    /// another source; the session was imported under a derived id, which the
    /// native header record carries (the original id and header bytes are kept in
    /// the provenance, and export writes them back).
    SessionIdTaken {
        /// The header's id.
        id: String,
        /// The id the session was imported as.
        used: String,
    },
    /// The header's session id cannot name a file (`is_safe_session_id`); the
    /// session was imported under a derived id, which the native header record
    /// carries (the original id and header bytes are kept in the provenance, and
    /// export writes them back).
    SessionIdUnsafe {
        /// The header's id.
        id: String,
        /// The id the session was imported as.
        used: String,
    },
}

impl IssueKind {
    /// Whether the line was skipped, kept as is, or changed.
    pub fn disposition(&self) -> Disposition {
        match self {
            IssueKind::InvalidJson { .. }
            | IssueKind::NotAnObject
            | IssueKind::TornLastLine { .. } => Disposition::Skipped,
            IssueKind::LoneSurrogateReplaced { .. }
            | IssueKind::HeaderVersionSet { .. }
            | IssueKind::FirstKeptIndexConverted { .. }
            | IssueKind::FirstKeptIndexDropped { .. }
            | IssueKind::HookMessageRenamed
            | IssueKind::SessionIdTaken { .. }
            | IssueKind::SessionIdUnsafe { .. } => Disposition::Changed,
            _ => Disposition::Kept,
        }
    }
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IssueKind::InvalidJson { column, message } => {
                write!(f, "invalid JSON at column {column}: {message}")
            }
            IssueKind::SessionIdTaken { id, used } => write!(
                f,
                "session id {id:?} is taken by another source in this directory; imported as {used:?} (the original id is kept in the provenance)"
            ),
            IssueKind::SessionIdUnsafe { id, used } => write!(
                f,
                "session id {id:?} cannot name a file; imported as {used:?} (the original id is kept in the provenance)"
            ),
            IssueKind::NotAnObject => f.write_str("JSON value is not an object"),
            IssueKind::NotAnObjectKept => {
                f.write_str("JSON value is not an object; kept as an entry without an id")
            }
            IssueKind::InvalidUtf8 { column } => write!(
                f,
                "invalid UTF-8 at column {column} kept byte-exact; readers see U+FFFD, as the reference does"
            ),
            IssueKind::OuterWhitespace { place } => write!(
                f,
                "Unicode whitespace {place} the record kept byte-exact; the reference's trim() removes it, readers ignore it"
            ),
            IssueKind::TornLastLine { bytes } => write!(
                f,
                "torn last line ({bytes} bytes, no newline, not valid JSON): an interrupted write"
            ),
            IssueKind::LoneSurrogate { column } => write!(
                f,
                "lone surrogate at column {column} kept byte-exact; typed readers see U+FFFD"
            ),
            IssueKind::LoneSurrogateReplaced { column } => write!(
                f,
                "lone surrogate at column {column} replaced by U+FFFD (line re-serialised by migration)"
            ),
            IssueKind::DuplicateId { id, first_line } => write!(
                f,
                "duplicate id {id:?} (also on line {first_line}); both kept, this later one wins"
            ),
            IssueKind::MissingId => f.write_str("entry has no string id; kept"),
            IssueKind::MissingParent { id, parent_id } => write!(
                f,
                "entry {id:?}: parent {parent_id:?} does not exist; kept as an extra root"
            ),
            IssueKind::Cycle { id, members } => {
                write!(f, "entry {id:?} is on a parent cycle through lines ")?;
                for (i, l) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{l}")?;
                }
                f.write_str("; kept")
            }
            IssueKind::UnknownType { entry_type } => match entry_type {
                Some(t) => write!(f, "unknown entry type {t:?}; kept whole"),
                None => f.write_str("entry without a string type; kept whole"),
            },
            IssueKind::ExtraHeader => f.write_str(
                "second session header; kept as data, the first one identifies the session",
            ),
            IssueKind::LifecycleClaim { state } => write!(
                f,
                "session_state {} kept as data; the imported session is not owned or live",
                state
                    .as_deref()
                    .map_or("(no state)".to_owned(), |s| format!("{s:?}"))
            ),
            IssueKind::HeaderVersionRead { found, read_as } => write!(
                f,
                "header version {found} read as {read_as}, as the reference compares it (`version >= 3`)"
            ),
            IssueKind::HeaderVersionSet { from } => {
                write!(f, "header version {from} migrated to 3")
            }
            IssueKind::FirstKeptIndexConverted { index, id } => {
                write!(
                    f,
                    "firstKeptEntryIndex {index} converted to firstKeptEntryId {id:?}"
                )
            }
            IssueKind::FirstKeptIndexDropped { index } => write!(
                f,
                "firstKeptEntryIndex {index} dropped without an id (header, forward or out of range), as the reference does"
            ),
            IssueKind::HookMessageRenamed => {
                f.write_str("message role hookMessage renamed to custom")
            }
        }
    }
}

impl fmt::Display for LineIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = match self.kind.disposition() {
            Disposition::Skipped => "skipped",
            Disposition::Kept => "kept",
            Disposition::Changed => "changed",
        };
        write!(f, "line {}: {d}: {}", self.line, self.kind)
    }
}

impl ImportOutcome {
    /// A stable, human-readable report (what a CLI prints; what tests snapshot).
    /// The source path and the journal path are left out so the text is portable.
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "session {} from v{} source ({} bytes, {} lines, blake3 {})\n",
            self.session_id,
            self.source.version,
            self.source.bytes,
            self.source.lines,
            self.source.blake3
        ));
        if self.already_imported {
            s.push_str("already imported: nothing written\n");
            return s;
        }
        s.push_str(&format!(
            "entries {}, blank lines {}, crlf lines {}, ids assigned {}\n",
            self.entries, self.blank_lines, self.crlf_lines, self.ids_assigned
        ));
        for issue in &self.issues {
            s.push_str(&issue.to_string());
            s.push('\n');
        }
        if self.issues_not_listed > 0 {
            s.push_str(&format!("… and {} more issues\n", self.issues_not_listed));
        }
        s
    }

    /// Issues whose line was not imported.
    pub fn skipped(&self) -> impl Iterator<Item = &LineIssue> {
        self.issues
            .iter()
            .filter(|i| i.kind.disposition() == Disposition::Skipped)
    }
}
