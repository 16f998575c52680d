//! Test and benchmark scaffolding: writes a native session journal holding the
//! records of a legacy JSONL text verbatim (header record first, then one frame per
//! entry). This is not the import (no migration, no checks); the import crate does
//! that properly. It exists so tests, benchmarks and the conformance command can
//! build native journals from the reference's files.

use std::path::Path;
use std::sync::Arc;

use session_journal::vfs::Vfs;
use session_journal::{
    Capture, Clock, CreateOptions, Durability, JournalId, NewFrame, Tag, Writer,
};

use session_index::kinds::{ENTRY, SESSION_HEADER, id_tag};

/// The records of a legacy JSONL text as the reference reads them: the text is
/// trimmed and split on `\n`; blank lines and lines that are not JSON are skipped.
pub fn legacy_records(text: &str) -> Vec<&str> {
    text.trim()
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .filter(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok())
        .collect()
}

/// A journal id derived from a name (deterministic, for fixtures).
pub fn fixture_journal_id(name: &str) -> JournalId {
    let h = blake3::hash(name.as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&h.as_bytes()[..16]);
    JournalId(id)
}

/// Writes a journal at `path` holding `records` (the first one as the session header
/// record if its `type` is `session`), in batches, then syncs. Returns the durable
/// capture.
pub fn write_journal(
    path: &Path,
    id: JournalId,
    records: &[&str],
    vfs: Arc<dyn Vfs>,
) -> Result<Capture, Box<dyn std::error::Error + Send + Sync>> {
    let opts = CreateOptions {
        vfs,
        clock: Clock::fixed(0),
        session_id: None,
        ..CreateOptions::default()
    };
    let mut w = Writer::create(path, id, opts)?;
    let mut frames = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        // Read as JSON.parse reads it (a number beyond a double's range is no error,
        // nor is a lone surrogate, which a typed view reads as U+FFFD).
        let view = session_types::js::finite_view(r);
        let is_header = i == 0
            && session_types::json::from_str_lossy::<serde_json::Value>(&view)
                .ok()
                .and_then(|v| {
                    v.get("type")
                        .and_then(|t| t.as_str())
                        .map(|t| t == session_types::SessionHeader::TYPE)
                })
                .unwrap_or(false);
        let kind = if is_header { SESSION_HEADER } else { ENTRY };
        let tag = if is_header {
            Tag::default()
        } else {
            session_types::json::from_str_lossy::<serde_json::Value>(&view)
                .ok()
                .and_then(|v| v.get("id").and_then(|t| t.as_str()).map(id_tag))
                .unwrap_or_default()
        };
        frames.push(NewFrame::new(kind, r.as_bytes()).with_tag(tag));
    }
    for chunk in frames.chunks(512) {
        w.append_batch(chunk, Durability::Buffered)?;
    }
    Ok(w.close()?)
}

/// [`write_journal`] of a legacy JSONL text.
pub fn write_journal_from_jsonl(
    path: &Path,
    id: JournalId,
    text: &str,
    vfs: Arc<dyn Vfs>,
) -> Result<Capture, Box<dyn std::error::Error + Send + Sync>> {
    write_journal(path, id, &legacy_records(text), vfs)
}
