//! Retention records: present for imported entries, absent for native appends.

use std::path::{Path, PathBuf};

use session_import::format::{ENTRY, KIND_RETENTION, KIND_RETENTION_TABLE};
use session_import::{Retention, RetentionError, import_source, retention, retention_of};
use session_index::{Index, OpenIndexOptions};
use session_journal::{Durability, OpenOptions, Reader, ReaderOptions, Writer};

use super::support::*;

#[test]
fn imported_entries_name_their_source_line() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixtures().join("edge/malformed-lines.jsonl");
    let outcome = import_into(&source, dir.path()).unwrap();
    let r = retention(&outcome.journal, "e0000403").unwrap().unwrap();
    assert_eq!(r.line, 8);
    assert_eq!(r.source_version, 3);
    assert_eq!(r.blake3, outcome.source.blake3);
    assert_eq!(r.path, std::path::absolute(&source).unwrap());
    assert!(!r.changed);
    let src = import_source(&outcome.journal).unwrap().unwrap();
    assert_eq!(src.header_line, 1);

    // A natively appended entry has no retention record.
    let (mut w, _) = Writer::open(&outcome.journal, OpenOptions::default()).unwrap();
    w.append(
        ENTRY,
        entry("native1", Some("e0000404")).as_bytes(),
        Durability::Durable,
    )
    .unwrap();
    drop(w);
    assert_eq!(retention(&outcome.journal, "native1").unwrap(), None);
    assert_eq!(retention(&outcome.journal, "no-such-id").unwrap(), None);
}

#[test]
fn migrated_entries_are_marked_changed() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = import_into(&fixtures().join("legacy/v2-hookmessage.jsonl"), dir.path()).unwrap();
    let renamed = retention(&outcome.journal, "e0000105").unwrap().unwrap();
    assert!(renamed.changed);
    assert_eq!((renamed.line, renamed.source_version), (6, 2));
    let kept = retention(&outcome.journal, "e0000102").unwrap().unwrap();
    assert!(!kept.changed);
}

// ----- the retention table (issue 19, point 3) and the per-entry layout before it -----

/// The kind byte of every frame of `journal` (seals left out), in order.
fn kinds(journal: &Path) -> Vec<u8> {
    let r = Reader::open(journal, ReaderOptions::default()).unwrap();
    r.frames(None).map(|f| f.unwrap().info.kind.get()).collect()
}

/// The session index of `journal` (held in memory; its sidecar is written beside it).
fn index(journal: &Path) -> Index {
    Index::open_or_rebuild(journal, OpenIndexOptions::default())
        .unwrap()
        .0
}

/// The retention of `id` through the index, as the manager reads it.
fn through_index(
    journal: &Path,
    index: &Index,
    id: &str,
) -> Result<Option<Retention>, RetentionError> {
    let reader = Reader::open(journal, ReaderOptions::default()).unwrap();
    let bound = reader.len().unwrap().0;
    let i = index.find(id).expect("an indexed id");
    retention_of(&reader, index, i, bound)
}

/// The 1-based line of every id in a v2/v3 source (the last line with it).
fn source_lines(source: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(source).unwrap();
    let mut out: Vec<(String, u64)> = Vec::new();
    for (k, line) in text.split('\n').enumerate() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim_end_matches('\r')) else {
            continue;
        };
        if let Some(id) = v.get("id").and_then(|i| i.as_str())
            && v.get("type").and_then(|t| t.as_str()) != Some("session")
        {
            out.retain(|(i, _)| i != id);
            out.push((id.to_owned(), k as u64 + 1));
        }
    }
    out
}

/// Every id of `journal` reads the same line by id (a scan) and through the index, and
/// that line is `want`'s.
fn assert_lines(journal: &Path, want: &[(String, u64)]) {
    let index = index(journal);
    for (id, line) in want {
        let by_id = retention(journal, id).unwrap().expect("imported");
        assert_eq!(by_id.line, *line, "{id} by id");
        let indexed = through_index(journal, &index, id).unwrap();
        assert_eq!(indexed.as_ref(), Some(&by_id), "{id} through the index");
    }
}

