//! Import: the legacy corpus, edge fixtures, refusals, idempotence, source safety.

use std::collections::HashMap;

use serde_json::Value;
use std::path::{Path, PathBuf};

use session_import::{Destination, ImportError, ImportOptions, IssueKind};

use super::support::*;

const LEGACY: [&str; 8] = [
    "legacy/v1-linear",
    "legacy/v1-compaction",
    "legacy/v1-compaction-index-header",
    "legacy/v1-compaction-index-forward",
    "legacy/v1-compaction-index-oob",
    "legacy/v1-early-events",
    "legacy/v2-hookmessage",
    "legacy/v3-control",
];

/// The reference's migrated file (`*.after-open.jsonl`), or the source itself when
/// open() did not rewrite it.
fn reference_lines(name: &str) -> Vec<Vec<u8>> {
    let after = fixtures().join(format!("{name}.after-open.jsonl"));
    let path = if after.exists() {
        after
    } else {
        fixtures().join(format!("{name}.jsonl"))
    };
    std::fs::read(path)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Replaces our derived v1 ids by the reference's (same positions).
fn rename_ids(ours: &mut [Value], theirs: &[Value]) {
    let map: HashMap<String, String> = ours
        .iter()
        .zip(theirs)
        .filter_map(|(o, t)| {
            Some((
                o.get("id")?.as_str()?.to_owned(),
                t.get("id")?.as_str()?.to_owned(),
            ))
        })
        .collect();
    for v in ours.iter_mut().skip(1) {
        let obj = v.as_object_mut().unwrap();
        for key in ["id", "parentId", "firstKeptEntryId"] {
            if let Some(Value::String(s)) = obj.get(key)
                && let Some(t) = map.get(s)
            {
                obj.insert(key.to_owned(), Value::from(t.clone()));
            }
        }
    }
}

#[test]
fn legacy_fixtures_import_to_the_reference_migration() {
    for name in LEGACY {
        let dir = tempfile::tempdir().unwrap();
        let source = fixtures().join(format!("{name}.jsonl"));
        let outcome = import_into(&source, dir.path()).unwrap();
        let ours_raw = records(&outcome.journal);
        let theirs_raw = reference_lines(name);
        assert_eq!(ours_raw.len(), theirs_raw.len(), "{name}: record count");
        let mut ours: Vec<Value> = ours_raw.iter().map(|r| js_value(r)).collect();
        let theirs: Vec<Value> = theirs_raw.iter().map(|r| js_value(r)).collect();
        if name.contains("/v1-") {
            rename_ids(&mut ours, &theirs);
        } else {
            // v2/v3: no ids are invented, lines the migration leaves alone stay byte-exact.
            let source_lines = reference_lines(name);
            let _ = source_lines;
        }
        for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            // Key order matters: compare the serialisations.
            assert_eq!(o.to_string(), t.to_string(), "{name}: record {i}");
        }
    }
}

#[test]
fn v3_records_are_the_source_lines_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixtures().join("legacy/v3-control.jsonl");
    let outcome = import_into(&source, dir.path()).unwrap();
    let lines: Vec<Vec<u8>> = std::fs::read(&source)
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    assert_eq!(records(&outcome.journal), lines);
}

