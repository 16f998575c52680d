//! Export: a native journal → v3 plain JSONL, one record per line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use session_journal::vfs::{StdVfs, Vfs, VfsFile};
use session_journal::{Reader, ReaderOptions};
use session_types::Envelope;
use session_types::json::replace_lone_surrogates;

use crate::error::ExportError;
use crate::format::{KIND_ORIGINAL_HEADER, is_record};

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOutcome {
    /// The file written.
    pub path: PathBuf,
    /// Lines written (header included).
    pub records: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Offsets of record frames whose payload spanned several lines and was written
    /// compacted (never the case for imported records).
    pub compacted: Vec<u64>,
    /// Where reading stopped before the journal's end (an invalid frame: a torn
    /// append nobody recovered yet), and why. Everything before it was exported.
    pub stopped: Option<String>,
}

/// Writes every record of `journal` to `dest` as v3 JSONL: the header record, then
/// each entry record in journal order, each payload followed by `\n`. Provenance
/// frames are not exported, except that a session the import gave a new id (its
/// header's was taken or unsafe as a file name) gets its original header record back
/// in place of the header record. Payloads are written verbatim, so records imported
/// from a v3 source come out byte for byte as their source lines.
///
/// The file is written to a temporary file next to `dest` (created exclusively under
/// an unpredictable, short name: `.export-<16 hex digits>.tmp`, so any valid `dest`
/// name works), synced, then renamed over `dest` and the directory synced. On error
/// nothing is left behind. Memory is bounded by the largest entry.
pub fn export(journal: &Path, dest: &Path) -> Result<ExportOutcome, ExportError> {
    export_in(Arc::new(StdVfs), journal, dest)
}

/// [`export`] through a store's file system seam (journal and destination alike).
pub fn export_in(
    vfs: Arc<dyn Vfs>,
    journal: &Path,
    dest: &Path,
) -> Result<ExportOutcome, ExportError> {
    let reader = Reader::open(journal, ReaderOptions { vfs: vfs.clone() })?;
    let vfs = vfs.as_ref();
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, file) = vfs
        .create_temp(&dir, ".export-")
        .map_err(io(&dir, "create a temporary file"))?;
    let result = write_file(vfs, &reader, journal, file.as_ref(), &tmp, dest, &dir);
    if result.is_err() {
        let _ = vfs.remove_file(&tmp);
    }
    result
}

/// Writes every record of `journal` to `out` as [`export`] writes them to a file,
/// streaming: memory is bounded by the largest entry, nothing is staged on disk.
/// `shown` names the destination in errors (e.g. `<stdout>`).
pub fn export_to(
    journal: &Path,
    out: &mut dyn Write,
    shown: &Path,
) -> Result<ExportOutcome, ExportError> {
    export_to_in(Arc::new(StdVfs), journal, out, shown)
}

/// [`export_to`] reading the journal through a store's file system seam.
pub fn export_to_in(
    vfs: Arc<dyn Vfs>,
    journal: &Path,
    out: &mut dyn Write,
    shown: &Path,
) -> Result<ExportOutcome, ExportError> {
    let reader = Reader::open(journal, ReaderOptions { vfs })?;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let outcome = stream(&reader, journal, &mut out, shown)?;
    out.flush().map_err(io(shown, "write"))?;
    Ok(outcome)
}

fn io(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> ExportError {
    let path = path.to_path_buf();
    move |source| ExportError::Io { path, op, source }
}

fn write_file(
    vfs: &dyn Vfs,
    reader: &Reader,
    journal: &Path,
    file: &dyn VfsFile,
    tmp: &Path,
    dest: &Path,
    dir: &Path,
) -> Result<ExportOutcome, ExportError> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, FileWriter { file, at: 0 });
    let mut outcome = stream(reader, journal, &mut out, tmp)?;
    out.flush().map_err(io(tmp, "write"))?;
    drop(out);
    file.sync_all().map_err(io(tmp, "sync"))?;
    vfs.rename(tmp, dest)
        .map_err(io(dest, "rename into place"))?;
    vfs.sync_dir(dir).map_err(io(dir, "sync directory"))?;
    outcome.path = dest.to_path_buf();
    Ok(outcome)
}

/// A [`VfsFile`] written from its start, as a stream.
struct FileWriter<'a> {
    file: &'a dyn VfsFile,
    at: u64,
}

