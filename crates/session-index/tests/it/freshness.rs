//! When the listing catalog answers without reading a journal (`docs/format.md` §3,
//! "Freshness"): a record whose journal's `lstat` (device, inode, length, change
//! time) matches it and that is not racy is used as it is; every other record is
//! checked against the journal's content or replaced from the journal's index. On
//! the simulated file system, whose change-time clock the tests drive.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use session_index::{CATALOG_FILE, CatalogStatus, ListOptions, ListReport, SessionInfo};
use session_journal::vfs::{OpenMode, Vfs};
use session_journal::{Durability, JournalId};
use session_testkit::CountingVfs;
use session_testkit::sim::SimFs;

use crate::support::{open, write_with_id, writer};

const DIR: &str = "/s";

fn dir() -> &'static Path {
    Path::new(DIR)
}

/// A session journal `<name>.jsonl` of one user message (`text`), with its own
/// journal id. Equal-length texts give equal-length journals.
fn session(fs: &Arc<SimFs>, name: &str, seed: u8, text: &str) -> PathBuf {
    let path = dir().join(format!("{name}.jsonl"));
    let jsonl = format!(
        "{}\n{}\n",
        serde_json::json!({"type":"session","version":3,"id":name,
            "timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}),
        serde_json::json!({"type":"message","id":"u","parentId":null,
            "timestamp":"2026-01-01T00:00:01.000Z",
            "message":{"role":"user","content":text,"timestamp":1}})
    );
    write_with_id(fs.clone(), &path, JournalId([seed; 16]), &jsonl);
    path
}

/// A store of `n` sessions `s00`, `s01`, … of equal length.
fn store(n: u8) -> Arc<SimFs> {
    let fs = Arc::new(SimFs::new());
    for k in 0..n {
        session(
            &fs,
            &format!("s{k:02}"),
            k + 1,
            &format!("message number {k:02}"),
        );
    }
    fs
}

/// A listing through a counting view of `fs`.
fn list(fs: &Arc<SimFs>, read_only: bool) -> (Vec<SessionInfo>, ListReport, CountingVfs) {
    let counting = CountingVfs::new(fs.clone());
    let opts = ListOptions {
        vfs: Arc::new(counting.clone()),
        read_only,
        ..ListOptions::default()
    };
    let (infos, report) = session_index::list_sessions(dir(), &opts).unwrap();
    (infos, report, counting)
}

/// The answer without any catalog: every journal opened through its index.
fn truth(fs: &Arc<SimFs>) -> Vec<SessionInfo> {
    let opts = ListOptions {
        vfs: fs.clone(),
        use_catalog: false,
        read_only: true,
    };
    session_index::list_sessions(dir(), &opts).unwrap().0
}

/// Lets the racy window pass, then lets a listing write the catalog: every record
/// is then fresh until its journal changes.
fn settle(fs: &Arc<SimFs>) {
    fs.advance_clock(Duration::from_secs(2));
    let (_, report, _) = list(fs, false);
    assert_eq!(report.save_error, None);
}

fn first_message_of<'a>(infos: &'a [SessionInfo], name: &str) -> Option<&'a str> {
    infos
        .iter()
        .find(|i| i.path == dir().join(format!("{name}.jsonl")))
        .map(|i| i.summary.first_message.as_str())
}

#[test]
fn a_fresh_catalog_opens_no_journal_and_reads_no_journal_byte() {
    let fs = store(40);
    settle(&fs);
    for read_only in [true, false] {
        let (infos, report, counting) = list(&fs, read_only);
        assert_eq!(infos.len(), 40);
        assert_eq!(infos, truth(&fs));
        assert_eq!(report.catalog, CatalogStatus::Fresh);
        assert_eq!((report.journals_opened, report.journals_checked), (0, 0));
        assert_eq!(
            counting.opens_matching(".jsonl"),
            0,
            "read_only {read_only}"
        );
        assert_eq!(counting.bytes_read_matching(".jsonl"), 0);
        assert_eq!(counting.opens_matching(".idx"), 0);
    }
    // A fresh catalog is not rewritten, and no temporary file is left behind.
    let names: Vec<PathBuf> = fs.list();
    assert!(names.iter().all(|p| !p.to_string_lossy().ends_with(".tmp")));
}

