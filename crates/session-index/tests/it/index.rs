//! Opening, validating, catching up and rebuilding the sidecar index.

use std::path::Path;
use std::sync::Arc;

use session_index::EntryIndex;
use session_index::{
    IndexError, IndexStatus, OnRegression, OpenIndexOptions, RebuildReason, sidecar_path,
};
use session_journal::vfs::Vfs;
use session_journal::{Durability, JournalId};
use session_testkit::CountingVfs;

use crate::support::{
    fingerprint, fingerprint_with_lookups, open, session_index_with_version, sim, synthetic, write,
    write_with_id, writer,
};

#[test]
fn a_fresh_index_of_a_100k_entry_journal_opens_reading_under_64_kib_of_journal() {
    let fs = sim();
    let path = Path::new("/s/big.jsonl");
    write(fs.clone(), path, &synthetic(100_000));
    let (first, report) = open(fs.clone(), path);
    assert_eq!(
        report.status,
        IndexStatus::Rebuilt {
            reason: RebuildReason::Missing
        }
    );
    assert_eq!(report.saved_coverage, Some(first.covered_len().0));
    let counting = CountingVfs::new(fs.clone());
    let (ix, report) = open(Arc::new(counting.clone()), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    let read = counting.bytes_read(path);
    assert!(read < 64 * 1024, "read {read} journal bytes");
    assert_eq!(ix.counts().entries, 100_000);
    // The deep chain: path to root is O(depth) and complete; the tree terminates.
    let leaf = ix.leaf().unwrap();
    let p = ix.path_to_root(leaf);
    assert_eq!(p.path.len(), 100_000);
    assert_eq!(p.cycle, None);
    let tree = ix.tree();
    assert_eq!(tree.roots.len(), 1);
    let pre = tree.preorder();
    assert_eq!(pre.len(), 100_000);
    assert_eq!(pre.last().unwrap().depth, 99_999);
    assert_eq!(ix.name(), Some("n99959"));
}

#[test]
fn catch_up_reads_only_the_tail_and_ends_equal_to_a_rebuild() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    let text = synthetic(2_000);
    write(fs.clone(), path, &text);
    let (before, _) = open(fs.clone(), path);
    let covered = before.covered_len().0;
    // Append 100 more entries.
    let mut w = writer(fs.clone(), path);
    let more = synthetic(2_100);
    let lines: Vec<&str> = more.lines().skip(2_001).collect();
    for l in &lines {
        w.append(
            session_index::kinds::ENTRY,
            l.as_bytes(),
            Durability::Buffered,
        )
        .unwrap();
    }
    let end = w.close().unwrap().len.0;
    let counting = CountingVfs::new(fs.clone());
    let (caught, report) = open(Arc::new(counting.clone()), path);
    match report.status {
        IndexStatus::CaughtUp { bytes_read, frames } => {
            assert_eq!(frames, 100);
            assert_eq!(bytes_read, end - covered);
        }
        other => panic!("expected a catch-up, got {other:?}"),
    }
    let read = counting.bytes_read(path);
    let tail = end - covered;
    assert!(
        read <= tail + 16 * 1024,
        "read {read} bytes for a {tail}-byte tail"
    );
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, report) = open(fs.clone(), path);
    assert!(matches!(report.status, IndexStatus::Rebuilt { .. }));
    assert_eq!(fingerprint(&caught), fingerprint(&rebuilt));
    // And the next open is fresh.
    let (_, report) = open(fs, path);
    assert_eq!(report.status, IndexStatus::Fresh);
}

fn small_session() -> String {
    synthetic(60)
}

