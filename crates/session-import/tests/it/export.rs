//! Export: v3 JSONL out, byte for byte for v3 sources.

use session_import::export;

use super::support::*;

/// The lines an import takes from a v3 source, as export writes them.
fn surviving_lines(name: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let outcome = import_into(&fixtures().join(name), dir.path()).unwrap();
    let mut out = Vec::new();
    for r in records(&outcome.journal) {
        out.extend_from_slice(&r);
        out.push(b'\n');
    }
    out
}

#[test]
fn v3_fixtures_export_byte_identical() {
    for name in [
        "legacy/v3-control.jsonl",
        "edge/json-values.jsonl",
        "edge/tree-oddities.jsonl",
        "edge/labels-names-roots.jsonl",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let source = fixtures().join(name);
        let outcome = import_into(&source, dir.path()).unwrap();
        let out = dir.path().join("out.jsonl");
        let e = export(&outcome.journal, &out).unwrap();
        assert_eq!(e.stopped, None);
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&source).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn malformed_lines_export_keeps_every_surviving_line() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixtures().join("edge/malformed-lines.jsonl");
    let outcome = import_into(&source, dir.path()).unwrap();
    let out = dir.path().join("out.jsonl");
    export(&outcome.journal, &out).unwrap();
    let exported = std::fs::read(&out).unwrap();
    assert_eq!(exported, surviving_lines("edge/malformed-lines.jsonl"));
    // Each exported line is a source line minus its CR.
    let src = std::fs::read(&source).unwrap();
    for line in exported.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        assert!(src.windows(line.len()).any(|w| w == line));
    }
    assert_eq!(
        exported
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        5
    );
}

#[test]
fn migrated_export_reimports_to_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = import_into(&fixtures().join("legacy/v1-compaction.jsonl"), dir.path()).unwrap();
    let out = dir.path().join("v1-as-v3.jsonl");
    export(&outcome.journal, &out).unwrap();
    let again_dir = tempfile::tempdir().unwrap();
    let again = import_into(&out, again_dir.path()).unwrap();
    assert_eq!(again.source.version, 3);
    assert_eq!(records(&again.journal), records(&outcome.journal));
}

#[test]
fn native_open_of_plain_jsonl_says_to_import() {
    let err = session_journal::Reader::open(
        &fixtures().join("legacy/v3-control.jsonl"),
        session_journal::ReaderOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("import it"), "{err}");
}

#[test]
fn lines_longer_than_the_read_buffer_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let big = format!(
        r#"{{"type":"message","id":"big","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","message":{{"role":"user","content":"{}","timestamp":2}}}}"#,
        "x".repeat(3 << 20)
    );
    let text = format!(
        "{HEADER_V3}\n{}\n{big}\n{}\n",
        entry("a", None),
        entry("c", Some("big"))
    );
    let source = write_source(dir.path(), "big.jsonl", text.as_bytes());
    let outcome = import_into(&source, &dir.path().join("s")).unwrap();
    assert_eq!(outcome.entries, 3);
    let out = dir.path().join("out.jsonl");
    export(&outcome.journal, &out).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), text.as_bytes());
}

/// Issue 14: JavaScript whitespace an import kept byte-exact (a BOM before the header,
/// U+00A0 after the last line) stays where the reference's `trim()` removes it. Once
/// an entry is appended after the import, the U+00A0 is no longer at the file's end,
/// where `JSON.parse` would refuse its line: export leaves it out there.
#[test]
fn outer_whitespace_is_written_only_where_the_reference_trims_it() {
    use session_import::format::ENTRY;
    use session_journal::{Durability, OpenOptions, Writer};
    let src = tempfile::tempdir().unwrap();
    let source_text = format!("\u{feff}{HEADER_V3}\n{}\u{a0}", entry("a", None));
    let source = write_source(src.path(), "ws.jsonl", source_text.as_bytes());
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    let out = dest.path().join("export.jsonl");
    session_import::export(&outcome.journal, &out).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!("{source_text}\n"),
        "byte for byte, the final newline added"
    );
    let (mut w, _) = Writer::open(&outcome.journal, OpenOptions::default()).unwrap();
    let appended = format!("\u{3000}{}", entry("b", Some("a")));
    w.append(ENTRY, appended.as_bytes(), Durability::Durable)
        .unwrap();
    drop(w);
    session_import::export(&outcome.journal, &out).unwrap();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        format!(
            "\u{feff}{HEADER_V3}\n{}\n{}\n",
            entry("a", None),
            entry("b", Some("a"))
        )
    );
}