#[test]
fn v1_ids_are_derived_from_the_source() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let source = fixtures().join("legacy/v1-linear.jsonl");
    let first = records(&import_into(&source, a.path()).unwrap().journal);
    let second = records(&import_into(&source, b.path()).unwrap().journal);
    assert_eq!(first, second, "same file, same ids");
    let ids = |recs: &[Vec<u8>]| -> Vec<String> {
        recs.iter()
            .skip(1)
            .map(|r| js_value(r)["id"].as_str().unwrap().to_owned())
            .collect()
    };
    for id in ids(&first) {
        assert!(
            id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    let c = tempfile::tempdir().unwrap();
    let other = fixtures().join("legacy/v1-compaction.jsonl");
    let third = records(&import_into(&other, c.path()).unwrap().journal);
    let firsts: std::collections::HashSet<String> = ids(&first).into_iter().collect();
    assert!(
        ids(&third).iter().all(|id| !firsts.contains(id)),
        "different files, different ids"
    );
}

#[test]
fn v1_compaction_indexes_follow_the_reference() {
    let cases = [
        ("legacy/v1-compaction-index-header", "dropped"),
        ("legacy/v1-compaction-index-forward", "dropped"),
        ("legacy/v1-compaction-index-oob", "dropped"),
        ("legacy/v1-compaction", "converted"),
    ];
    for (name, expect) in cases {
        let dir = tempfile::tempdir().unwrap();
        let outcome = import_into(&fixtures().join(format!("{name}.jsonl")), dir.path()).unwrap();
        let found = outcome.issues.iter().any(|i| {
            matches!(
                (&i.kind, expect),
                (IssueKind::FirstKeptIndexDropped { .. }, "dropped")
                    | (IssueKind::FirstKeptIndexConverted { .. }, "converted")
            )
        });
        assert!(found, "{name}: {}", outcome.render());
    }
}

/// The outcome report of an edge fixture, for a snapshot.
fn edge_report(name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let outcome = import_into(&fixtures().join(format!("edge/{name}.jsonl")), dir.path()).unwrap();
    outcome.render()
}

#[test]
fn malformed_lines_outcome() {
    insta::assert_snapshot!(edge_report("malformed-lines"));
}

#[test]
fn json_values_outcome() {
    insta::assert_snapshot!(edge_report("json-values"));
}

#[test]
fn tree_oddities_outcome() {
    insta::assert_snapshot!(edge_report("tree-oddities"));
}

#[test]
fn labels_names_roots_outcome() {
    insta::assert_snapshot!(edge_report("labels-names-roots"));
}

#[test]
fn refusals_write_nothing() {
    let src = tempfile::tempdir().unwrap();
    let native = {
        let p = src.path().join("native.jsonl");
        let w = session_journal::Writer::create(
            &p,
            session_journal::JournalId([1; 16]),
            session_journal::CreateOptions::default(),
        )
        .unwrap();
        w.close().unwrap();
        p
    };
    let cases: Vec<(std::path::PathBuf, &str)> = vec![
        (fixtures().join("edge/empty-file.jsonl"), "empty file"),
        (
            write_source(src.path(), "blank.jsonl", b"\n  \r\n\n"),
            "empty file",
        ),
        (
            fixtures().join("edge/no-header.jsonl"),
            "no session header: line 1",
        ),
        (
            write_source(src.path(), "text.txt", b"hello\nworld\n"),
            "not a JSONL file: no line is JSON text (first bad line 1",
        ),
        (
            write_source(src.path(), "binary.bin", &[0xff, 0xfe, 0, 1, 2, b'\n']),
            "not a JSONL file",
        ),
        (native, "already a native journal"),
        (
            write_source(
                src.path(),
                "numeric-id.jsonl",
                b"{\"type\":\"session\",\"version\":3,\"id\":7}\n",
            ),
            "a session header without a string id",
        ),
    ];
    for (source, expect) in cases {
        let dest = tempfile::tempdir().unwrap();
        let err = import_into(&source, dest.path()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(expect), "{}: {msg}", source.display());
        assert!(!msg.ends_with('.'), "{msg}");
        assert_eq!(
            listing(dest.path()),
            Vec::<String>::new(),
            "{}: wrote something",
            source.display()
        );
    }
}

#[test]
fn torn_last_line_is_reported_not_taken() {
    let src = tempfile::tempdir().unwrap();
    let text = format!(
        "{HEADER_V3}\n{}\n{}",
        entry("a", None),
        &entry("b", Some("a"))[..40]
    );
    let source = write_source(src.path(), "torn.jsonl", text.as_bytes());
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert_eq!(outcome.entries, 1);
    insta::assert_snapshot!(outcome.render());
}

#[test]
fn valid_last_line_without_newline_is_taken() {
    let src = tempfile::tempdir().unwrap();
    let text = format!(
        "{HEADER_V3}\n{}\n{}",
        entry("a", None),
        entry("b", Some("a"))
    );
    let source = write_source(src.path(), "no-final-newline.jsonl", text.as_bytes());
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert_eq!(outcome.entries, 2);
    assert!(outcome.issues.is_empty(), "{}", outcome.render());
}

#[test]
fn invalid_utf8_is_kept_byte_exact_and_reported_with_its_line() {
    // The reference decodes the file as UTF-8 with U+FFFD replacement and keeps the
    // line; so do we, keeping its bytes, which export writes back unchanged.
    let src = tempfile::tempdir().unwrap();
    let mut bytes = format!("{HEADER_V3}\n{}\n", entry("a", None)).into_bytes();
    bytes.extend_from_slice(b"{\"type\":\"message\",\"id\":\"b\",\"x\":\"\xff\xfe\"}\n");
    bytes.extend_from_slice(format!("{}\n", entry("c", Some("a"))).as_bytes());
    let source = write_source(src.path(), "utf8.jsonl", &bytes);
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert_eq!(outcome.entries, 3);
    insta::assert_snapshot!(outcome.render());
    let out = dest.path().join("export.jsonl");
    session_import::export(&outcome.journal, &out).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), bytes);
}