#[test]
fn damaged_indexes_are_rebuilt_with_identical_answers_and_the_reason_reported() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    write(fs.clone(), path, &small_session());
    let (good, _) = open(fs.clone(), path);
    let expected = fingerprint(&good);
    let side = sidecar_path(path);
    let bytes = fs.read_raw(&side).unwrap();
    // Damage to the head (or to the last record's page, which an open reads) is found
    // by the open, which rebuilds; damage to another page when the page is first read,
    // which rebuilds then (`sidecar_fault`).
    let check = |what: &str, want: &dyn Fn(&RebuildReason) -> bool| {
        let (ix, report) = open(fs.clone(), path);
        match &report.status {
            IndexStatus::Rebuilt { reason } => assert!(want(reason), "{what}: reason {reason}"),
            IndexStatus::Fresh if what.starts_with("bit flip") => {
                assert_eq!(fingerprint_with_lookups(&ix), expected, "{what}");
                assert!(ix.sidecar_fault().is_some(), "{what}: no fault noted");
            }
            other => panic!("{what}: expected a rebuild, got {other:?}"),
        }
        assert_eq!(fingerprint(&ix), expected, "{what}");
    };
    // Deleted.
    fs.remove_file(&side).unwrap();
    check("deleted", &|r| *r == RebuildReason::Missing);
    // Truncated at every offset of the header, then every 13th
    // (`SESSION_INDEX_EXHAUSTIVE=1`: every offset and every byte below).
    let all = std::env::var_os("SESSION_INDEX_EXHAUSTIVE").is_some();
    let step = if all { 1 } else { 13 };
    let offsets: Vec<usize> = (0..bytes.len())
        .filter(|o| *o < session_index::SIDECAR_HEADER_LEN + 8 || o % step == 0)
        .collect();
    for &cut in &offsets {
        fs.write_raw(&side, &bytes[..cut]);
        check(&format!("truncated at {cut}"), &|r| {
            matches!(r, RebuildReason::Corrupt { .. })
        });
    }
    // One bit flipped in every byte (sampled as above).
    for &at in &offsets {
        let mut b = bytes.clone();
        b[at] ^= 1 << (at % 8);
        fs.write_raw(&side, &b);
        check(&format!("bit flip at {at}"), &|r| {
            matches!(
                r,
                RebuildReason::Corrupt { .. } | RebuildReason::UnsupportedVersion { .. }
            )
        });
    }
    // Future version (with a valid checksum).
    fs.write_raw(
        &side,
        &session_index_with_version(&bytes, session_index::SIDECAR_VERSION + 1),
    );
    check("future version", &|r| {
        *r == RebuildReason::UnsupportedVersion {
            found: session_index::SIDECAR_VERSION + 1,
            supported: session_index::SIDECAR_VERSION,
        }
    });
    // Foreign: another session's index.
    let other = Path::new("/s/b.jsonl");
    write(fs.clone(), other, &synthetic(61));
    open(fs.clone(), other);
    fs.write_raw(&side, &fs.read_raw(&sidecar_path(other)).unwrap());
    check("foreign", &|r| {
        matches!(r, RebuildReason::ForeignJournal { .. })
    });
}

#[test]
fn a_replaced_journal_with_the_same_id_fails_the_witness_and_is_rebuilt() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    let id = session_testkit::legacy::fixture_journal_id("same");
    write_with_id(fs.clone(), path, id, &synthetic(60));
    open(fs.clone(), path);
    let side = fs.read_raw(&sidecar_path(path)).unwrap();
    fs.remove_file(path).unwrap();
    write_with_id(
        fs.clone(),
        path,
        id,
        &synthetic(60).replace(" n59 ", " m59 "),
    );
    fs.write_raw(&sidecar_path(path), &side);
    let (ix, report) = open(fs.clone(), path);
    assert!(
        matches!(
            report.status,
            IndexStatus::Rebuilt {
                reason: RebuildReason::WitnessMismatch { .. }
            }
        ),
        "{:?}",
        report.status
    );
    assert_eq!(ix.name(), Some("m59"));
}

#[test]
fn a_journal_shorter_than_the_index_never_answers_from_the_stale_index() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    write(fs.clone(), path, &synthetic(100));
    let (full, _) = open(fs.clone(), path);
    let side = fs.read_raw(&sidecar_path(path)).unwrap();
    let journal = fs.read_raw(path).unwrap();
    // Cut the journal at a frame boundary of entry 50 (a valid, shorter journal).
    let cut = full.info(session_index::EntryIndex(51)).unwrap().offset.0 as usize;
    fs.write_raw(path, &journal[..cut]);
    let strict = Index_open_strict(fs.clone(), path);
    assert!(
        matches!(strict, Err(IndexError::JournalRegressed { .. })),
        "{strict:?}"
    );
    let (ix, report) = open(fs.clone(), path);
    assert!(
        matches!(
            report.status,
            IndexStatus::Rebuilt {
                reason: RebuildReason::JournalShorter { .. }
            }
        ),
        "{:?}",
        report.status
    );
    assert_eq!(ix.counts().entries, 50);
    fs.write_raw(&sidecar_path(path), &side);
    // Cut at every 97th byte (torn or not): never an answer from the stale index.
    for c in (0..journal.len()).step_by(97) {
        fs.write_raw(path, &journal[..c]);
        fs.write_raw(&sidecar_path(path), &side);
        match session_index::Index::open_or_rebuild(
            path,
            OpenIndexOptions {
                vfs: fs.clone(),
                ..OpenIndexOptions::default()
            },
        ) {
            Err(_) => {}
            Ok((ix, report)) => {
                assert!(
                    matches!(report.status, IndexStatus::Rebuilt { .. }),
                    "cut {c}: {:?}",
                    report.status
                );
                assert!(ix.covered_len().0 <= c as u64);
            }
        }
    }
}

