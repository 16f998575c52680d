//! The listing catalog: a fresh catalog reads no journal through (each record is
//! checked against its journal's id and last frame); deleting or damaging it
//! rebuilds it with identical answers.

use std::sync::Arc;

use session_index::{CATALOG_FILE, CatalogStatus, ListOptions, list_all};
use session_journal::vfs::StdVfs;
use session_testkit::CountingVfs;

use crate::conformance::{assert_listing_matches, native_copy};

#[test]
fn a_fresh_catalog_lists_without_opening_a_journal_and_a_deleted_one_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    native_copy(tmp.path());
    let counting = CountingVfs::new(Arc::new(StdVfs));
    let opts = ListOptions {
        vfs: Arc::new(counting.clone()),
        ..ListOptions::default()
    };
    let (first, reports) = list_all(tmp.path(), &opts).unwrap();
    assert!(
        reports
            .iter()
            .all(|r| matches!(r.catalog, CatalogStatus::Rebuilt { .. }))
    );
    assert!(counting.opens_matching(".jsonl") > 0);

    counting.reset();
    let (second, reports) = list_all(tmp.path(), &opts).unwrap();
    assert!(
        reports
            .iter()
            .all(|r| r.catalog == CatalogStatus::Fresh && r.journals_opened == 0)
    );
    // A journal changed within a second of the catalog's stamp (racy: here, those
    // copied last) is checked against its record (its header and its last frame,
    // O(1) bytes), but not read through: one open each; the others are not opened.
    let journals = second.len() as u64;
    let checked: u64 = reports.iter().map(|r| r.journals_checked).sum();
    assert!(checked <= journals);
    assert_eq!(counting.opens_matching(".jsonl"), checked);
    assert!(counting.bytes_read_matching(".jsonl") <= 16 * 1024 * checked);
    assert_eq!(counting.opens_matching(".idx"), 0);
    assert_eq!(second, first);
    assert_listing_matches(tmp.path(), &second);

    // Delete one catalog, damage another: both rebuilt, same answers.
    let dirs: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|d| d.unwrap().path())
        .collect();
    std::fs::remove_file(dirs[0].join(CATALOG_FILE)).unwrap();
    let cat = dirs[1].join(CATALOG_FILE);
    let mut b = std::fs::read(&cat).unwrap();
    let mid = b.len() / 2;
    b[mid] ^= 0x20;
    std::fs::write(&cat, b).unwrap();
    let (third, reports) = list_all(tmp.path(), &opts).unwrap();
    let rebuilt: Vec<_> = reports
        .iter()
        .filter_map(|r| match &r.catalog {
            CatalogStatus::Rebuilt { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(rebuilt.len(), 2, "{rebuilt:?}");
    assert!(rebuilt.iter().any(|r| r.contains("missing")));
    assert!(rebuilt.iter().any(|r| r.contains("checksum")));
    assert_eq!(third, first);
}

#[test]
fn an_appended_journal_is_refreshed_through_its_index() {
    let tmp = tempfile::tempdir().unwrap();
    native_copy(tmp.path());
    let opts = ListOptions::default();
    list_all(tmp.path(), &opts).unwrap();
    // Append a session_info to one journal.
    let dir = std::fs::read_dir(tmp.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let (mut w, _) =
        session_journal::Writer::open(&file, session_journal::OpenOptions::default()).unwrap();
    let line = r#"{"type":"session_info","id":"zzzzzzzz","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","name":"renamed"}"#;
    w.append(
        session_index::kinds::ENTRY,
        line.as_bytes(),
        session_journal::Durability::Durable,
    )
    .unwrap();
    w.close().unwrap();
    let (infos, reports) = list_all(tmp.path(), &opts).unwrap();
    let refreshed: u64 = reports.iter().map(|r| r.journals_opened).sum();
    assert_eq!(refreshed, 1);
    let info = infos.iter().find(|i| i.path == file).unwrap();
    assert_eq!(info.summary.name.as_deref(), Some("renamed"));
}

#[test]
fn hidden_files_are_never_listed_or_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    native_copy(tmp.path());
    let dir = std::fs::read_dir(tmp.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // What import leaves beside journals: its registry and (after a crash) a temp file.
    std::fs::write(dir.join(".imports.jsonl"), "{\"blake3\":\"x\"}\n").unwrap();
    std::fs::write(dir.join(".s.jsonl.import-1-2.tmp"), b"\x89JNL").unwrap();
    std::fs::write(dir.join(".hidden.jsonl"), "not a session").unwrap();
    let (listed, report) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert!(!listed.is_empty());
    assert!(listed.iter().all(|s| {
        !s.path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with('.')
    }));
}

#[test]
fn a_read_only_listing_writes_nothing_and_uses_a_fresh_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    native_copy(tmp.path());
    let dir = std::fs::read_dir(tmp.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let snapshot = |d: &std::path::Path| {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                (p.clone(), std::fs::read(&p).unwrap())
            })
            .collect();
        v.sort();
        v
    };
    let ro = ListOptions {
        read_only: true,
        ..ListOptions::default()
    };
    // No catalog and no sidecars yet: everything is computed, nothing written.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "idx") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let before = snapshot(&dir);
    let (cold, report) = session_index::list_sessions(&dir, &ro).unwrap();
    assert_eq!(
        snapshot(&dir),
        before,
        "a read-only listing wrote something"
    );
    assert!(report.journals_opened > 0);
    // After a writing listing, the read-only one answers from the catalog alone.
    let (warm, _) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert_eq!(warm, cold);
    let counting = CountingVfs::new(Arc::new(StdVfs));
    let ro = ListOptions {
        vfs: Arc::new(counting.clone()),
        read_only: true,
        ..ListOptions::default()
    };
    let (fresh, report) = session_index::list_sessions(&dir, &ro).unwrap();
    assert_eq!(fresh, cold);
    assert_eq!(report.journals_opened, 0);
    // A racy journal is opened once, to check its record against it; no index.
    assert_eq!(counting.opens_matching(".jsonl"), report.journals_checked);
    assert!(report.journals_checked <= fresh.len() as u64);
    assert_eq!(counting.opens_matching(".idx"), 0);
}

#[test]
fn a_huge_first_message_leaves_the_sidecar_and_the_catalog_small() {
    use session_index::{FIRST_MESSAGE_MAX_BYTES, sidecar_path};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let huge = "é".repeat(4 << 20); // 8 MiB of text
    let text = format!(
        "{}\n{}\n",
        r#"{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        serde_json::json!({"type":"message","id":"u","parentId":null,
            "timestamp":"2026-01-01T00:00:01.000Z",
            "message":{"role":"user","content":huge,"timestamp":1}})
    );
    let journal = dir.join("big.jsonl");
    crate::support::write(Arc::new(StdVfs), &journal, &text);
    let (infos, _) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert_eq!(infos.len(), 1);
    let s = &infos[0].summary;
    assert_eq!(s.first_message, huge[..FIRST_MESSAGE_MAX_BYTES]);
    assert!(s.first_message_truncated);
    assert_eq!(s.message_count, 1);
    let side = std::fs::metadata(sidecar_path(&journal)).unwrap().len();
    let cat = std::fs::metadata(dir.join(CATALOG_FILE)).unwrap().len();
    assert!(side < 16 * 1024, "sidecar is {side} bytes");
    assert!(cat < 16 * 1024, "catalog is {cat} bytes");
    // Served from the catalog, the same excerpt.
    let (again, report) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert_eq!(report.catalog, CatalogStatus::Fresh);
    assert_eq!(again, infos);
}