#[test]
fn javascript_whitespace_is_trimmed_only_where_the_reference_trims() {
    // A BOM before the header and U+00A0 after the last record: the reference's
    // trim() of the whole file removes them. U+00A0 after a record that is not the
    // last, or before one that is not the first: JSON.parse refuses the line.
    let src = tempfile::tempdir().unwrap();
    let mut bytes = "\u{feff}".to_owned() + HEADER_V3 + "\n";
    bytes += &format!("{}\n", entry("a", None));
    bytes += &format!("{}\u{a0}\n", entry("x", Some("a")));
    bytes += &format!("\u{3000}{}\n", entry("y", Some("a")));
    bytes += "\u{a0}\u{2028}\n";
    bytes += &format!("{}\u{3000}\n\u{2029}", entry("b", Some("a")));
    let source = write_source(src.path(), "ws.jsonl", bytes.as_bytes());
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert_eq!(outcome.entries, 2, "{}", outcome.render());
    assert_eq!(outcome.blank_lines, 2);
    insta::assert_snapshot!(outcome.render());
    // Kept byte-exact: the export holds the BOM and the trailing U+3000.
    let out = dest.path().join("export.jsonl");
    session_import::export(&outcome.journal, &out).unwrap();
    let expected = "\u{feff}".to_owned()
        + HEADER_V3
        + "\n"
        + &entry("a", None)
        + "\n"
        + &entry("b", Some("a"))
        + "\u{3000}\n";
    assert_eq!(std::fs::read_to_string(&out).unwrap(), expected);
}

#[test]
fn a_header_followed_by_javascript_whitespace_and_records_is_refused() {
    // JSON.parse refuses the header line, so the reference finds no header and
    // replaces the file: we refuse the import instead.
    let src = tempfile::tempdir().unwrap();
    let bytes = format!("{HEADER_V3}\u{a0}\n{}\n", entry("a", None));
    let source = write_source(src.path(), "h.jsonl", bytes.as_bytes());
    let dest = tempfile::tempdir().unwrap();
    let e = import_into(&source, dest.path()).unwrap_err();
    assert!(e.to_string().contains("whitespace"), "{e}");
    assert_eq!(std::fs::read_dir(dest.path()).unwrap().count(), 0);
}