#[allow(non_snake_case)]
fn Index_open_strict(
    fs: Arc<dyn Vfs>,
    path: &Path,
) -> Result<(session_index::Index, session_index::IndexReport), IndexError> {
    session_index::Index::open_or_rebuild(
        path,
        OpenIndexOptions {
            vfs: fs,
            on_regression: OnRegression::Error,
            ..OpenIndexOptions::default()
        },
    )
}

#[test]
fn observe_and_save_keep_the_index_current_without_rereading() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    write(fs.clone(), path, &synthetic(10));
    let (mut ix, _) = open(fs.clone(), path);
    let mut w = writer(fs.clone(), path);
    let line = r#"{"type":"session_info","id":"zz","parentId":"00000009","timestamp":"2026-01-01T00:00:00.000Z","name":"later"}"#;
    let a = w
        .append(
            session_index::kinds::ENTRY,
            line.as_bytes(),
            Durability::Buffered,
        )
        .unwrap();
    ix.observe(session_index::kinds::ENTRY, &a, line.as_bytes())
        .unwrap();
    assert_eq!(ix.name(), Some("later"));
    // Not durable yet: refused.
    assert!(ix.save(w.durable_capture()).is_err());
    let cap = w.sync().unwrap();
    ix.save(cap).unwrap();
    assert!(
        ix.observe(session_index::kinds::ENTRY, &a, line.as_bytes())
            .is_err()
    );
    let counting = CountingVfs::new(fs.clone());
    let (again, report) = open(Arc::new(counting.clone()), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    assert_eq!(fingerprint(&again), fingerprint(&ix));
    // Loading one entry reads and verifies its frame.
    let r = session_journal::Reader::open(path, session_journal::ReaderOptions { vfs: fs.clone() })
        .unwrap();
    let rec = ix.load(&r, ix.find("zz").unwrap()).unwrap();
    assert!(rec.to_json().contains("later"));
}

/// A prepared save (what an append hands to the writer's background sync) writes the
/// index as it stood when prepared, however much the index grew before the write.
#[test]
fn a_prepared_save_writes_the_index_as_it_was_prepared() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    write(fs.clone(), path, &synthetic(10));
    let (mut ix, _) = open(fs.clone(), path);
    let mut w = writer(fs.clone(), path);
    let append = |w: &mut session_journal::Writer,
                  ix: &mut session_index::Index,
                  id: &str,
                  name: &str| {
        let line = format!(
            r#"{{"type":"session_info","id":"{id}","parentId":"00000009","timestamp":"2026-01-01T00:00:00.000Z","name":"{name}"}}"#
        );
        let a = w
            .append(
                session_index::kinds::ENTRY,
                line.as_bytes(),
                Durability::Buffered,
            )
            .unwrap();
        ix.observe(session_index::kinds::ENTRY, &a, line.as_bytes())
            .unwrap();
    };
    append(&mut w, &mut ix, "y1", "prepared");
    let prepared = ix.prepare_save();
    append(&mut w, &mut ix, "y2", "later");
    prepared.write(w.sync().unwrap()).unwrap();
    // The sidecar covers the journal up to the prepared append: the open reads
    // the one frame after it, and answers as the index that kept observing.
    let (loaded, report) = open(fs.clone(), path);
    assert_eq!(
        report.status,
        IndexStatus::CaughtUp {
            bytes_read: report_bytes(&report),
            frames: 1
        }
    );
    assert_eq!(loaded.name(), Some("later"));
    assert_eq!(fingerprint(&loaded), fingerprint(&ix));
}

fn report_bytes(report: &session_index::IndexReport) -> u64 {
    match report.status {
        IndexStatus::CaughtUp { bytes_read, .. } => bytes_read,
        _ => 0,
    }
}