/// Lists read-only and writing, checks both against the truth and that `name` was
/// not served from its record as it was; returns the writing listing.
fn caught(fs: &Arc<SimFs>, name: &str) -> Vec<SessionInfo> {
    let want = truth(fs);
    let mut last = Vec::new();
    for read_only in [true, false] {
        let (infos, report, counting) = list(fs, read_only);
        assert_eq!(infos, want, "{name}, read_only {read_only}");
        // Only the changed journal is looked at (checked, then opened through its
        // index when its record does not describe it).
        assert!(report.journals_opened <= 1, "{name}: {report:?}");
        assert!(report.journals_checked <= 1, "{name}: {report:?}");
        assert_eq!(
            counting.opens_matching(".jsonl"),
            counting.opens_matching("s01.jsonl"),
            "{name}"
        );
        last = infos;
    }
    // After the writing listing (and the racy window), fresh again with that answer.
    settle(fs);
    let (infos, report, counting) = list(fs, true);
    assert_eq!(infos, want);
    assert_eq!(counting.opens_matching(".jsonl"), 0, "{name}: {report:?}");
    last
}

#[test]
fn an_append_is_caught() {
    let fs = store(3);
    settle(&fs);
    let path = dir().join("s01.jsonl");
    let mut w = writer(fs.clone(), &path);
    let line = r#"{"type":"session_info","id":"n","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","name":"renamed"}"#;
    w.append(
        session_index::kinds::ENTRY,
        line.as_bytes(),
        Durability::Durable,
    )
    .unwrap();
    w.close().unwrap();
    let infos = caught(&fs, "append");
    let s = &infos.iter().find(|i| i.path == path).unwrap().summary;
    assert_eq!(s.name.as_deref(), Some("renamed"));
}

#[test]
fn an_equal_length_rewrite_in_place_is_caught() {
    // `cp s02.jsonl s01.jsonl`: same inode, same length, other bytes.
    let fs = store(3);
    settle(&fs);
    let (a, b) = (dir().join("s01.jsonl"), dir().join("s02.jsonl"));
    let bytes = fs.read_raw(&b).unwrap();
    assert_eq!(bytes.len(), fs.read_raw(&a).unwrap().len());
    let f = fs.open(&a, OpenMode::ReadWrite).unwrap();
    f.write_all_at(0, &bytes).unwrap();
    drop(f);
    let infos = caught(&fs, "cp");
    assert_eq!(first_message_of(&infos, "s01"), Some("message number 02"));
}

#[test]
fn a_journal_replaced_by_another_file_is_caught() {
    // An editor's save or `mv`: a new inode under the old name.
    let fs = store(3);
    settle(&fs);
    let replacement = session(&fs, "other", 77, "message number 77");
    fs.rename(&replacement, &dir().join("s01.jsonl")).unwrap();
    let infos = caught(&fs, "rename");
    assert_eq!(first_message_of(&infos, "s01"), Some("message number 77"));
    assert_eq!(infos.len(), 3);
}

#[test]
fn a_truncation_is_caught() {
    let fs = store(3);
    let path = dir().join("s01.jsonl");
    let before_append = fs.read_raw(&path).unwrap().len() as u64;
    let mut w = writer(fs.clone(), &path);
    let line = r#"{"type":"message","id":"v","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"second","timestamp":2}}"#;
    w.append(
        session_index::kinds::ENTRY,
        line.as_bytes(),
        Durability::Durable,
    )
    .unwrap();
    w.close().unwrap();
    settle(&fs);
    assert_eq!(
        list(&fs, true)
            .0
            .iter()
            .find(|i| i.path == path)
            .unwrap()
            .summary
            .message_count,
        2
    );
    let f = fs.open(&path, OpenMode::ReadWrite).unwrap();
    f.set_len(before_append).unwrap();
    drop(f);
    let infos = caught(&fs, "truncate");
    let s = &infos.iter().find(|i| i.path == path).unwrap().summary;
    assert_eq!(s.message_count, 1);
}

#[test]
fn a_deleted_journal_is_not_listed_from_its_record() {
    let fs = store(3);
    settle(&fs);
    fs.remove_file(&dir().join("s01.jsonl")).unwrap();
    let infos = caught(&fs, "delete");
    assert_eq!(infos.len(), 2);
    assert_eq!(first_message_of(&infos, "s01"), None);
}