#[test]
fn repeated_keys_keep_the_line_byte_exact() {
    let src = tempfile::tempdir().unwrap();
    let dup = r#"{"type":"message","id":"b","parentId":"zzz","timestamp":"2025-01-01T00:00:02.000Z","parentId":"a","message":{"role":"user","content":"x","timestamp":2}}"#;
    let bytes = format!("{HEADER_V3}\n{}\n{dup}\n", entry("a", None));
    let source = write_source(src.path(), "dup.jsonl", bytes.as_bytes());
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert_eq!(outcome.entries, 2);
    assert!(outcome.issues.is_empty(), "{}", outcome.render());
    let out = dest.path().join("export.jsonl");
    session_import::export(&outcome.journal, &out).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), bytes);
}

#[test]
fn duplicates_cycles_and_claims_are_kept_and_reported() {
    let src = tempfile::tempdir().unwrap();
    let lines = [
        HEADER_V3.to_owned(),
        entry("a", None),
        entry("a", None),
        entry("x", Some("y")),
        entry("y", Some("x")),
        entry("s", Some("s")),
        r#"{"type":"session_state","id":"st","parentId":"a","timestamp":"2025-01-01T00:00:02.000Z","state":"active"}"#.to_owned(),
        r#"{"type":"session","version":3,"id":"second"}"#.to_owned(),
        "[1,2]".to_owned(),
        r#"{"type":"message","parentId":"a"}"#.to_owned(),
    ];
    let source = write_source(
        src.path(),
        "odd.jsonl",
        (lines.join("\n") + "\n").as_bytes(),
    );
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    insta::assert_snapshot!(outcome.render());
    // Both duplicates are in the journal, and so is the array (JSON.parse takes it:
    // the reference's getEntries() holds it); the lifecycle claim is data, and
    // nothing holds the journal: a writer can take it right away.
    let recs = records(&outcome.journal);
    assert_eq!(recs.len(), 10);
    assert_eq!(recs[8], b"[1,2]");
    assert!(!session_journal::lock::lock_path(&outcome.journal).exists());
    session_journal::Writer::open(&outcome.journal, session_journal::OpenOptions::default())
        .unwrap();
}