/// A large sidecar (over 1 MiB, as a 20k-entry session has): damage
/// anywhere rebuilds with the checksum reason, and an intact one is used.
#[test]
fn a_large_damaged_sidecar_is_rebuilt_like_a_small_one() {
    let fs = sim();
    let path = Path::new("/s/large.jsonl");
    write(fs.clone(), path, &synthetic(20_000));
    let (built, _) = open(fs.clone(), path);
    let side = session_index::sidecar_path(path);
    let bytes = fs.read_raw(&side).unwrap();
    assert!(bytes.len() > 1 << 20, "sidecar of {} bytes", bytes.len());
    let (fresh, report) = open(fs.clone(), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    assert_eq!(fingerprint(&fresh), fingerprint(&built));
    // In the head: the open rebuilds; in a page: the first read of the page does.
    for at in [200, bytes.len() / 2, bytes.len() - 40, bytes.len() - 1] {
        let mut b = bytes.clone();
        b[at] ^= 0x04;
        fs.write_raw(&side, &b);
        let (ix, report) = open(fs.clone(), path);
        match &report.status {
            IndexStatus::Rebuilt {
                reason: RebuildReason::Corrupt { detail },
            } => {
                assert!(detail.contains("checksum"), "flip at {at}: {detail}")
            }
            IndexStatus::Fresh => {
                assert_eq!(
                    fingerprint_with_lookups(&ix),
                    fingerprint(&built),
                    "flip at {at}"
                );
                let fault = ix.sidecar_fault().unwrap_or_default();
                assert!(fault.contains("fails its check"), "flip at {at}: {fault}");
            }
            other => panic!("flip at {at}: {other:?}"),
        }
        assert_eq!(fingerprint(&ix), fingerprint(&built), "flip at {at}");
    }
}

/// A text block whose `text` is an array nested far deeper than any JSON parser's
/// recursion limit (the listing joins arrays the way `Array.prototype.join` does):
/// indexing it does not overflow the stack (nor re-scan each level), and the rest of
/// the index is unaffected. Past 128 levels the nested part joins as "".
#[test]
fn deeply_nested_text_in_a_message_is_indexed_without_deep_recursion() {
    let fs = sim();
    let path = Path::new("/s/deep.jsonl");
    let depth = 200_000;
    let text = format!("{}\"x\"{}", "[".repeat(depth), "]".repeat(depth));
    let shallow = format!("{}\"y\"{}", "[".repeat(3), "]".repeat(3));
    let jsonl = format!(
        "{}\n{}\n",
        r#"{"type":"session","version":3,"id":"s-deep","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        format_args!(
            r#"{{"type":"message","id":"m1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":[{{"type":"text","text":{shallow}}},{{"type":"text","text":{text}}}],"timestamp":1}}}}"#
        ),
    );
    write(fs.clone(), path, &jsonl);
    let (index, _) = open(fs.clone(), path);
    assert_eq!(index.summary().first_message, "y ");
    assert_eq!(index.counts().entries, 1);
}

