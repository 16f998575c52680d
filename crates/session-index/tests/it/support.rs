//! Shared helpers: journals from JSONL text, and a rendering of every answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_index::{Index, IndexReport, OpenIndexOptions};
use session_journal::vfs::Vfs;
use session_journal::{Capture, JournalId};
use session_testkit::legacy;
use session_testkit::sim::SimFs;

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

pub(crate) fn sim() -> Arc<SimFs> {
    Arc::new(SimFs::new())
}

pub(crate) fn write(fs: Arc<dyn Vfs>, path: &Path, text: &str) -> Capture {
    fs.create_dir_all(path.parent().unwrap()).unwrap();
    let id = legacy::fixture_journal_id(&path.to_string_lossy());
    legacy::write_journal_from_jsonl(path, id, text, fs).unwrap()
}

pub(crate) fn write_with_id(fs: Arc<dyn Vfs>, path: &Path, id: JournalId, text: &str) -> Capture {
    fs.create_dir_all(path.parent().unwrap()).unwrap();
    legacy::write_journal_from_jsonl(path, id, text, fs).unwrap()
}

/// The journal's writer on `fs` (default options otherwise).
pub(crate) fn writer(fs: Arc<dyn Vfs>, path: &Path) -> session_journal::Writer {
    session_journal::Writer::open(
        path,
        session_journal::OpenOptions {
            vfs: fs,
            ..session_journal::OpenOptions::default()
        },
    )
    .unwrap()
    .0
}

pub(crate) fn open(fs: Arc<dyn Vfs>, path: &Path) -> (Index, IndexReport) {
    Index::open_or_rebuild(
        path,
        OpenIndexOptions {
            vfs: fs,
            ..OpenIndexOptions::default()
        },
    )
    .unwrap()
}

/// Every answer the index gives, as JSON text (for equality across open paths).
pub(crate) fn fingerprint(ix: &Index) -> String {
    let mut entries = Vec::new();
    for i in 0..ix.len() as u32 {
        let e = ix.info(session_index::EntryIndex(i)).unwrap();
        entries.push(serde_json::json!([
            e.id,
            e.parent_id,
            e.entry_type,
            e.role,
            e.timestamp_ms,
            e.offset.0,
            e.seq.0,
            e.payload_len,
            e.kind
        ]));
    }
    let tree = ix.tree();
    let nodes: Vec<_> = tree
        .preorder()
        .iter()
        .map(|n| serde_json::json!([n.entry.0, n.depth, n.children]))
        .collect();
    let labels: Vec<_> = ix
        .labels()
        .map(|(k, v)| serde_json::json!([k, v]))
        .collect();
    serde_json::json!({
        "leaf": ix.leaf().map(|l| l.0),
        "name": ix.name(),
        "state": ix.lifecycle_state(),
        "labels": labels,
        "counts": format!("{:?}", ix.counts()),
        "summary": ix.summary().to_json("p", Some(0)),
        "covered": ix.covered_len().0,
        "entries": entries,
        "tree": nodes,
        "cycles": format!("{:?}", tree.report),
    })
    .to_string()
}

/// A linear session of `n` entries (user/assistant messages, a label and a name now
/// and then), as JSONL.
pub(crate) fn synthetic(n: usize) -> String {
    let mut s = String::from(
        r#"{"type":"session","version":3,"id":"synthetic","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    s.push('\n');
    let mut parent = "null".to_owned();
    for i in 0..n {
        let id = format!("{i:08x}");
        let ts = "2026-01-01T00:00:00.000Z";
        let line = match i % 50 {
            7 => format!(
                r#"{{"type":"label","id":"{id}","parentId":{parent},"timestamp":"{ts}","targetId":"{:08x}","label":"l{i}"}}"#,
                i - 1
            ),
            9 => format!(
                r#"{{"type":"session_info","id":"{id}","parentId":{parent},"timestamp":"{ts}","name":" n{i} "}}"#
            ),
            k if k % 2 == 0 => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"user","content":"hello {i}","timestamp":{}}}}}"#,
                1767225600000u64 + i as u64
            ),
            _ => format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"answer {i}"}}],"timestamp":{}}}}}"#,
                1767225600000u64 + i as u64
            ),
        };
        s.push_str(&line);
        s.push('\n');
        parent = format!("\"{id}\"");
    }
    s
}

/// [`fingerprint`] after looking every entry up by its id first (the id table's
/// pages are read by lookups, which a fingerprint's tree answers through a map).
pub(crate) fn fingerprint_with_lookups(ix: &Index) -> String {
    for i in 0..ix.len() as u32 {
        if let Some(id) = ix.id_of(session_index::EntryIndex(i)) {
            let _ = ix.find(id);
        }
    }
    fingerprint(ix)
}

/// A copy of `sidecar` whose version field says `version`, its head check
/// recomputed.
pub(crate) fn session_index_with_version(sidecar: &[u8], version: u32) -> Vec<u8> {
    let mut b = sidecar.to_vec();
    b[8..12].copy_from_slice(&version.to_le_bytes());
    let head_len = u64::from_le_bytes(b[72..80].try_into().unwrap()) as usize;
    let end = head_len - session_index::SIDECAR_TRAILER_LEN;
    let t = session_index::sidecar_trailer(&b[..end]);
    b[end..head_len].copy_from_slice(&t);
    b
}