#[test]
fn reimport_creates_nothing() {
    let dest = tempfile::tempdir().unwrap();
    let source = fixtures().join("legacy/v2-hookmessage.jsonl");
    let first = import_into(&source, dest.path()).unwrap();
    assert!(!first.already_imported);
    let before = listing(dest.path());
    let journal_bytes = std::fs::read(&first.journal).unwrap();
    let again = import_into(&source, dest.path()).unwrap();
    assert!(again.already_imported);
    assert_eq!(again.session_id, first.session_id);
    assert_eq!(again.journal, first.journal);
    assert_eq!(listing(dest.path()), before);
    assert_eq!(std::fs::read(&first.journal).unwrap(), journal_bytes);

    // The same bytes under another name are the same source.
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = write_source(
        copy_dir.path(),
        "renamed.jsonl",
        &std::fs::read(&source).unwrap(),
    );
    assert!(import_into(&copy, dest.path()).unwrap().already_imported);

    // Without the registry, the journal's own source frame still says so.
    std::fs::remove_file(dest.path().join(session_import::format::REGISTRY_FILE)).unwrap();
    assert!(import_into(&source, dest.path()).unwrap().already_imported);
    // A different source for an occupied destination is refused.
    let other = write_source(
        copy_dir.path(),
        "other.jsonl",
        &[std::fs::read(&source).unwrap(), b"\n".to_vec()].concat(),
    );
    let err = session_import::import(
        &other,
        &Destination::Journal(first.journal.clone()),
        &options(),
    )
    .unwrap_err();
    assert!(
        matches!(err, ImportError::DestinationExists { .. }),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn read_only_source_imports() {
    use std::os::unix::fs::PermissionsExt;
    let src = tempfile::tempdir().unwrap();
    let source = write_source(
        src.path(),
        "ro.jsonl",
        &std::fs::read(fixtures().join("legacy/v1-linear.jsonl")).unwrap(),
    );
    std::fs::set_permissions(&source, std::fs::Permissions::from_mode(0o444)).unwrap();
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert_eq!(outcome.entries, 10);
}

#[test]
fn unsafe_header_ids_get_a_derived_session_id() {
    assert!(session_import::is_safe_session_id(
        "019b8a10-aaaa-7bbb-8ccc-ddddeeeeffff"
    ));
    for bad in ["", ".", "..", "a/b", "a b", &"x".repeat(129)] {
        assert!(!session_import::is_safe_session_id(bad), "{bad:?}");
    }
    let src = tempfile::tempdir().unwrap();
    let source = write_source(
        src.path(),
        "evil.jsonl",
        format!("{}\n", HEADER_V3.replace("s-edge", "../../etc/passwd")).as_bytes(),
    );
    let dest = tempfile::tempdir().unwrap();
    let outcome = import_into(&source, dest.path()).unwrap();
    assert!(
        outcome.session_id.starts_with("legacy-"),
        "{}",
        outcome.session_id
    );
    assert_eq!(outcome.journal.parent(), Some(dest.path()));
}

#[test]
fn lone_surrogate_is_kept_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixtures().join("edge/json-values.jsonl");
    let outcome = import_into(&source, dir.path()).unwrap();
    let line3 = std::fs::read(&source)
        .unwrap()
        .split(|&b| b == b'\n')
        .nth(2)
        .unwrap()
        .to_vec();
    assert!(records(&outcome.journal).contains(&line3));
    assert!(
        outcome
            .issues
            .iter()
            .any(|i| i.line == 3 && matches!(i.kind, IssueKind::LoneSurrogate { .. }))
    );
}

#[test]
fn a_taken_session_id_imports_under_a_derived_id() {
    // The three v1-compaction-index-* fixtures share one header id.
    let dest = tempfile::tempdir().unwrap();
    let a = fixtures().join("legacy/v1-compaction-index-header.jsonl");
    let b = fixtures().join("legacy/v1-compaction-index-oob.jsonl");
    let first = import_into(&a, dest.path()).unwrap();
    let second = import_into(&b, dest.path()).unwrap();
    assert!(!second.already_imported);
    assert_ne!(first.journal, second.journal);
    let hash = &second.source.blake3[..8];
    assert_eq!(second.session_id, format!("{}-{hash}", first.session_id));
    assert_eq!(
        second.journal,
        dest.path().join(format!("{}.jsonl", second.session_id))
    );
    let taken: Vec<_> = second
        .issues
        .iter()
        .filter(|i| matches!(&i.kind, session_import::IssueKind::SessionIdTaken { id, used } if *id == first.session_id && *used == second.session_id))
        .collect();
    assert_eq!(taken.len(), 1, "{:?}", second.issues);
    assert_eq!(taken[0].line, 1);
    // Importing it again is recognised, under the derived id, even without the registry.
    std::fs::remove_file(dest.path().join(session_import::format::REGISTRY_FILE)).unwrap();
    let again = import_into(&b, dest.path()).unwrap();
    assert!(again.already_imported);
    assert_eq!(again.session_id, second.session_id);
}

#[test]
fn hidden_file_ids_are_not_used_as_file_names() {
    assert!(!session_import::is_safe_session_id(".hidden"));
    assert!(!session_import::is_safe_session_id(".."));
    assert!(session_import::is_safe_session_id("a.b-c_d"));
}

#[cfg(unix)]
#[test]
fn the_imports_registry_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dest = tempfile::tempdir().unwrap();
    import_into(&fixtures().join("legacy/v3-control.jsonl"), dest.path()).unwrap();
    let registry = dest.path().join(session_import::format::REGISTRY_FILE);
    let mode = std::fs::metadata(&registry).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{}", registry.display());
}