/// A one-message session journal whose texts are `first` and whose journal id comes
/// from `seed`.
fn session_text(first: &str) -> String {
    format!(
        "{}\n{}\n",
        r#"{"type":"session","version":3,"id":"same","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        serde_json::json!({"type":"message","id":"u","parentId":null,
            "timestamp":"2026-01-01T00:00:01.000Z",
            "message":{"role":"user","content":first,"timestamp":1}})
    )
}

fn write_session(journal: &std::path::Path, seed: u8, first: &str) {
    let id = session_journal::JournalId([seed; 16]);
    crate::support::write_with_id(Arc::new(StdVfs), journal, id, &session_text(first));
}

#[test]
fn a_journal_replaced_by_one_of_the_same_length_is_not_served_from_the_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    let journal = dir.join("same.jsonl");
    write_session(&journal, 1, "the deleted secret");
    let (infos, _) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert_eq!(infos[0].summary.first_message, "the deleted secret");
    // `rm`, then a new session of the same id and the same length.
    std::fs::remove_file(&journal).unwrap();
    std::fs::remove_file(session_index::sidecar_path(&journal)).unwrap();
    write_session(&journal, 2, "a brand new message");
    assert_eq!(
        std::fs::metadata(&journal).unwrap().len(),
        infos[0].path.metadata().unwrap().len()
    );
    for read_only in [true, false] {
        let opts = ListOptions {
            read_only,
            ..ListOptions::default()
        };
        let (infos, report) = session_index::list_sessions(&dir, &opts).unwrap();
        assert_eq!(infos[0].summary.first_message, "a brand new message");
        assert_eq!(report.journals_opened, 1);
    }
    // The catalog now holds the new session's record: fresh again.
    let (infos, report) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert_eq!(report.catalog, CatalogStatus::Fresh);
    assert_eq!(infos[0].summary.first_message, "a brand new message");
}

