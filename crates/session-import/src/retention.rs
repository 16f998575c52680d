//! Provenance queries: where an imported entry came from.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use session_journal::vfs::StdVfs;
use session_journal::vfs::Vfs;
use session_journal::{Offset, Reader, ReaderOptions};
use session_types::Envelope;
use session_types::json::replace_lone_surrogates;

use crate::error::RetentionError;
use crate::format::{ENTRY, KIND_IMPORT_SOURCE, KIND_RETENTION, RetentionRecord, SourceRecord};

/// The retention record of one imported entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// The source path as given to the import.
    pub path: PathBuf,
    /// BLAKE3 of the source file, hex.
    pub blake3: String,
    /// The 1-based source line.
    pub line: u64,
    /// The source's logical version.
    pub source_version: u32,
    /// Whether the stored record differs from the source line (v1/v2 migration).
    pub changed: bool,
    /// The session id the source's header held, when the import assigned the
    /// session another one (taken in the directory, or unsafe as a file name).
    pub original_session_id: Option<String>,
}

/// The import-source record of `journal`, or `None` for a journal that was not
/// created by an import. Reads at most the first two frames.
pub fn import_source(journal: &Path) -> Result<Option<SourceRecord>, RetentionError> {
    import_source_in(Arc::new(StdVfs), journal)
}

/// [`import_source`] through a store's file system seam.
pub fn import_source_in(
    vfs: Arc<dyn Vfs>,
    journal: &Path,
) -> Result<Option<SourceRecord>, RetentionError> {
    let reader = Reader::open(journal, ReaderOptions { vfs })?;
    source_record(&reader)
}

/// The import-source record of the journal `reader` reads (its first two frames).
pub(crate) fn source_record(reader: &Reader) -> Result<Option<SourceRecord>, RetentionError> {
    let journal = reader.path();
    for frame in reader.frames(None).take(2) {
        let frame = frame?;
        if frame.info.kind == KIND_IMPORT_SOURCE {
            return serde_json::from_slice(&frame.payload)
                .map(Some)
                .map_err(|source| RetentionError::Malformed {
                    path: journal.to_path_buf(),
                    offset: frame.info.offset.get(),
                    source,
                });
        }
    }
    Ok(None)
}

/// The retention of the entry whose frame ends at `entry_end`, read through `reader`
/// and bounded by `bound` (a capture's length): an import writes each entry's
/// retention frame right after the entry's frame, so this reads at most that frame and
/// the journal's first two (the import source). `None` when the next frame is not a
/// retention frame (a natively appended entry) or lies beyond `bound`. The O(1) lookup
/// of the format this crate owns; the manager calls it with the index's location.
pub fn retention_after(
    reader: &Reader,
    entry_end: Offset,
    bound: u64,
) -> Result<Option<Retention>, RetentionError> {
    if entry_end.0 >= bound {
        return Ok(None);
    }
    let frame = reader.read_frame_at(entry_end)?;
    if frame.info.kind != KIND_RETENTION || frame.info.end().0 > bound {
        return Ok(None);
    }
    let r: RetentionRecord =
        serde_json::from_slice(&frame.payload).map_err(|source| RetentionError::Malformed {
            path: reader.path().to_path_buf(),
            offset: entry_end.0,
            source,
        })?;
    let Some(source) = source_record(reader)? else {
        return Err(RetentionError::Orphaned {
            path: reader.path().to_path_buf(),
            offset: entry_end.0,
        });
    };
    Ok(Some(Retention {
        path: PathBuf::from(source.path),
        blake3: source.blake3,
        line: r.line,
        source_version: source.source_version,
        changed: r.changed,
        original_session_id: source.original_id,
    }))
}

/// The retention record of the entry `entry_id` in `journal`, or `None` when no
/// imported entry has that id (natively appended entries have none). With duplicate
/// ids the last record wins, as in the tree. One sequential pass over the journal.
pub fn retention(journal: &Path, entry_id: &str) -> Result<Option<Retention>, RetentionError> {
    retention_in(Arc::new(StdVfs), journal, entry_id)
}

/// [`retention`] through a store's file system seam.
pub fn retention_in(
    vfs: Arc<dyn Vfs>,
    journal: &Path,
    entry_id: &str,
) -> Result<Option<Retention>, RetentionError> {
    let reader = Reader::open(journal, ReaderOptions { vfs })?;
    let mut source: Option<SourceRecord> = None;
    let mut pending = false;
    let mut found: Option<(RetentionRecord, u64)> = None;
    let malformed = |offset: u64, source: serde_json::Error| RetentionError::Malformed {
        path: journal.to_path_buf(),
        offset,
        source,
    };
    let needle = memchr::memmem::Finder::new(entry_id.as_bytes());
    for frame in reader.frames(None) {
        let frame = frame?;
        let offset = frame.info.offset.get();
        let kind = frame.info.kind;
        if kind == KIND_RETENTION && pending {
            let r: RetentionRecord =
                serde_json::from_slice(&frame.payload).map_err(|e| malformed(offset, e))?;
            found = Some((r, offset));
        } else if kind == KIND_IMPORT_SOURCE {
            source =
                Some(serde_json::from_slice(&frame.payload).map_err(|e| malformed(offset, e))?);
        }
        pending = kind == ENTRY
            && needle.find(&frame.payload).is_some()
            && record_id(&frame.payload).as_deref() == Some(entry_id);
    }
    let Some((r, offset)) = found else {
        return Ok(None);
    };
    let source = source.ok_or_else(|| RetentionError::Orphaned {
        path: journal.to_path_buf(),
        offset,
    })?;
    Ok(Some(Retention {
        path: PathBuf::from(source.path),
        blake3: source.blake3,
        line: r.line,
        source_version: source.source_version,
        changed: r.changed,
        original_session_id: source.original_id,
    }))
}

/// The `id` of a record payload (lone surrogates read as U+FFFD).
pub(crate) fn record_id(payload: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(payload).ok()?;
    let (view, _) = replace_lone_surrogates(text);
    let env = Envelope::parse(&view).ok()?;
    if env.is_header() {
        return None;
    }
    env.id.map(|c| c.into_owned())
}