/// The reference never refuses a header version: `migrateToCurrentVersion` compares
/// `header.version ?? 1` with numbers, so JavaScript converts it. Expected outcomes
/// follow its code (`>= 3` untouched, `< 2` v1, `< 3` v2, NaN untouched; `1e400` is
/// `Infinity`, which the parsed header reads `null`); the difffuzz class fixtures
/// `import-refused-unsupported-legacy-version-*` and `d11-header-version-*` check them
/// against its answers.
#[test]
fn odd_header_versions_are_read_as_the_reference_compares_them() {
    let src = tempfile::tempdir().unwrap();
    let hook = r#"{"type":"message","id":"h","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":1}}"#;
    // (version JSON, logical version, header version afterwards, hookMessage renamed)
    let cases = [
        ("4", 3, "4", false),
        ("\"3\"", 3, "\"3\"", false),
        ("\"0x3\"", 3, "\"0x3\"", false),
        ("\"v2\"", 3, "\"v2\"", false),
        ("{}", 3, "{}", false),
        ("2.5", 2, "3", true),
        ("\"2\"", 2, "3", true),
        ("[2]", 2, "3", true),
        ("0", 1, "3", true),
        ("true", 1, "3", true),
        ("\"\"", 1, "3", true),
        // Beyond a double's range: `Infinity` (kept, printed `null`), `-Infinity`.
        ("1e400", 3, "null", false),
        ("-1e400", 1, "3", true),
    ];
    for (i, (version, logical, after, renamed)) in cases.into_iter().enumerate() {
        let header = HEADER_V3.replace("\"version\":3", &format!("\"version\":{version}"));
        let source = write_source(
            src.path(),
            &format!("v{i}.jsonl"),
            format!("{header}\n{hook}\n").as_bytes(),
        );
        let dest = tempfile::tempdir().unwrap();
        let out =
            import_into(&source, dest.path()).unwrap_or_else(|e| panic!("version {version}: {e}"));
        assert_eq!(out.source.version, logical, "version {version}");
        assert!(
            out.issues.iter().any(|i| matches!(
                &i.kind,
                IssueKind::HeaderVersionRead { found, read_as }
                    if found == version && *read_as == logical
            )),
            "version {version}: {:?}",
            out.issues
        );
        let recs = records(&out.journal);
        let h = js_value(&recs[0]);
        assert_eq!(h["version"].to_string(), after, "version {version}");
        if logical == 3 {
            assert_eq!(
                recs[0],
                header.as_bytes(),
                "version {version}: kept byte-exact"
            );
        }
        let m = js_value(recs.last().unwrap());
        let role = if renamed { "custom" } else { "hookMessage" };
        assert_eq!(m["message"]["role"], role, "version {version}");
    }
}

/// A v1 line nested past serde_json's 128 levels is migrated as the reference
/// migrates it (it repeats a key, so only a reading as `JSON.parse` reads it tells
/// its message): before, it was dropped as "nesting too deep to migrate". One nested
/// past the 1,024 levels a record may have is still dropped, with the limit named.
#[test]
fn a_deep_v1_line_is_migrated() {
    let src = tempfile::tempdir().unwrap();
    let header = HEADER_V3.replace("\"version\":3,", "");
    let line = |levels: usize| {
        format!(
            r#"{{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"t","x":{}{}}}],"role":"user","timestamp":1}}}}"#,
            "[".repeat(levels),
            "]".repeat(levels)
        )
    };
    let source = write_source(
        src.path(),
        "deep.jsonl",
        format!("{header}\n{}\n{}\n", line(200), line(1100)).as_bytes(),
    );
    let dest = tempfile::tempdir().unwrap();
    let out = import_into(&source, dest.path()).unwrap();
    assert_eq!(out.source.version, 1);
    let recs = records(&out.journal);
    assert_eq!(recs.len(), 2, "the header and the 200-level line");
    let m = session_types::json::value_deep(std::str::from_utf8(&recs[1]).unwrap())
        .expect("a deep record reads");
    assert_eq!(m["message"]["role"], "user");
    assert!(
        out.issues.iter().any(|i| i.line == 3
            && matches!(&i.kind, IssueKind::InvalidJson { message, .. } if message.contains("1024 levels"))),
        "{:?}",
        out.issues
    );
}