/// A sidecar far larger than any index of its journal (a planted file, or one padded
/// by damage) is rebuilt without being read into memory.
#[test]
fn a_sidecar_larger_than_its_journal_allows_is_not_read() {
    let fs = sim();
    let path = Path::new("/s/padded.jsonl");
    write(fs.clone(), path, &synthetic(10));
    let (built, _) = open(fs.clone(), path);
    let side = session_index::sidecar_path(path);
    let mut bytes = fs.read_raw(&side).unwrap();
    bytes.resize(bytes.len() + (8 << 20), 0);
    fs.write_raw(&side, &bytes);
    let (ix, report) = open(fs.clone(), path);
    match &report.status {
        IndexStatus::Rebuilt {
            reason: RebuildReason::Corrupt { detail },
        } => assert!(detail.contains("more than any index"), "{detail}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(fingerprint(&ix), fingerprint(&built));
}

/// Header fields as the reference's listing reads them, also after a save and a
/// fresh open: a `null` timestamp is `new Date(null)`, 1970 (difffuzz `list:
/// /created: ours null vs theirs string`); a `null` parentSession is listed as `null`
/// (`…/parentSessionPath: only in theirs`); a number beyond a double's range elsewhere
/// in the header does not hide its `cwd` (`…/cwd`), and as the timestamp it is
/// `Infinity`, an Invalid Date.
#[test]
fn header_nulls_and_out_of_range_numbers_list_as_the_reference_lists_them() {
    let cases = [
        (
            r#"{"type":"session","id":"x","timestamp":null,"cwd":"/tmp/x","parentSession":null}"#,
            serde_json::json!({"path":"p","id":"x","cwd":"/tmp/x","parentSessionPath":null,
                "created":"1970-01-01T00:00:00.000Z","modified":"1970-01-01T00:00:00.000Z",
                "messageCount":0,"firstMessage":"(no messages)"}),
        ),
        (
            r#"{"type":"session","version":3,"id":"y","timestamp":1e400,"cwd":"/tmp/x"}"#,
            serde_json::json!({"path":"p","id":"y","cwd":"/tmp/x","created":null,
                "modified":"1970-01-01T00:00:00.000Z","messageCount":0,
                "firstMessage":"(no messages)"}),
        ),
    ];
    for (k, (header, expected)) in cases.into_iter().enumerate() {
        let fs = sim();
        let path = format!("/s/header-{k}.jsonl");
        let path = Path::new(&path);
        // (Not `write`: its line filter is serde's, which refuses `1e400`.)
        session_testkit::legacy::write_journal(
            path,
            session_testkit::legacy::fixture_journal_id(&path.to_string_lossy()),
            &[header],
            fs.clone(),
        )
        .unwrap();
        let (built, _) = open(fs.clone(), path);
        let (fresh, report) = open(fs.clone(), path);
        assert_eq!(report.status, IndexStatus::Fresh, "{header}");
        for ix in [&built, &fresh] {
            assert_eq!(ix.summary().to_json("p", Some(0)), expected, "{header}");
        }
        // Through the listing catalog: written, then read fresh.
        let opts = session_index::ListOptions {
            vfs: fs.clone(),
            ..session_index::ListOptions::default()
        };
        for _ in 0..2 {
            let (infos, _) = session_index::list_sessions(Path::new("/s"), &opts).unwrap();
            assert_eq!(infos.len(), 1, "{header}");
            assert_eq!(infos[0].summary.to_json("p", Some(0)), expected, "{header}");
        }
    }
}

/// `1e400` in a message is `Infinity` to the reference's listing: as the message's
/// `timestamp` it makes `modified` an Invalid Date (`null`; difffuzz `list:
/// /modified: ours string vs theirs null`), as a text block's `text` it joins as
/// `"Infinity"` (`list: /firstMessage`); `-1e400` is no activity time.
#[test]
fn out_of_range_numbers_in_messages_list_as_infinity() {
    let header =
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-29T06:05Z","cwd":"/w"}"#;
    let cases = [
        (
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-29T05:16Z","message":{"role":"user","content":[{"type":"text","text":"x"},{"type":"text","text":1e400}],"timestamp":1e400}}"#,
            serde_json::Value::Null,
            "x Infinity",
        ),
        (
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-29T05:16Z","message":{"role":"user","content":[{"type":"text","text":-1e400}],"timestamp":-1e400}}"#,
            serde_json::json!("2026-01-29T06:05:00.000Z"),
            "-Infinity",
        ),
    ];
    for (k, (entry, modified, first)) in cases.into_iter().enumerate() {
        let fs = sim();
        let path = format!("/s/inf-{k}.jsonl");
        let path = Path::new(&path);
        session_testkit::legacy::write_journal(
            path,
            session_testkit::legacy::fixture_journal_id(&path.to_string_lossy()),
            &[header, entry],
            fs.clone(),
        )
        .unwrap();
        let (built, _) = open(fs.clone(), path);
        let (fresh, report) = open(fs.clone(), path);
        assert_eq!(report.status, IndexStatus::Fresh, "{entry}");
        for ix in [&built, &fresh] {
            let s = ix.summary().to_json("p", Some(0));
            assert_eq!(s["modified"], modified, "{entry}");
            assert_eq!(s["firstMessage"], first, "{entry}");
        }
    }
}

/// `created` is `new Date(header.timestamp)` for every JSON type: an array is its
/// `join(",")` read by `Date.parse` (`["a",1]` is `"a,1"`, which V8's legacy parser
/// reads as 2001; difffuzz `list: /created: ours null vs theirs string`).
#[test]
fn created_reads_every_json_type_as_new_date_does() {
    for (ts, created) in [
        (r#"["a",1]"#, serde_json::json!("2001-01-01T00:00:00.000Z")),
        (
            r#"["2026-01-02T00:00:00Z"]"#,
            serde_json::json!("2026-01-02T00:00:00.000Z"),
        ),
        ("[]", serde_json::Value::Null),
        ("{}", serde_json::Value::Null),
        ("true", serde_json::json!("1970-01-01T00:00:00.001Z")),
    ] {
        let fs = sim();
        let path = Path::new("/s/created.jsonl");
        let header =
            format!(r#"{{"type":"session","version":3,"id":"c","timestamp":{ts},"cwd":"/w"}}"#);
        write(fs.clone(), path, &format!("{header}\n"));
        let (ix, _) = open(fs.clone(), path);
        assert_eq!(
            ix.summary().to_json("p", Some(0))["created"],
            created,
            "{ts}"
        );
    }
}

/// `sync_sidecar: false` (bulk import): the sidecar is written without a sync of its
/// own and still answers the next open; a crash that loses it costs a rebuild only.
#[test]
fn an_unsynced_sidecar_is_saved_without_syncs_and_rebuilt_if_lost() {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    let durable = write(fs.clone(), path, &synthetic(30));
    let before = fs.stats();
    let (ix, report) = session_index::Index::open_or_rebuild(
        path,
        OpenIndexOptions {
            vfs: fs.clone(),
            durable: Some(durable),
            sync_journal: false,
            sync_sidecar: false,
            ..OpenIndexOptions::default()
        },
    )
    .unwrap();
    assert!(report.saved_coverage.is_some(), "{report:?}");
    let after = fs.stats();
    assert_eq!(
        (after.syncs, after.dir_syncs),
        (before.syncs, before.dir_syncs)
    );
    let (again, report) = open(fs.clone(), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    assert_eq!(fingerprint(&again), fingerprint(&ix));
    fs.crash(5);
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&rebuilt), fingerprint(&ix));
}

/// A closed journal ends with the journal's seal (no entry): the index covers it (no
/// record), so its coverage and witness end where the file does, a reopen is fresh,
/// the next append continues after it, and every answer equals the unsealed journal's.
#[test]
fn a_sealed_journal_is_covered_to_its_end_and_answers_as_the_unsealed_one() {
    use session_journal::format::SEAL_FRAME_LEN;

    let fs = crate::support::sim();
    let sealed = std::path::Path::new("/s/sealed.jsonl");
    crate::support::write(fs.clone(), sealed, &crate::support::synthetic(30));
    let bytes = fs.read_raw(sealed).unwrap();
    let len = bytes.len() as u64;
    let (ix, _) = crate::support::open(fs.clone(), sealed);
    assert_eq!(ix.covered_len().0, len, "the seal is covered");
    let w = ix.witness().unwrap();
    assert_eq!(w.end.0, len);
    assert_eq!(w.frame.0, len - SEAL_FRAME_LEN);
    let (again, report) = crate::support::open(fs.clone(), sealed);
    assert_eq!(report.status, session_index::IndexStatus::Fresh);
    assert_eq!(
        crate::support::fingerprint(&again),
        crate::support::fingerprint(&ix)
    );

    // The same journal without its seal (a writer that was dropped) answers the same.
    let unsealed = std::path::Path::new("/s/unsealed.jsonl");
    // Frames are bound to the journal id and their offsets, not to the file name.
    fs.write_raw(unsealed, &bytes[..(len - SEAL_FRAME_LEN) as usize]);
    let (plain, _) = crate::support::open(fs.clone(), unsealed);
    // Every answer but the coverage, which ends after the seal.
    let answers = |ix: &session_index::Index| {
        crate::support::fingerprint(ix).replace(&format!("\"covered\":{}", ix.covered_len().0), "")
    };
    assert_eq!(plain.covered_len().0, len - SEAL_FRAME_LEN);
    assert_eq!(answers(&plain), answers(&ix));

    // Appending after the seal: the index observes it where its coverage ends.
    let mut writer = crate::support::writer(fs.clone(), sealed);
    let mut ix = again;
    let payload = br#"{"type":"session_info","id":"after","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","name":"after the seal"}"#;
    let a = writer
        .append(
            session_index::kinds::ENTRY,
            payload,
            session_journal::Durability::Durable,
        )
        .unwrap();
    assert_eq!(a.offset.0, len);
    ix.observe(session_index::kinds::ENTRY, &a, payload)
        .unwrap();
    writer.close().unwrap();
    let (reopened, _) = crate::support::open(fs.clone(), sealed);
    // The writer's new seal is covered by the reopened index only (the observing
    // index saw the append, not the close).
    assert_eq!(
        reopened.covered_len().0,
        ix.covered_len().0 + SEAL_FRAME_LEN
    );
    assert_eq!(answers(&reopened), answers(&ix));
    assert_eq!(reopened.name(), Some("after the seal"));
}

/// A bit flipped in a page that an open does not read — of records, id hashes, id
/// records, the pool or the labels section — is found when a query first reads the
/// page: the covered prefix is rebuilt from the journal then, every answer is the
/// intact index's, and `sidecar_fault` names the page.
#[test]
fn a_flipped_bit_in_any_page_is_found_when_read_and_the_prefix_rebuilt() {
    let fs = sim();
    let path = Path::new("/s/paged.jsonl");
    write(fs.clone(), path, &synthetic(20_000));
    let (built, _) = open(fs.clone(), path);
    let expected = fingerprint(&built);
    let side = sidecar_path(path);
    let bytes = fs.read_raw(&side).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    // By the header (docs/format.md §3): head_len, rec_count, ids_count, pool_len.
    let (head_len, n, ids, pool_len) = (u64_at(72), u64_at(80), u64_at(88), u64_at(96));
    let hashes = head_len + n * 88;
    let records = hashes + ids * 8;
    let pool = records + ids * 4;
    let labels = pool + pool_len;
    assert!(
        labels < bytes.len() && n > 256 && ids > 4096,
        "{n} records, {ids} ids"
    );
    for (page, at) in [
        ("record", head_len + 100),
        ("id hash", hashes + 100),
        ("id record", records + 100),
        ("pool", pool + 100),
        ("labels", labels + 10),
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        fs.write_raw(&side, &b);
        let (ix, report) = open(fs.clone(), path);
        assert_eq!(report.status, IndexStatus::Fresh, "{page}");
        assert_eq!(ix.sidecar_fault(), None, "{page}: read by the open");
        assert_eq!(fingerprint_with_lookups(&ix), expected, "{page}");
        let fault = ix.sidecar_fault().unwrap_or_default().to_owned();
        assert!(
            fault.starts_with(&format!("the {page} page at offset")) && fault.contains("check"),
            "{page}: {fault}"
        );
    }
}

/// A tree query reads the sidecar's records and pool whole (once, every page
/// checked): a flipped bit in a record or pool page far from the ones an open reads
/// is found by that read, the prefix is rebuilt, and the tree, the entries and the
/// fault read as for a page met by any other query.
#[test]
fn a_flipped_bit_met_by_a_whole_session_query_rebuilds_the_prefix() {
    let fs = sim();
    let path = Path::new("/s/whole.jsonl");
    write(fs.clone(), path, &synthetic(20_000));
    let (built, _) = open(fs.clone(), path);
    let expected = fingerprint(&built);
    let tree_of = |ix: &session_index::Index| {
        let t = ix.tree();
        let nodes: Vec<_> = t
            .preorder()
            .iter()
            .map(|n| (n.entry.0, n.depth, n.children))
            .collect();
        (nodes, t.report.clone())
    };
    let expected_tree = tree_of(&built);
    let side = sidecar_path(path);
    let bytes = fs.read_raw(&side).unwrap();
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (head_len, n, ids, pool_len) = (u64_at(72), u64_at(80), u64_at(88), u64_at(96));
    let pool = head_len + n * 88 + ids * 12;
    for (page, at) in [
        ("record", head_len + (n / 2) * 88 + 5),
        ("pool", pool + pool_len / 2),
    ] {
        let mut b = bytes.clone();
        b[at] ^= 0x10;
        fs.write_raw(&side, &b);
        let (ix, report) = open(fs.clone(), path);
        assert_eq!(report.status, IndexStatus::Fresh, "{page}");
        assert_eq!(ix.sidecar_fault(), None, "{page}: read by the open");
        assert_eq!(tree_of(&ix), expected_tree, "{page}");
        let fault = ix.sidecar_fault().unwrap_or_default().to_owned();
        assert!(
            fault.starts_with(&format!("the {page} page at offset")) && fault.contains("check"),
            "{page}: {fault}"
        );
        assert_eq!(fingerprint(&ix), expected, "{page}");
    }
}

/// The rebuild a failed page starts reopens the journal by its path: a journal
/// renamed over it since (another session's, here with the very same entries) is
/// not replayed as this one. The prefix then answers as having no entries, and the
/// fault says both why the page failed and why the rebuild did.
#[test]
fn a_failed_page_never_rebuilds_from_another_journal_at_the_path() {
    let fs = sim();
    let path = Path::new("/s/replaced.jsonl");
    let text = synthetic(2_000);
    write(fs.clone(), path, &text);
    let (built, _) = open(fs.clone(), path);
    assert!(built.info(EntryIndex(1)).and_then(|i| i.id).is_some());
    let side = sidecar_path(path);
    let mut bytes = fs.read_raw(&side).unwrap();
    let head_len = u64::from_le_bytes(bytes[72..80].try_into().unwrap()) as usize;
    bytes[head_len + 100] ^= 0x10;
    fs.write_raw(&side, &bytes);
    let (ix, _) = open(fs.clone(), path);
    assert_eq!(
        ix.sidecar_fault(),
        None,
        "the record page is not read by the open"
    );

    // Another journal with the same entries, renamed over the indexed one.
    let other = Path::new("/s/other.jsonl");
    write_with_id(fs.clone(), other, JournalId([0x77; 16]), &text);
    fs.rename(other, path).unwrap();

    assert_eq!(ix.info(EntryIndex(1)).and_then(|i| i.id), None);
    let fault = ix.sidecar_fault().unwrap_or_default();
    assert!(
        fault.starts_with("the record page at offset")
            && fault.contains("rebuilding the index failed")
            && fault.contains("is now another journal"),
        "{fault}"
    );
}

/// An empty string id at the end of the pool (a zero-length string where a pool
/// chunk could start: ids of 8 bytes put one at 32,768 for one of these sizes) makes
/// no empty chunk: the saved sidecar is used as it is.
#[test]
fn an_empty_id_at_the_end_of_the_pool_keeps_the_sidecar_usable() {
    let ts = "2026-01-01T00:00:00.000Z";
    for n in 2_045..2_052 {
        for extra in [false, true] {
            let fs = sim();
            let path = Path::new("/s/empty-id.jsonl");
            let mut text = synthetic(n);
            if extra {
                text.push_str(&format!(
                    r#"{{"type":"custom","id":"zzzzzzzz","parentId":null,"timestamp":"{ts}"}}"#
                ));
                text.push('\n');
            }
            text.push_str(&format!(
                r#"{{"type":"custom","id":"","parentId":null,"timestamp":"{ts}"}}"#
            ));
            text.push('\n');
            write(fs.clone(), path, &text);
            let (built, _) = open(fs.clone(), path);
            let (again, report) = open(fs.clone(), path);
            assert_eq!(report.status, IndexStatus::Fresh, "{n} {extra}");
            assert_eq!(fingerprint(&again), fingerprint(&built));
        }
    }
}

/// A message object or a text block that repeats a key is read as `JSON.parse` reads
/// it, the last value winning, as a repeated key of the record itself is: before, the
/// message read as unreadable (no role, so the context failed on the kind the loaded
/// entry had) and the block was skipped (no first message).
#[test]
fn keys_repeated_inside_a_message_or_a_block_are_read_as_javascript_reads_them() {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"j","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","role":"user","content":[{"type":"image","type":"text","text":"x","text":"first"}],"timestamp":1767225601000,"timestamp":1767225609000}}"#,
        "\n",
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","role":"assistant","content":[],"timestamp":1767225602000}}"#,
        "\n",
        // Past serde_json's 128 levels, and with a lone surrogate in a value (no
        // `Value` holds one): read all the same.
        r#"{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"t","x":DEEP}],"role":"user","timestamp":1767225603000}}"#,
        "\n",
        r#"{"type":"message","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:04.000Z","message":{"\ud800":1,"role":"assistant","content":"q\udc00","role":"user","timestamp":1767225604000}}"#,
        "\n",
    );
    let text = text.replace("DEEP", &format!("{}{}", "[".repeat(200), "]".repeat(200)));
    let fs = sim();
    let path = Path::new("/s/repeats.jsonl");
    write(fs.clone(), path, &text);
    let (ix, _) = open(fs.clone(), path);
    assert_eq!(ix.kind_of(EntryIndex(1)), Some(("message", Some("user"))));
    assert_eq!(
        ix.kind_of(EntryIndex(2)),
        Some(("message", Some("assistant")))
    );
    assert_eq!(ix.kind_of(EntryIndex(3)), Some(("message", Some("user"))));
    assert_eq!(ix.kind_of(EntryIndex(4)), Some(("message", Some("user"))));
    let summary = ix.summary();
    assert_eq!(summary.first_message, "first");
    assert_eq!(summary.message_count, 4);
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&ix), fingerprint(&rebuilt));
}
