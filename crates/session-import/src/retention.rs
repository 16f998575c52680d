//! Provenance queries: where an imported entry came from.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use session_index::{Derived, EntryIndex};
use session_journal::vfs::StdVfs;
use session_journal::vfs::Vfs;
use session_journal::{Frame, Offset, ReadError, Reader, ReaderOptions};
use session_types::Envelope;
use session_types::json::replace_lone_surrogates;

use crate::error::RetentionError;
use crate::format::{
    ENTRY, KIND_IMPORT_SOURCE, KIND_RETENTION, KIND_RETENTION_TABLE, RetentionRecord, SourceRecord,
};
use crate::table::Table;

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

/// The retention of the record `i` of `records` (the session index over the journal
/// `reader` reads), bounded by `bound` (a capture's length): the O(1)-ish lookup the
/// manager calls. `None` for a record no import wrote (a natively appended entry, the
/// first header record).
///
/// Both layouts of `docs/format.md` §4: a per-entry retention frame right after the
/// record (the layout imports wrote before the table), or the import's retention
/// table. The table follows the import's last record, so it starts where the run of
/// records with consecutive seqs that holds `i` ends (provenance frames take seqs,
/// seals do not, and natively appended entries come after the table): a binary search
/// over the index's records finds that end without I/O, then this reads the frame there
/// (and a few more only for a table of more than 65,536 runs), each verified, plus the
/// journal's first two frames (the import source).
pub fn retention_of(
    reader: &Reader,
    records: &Derived,
    i: EntryIndex,
    bound: u64,
) -> Result<Option<Retention>, RetentionError> {
    let Some(entry) = records.info(i) else {
        return Ok(None);
    };
    if entry.kind != ENTRY.get() {
        return Ok(None);
    }
    let seq = entry.seq.0;
    // The last record `j >= i` with `seq_j - seq_i == j - i` (true at `i`, and once
    // false stays false: seqs only grow, and by at least one per record).
    let consecutive = |j: usize| {
        records
            .info(EntryIndex(j as u32))
            .is_some_and(|r| r.seq.0.checked_sub(seq) == Some((j - i.0 as usize) as u64))
    };
    let (mut lo, mut hi) = (i.0 as usize, records.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if consecutive(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let Some(last) = records.info(EntryIndex(lo as u32)) else {
        return Ok(None);
    };
    let at = last.offset.0 + session_journal::format::frame_len(u64::from(last.payload_len));
    if at >= bound {
        return Ok(None);
    }
    let frame = reader.read_frame_at(Offset(at))?;
    if frame.info.end().0 > bound {
        return Ok(None);
    }
    let (line, changed) = if frame.info.kind == KIND_RETENTION {
        if lo != i.0 as usize {
            // A per-entry frame belongs to the record right before it.
            return Ok(None);
        }
        let r: RetentionRecord =
            serde_json::from_slice(&frame.payload).map_err(|source| RetentionError::Malformed {
                path: reader.path().to_path_buf(),
                offset: at,
                source,
            })?;
        (r.line, r.changed)
    } else if frame.info.kind == KIND_RETENTION_TABLE {
        match table_lookup(reader, frame, seq, bound)? {
            Some(found) => found,
            None => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    let Some(source) = source_record(reader)? else {
        return Err(RetentionError::Orphaned {
            path: reader.path().to_path_buf(),
            offset: at,
        });
    };
    Ok(Some(retention_from(source, line, changed)))
}

/// Looks `seq` up in the retention table whose first frame is `first`, reading the
/// table's later frames (below `bound`) only while they precede the one that covers it.
fn table_lookup(
    reader: &Reader,
    first: Frame,
    seq: u64,
    bound: u64,
) -> Result<Option<(u64, bool)>, RetentionError> {
    let mut frame = first;
    // The table's records end where its first frame is.
    let end_seq = frame.info.seq.0;
    let mut next_seq = None;
    let mut k = 0u64;
    loop {
        let offset = frame.info.offset.0;
        let table = decode_table(reader.path(), offset, &frame.payload)?;
        // Each frame continues the one before it, and together they cover exactly the
        // records before the first table frame.
        let fits = next_seq.is_none_or(|s| s == table.first_seq)
            && table.first_seq + table.records <= end_seq
            && frame.info.seq.0 == end_seq + k;
        if !fits {
            return Err(RetentionError::Table {
                path: reader.path().to_path_buf(),
                offset,
                reason: "it does not cover the records before the table",
            });
        }
        if table.covers(seq) {
            return Ok(table.lookup(seq));
        }
        let at = frame.info.end().0;
        if seq < table.first_seq || table.first_seq + table.records == end_seq || at >= bound {
            return Ok(None);
        }
        next_seq = Some(table.first_seq + table.records);
        let next = reader.read_frame_at(Offset(at))?;
        if next.info.kind != KIND_RETENTION_TABLE || next.info.end().0 > bound {
            return Err(RetentionError::Table {
                path: reader.path().to_path_buf(),
                offset,
                reason: "the table ends before its records do",
            });
        }
        frame = next;
        k += 1;
    }
}

fn decode_table<'a>(
    path: &Path,
    offset: u64,
    payload: &'a [u8],
) -> Result<Table<'a>, RetentionError> {
    Table::decode(payload).map_err(|reason| RetentionError::Table {
        path: path.to_path_buf(),
        offset,
        reason,
    })
}

fn retention_from(source: SourceRecord, line: u64, changed: bool) -> Retention {
    Retention {
        path: PathBuf::from(source.path),
        blake3: source.blake3,
        line,
        source_version: source.source_version,
        changed,
        original_session_id: source.original_id,
    }
}

/// The retention record of the entry `entry_id` in `journal`, or `None` when no
/// imported entry has that id (natively appended entries have none). With duplicate
/// ids the last record wins, as in the tree. One sequential pass over the journal
/// (no index to find the id by); [`retention_of`] is the indexed lookup.
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
    // The last record with the id: its seq, and its per-entry retention frame if one
    // follows it (the earlier layout).
    let mut found: Option<(u64, Option<(RetentionRecord, u64)>)> = None;
    let mut pending = false;
    // The retention table's frames: offset, seq and payload.
    let mut tables: Vec<(u64, u64, Vec<u8>)> = Vec::new();
    let malformed = |offset: u64, source: serde_json::Error| RetentionError::Malformed {
        path: journal.to_path_buf(),
        offset,
        source,
    };
    let needle = memchr::memmem::Finder::new(entry_id.as_bytes());
    let mut frames = reader.frames(None);
    for frame in frames.by_ref() {
        let frame = frame?;
        let offset = frame.info.offset.get();
        let kind = frame.info.kind;
        let matches = kind == ENTRY
            && needle.find(&frame.payload).is_some()
            && record_id(&frame.payload).as_deref() == Some(entry_id);
        if kind == KIND_RETENTION && pending {
            let r: RetentionRecord =
                serde_json::from_slice(&frame.payload).map_err(|e| malformed(offset, e))?;
            if let Some((_, legacy)) = &mut found {
                *legacy = Some((r, offset));
            }
        } else if kind == KIND_RETENTION_TABLE {
            tables.push((offset, frame.info.seq.0, frame.payload));
        } else if kind == KIND_IMPORT_SOURCE {
            source =
                Some(serde_json::from_slice(&frame.payload).map_err(|e| malformed(offset, e))?);
        }
        pending = matches;
        if matches {
            found = Some((frame.info.seq.0, None));
        }
    }
    // A frame that does not verify ends the scan: it may be an append in progress,
    // past everything an import wrote, or damage hiding the entry or the table. What
    // the frames before it do not settle is then an error, never an answer.
    let unsettled = |tables_seen: bool| match frames.stop() {
        Some(stop) if !tables_seen => Err(RetentionError::Read(ReadError::Invalid {
            path: journal.to_path_buf(),
            offset: stop.offset,
            fault: stop.fault.clone(),
        })),
        _ => Ok(None),
    };
    let Some((seq, legacy)) = found else {
        return unsettled(false);
    };
    let (line, changed, offset) = match legacy {
        Some((r, offset)) => (r.line, r.changed, offset),
        None => match lookup_in_tables(journal, &tables, seq)? {
            Some((line, changed, offset)) => (line, changed, offset),
            None => return unsettled(!tables.is_empty()),
        },
    };
    let source = source.ok_or_else(|| RetentionError::Orphaned {
        path: journal.to_path_buf(),
        offset,
    })?;
    Ok(Some(retention_from(source, line, changed)))
}

/// `seq`'s line in the first run of consecutive table frames (an import writes one
/// table, after its last record): line, flag and the covering frame's offset.
fn lookup_in_tables(
    journal: &Path,
    tables: &[(u64, u64, Vec<u8>)],
    seq: u64,
) -> Result<Option<(u64, bool, u64)>, RetentionError> {
    let Some(&(_, end_seq, _)) = tables.first() else {
        return Ok(None);
    };
    let mut next_seq = None;
    for (k, (offset, frame_seq, payload)) in tables.iter().enumerate() {
        if *frame_seq != end_seq + k as u64 {
            break;
        }
        let table = decode_table(journal, *offset, payload)?;
        let fits = next_seq.is_none_or(|s| s == table.first_seq)
            && table.first_seq + table.records <= end_seq;
        if !fits {
            return Err(RetentionError::Table {
                path: journal.to_path_buf(),
                offset: *offset,
                reason: "it does not cover the records before the table",
            });
        }
        if let Some((line, changed)) = table.lookup(seq) {
            return Ok(Some((line, changed, *offset)));
        }
        next_seq = Some(table.first_seq + table.records);
    }
    Ok(None)
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