/// A file system that changes the source (one byte, in place) when it is opened the
/// second time: between the scan that hashed it and the pass that imports it.
#[derive(Debug)]
struct ChangesSource {
    source: std::path::PathBuf,
    opens: std::sync::atomic::AtomicUsize,
}

mod changes_source {
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::Ordering;

    use session_journal::vfs::{DirEntry, FileId, OpenMode, PathStatus, StdVfs, Vfs, VfsFile};

    impl Vfs for super::ChangesSource {
        fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
            if path == self.source && self.opens.fetch_add(1, Ordering::SeqCst) == 1 {
                let mut bytes = std::fs::read(path)?;
                // A digit of the last record's timestamp: still valid JSON.
                let at = bytes.len() - 40;
                let digit = bytes[..at].iter().rposition(u8::is_ascii_digit).unwrap();
                bytes[digit] = if bytes[digit] == b'1' { b'2' } else { b'1' };
                std::fs::write(path, bytes)?;
            }
            StdVfs.open(path, mode)
        }
        fn create_dir_all(&self, path: &Path) -> io::Result<()> {
            StdVfs.create_dir_all(path)
        }
        fn sync_dir(&self, path: &Path) -> io::Result<()> {
            StdVfs.sync_dir(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            StdVfs.rename(from, to)
        }
        fn remove_file(&self, path: &Path) -> io::Result<()> {
            StdVfs.remove_file(path)
        }
        fn exists(&self, path: &Path) -> io::Result<bool> {
            StdVfs.exists(path)
        }
        fn identity(&self, path: &Path) -> io::Result<Option<FileId>> {
            StdVfs.identity(path)
        }
        fn stat(&self, path: &Path) -> io::Result<Option<PathStatus>> {
            StdVfs.stat(path)
        }
        fn hard_link(&self, existing: &Path, new: &Path) -> io::Result<()> {
            StdVfs.hard_link(existing, new)
        }
        fn create_temp(&self, dir: &Path, prefix: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)> {
            StdVfs.create_temp(dir, prefix)
        }
        fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
            StdVfs.read_dir(dir)
        }
        fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
            StdVfs.remove_dir_all(path)
        }
    }
}

/// A source that changes after its scan is refused, whether it is hashed on the
/// reading thread (small) or on a thread of its own (4 MiB and more), and nothing is
/// left behind.
#[test]
fn a_source_changed_after_its_scan_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for records in [3usize, 40_000] {
        let mut text = format!("{HEADER_V3}\n");
        let mut parent: Option<String> = None;
        for k in 0..records {
            let id = format!("e{k}");
            text.push_str(&entry(&id, parent.as_deref()));
            text.push('\n');
            parent = Some(id);
        }
        assert_eq!(text.len() >= 4 << 20, records > 3);
        let source = write_source(
            dir.path(),
            &format!("changing-{records}.jsonl"),
            text.as_bytes(),
        );
        let out = dir.path().join(format!("out-{records}"));
        let vfs = std::sync::Arc::new(ChangesSource {
            source: source.clone(),
            opens: Default::default(),
        });
        let options = session_import::ImportOptions { vfs, ..options() };
        let result = session_import::import(&source, &Destination::Dir(out.clone()), &options);
        assert!(
            matches!(result, Err(ImportError::SourceChanged { .. })),
            "{records} records: {result:?}"
        );
        assert!(listing(&out).is_empty(), "{:?}", listing(&out));
    }
}

