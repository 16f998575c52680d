//! Shared helpers: fixture paths, imports that check the source stays untouched.

use std::path::{Path, PathBuf};

use serde_json::Value;
use session_import::{Destination, ImportError, ImportOptions, ImportOutcome, format::is_record};
use session_journal::{Clock, Reader, ReaderOptions};

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

pub(crate) fn options() -> ImportOptions {
    ImportOptions {
        clock: Clock::fixed(1_700_000_000_000),
        ..ImportOptions::default()
    }
}

fn hash(path: &Path) -> blake3::Hash {
    blake3::hash(&std::fs::read(path).unwrap())
}

/// Imports `source` into `dir`, asserting that the source's bytes did not change
/// (also on refusal).
pub(crate) fn import_into(source: &Path, dir: &Path) -> Result<ImportOutcome, ImportError> {
    let before = hash(source);
    let result = session_import::import(source, &Destination::Dir(dir.to_path_buf()), &options());
    assert_eq!(
        hash(source),
        before,
        "{} changed by the import",
        source.display()
    );
    result
}

/// Every record payload of a journal, in order.
pub(crate) fn records(journal: &Path) -> Vec<Vec<u8>> {
    let r = Reader::open(journal, ReaderOptions::default()).unwrap();
    r.frames(None)
        .map(|f| f.unwrap())
        .filter(|f| is_record(f.info.kind))
        .map(|f| f.payload)
        .collect()
}

/// A record as the reference would print it (a number beyond a double's range,
/// `Infinity` to it, as `null`).
pub(crate) fn js_value(text: &[u8]) -> Value {
    let text = std::str::from_utf8(text).unwrap();
    let (view, _) = session_types::json::replace_lone_surrogates(text);
    let view = session_types::js::finite_view(&view);
    session_types::json::js_normalized(&serde_json::from_str(&view).unwrap())
}

/// Files in a directory (names), sorted.
pub(crate) fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Writes `bytes` as a legacy file in `dir`.
pub(crate) fn write_source(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

pub(crate) const HEADER_V3: &str = r#"{"type":"session","version":3,"id":"s-edge","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;

pub(crate) fn entry(id: &str, parent: Option<&str>) -> String {
    let parent = parent.map_or("null".to_owned(), |p| format!("{p:?}"));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
    )
}