/// The racy case: the catalog is written within the clock tick in which its
/// journals last changed, and a journal is rewritten in place, same length, in that
/// same tick — its status (device, inode, length, change time) is unchanged. Only
/// the racy rule sends it to a content check.
#[test]
fn a_change_within_the_racy_window_is_caught() {
    let fs = store(3);
    // A coarse clock: everything below happens within one tick.
    fs.set_clock_step(Duration::ZERO);
    fs.advance_clock(Duration::from_secs(5));
    let (a, b) = (dir().join("s01.jsonl"), dir().join("s02.jsonl"));
    // s01 changes in this tick (rewritten with its own bytes), then the catalog is
    // written, in the same tick.
    let own = fs.read_raw(&a).unwrap();
    let f = fs.open(&a, OpenMode::ReadWrite).unwrap();
    f.write_all_at(0, &own).unwrap();
    drop(f);
    let (_, report, _) = list(&fs, false);
    assert_eq!(report.save_error, None);
    let status = fs.stat(&a).unwrap().unwrap();
    // `cp s02 s01` in the same tick: nothing in s01's status moves.
    let bytes = fs.read_raw(&b).unwrap();
    let f = fs.open(&a, OpenMode::ReadWrite).unwrap();
    f.write_all_at(0, &bytes).unwrap();
    drop(f);
    assert_eq!(fs.stat(&a).unwrap().unwrap(), status);
    for read_only in [true, false] {
        let (infos, report, _) = list(&fs, read_only);
        assert_eq!(first_message_of(&infos, "s01"), Some("message number 02"));
        assert_eq!(infos, truth(&fs));
        assert_eq!(report.journals_opened, 1, "{report:?}");
    }
    // The clock moves on: a later listing re-stamps the catalog, and then nothing
    // is racy any more.
    fs.set_clock_step(Duration::from_millis(1));
    settle(&fs);
    let (_, report, counting) = list(&fs, true);
    assert_eq!((report.journals_opened, report.journals_checked), (0, 0));
    assert_eq!(counting.opens_matching(".jsonl"), 0);
}

/// A racy record that its journal still matches is checked (O(1) bytes) and used.
#[test]
fn a_racy_record_is_checked_by_content_and_used() {
    let fs = store(3);
    list(&fs, false); // written right after the journals: all racy
    let (infos, report, counting) = list(&fs, true);
    assert_eq!(infos, truth(&fs));
    assert_eq!(report.journals_opened, 0);
    assert_eq!(report.journals_checked, 3);
    assert_eq!(counting.opens_matching(".jsonl"), 3);
    assert_eq!(counting.opens_matching(".idx"), 0);
}

/// Damage anywhere in the catalog, or a catalog from elsewhere, never changes an
/// answer: every byte of a small catalog flipped in turn.
#[test]
fn a_damaged_or_foreign_catalog_never_changes_an_answer() {
    let fs = store(2);
    settle(&fs);
    let cat = dir().join(CATALOG_FILE);
    let good = fs.read_raw(&cat).unwrap();
    let want = truth(&fs);
    for i in 0..good.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = good.clone();
            bad[i] ^= bit;
            fs.write_raw(&cat, &bad);
            let (infos, _, _) = list(&fs, true);
            assert_eq!(infos, want, "byte {i} ^ {bit:#x}");
        }
    }
    // Another store's catalog over journals of the same names (other inodes, other
    // journal ids, same lengths), within and after the racy window.
    let other = Arc::new(SimFs::new());
    for name in ["s00", "s01"] {
        session(&other, name, 200, "another store's text");
    }
    settle(&other);
    fs.write_raw(&cat, &other.read_raw(&cat).unwrap());
    let (infos, report, _) = list(&fs, true);
    assert_eq!(infos, want);
    assert_eq!(report.journals_opened, 2, "{report:?}");
    // Records swapped between two files of equal length: each names the other's inode.
    fs.write_raw(&cat, &good);
    let (a, b) = (dir().join("s00.jsonl"), dir().join("s01.jsonl"));
    let tmp = dir().join("swap.tmp");
    fs.rename(&a, &tmp).unwrap();
    fs.rename(&b, &a).unwrap();
    fs.rename(&tmp, &b).unwrap();
    let (infos, report, _) = list(&fs, true);
    assert_eq!(infos, truth(&fs));
    assert_eq!(first_message_of(&infos, "s00"), Some("message number 01"));
    assert_eq!(report.journals_opened, 2, "{report:?}");
}

/// `note` appends one record for a journal its index covers, O(1) in the number of
/// sessions; listings check it by content until one rewrites the catalog.
#[test]
fn a_noted_record_is_appended_and_used() {
    let fs = store(60);
    settle(&fs);
    let cat = dir().join(CATALOG_FILE);
    let before = fs.read_raw(&cat).unwrap().len();
    let path = dir().join("s07.jsonl");
    let mut w = writer(fs.clone(), &path);
    let line = r#"{"type":"session_info","id":"n","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","name":"closed"}"#;
    w.append(
        session_index::kinds::ENTRY,
        line.as_bytes(),
        Durability::Durable,
    )
    .unwrap();
    w.close().unwrap();
    let (index, _) = open(fs.clone(), &path);
    let written = fs.stats().bytes_written;
    assert!(session_index::note(fs.as_ref(), &path, &index).unwrap());
    let grew = fs.read_raw(&cat).unwrap().len() - before;
    assert!(grew < 1024, "one record: {grew} bytes");
    assert_eq!(fs.stats().bytes_written - written, grew as u64);
    assert!(before > 20 * grew, "the catalog holds many records");
    let (infos, report, counting) = list(&fs, true);
    assert_eq!(infos, truth(&fs));
    assert_eq!((report.journals_opened, report.journals_checked), (0, 1));
    assert_eq!(counting.opens_matching(".idx"), 0);
    let s = &infos.iter().find(|i| i.path == path).unwrap().summary;
    assert_eq!(s.name.as_deref(), Some("closed"));
    // A torn append is ignored (the journal is then opened through its index).
    let whole = fs.read_raw(&cat).unwrap();
    fs.write_raw(&cat, &whole[..whole.len() - 5]);
    let (infos, report, _) = list(&fs, true);
    assert_eq!(infos, truth(&fs));
    assert_eq!(report.journals_opened, 1);
    // Without a catalog, nothing is noted.
    fs.remove_file(&cat).unwrap();
    assert!(!session_index::note(fs.as_ref(), &path, &index).unwrap());
}