#[test]
fn a_catalog_copied_from_another_store_is_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    write_session(&a.join("same.jsonl"), 1, "store a's message");
    write_session(&b.join("same.jsonl"), 2, "store b's message");
    session_index::list_sessions(&a, &ListOptions::default()).unwrap();
    std::fs::copy(a.join(CATALOG_FILE), b.join(CATALOG_FILE)).unwrap();
    let (infos, report) = session_index::list_sessions(&b, &ListOptions::default()).unwrap();
    assert_eq!(infos[0].summary.first_message, "store b's message");
    assert_eq!(report.journals_opened, 1);
}

#[test]
fn a_fresh_catalog_reads_a_bounded_prefix_of_each_journal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    // Many entries, so a journal is much larger than what validation reads.
    crate::support::write(
        Arc::new(StdVfs),
        &dir.join("long.jsonl"),
        &crate::support::synthetic(5_000),
    );
    let counting = CountingVfs::new(Arc::new(StdVfs));
    let opts = ListOptions {
        vfs: Arc::new(counting.clone()),
        ..ListOptions::default()
    };
    session_index::list_sessions(&dir, &opts).unwrap();
    counting.reset();
    let (_, report) = session_index::list_sessions(&dir, &opts).unwrap();
    assert_eq!(report.catalog, CatalogStatus::Fresh);
    assert_eq!(report.journals_opened, 0);
    assert_eq!(counting.opens_matching(".idx"), 0);
    let read = counting.bytes_read_matching(".jsonl");
    let len = std::fs::metadata(dir.join("long.jsonl")).unwrap().len();
    // The journal header and the last frame: a few KiB, whatever the journal's size.
    assert!(read <= 16 * 1024, "{read} of {len} bytes read");
    assert!(len > 64 * 1024);
}

#[test]
fn forget_removes_a_sessions_record_durably() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    write_session(&dir.join("same.jsonl"), 1, "forget this text");
    write_session(&dir.join("other.jsonl"), 3, "keep this one");
    session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    let cat = dir.join(CATALOG_FILE);
    assert!(
        std::fs::read(&cat)
            .unwrap()
            .windows(16)
            .any(|w| w == b"forget this text")
    );
    session_index::forget(&StdVfs, &dir, "same.jsonl").unwrap();
    let bytes = std::fs::read(&cat).unwrap();
    assert!(!bytes.windows(16).any(|w| w == b"forget this text"));
    assert!(bytes.windows(13).any(|w| w == b"keep this one"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&cat).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Forgetting what the catalog does not hold, or without a catalog, is no error.
    session_index::forget(&StdVfs, &dir, "same.jsonl").unwrap();
    std::fs::remove_file(&cat).unwrap();
    session_index::forget(&StdVfs, &dir, "same.jsonl").unwrap();
    assert!(!cat.exists());
    // A damaged catalog is removed (it may hold the text).
    session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    let mut b = std::fs::read(&cat).unwrap();
    b[20] ^= 1;
    std::fs::write(&cat, b).unwrap();
    session_index::forget(&StdVfs, &dir, "other.jsonl").unwrap();
    assert!(!cat.exists());
}

/// FIFOs at the catalog's and a sidecar's names, and a symlink named like a journal:
/// the listing neither blocks nor follows, and answers as without them.
#[cfg(unix)]
#[test]
fn planted_fifos_and_links_neither_block_nor_are_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("s");
    write_session(&dir.join("same.jsonl"), 1, "hello");
    let outside = tmp.path().join("outside.jsonl");
    write_session(&outside, 2, "outside the store");
    std::os::unix::fs::symlink(&outside, dir.join("link.jsonl")).unwrap();
    for name in [CATALOG_FILE, "same.jsonl.idx"] {
        let status = std::process::Command::new("mkfifo")
            .arg(dir.join(name))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let ro = ListOptions {
        read_only: true,
        ..ListOptions::default()
    };
    let (infos, report) = session_index::list_sessions(&dir, &ro).unwrap();
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!(infos[0].summary.first_message, "hello");
    assert!(
        matches!(&report.catalog, CatalogStatus::Rebuilt { reason } if reason.contains("unreadable")),
        "{:?}",
        report.catalog
    );
    // A writing listing replaces the FIFOs with regular files (by rename, never by
    // writing into them).
    let (again, _) = session_index::list_sessions(&dir, &ListOptions::default()).unwrap();
    assert_eq!(again, infos);
    for name in [CATALOG_FILE, "same.jsonl.idx"] {
        assert!(std::fs::symlink_metadata(dir.join(name)).unwrap().is_file());
    }
    // Nothing but the store's own files: no temporary left behind.
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".catalog",
            "link.jsonl",
            "same.jsonl",
            "same.jsonl.idx",
            "same.jsonl.lock"
        ]
    );
}
