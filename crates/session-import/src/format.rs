//! The bytes this crate writes: frame kinds, provenance payloads, the imports registry.
//!
//! `docs/format.md` §4 specifies the same; [`constants_table`] is the table it
//! reproduces and a test keeps the two in agreement.
//!
//! The record kinds are `session-index`'s ([`SESSION_HEADER`] `0x10`, [`ENTRY`] `0x11`,
//! entry frames tagged with [`id_tag`]); this crate adds its provenance kinds, which
//! readers of the session skip.

use serde::{Deserialize, Serialize};
use session_journal::FrameKind;

pub use session_index::kinds::{ENTRY, SESSION_HEADER, id_tag};

/// Whether a frame of this kind holds a session record (header or entry) that an
/// export writes out.
pub fn is_record(kind: FrameKind) -> bool {
    kind == SESSION_HEADER || kind == ENTRY
}

/// Kind of the import-source frame: one per imported journal, right after the header
/// record. Payload: [`SourceRecord`] as JSON.
pub const KIND_IMPORT_SOURCE: FrameKind = match FrameKind::new(0x20) {
    Some(k) => k,
    None => panic!("0x20 is in the caller range"),
};

/// Kind of a per-entry retention frame, the layout imports wrote before the retention
/// table ([`KIND_RETENTION_TABLE`]): it immediately follows the imported entry record
/// it describes. Payload: [`RetentionRecord`] as JSON. Still read, no longer written.
pub const KIND_RETENTION: FrameKind = match FrameKind::new(0x21) {
    Some(k) => k,
    None => panic!("0x21 is in the caller range"),
};

/// Kind of a retention-table frame: one (or a few, consecutive) after an import's last
/// record, holding the source line of every record the import wrote, run-length
/// encoded (`docs/format.md` §4).
pub const KIND_RETENTION_TABLE: FrameKind = match FrameKind::new(0x23) {
    Some(k) => k,
    None => panic!("0x23 is in the caller range"),
};

/// Kind of the original-header frame, written right after the import-source frame
/// only when the import assigned the session a new id (the header's was taken or
/// unsafe as a file name): the header record as it would have been stored under its
/// own id, byte for byte. Export writes it in place of the header record, so the
/// source comes back unchanged. Payload: those bytes.
pub const KIND_ORIGINAL_HEADER: FrameKind = match FrameKind::new(0x22) {
    Some(k) => k,
    None => panic!("0x22 is in the caller range"),
};

/// The retention table's encoding version, the first byte of a
/// [`KIND_RETENTION_TABLE`] payload.
pub const RETENTION_TABLE_VERSION: u8 = 1;

/// The most runs one retention-table frame holds (1 MiB of runs); a longer table
/// continues in the next frame.
pub const RETENTION_TABLE_RUNS_PER_FRAME: usize = 1 << 16;

/// The imports registry: a JSONL file in the destination directory mapping a source's
/// BLAKE3 to the journal imported from it (a derived file; deleting it loses nothing).
pub const REGISTRY_FILE: &str = ".imports.jsonl";

/// The longest legacy line this crate reads (256 MiB). Longer lines refuse the import:
/// memory is bounded by the largest line, and this bounds the largest line.
pub const MAX_LINE_LEN: u64 = 256 << 20;

/// Batches of frames are appended once they hold this many payload bytes: with their
/// frame headers, below the 1 MiB of frame buffer the journal's writer keeps between
/// appends, so that appending a batch does not grow that buffer again (4 MiB batches
/// made the writer reallocate and fault in its buffer for every batch: 17% of an
/// import's CPU), and small enough to stay in cache between the parse that fills it and
/// the writer that encodes it.
pub const BATCH_BYTES: usize = 768 << 10;

/// The default cap on issues listed individually in an outcome (the rest are counted).
pub const DEFAULT_MAX_LISTED_ISSUES: usize = 10_000;

/// Where an imported session came from: the payload of the [`KIND_IMPORT_SOURCE`] frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRecord {
    /// Always `"import_source"`.
    #[serde(rename = "type")]
    pub record_type: String,
    /// The source path as given to the import (made absolute when possible).
    pub path: String,
    /// BLAKE3 of the source file's bytes, 64 lower-case hex digits.
    pub blake3: String,
    /// The source's logical version (1, 2 or 3).
    pub source_version: u32,
    /// The source's length in bytes.
    pub bytes: u64,
    /// The 1-based line of the source header.
    pub header_line: u64,
    /// Whether the header record differs from the source line (v1/v2 migration, or
    /// a new session id).
    #[serde(default, skip_serializing_if = "is_false")]
    pub header_changed: bool,
    /// The header's own id, when the import assigned the session another one (the
    /// header's was taken in the directory or unsafe as a file name). The header
    /// record as it would have been stored under this id follows in a
    /// [`KIND_ORIGINAL_HEADER`] frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_id: Option<String>,
}

/// The provenance of one imported entry: the payload of a [`KIND_RETENTION`] frame
/// (the per-entry layout, read but no longer written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionRecord {
    /// The 1-based source line the entry came from.
    pub line: u64,
    /// `true` when the record is not the source line's exact bytes (v1/v2 migration).
    #[serde(default, skip_serializing_if = "is_false")]
    pub changed: bool,
}

/// The imports registry's line format version ([`RegistryLine::version`]).
pub const REGISTRY_VERSION: u32 = 1;

fn registry_v1() -> u32 {
    1
}

/// One line of the imports registry ([`REGISTRY_FILE`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryLine {
    /// The line's format version, `"v"` ([`REGISTRY_VERSION`]); a line without one (as
    /// written before versions) is version 1. Readers ignore lines of other versions,
    /// as they ignore lines they cannot check.
    #[serde(rename = "v", default = "registry_v1")]
    pub version: u32,
    /// BLAKE3 of the source, hex.
    pub blake3: String,
    /// The imported session's id.
    pub session_id: String,
    /// The journal's file name, relative to the registry's directory.
    pub journal: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The constants as the `text` block that `docs/format.md` §4 reproduces verbatim.
pub fn constants_table() -> String {
    let rows = [
        ("kind_header", format!("0x{:02x}", SESSION_HEADER.get())),
        ("kind_entry", format!("0x{:02x}", ENTRY.get())),
        (
            "kind_import_source",
            format!("0x{:02x}", KIND_IMPORT_SOURCE.get()),
        ),
        ("kind_retention", format!("0x{:02x}", KIND_RETENTION.get())),
        (
            "kind_original_header",
            format!("0x{:02x}", KIND_ORIGINAL_HEADER.get()),
        ),
        (
            "kind_retention_table",
            format!("0x{:02x}", KIND_RETENTION_TABLE.get()),
        ),
        ("table_version", RETENTION_TABLE_VERSION.to_string()),
        (
            "table_runs_per_frame",
            RETENTION_TABLE_RUNS_PER_FRAME.to_string(),
        ),
        ("registry_file", format!("{REGISTRY_FILE:?}")),
        ("registry_version", REGISTRY_VERSION.to_string()),
        ("max_line_len", MAX_LINE_LEN.to_string()),
    ];
    rows.iter()
        .map(|(k, v)| format!("{k:<20} = {v}\n"))
        .collect()
}