/// A source of 4 MiB or more is written by a thread of its own (and hashed by another):
/// the journal holds the same records in the same order, the table the same lines, and
/// the export is the source byte for byte.
#[test]
fn a_large_source_imports_and_exports_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = format!("{HEADER_V3}\n");
    let mut parent: Option<String> = None;
    let mut k = 0usize;
    while text.len() < 9 << 20 {
        let id = format!("e{k}");
        text.push_str(&entry(&id, parent.as_deref()));
        text.push('\n');
        if k % 1000 == 999 {
            text.push('\n');
        }
        parent = Some(id);
        k += 1;
    }
    let source = write_source(dir.path(), "large.jsonl", text.as_bytes());
    let outcome = import_into(&source, &dir.path().join("out")).unwrap();
    assert_eq!(outcome.entries, k as u64);
    let out = dir.path().join("exported.jsonl");
    session_import::export(&outcome.journal, &out).unwrap();
    assert_eq!(
        std::fs::read(&out).unwrap(),
        text.replace("\n\n", "\n").into_bytes()
    );
    let last = format!("e{}", k - 1);
    let blanks = (k as u64 - 1) / 1000;
    let r = session_import::retention(&outcome.journal, &last)
        .unwrap()
        .unwrap();
    assert_eq!(r.line, k as u64 + 1 + blanks);
}

/// A v3 source of `n` messages of 64 KiB of text each on `fs` (about `n / 16` MiB).
fn sized_source(fs: &session_testkit::sim::SimFs, path: &Path, n: usize) {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"big","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let pad = "y".repeat(64 << 10);
    for i in 0..n {
        let parent = if i == 0 {
            "null".to_owned()
        } else {
            format!("\"m{}\"", i - 1)
        };
        text.push_str(&format!(
            r#"{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"{pad}","timestamp":{i}}}}}"#
        ));
        text.push('\n');
    }
    fs.write_raw(path, text.as_bytes());
}

/// Syncs an import of `n` [`sized_source`] messages makes, and its result.
fn import_counting_syncs(
    n: usize,
    fail_first_sync: bool,
) -> (
    u64,
    Result<session_import::ImportOutcome, ImportError>,
    session_testkit::sim::SimFs,
) {
    let fs = session_testkit::sim::SimFs::new();
    let source = Path::new("/src/big.jsonl");
    sized_source(&fs, source, n);
    let before = fs.stats().syncs;
    if fail_first_sync {
        fs.fail_sync_after(1);
    }
    let result = session_import::import(
        source,
        &Destination::Dir(PathBuf::from("/s")),
        &ImportOptions {
            vfs: std::sync::Arc::new(fs.clone()),
            ..options()
        },
    );
    (fs.stats().syncs - before, result, fs)
}

#[test]
fn a_large_import_syncs_its_temporary_as_it_writes_it() {
    // 5 MiB: written on a thread of its own, synced at its end only; 20 MiB: once
    // more, on the way (after 16 MiB), so that the last sync waits for less.
    let (small, result, _) = import_counting_syncs(80, false);
    assert!(result.unwrap().durable.is_some());
    let (large, result, _) = import_counting_syncs(320, false);
    let outcome = result.unwrap();
    assert_eq!(outcome.entries, 320);
    assert_eq!(large, small + 1);
}

#[test]
fn a_failed_early_sync_fails_the_import_and_leaves_nothing() {
    let (_, result, fs) = import_counting_syncs(320, true);
    // The early sync's own error (the writer's background sync, reported by the next
    // append or the final sync; the final sync's own would be op "sync").
    let err = result.unwrap_err();
    assert!(
        matches!(
            &err,
            ImportError::Append {
                source: session_journal::AppendError::Io { op: "background sync", path, .. },
                ..
            } if path.to_string_lossy().ends_with(".tmp")
        ),
        "{err:?}"
    );
    // No journal, no temporary, no registry line.
    let left: Vec<PathBuf> = fs
        .list()
        .into_iter()
        .filter(|p| p.starts_with("/s"))
        .collect();
    assert!(
        left.iter().all(|p| !p.to_string_lossy().contains("big")),
        "{left:?}"
    );
    assert!(
        session_import::leftover_imports(&fs, Path::new("/s"))
            .unwrap()
            .is_empty()
    );
}
