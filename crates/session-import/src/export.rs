//! Export: a native journal → v3 plain JSONL, one record per line.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use session_journal::{Reader, ReaderOptions};
use session_types::Envelope;
use session_types::json::replace_lone_surrogates;

use crate::error::ExportError;
use crate::format::is_record;

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
/// frames are not exported. Payloads are written verbatim, so records imported from
/// a v3 source come out byte for byte as their source lines.
///
/// The file is written to a temporary name next to `dest`, synced, then renamed over
/// `dest`. On error nothing is left behind.
pub fn export(journal: &Path, dest: &Path) -> Result<ExportOutcome, ExportError> {
    let reader = Reader::open(journal, ReaderOptions::default())?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export.jsonl".to_owned());
    let tmp = dest.with_file_name(format!(".{name}.export-{}.tmp", std::process::id()));
    let result = write(&reader, journal, &tmp, dest);
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write(
    reader: &Reader,
    journal: &Path,
    tmp: &Path,
    dest: &Path,
) -> Result<ExportOutcome, ExportError> {
    let io = |path: &Path, op: &'static str| {
        let path = path.to_path_buf();
        move |source| ExportError::Io { path, op, source }
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(io(tmp, "create"))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
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
            .map_err(io(tmp, "write"))?;
        outcome.records += 1;
        outcome.bytes += payload.len() as u64 + 1;
        Ok::<(), ExportError>(())
    };
    for frame in frames.by_ref() {
        let frame = frame?;
        if !is_record(frame.info.kind) {
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
    let file = out.into_inner().map_err(|e| ExportError::Io {
        path: tmp.to_path_buf(),
        op: "write",
        source: e.into_error(),
    })?;
    file.sync_all().map_err(io(tmp, "sync"))?;
    drop(file);
    std::fs::rename(tmp, dest).map_err(io(dest, "rename into place"))?;
    #[cfg(unix)]
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io(dir, "sync directory"))?;
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
        Ok(env) if env.entry_type.as_deref() == Some("session") => return Ok(()),
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
    let bad = |reason: String| ExportError::BadRecord {
        path: journal.to_path_buf(),
        offset,
        reason,
    };
    let text = String::from_utf8_lossy(payload);
    let value: Value =
        serde_json::from_str(session_types::js::trim(&text)).map_err(|e| bad(e.to_string()))?;
    serde_json::to_string(&value).map_err(|e| bad(e.to_string()))
}