impl Write for FileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write_all_at(self.at, buf)?;
        self.at += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the records, one frame in memory at a time.
fn stream(
    reader: &Reader,
    journal: &Path,
    out: &mut dyn Write,
    dest: &Path,
) -> Result<ExportOutcome, ExportError> {
    let mut outcome = ExportOutcome {
        path: dest.to_path_buf(),
        records: 0,
        bytes: 0,
        compacted: Vec::new(),
        stopped: None,
    };
    let mut frames = reader.frames(None);
    // Each record is written once the next one is known: JavaScript whitespace that
    // JSON refuses (an imported BOM, a trailing U+00A0) is kept only where the
    // reference's `trim()` of the whole file removes it, before the first record and
    // after the last; anywhere else it would make the reference skip the line.
    let mut held: Option<Vec<u8>> = None;
    let mut put = |payload: &[u8], outcome: &mut ExportOutcome| {
        out.write_all(payload)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(io(dest, "write"))?;
        outcome.records += 1;
        outcome.bytes += payload.len() as u64 + 1;
        Ok::<(), ExportError>(())
    };
    for frame in frames.by_ref() {
        let frame = frame?;
        if !is_record(frame.info.kind) {
            // The header record as the source held it, when the import gave the
            // session a new id: written in its place (the first record is still held).
            if frame.info.kind == KIND_ORIGINAL_HEADER && outcome.records == 0 && held.is_some() {
                check_header(journal, frame.info.offset.get(), &frame.payload)?;
                held = Some(frame.payload);
            }
            continue;
        }
        let offset = frame.info.offset.get();
        let first = outcome.records == 0 && held.is_none();
        if first {
            check_header(journal, offset, &frame.payload)?;
        }
        let payload = if memchr::memchr(b'\n', &frame.payload).is_some() {
            outcome.compacted.push(offset);
            compact(journal, offset, &frame.payload)?.into_bytes()
        } else if first {
            frame.payload
        } else {
            strip_start(frame.payload)
        };
        if let Some(prev) = held.replace(payload) {
            put(without_odd_end(&prev), &mut outcome)?;
        }
    }
    if let Some(last) = held {
        put(&last, &mut outcome)?;
    }
    outcome.stopped = frames
        .stop()
        .map(|s| format!("invalid frame at offset {}: {:?}", s.offset, s.fault));
    if outcome.records == 0 {
        return Err(ExportError::NoHeader {
            path: journal.to_path_buf(),
            offset: reader.data_start().get(),
            found: "no record frames".to_owned(),
        });
    }
    Ok(outcome)
}

fn is_json_whitespace(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The payload without leading JavaScript whitespace when some of it is whitespace
/// JSON refuses; usually unchanged (and not copied).
fn strip_start(payload: Vec<u8>) -> Vec<u8> {
    let n = payload.len() - session_types::js::trim_start_bytes(&payload).len();
    if payload[..n].iter().all(is_json_whitespace) {
        payload
    } else {
        payload[n..].to_vec()
    }
}

/// The payload without trailing JavaScript whitespace when some of it is whitespace
/// JSON refuses; otherwise unchanged.
fn without_odd_end(payload: &[u8]) -> &[u8] {
    let kept = session_types::js::trim_end_bytes(payload);
    if payload[kept.len()..].iter().all(is_json_whitespace) {
        payload
    } else {
        kept
    }
}

fn check_header(journal: &Path, offset: u64, payload: &[u8]) -> Result<(), ExportError> {
    // Read as the reference reads it: invalid UTF-8 as U+FFFD.
    let text = String::from_utf8_lossy(payload);
    let (view, _) = replace_lone_surrogates(&text);
    let found = match Envelope::parse(&view) {
        Ok(env) if env.is_header() => return Ok(()),
        Ok(env) => format!("type {:?}", env.entry_type),
        Err(e) => e.to_string(),
    };
    Err(ExportError::NoHeader {
        path: journal.to_path_buf(),
        offset,
        found,
    })
}

fn compact(journal: &Path, offset: u64, payload: &[u8]) -> Result<String, ExportError> {
    let bad = |source: serde_json::Error| ExportError::BadRecord {
        path: journal.to_path_buf(),
        offset,
        source,
    };
    let text = String::from_utf8_lossy(payload);
    let value: Value = serde_json::from_str(session_types::js::trim(&text)).map_err(bad)?;
    serde_json::to_string(&value).map_err(bad)
}