#[test]
fn an_import_writes_one_retention_table_not_a_frame_per_record() {
    let dir = tempfile::tempdir().unwrap();
    for source in [
        fixtures().join("legacy/v2-hookmessage.jsonl"),
        fixtures().join("edge/malformed-lines.jsonl"),
        fixtures().join("legacy/v1-linear.jsonl"),
    ] {
        let outcome = import_into(&source, dir.path()).unwrap();
        let kinds = kinds(&outcome.journal);
        // Header record, import source, the records, one table.
        assert_eq!(
            kinds.len() as u64,
            outcome.entries + 3,
            "{}",
            source.display()
        );
        assert_eq!(
            kinds.iter().filter(|&&k| k == KIND_RETENTION.get()).count(),
            0
        );
        assert_eq!(kinds.last(), Some(&KIND_RETENTION_TABLE.get()));
        // The per-entry layout wrote 2 × records + 2 frames: about half of it now.
        let before = 2 * outcome.entries + 2;
        assert!(2 * kinds.len() as u64 <= before + 4, "{kinds:?}");
    }
}

#[test]
fn every_imported_record_reads_its_line_by_id_and_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    for source in [
        fixtures().join("legacy/v2-hookmessage.jsonl"),
        fixtures().join("edge/malformed-lines.jsonl"),
        fixtures().join("edge/tree-oddities.jsonl"),
        fixtures().join("edge/labels-names-roots.jsonl"),
    ] {
        let outcome = import_into(&source, dir.path()).unwrap();
        let want = source_lines(&source);
        assert!(!want.is_empty());
        assert_lines(&outcome.journal, &want);
    }
    // Migrated records are marked changed, the others not, through the index too.
    let outcome = import_into(&fixtures().join("legacy/v2-hookmessage.jsonl"), dir.path()).unwrap();
    let index = index(&outcome.journal);
    let changed = |id: &str| {
        through_index(&outcome.journal, &index, id)
            .unwrap()
            .unwrap()
            .changed
    };
    assert!(changed("e0000105"));
    assert!(!changed("e0000102"));
}

#[test]
fn the_table_survives_natively_appended_entries_and_closes() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixtures().join("edge/malformed-lines.jsonl");
    let outcome = import_into(&source, dir.path()).unwrap();
    for round in 0..2 {
        let (mut w, _) = Writer::open(&outcome.journal, OpenOptions::default()).unwrap();
        let id = format!("native{round}");
        w.append(
            ENTRY,
            entry(&id, Some("e0000404")).as_bytes(),
            Durability::Durable,
        )
        .unwrap();
        // The first round closes (a seal after the native entry), the second does not.
        if round == 0 {
            w.close().unwrap();
        } else {
            drop(w);
        }
    }
    assert_lines(&outcome.journal, &source_lines(&source));
    let index = index(&outcome.journal);
    for id in ["native0", "native1"] {
        assert_eq!(retention(&outcome.journal, id).unwrap(), None);
        assert_eq!(through_index(&outcome.journal, &index, id).unwrap(), None);
    }
}

#[test]
fn a_flipped_byte_in_the_table_is_an_error_not_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = import_into(&fixtures().join("edge/malformed-lines.jsonl"), dir.path()).unwrap();
    let journal = &outcome.journal;
    let index = index(journal);
    let (start, end) = {
        let r = Reader::open(journal, ReaderOptions::default()).unwrap();
        let table = r
            .frames(None)
            .map(|f| f.unwrap())
            .find(|f| f.info.kind == KIND_RETENTION_TABLE)
            .expect("a table");
        (table.info.offset.0 as usize, table.info.end().0 as usize)
    };
    let good = std::fs::read(journal).unwrap();
    for at in start..end {
        let mut bytes = good.clone();
        bytes[at] ^= 0x10;
        std::fs::write(journal, &bytes).unwrap();
        for id in ["e0000401", "e0000404"] {
            assert!(
                through_index(journal, &index, id).is_err(),
                "byte {at}: {id} through the index"
            );
            assert!(retention(journal, id).is_err(), "byte {at}: {id} by id");
        }
    }
}

