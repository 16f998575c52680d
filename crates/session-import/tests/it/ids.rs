//! One id per session (issue 16, point 4): an import whose header id is taken or
//! unsafe as a file name writes the id it assigns into the native header record; the
//! original id and header bytes stay in the provenance, and export gives them back.

use std::path::Path;

use session_import::{IssueKind, export, import_source, retention};
use session_journal::{Reader, ReaderOptions};

use super::support::*;

/// The three v1 fixtures whose headers share one id.
const SHARED: [&str; 3] = [
    "legacy/v1-compaction-index-forward.jsonl",
    "legacy/v1-compaction-index-header.jsonl",
    "legacy/v1-compaction-index-oob.jsonl",
];
const SHARED_ID: &str = "c0ffee00-1111-4222-8333-444455556666";

/// The `id` of the journal's header record (the first record), read as the
/// reference reads it (outer JavaScript whitespace ignored).
fn header_record_id(journal: &Path) -> String {
    let first = records(journal).into_iter().next().unwrap();
    let text = String::from_utf8(first).unwrap();
    js_value(session_types::js::trim(&text).as_bytes())["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The journal header frame's session id.
fn journal_session_id(journal: &Path) -> Option<String> {
    Reader::open(journal, ReaderOptions::default())
        .unwrap()
        .header()
        .session_id
        .clone()
}

fn exported(journal: &Path) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    export(journal, &out).unwrap();
    std::fs::read(out).unwrap()
}

/// What an export gives for `source` imported alone (nothing taken).
fn exported_alone(source: &Path) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    exported(&import_into(source, dir.path()).unwrap().journal)
}

/// Checks that every surface of the imported session names it by one id, the
/// journal's file name.
fn assert_one_id(journal: &Path, session_id: &str) {
    assert_eq!(
        journal.file_name().unwrap().to_string_lossy(),
        format!("{session_id}.jsonl")
    );
    assert_eq!(header_record_id(journal), session_id);
    assert_eq!(journal_session_id(journal).as_deref(), Some(session_id));
}

#[test]
fn header_ids_taken_in_the_directory_are_replaced_in_the_header_record() {
    let dest = tempfile::tempdir().unwrap();
    let outcomes: Vec<_> = SHARED
        .iter()
        .map(|n| import_into(&fixtures().join(n), dest.path()).unwrap())
        .collect();
    let mut ids: Vec<&str> = outcomes.iter().map(|o| o.session_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
    for (name, o) in SHARED.iter().zip(&outcomes) {
        assert_one_id(&o.journal, &o.session_id);
        let src = import_source(&o.journal).unwrap().unwrap();
        let first = o.session_id == SHARED_ID;
        assert_eq!(
            src.original_id.as_deref(),
            (!first).then_some(SHARED_ID),
            "{name}"
        );
        assert!(src.header_changed, "{name}: v1 headers are migrated");
        // Export gives back what the import of this source alone gives back.
        assert_eq!(
            exported(&o.journal),
            exported_alone(&fixtures().join(name)),
            "{name}"
        );
        if !first {
            let taken = o
                .issues
                .iter()
                .filter(|i| matches!(&i.kind, IssueKind::SessionIdTaken { id, used } if id == SHARED_ID && *used == o.session_id))
                .count();
            assert_eq!(taken, 1, "{name}: {:?}", o.issues);
        }
    }
}

/// A v3 source of one header and one entry, with this header id.
fn v3_source(dir: &Path, name: &str, header_id: &str, entry_id: &str) -> std::path::PathBuf {
    let header = HEADER_V3.replace("\"s-edge\"", &serde_json::to_string(header_id).unwrap());
    // A BOM before the header and a number the rewrite would spell differently: the
    // original bytes must come back all the same.
    let text = format!(
        "\u{feff}{}\n{}\n",
        header.replace("\"cwd\":\"/\"", "\"cwd\":\"/\",\"n\":1.0"),
        entry(entry_id, None)
    );
    write_source(dir, name, text.as_bytes())
}

#[test]
fn a_taken_v3_header_id_exports_the_source_bytes() {
    let src = tempfile::tempdir().unwrap();
    let a = v3_source(src.path(), "a.jsonl", "s-edge", "a1");
    let b = v3_source(src.path(), "b.jsonl", "s-edge", "b1");
    let dest = tempfile::tempdir().unwrap();
    let first = import_into(&a, dest.path()).unwrap();
    let second = import_into(&b, dest.path()).unwrap();
    assert_eq!(first.session_id, "s-edge");
    assert_ne!(second.session_id, "s-edge");
    assert_one_id(&first.journal, &first.session_id);
    assert_one_id(&second.journal, &second.session_id);
    assert_eq!(exported(&first.journal), std::fs::read(&a).unwrap());
    assert_eq!(exported(&second.journal), std::fs::read(&b).unwrap());
    // The header record differs from the source line; the retention read names the
    // original id; an untaken import has none.
    let source = import_source(&second.journal).unwrap().unwrap();
    assert!(source.header_changed);
    assert_eq!(source.original_id.as_deref(), Some("s-edge"));
    let r = retention(&second.journal, "b1").unwrap().unwrap();
    assert_eq!(r.original_session_id.as_deref(), Some("s-edge"));
    assert!(!r.changed);
    let r = retention(&first.journal, "a1").unwrap().unwrap();
    assert_eq!(r.original_session_id, None);
    let source = import_source(&first.journal).unwrap().unwrap();
    assert!(!source.header_changed);
    // Importing it again is recognised under the assigned id, also without the registry.
    std::fs::remove_file(dest.path().join(session_import::format::REGISTRY_FILE)).unwrap();
    let again = import_into(&b, dest.path()).unwrap();
    assert!(again.already_imported);
    assert_eq!(again.session_id, second.session_id);
}

#[test]
fn unsafe_header_ids_are_replaced_in_the_header_record() {
    for bad in ["../../etc/passwd", "a/b", "..", ".hidden", "a b", ""] {
        let src = tempfile::tempdir().unwrap();
        let source = v3_source(src.path(), "evil.jsonl", bad, "e1");
        let dest = tempfile::tempdir().unwrap();
        let o = import_into(&source, dest.path()).unwrap();
        assert!(
            o.session_id.starts_with("legacy-"),
            "{bad:?}: {}",
            o.session_id
        );
        assert_eq!(o.journal.parent(), Some(dest.path()));
        assert_one_id(&o.journal, &o.session_id);
        assert_eq!(
            exported(&o.journal),
            std::fs::read(&source).unwrap(),
            "{bad:?}"
        );
        let kept = import_source(&o.journal).unwrap().unwrap();
        assert_eq!(kept.original_id.as_deref(), Some(bad));
        let r = retention(&o.journal, "e1").unwrap().unwrap();
        assert_eq!(r.original_session_id.as_deref(), Some(bad));
        let unsafe_noted = o
            .issues
            .iter()
            .filter(|i| matches!(&i.kind, IssueKind::SessionIdUnsafe { id, used } if id == bad && *used == o.session_id))
            .count();
        assert_eq!(unsafe_noted, 1, "{bad:?}: {:?}", o.issues);
    }
}
