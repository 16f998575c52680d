//! The index sidecar an import builds as it writes the journal: byte for byte the one a
//! rebuild from the finished journal saves.

use std::path::{Path, PathBuf};

use session_import::{BulkOptions, ImportOutcome};
use session_index::{Index, IndexStatus, OpenIndexOptions, RebuildReason, sidecar_path};

use crate::support::{fixtures, import_into, options};

/// Every legacy source among the fixtures (not the `after-open` rewrites).
fn sources() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["legacy", "leniency", "edge", "generated"] {
        for e in std::fs::read_dir(fixtures().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".jsonl") && !name.ends_with(".after-open.jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A v3 session of `n` messages in one chain, with labels, a name and a branch, of
/// more than 4 MiB when `n` is large (so the import writes on its own thread).
fn generated(path: &Path, n: usize) {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"gen","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
    );
    text.push('\n');
    let pad = "x".repeat(400);
    for i in 0..n {
        let parent = if i == 0 {
            "null".to_owned()
        } else if i % 97 == 0 {
            format!("\"m{}\"", i / 2)
        } else {
            format!("\"m{}\"", i - 1)
        };
        let line = match i % 50 {
            7 => format!(
                r#"{{"type":"label","id":"m{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","targetId":"m{}","label":"l{i}"}}"#,
                i / 3
            ),
            13 => format!(
                r#"{{"type":"session_info","id":"m{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","name":"n{i}"}}"#
            ),
            _ => format!(
                r#"{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:0{}.000Z","message":{{"role":"{}","content":"{pad} {i}","timestamp":{i}}}}}"#,
                i % 10,
                if i % 2 == 0 { "user" } else { "assistant" }
            ),
        };
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// The sidecar the import saved, then the one a rebuild from the journal saves in its
/// place, as an open right after the import would (the import's durable capture, no
/// syncs).
fn saved_and_rebuilt(outcome: &ImportOutcome) -> (Vec<u8>, Vec<u8>) {
    let side = sidecar_path(&outcome.journal);
    let saved = std::fs::read(&side).unwrap_or_else(|e| {
        panic!("{}: no sidecar after the import: {e}", side.display());
    });
    std::fs::remove_file(&side).unwrap();
    let (_, report) = Index::open_or_rebuild(
        &outcome.journal,
        OpenIndexOptions {
            durable: outcome.durable,
            sync_journal: false,
            sync_sidecar: false,
            ..OpenIndexOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        report.status,
        IndexStatus::Rebuilt {
            reason: RebuildReason::Missing
        }
    );
    (saved, std::fs::read(&side).unwrap())
}

#[test]
fn an_import_saves_the_sidecar_a_rebuild_saves() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big.jsonl");
    generated(&big, 12_000);
    assert!(std::fs::metadata(&big).unwrap().len() > 4 << 20);
    let small = tmp.path().join("small.jsonl");
    generated(&small, 300);
    let mut all = sources();
    all.push(big);
    all.push(small);
    let mut compared = 0;
    for source in &all {
        let dest = tempfile::tempdir().unwrap();
        let Ok(outcome) = import_into(source, dest.path()) else {
            continue; // refused (no header, empty): nothing to index
        };
        assert!(outcome.indexed, "{}", source.display());
        let (saved, rebuilt) = saved_and_rebuilt(&outcome);
        assert!(saved == rebuilt, "{}: sidecars differ", source.display());
        compared += 1;
    }
    assert!(compared >= 40, "{compared} imports compared");
}

#[test]
fn a_bulk_import_saves_each_sidecar_a_rebuild_saves() {
    let dest = tempfile::tempdir().unwrap();
    let all = sources();
    let results = session_import::import_many(
        &all,
        dest.path(),
        &options(),
        &BulkOptions {
            max_files: 7,
            ..BulkOptions::default()
        },
        &mut |_, _| {},
    );
    let mut compared = 0;
    for outcome in results.into_iter().flatten() {
        if outcome.already_imported {
            assert!(!outcome.indexed);
            continue;
        }
        assert!(outcome.indexed, "{}", outcome.journal.display());
        let (saved, rebuilt) = saved_and_rebuilt(&outcome);
        assert!(
            saved == rebuilt,
            "{}: sidecars differ",
            outcome.journal.display()
        );
        compared += 1;
    }
    assert!(compared >= 40, "{compared} imports compared");
}

#[test]
fn a_repeated_import_writes_no_sidecar() {
    let dest = tempfile::tempdir().unwrap();
    let source = fixtures().join("legacy/v3-control.jsonl");
    let first = import_into(&source, dest.path()).unwrap();
    std::fs::remove_file(sidecar_path(&first.journal)).unwrap();
    let again = import_into(&source, dest.path()).unwrap();
    assert!(again.already_imported && !again.indexed);
    assert!(!sidecar_path(&first.journal).exists());
}

/// An import whose sidecar cannot be written (the disk fills up right after the
/// journal) still succeeds, leaves no sidecar nor its temporary, and the first open
/// rebuilds the index.
#[test]
fn a_sidecar_that_cannot_be_saved_is_left_to_the_first_open() {
    use session_journal::vfs::Vfs;
    use session_testkit::sim::SimFs;
    use std::sync::Arc;

    let text = std::fs::read(fixtures().join("legacy/v3-control.jsonl")).unwrap();
    let run = |budget: Option<u64>| {
        let fs = SimFs::new();
        let source = Path::new("/src/a.jsonl");
        fs.write_raw(source, &text);
        let before = fs.stats().bytes_written;
        if let Some(b) = budget {
            fs.fail_writes_after(b);
        }
        let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
        let outcome = session_import::import(
            source,
            &session_import::Destination::Dir(PathBuf::from("/s")),
            &session_import::ImportOptions { vfs, ..options() },
        )
        .unwrap();
        (fs, outcome, before)
    };
    // Unfaulted: how many bytes go to the disk before the sidecar.
    let (fs, outcome, before) = run(None);
    assert!(outcome.indexed);
    let side = sidecar_path(&outcome.journal);
    let sidecar = fs.read_raw(&side).unwrap().len() as u64;
    let registry = fs
        .read_raw(Path::new("/s/.imports.jsonl"))
        .map_or(0, |r| r.len() as u64);
    let budget = fs.stats().bytes_written - before - sidecar - registry;

    let (fs, outcome, _) = run(Some(budget));
    assert!(!outcome.indexed);
    assert_eq!(fs.read_raw(&side), None);
    let listed: Vec<PathBuf> = fs.list();
    assert!(
        !listed
            .iter()
            .any(|p| p.to_string_lossy().contains(".save-")),
        "{listed:?}"
    );
    fs.clear_faults();
    let (_, report) = Index::open_or_rebuild(
        &outcome.journal,
        OpenIndexOptions {
            vfs: Arc::new(fs.clone()),
            ..OpenIndexOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        report.status,
        IndexStatus::Rebuilt {
            reason: RebuildReason::Missing
        }
    );
}

/// Lines whose index fields only a full parse reads exactly (repeated keys, numbers
/// beyond a double, non-string ids, escapes, invalid UTF-8, lone surrogates, non-object
/// lines, content the reference's text extraction throws on) between plain ones.
fn odd_lines(i: usize) -> Vec<Vec<u8>> {
    let p = format!("o{i}");
    let t = |s: &str| {
        s.replace("{p}", &p)
            .replace("{i}", &i.to_string())
            .into_bytes()
    };
    vec![
        t(
            r#"{"type":"message","id":"{p}a","parentId":"{p}","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"u {i}","timestamp":1}}"#,
        ),
        t(
            r#"{"type":"label","id":"{p}b","id":"{p}c","parentId":"{p}a","targetId":"{p}a","label":"x","label":"y"}"#,
        ),
        t(
            r#"{"type":"message","id":"{p}d","parentId":"{p}c","message":{"role":"assistant","role":"user","content":"dup role"}}"#,
        ),
        t(
            r#"{"type":"message","id":"{p}e","parentId":"{p}d","message":{"role":"assistant","content":[{"type":"text","text":"a"},null],"timestamp":1e400}}"#,
        ),
        t(
            r#"{"type":"message","id":"{p}f","parentId":"{p}e","message":{"role":"assistant","content":{"k":1}}}"#,
        ),
        t(r#"{"type":"model_change","id":1e400,"parentId":"{p}f","big":-1e400}"#),
        t(r#"{"type":"model_change","id":"{p}g","parentId":5,"timestamp":17}"#),
        t(r#"{"type":"session_info","id":"{p}h","parentId":"{p}g","name":"  n\u0020{i} "}"#),
        t(
            r#"{"t\u0079pe":"label","i\u0064":"{p}i","parentId":"{p}h","targetId":"{p}a","label":"esc"}"#,
        ),
        t(r#"{"type":"agent_status","id":"{p}j","parentId":"{p}i","status":{"s":1e400}}"#),
        t(r#"{"type":"message","id":"{p}k","parentId":"{p}j","message":"not an object"}"#),
        t(r#"{"type":"custom","id":"{p}l","parentId":"{p}k","note":"\ud800 lone"}"#),
        b"{\"type\":\"custom\",\"id\":\"x\xff\",\"parentId\":\"o\"}".to_vec(),
        t(r#"[1,2]"#),
        t(
            r#"{"type":"message","id":"{p}m","parentId":"{p}l","message":{"role":"toolResult","content":[{"type":"text","text":"plain"}],"timestamp":3}}"#,
        ),
    ]
}

/// A v3 source of `rounds` rounds of [`odd_lines`], each after a plain message of
/// `pad` bytes.
fn odd_source(path: &Path, rounds: usize, pad: usize) {
    let mut text = br#"{"type":"session","version":3,"id":"odd","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#.to_vec();
    text.push(b'\n');
    let pad = "x".repeat(pad);
    for i in 0..rounds {
        let parent = if i == 0 {
            "null".to_owned()
        } else {
            format!("\"o{}m\"", i - 1)
        };
        text.extend(format!(
            r#"{{"type":"message","id":"o{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"{pad}"}}],"timestamp":{i}}}}}"#
        ).bytes());
        text.push(b'\n');
        for line in odd_lines(i) {
            text.extend(line);
            text.push(b'\n');
        }
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn odd_records_index_as_a_rebuild_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    // Small (indexed on the import's thread) and over 4 MiB (on a thread of its own).
    for (name, rounds, pad) in [("small.jsonl", 3, 10), ("big.jsonl", 1200, 3000)] {
        let source = tmp.path().join(name);
        odd_source(&source, rounds, pad);
        let dest = tempfile::tempdir().unwrap();
        let outcome = import_into(&source, dest.path()).unwrap();
        assert!(outcome.indexed, "{name}");
        assert!(!outcome.issues.is_empty(), "{name}");
        let (saved, rebuilt) = saved_and_rebuilt(&outcome);
        assert!(saved == rebuilt, "{name}: sidecars differ");
    }
}