/// The per-entry layout (a `0x21` frame after every record), written by the import
/// before the table: `tests/fixtures/import-per-entry-retention/`.
fn old_layout(name: &str, dir: &Path) -> PathBuf {
    let golden = fixtures().join("import-per-entry-retention").join(name);
    let journal = dir.join(name);
    std::fs::copy(&golden, &journal).unwrap();
    journal
}

#[test]
fn old_layout_journals_keep_their_retention_and_export() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["v2-hookmessage.jsonl", "malformed-lines.jsonl"] {
        let source = match name {
            "v2-hookmessage.jsonl" => fixtures().join("legacy").join(name),
            _ => fixtures().join("edge").join(name),
        };
        let journal = old_layout(name, dir.path());
        let kinds = kinds(&journal);
        assert!(
            kinds.contains(&KIND_RETENTION.get()) && !kinds.contains(&KIND_RETENTION_TABLE.get())
        );
        let want = source_lines(&source);
        assert_lines(&journal, &want);
        let r = retention(&journal, &want[0].0).unwrap().unwrap();
        assert_eq!(r.path, Path::new("/tmp/leanimport-gen").join(name));
        // Export: the same bytes as an export of a fresh import of the source.
        let fresh = import_into(&source, &dir.path().join("fresh")).unwrap();
        let (a, b) = (dir.path().join("old.out"), dir.path().join("new.out"));
        session_import::export(&journal, &a).unwrap();
        session_import::export(&fresh.journal, &b).unwrap();
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "{name}"
        );
        // Natively appended entries have none; the imported ones keep theirs.
        let (mut w, _) = Writer::open(&journal, OpenOptions::default()).unwrap();
        w.append(ENTRY, entry("native", None).as_bytes(), Durability::Durable)
            .unwrap();
        w.close().unwrap();
        assert_eq!(retention(&journal, "native").unwrap(), None);
        let index = index(&journal);
        assert_eq!(through_index(&journal, &index, "native").unwrap(), None);
        assert_lines(&journal, &want);
    }
}

#[test]
fn a_table_longer_than_one_frame_reads_across_its_frames() {
    use session_import::format::RETENTION_TABLE_RUNS_PER_FRAME as PER_FRAME;
    let dir = tempfile::tempdir().unwrap();
    // A blank line after every record: one run per record, two table frames.
    let n = PER_FRAME + 5;
    let mut text = format!("{HEADER_V3}\n");
    for k in 0..n {
        text.push_str(&format!(
            r#"{{"type":"custom","customType":"t","id":"e{k}","parentId":null}}"#
        ));
        text.push_str("\n\n");
    }
    let source = write_source(dir.path(), "long.jsonl", text.as_bytes());
    let outcome = import_into(&source, &dir.path().join("out")).unwrap();
    let kinds = kinds(&outcome.journal);
    let tables = kinds
        .iter()
        .filter(|&&k| k == KIND_RETENTION_TABLE.get())
        .count();
    assert_eq!(tables, 2);
    let index = index(&outcome.journal);
    for k in [0, 1, PER_FRAME - 1, PER_FRAME, PER_FRAME + 1, n - 1] {
        let id = format!("e{k}");
        let want = 2 + 2 * k as u64;
        let r = through_index(&outcome.journal, &index, &id)
            .unwrap()
            .unwrap();
        assert_eq!(r.line, want, "{id} through the index");
        assert_eq!(
            retention(&outcome.journal, &id).unwrap().unwrap().line,
            want,
            "{id}"
        );
    }
}