/// `agent_status` and `session_state` reach the summary, through the catalog too.
#[test]
fn the_latest_agent_status_and_session_state_are_listed() {
    let fs = store(1);
    let path = dir().join("s00.jsonl");
    let mut w = writer(fs.clone(), &path);
    for line in [
        r#"{"type":"agent_status","id":"a1","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","status":{"summary":"reading","taskState":"working"}}"#,
        r#"{"type":"session_state","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","state":"archived"}"#,
        r#"{"type":"agent_status","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:04.000Z","status":{"summary":"done","taskState":"done","sourceMessageCount":1}}"#,
    ] {
        w.append(
            session_index::kinds::ENTRY,
            line.as_bytes(),
            Durability::Durable,
        )
        .unwrap();
    }
    w.close().unwrap();
    settle(&fs);
    let (infos, report, _) = list(&fs, true);
    assert_eq!(report.catalog, CatalogStatus::Fresh);
    let s = &infos[0].summary;
    assert_eq!(s.session_state.as_deref(), Some("archived"));
    assert_eq!(
        s.agent_status.as_deref(),
        Some(&serde_json::json!({"summary":"done","taskState":"done","sourceMessageCount":1}))
    );
    // Not in the reference's SessionInfo shape.
    let json = infos[0].to_json();
    assert!(json.get("agentStatus").is_none() && json.get("agent_status").is_none());
}

/// A listing allowed to write, on a read-only file system or directory: the same
/// answers, nothing written, and the report says why.
#[test]
fn a_listing_that_cannot_write_lists_read_only() {
    let fs = store(4);
    settle(&fs);
    // s01 grows: its record is stale, and would be rewritten.
    let path = dir().join("s01.jsonl");
    let mut w = writer(fs.clone(), &path);
    let line = r#"{"type":"session_info","id":"n","parentId":"u","timestamp":"2026-01-01T00:00:02.000Z","name":"grown"}"#;
    w.append(
        session_index::kinds::ENTRY,
        line.as_bytes(),
        Durability::Durable,
    )
    .unwrap();
    w.close().unwrap();
    let files: Vec<(PathBuf, Vec<u8>)> = fs
        .list()
        .into_iter()
        .map(|p| (p.clone(), fs.read_raw(&p).unwrap()))
        .collect();
    let ro = Arc::new(session_testkit::ReadOnlyVfs::new(fs.clone()));
    let opts = ListOptions {
        vfs: ro,
        ..ListOptions::default()
    };
    let (infos, report) = session_index::list_sessions(dir(), &opts).unwrap();
    assert_eq!(infos, truth(&fs));
    assert_eq!(report.journals_opened, 1);
    let why = report.save_error.expect("says why nothing was written");
    assert!(why.contains("Read-only file system"), "{why}");
    let after: Vec<(PathBuf, Vec<u8>)> = fs
        .list()
        .into_iter()
        .map(|p| (p.clone(), fs.read_raw(&p).unwrap()))
        .collect();
    assert_eq!(after, files, "nothing written");
}

/// A journal that gets no record (no session header: a crash inside create) does not
/// make every listing rewrite the catalog.
#[test]
fn a_journal_without_a_record_does_not_rewrite_the_catalog_each_time() {
    let fs = store(3);
    let headerless = dir().join("torn.jsonl");
    crate::support::write(fs.clone(), &headerless, "");
    settle(&fs);
    let cat = dir().join(CATALOG_FILE);
    let id = fs.stat(&cat).unwrap().unwrap().id;
    let (infos, report, _) = list(&fs, false);
    assert_eq!(infos.len(), 3);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(fs.stat(&cat).unwrap().unwrap().id, id, "catalog rewritten");
}
