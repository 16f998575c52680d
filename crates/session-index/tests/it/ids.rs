//! Id lookups of a resumed index: the sidecar's sorted id table answers for the
//! covered prefix, a map holds only what was appended since, so the first append after
//! a resume costs the same whatever the session's size.

use std::path::Path;
use std::sync::Arc;

use session_index::{EntryIndex, Index, IndexStatus, RebuildReason, kinds, sidecar_path};
use session_journal::vfs::Vfs;
use session_journal::{Durability, Writer};
use session_testkit::CountingVfs;
use session_testkit::sim::SimFs;

use crate::support::{fingerprint, open, sim, synthetic, write, writer};

/// An entry line of id `id` under `parent`.
fn line(id: &str, parent: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-02T00:00:00.000Z","message":{{"role":"user","content":"more","timestamp":1767312000000}}}}"#
    )
}

/// Appends one entry and indexes it, as the manager does: the id's collision check,
/// the append, the observe.
fn append(ix: &mut Index, w: &mut Writer, id: &str) -> bool {
    let taken = ix.find(id).is_some();
    let parent = ix.leaf().and_then(|l| ix.id_of(l)).unwrap_or("").to_owned();
    let text = line(id, &parent);
    let a = w
        .append(kinds::ENTRY, text.as_bytes(), Durability::Buffered)
        .unwrap();
    ix.observe(kinds::ENTRY, &a, text.as_bytes()).unwrap();
    taken
}

/// A journal of `n` synthetic entries with a saved sidecar.
fn saved(n: usize) -> (Arc<SimFs>, &'static Path) {
    let fs = sim();
    let path = Path::new("/s/a.jsonl");
    write(fs.clone(), path, &synthetic(n));
    let (_, report) = open(fs.clone(), path);
    assert!(report.saved_coverage.is_some());
    (fs, path)
}

/// What a resume and the first append cost, in bytes read and ids mapped, at 1k and at
/// 100k entries. Of the journal, a resume reads its prefix and the last covered frame
/// (the witness): the same bytes at both sizes but for that frame's length, which the
/// comparison takes out. Of the sidecar, its head and the last record's page, each
/// byte once: at 100k no more than 64 KiB beyond what it reads at 1k (the head's
/// page checks grow by 8 bytes a 256 records). The first append reads nothing of the
/// journal and the pages of its id's lookup in the sidecar (as many at both sizes),
/// maps one id, its own, and grows nothing the load allocated.
#[test]
fn the_first_append_after_a_resume_costs_the_same_at_1k_and_100k_entries() {
    let mut costs = Vec::new();
    let mut sides = Vec::new();
    for n in [1_000, 100_000] {
        let (fs, path) = saved(n);
        let side = sidecar_path(path);
        let side_len = fs.read_raw(&side).unwrap().len() as u64;
        let mut w = writer(fs.clone(), path);
        let counting = CountingVfs::new(fs.clone());
        let (mut ix, report) = open(Arc::new(counting.clone()), path);
        assert_eq!(report.status, IndexStatus::Fresh);
        let side_read = counting.bytes_read(&side);
        assert!(side_read < side_len, "{n}: read {side_read} of {side_len}");
        assert_eq!(counting.bytes_reread(&side), 0, "{n}");
        // The witness frame (a closed journal's seal) is read once, by the index.
        let witness = ix.witness().map_or(0, |w| w.end.0 - w.frame.0);
        let resume_journal = counting.bytes_read(path) - witness;
        assert_eq!(ix.ids_mapped(), 0, "{n}: a resume maps no id");
        counting.reset();
        let room = ix.capacities();
        assert!(!append(&mut ix, &mut w, "fresh001"));
        // Nor does it grow (copy) the loaded records or id pool.
        assert_eq!(ix.capacities(), room, "{n}: the first append reallocated");
        let append_read = counting.bytes_read(path);
        sides.push((side_read, counting.bytes_read(&side)));
        costs.push((resume_journal, append_read, ix.ids_mapped()));
        assert_eq!(ix.find("fresh001"), Some(EntryIndex(n as u32 + 1)));
    }
    assert_eq!(
        costs[0], costs[1],
        "(resume journal bytes, append bytes, ids mapped)"
    );
    assert_eq!(costs[0].1, 0);
    assert_eq!(costs[0].2, 1);
    let ([open_1k, append_1k], [open_100k, append_100k]) =
        (sides[0].into(), sides[1].into()) as ([u64; 2], [u64; 2]);
    assert!(
        open_100k <= open_1k + (64 << 10) && append_100k <= append_1k + (64 << 10),
        "sidecar bytes read (open, first append): {sides:?}"
    );
    // Of the id table, the first append reads one page of hashes (32 KiB: its id's
    // collision check; its parent, the leaf, is found without a lookup), and the
    // pool's last chunk.
    assert!(
        append_100k <= 48 << 10,
        "sidecar bytes read (open, first append): {sides:?}"
    );
}

/// After a resume, a new id that repeats one of the covered prefix or of the entries
/// appended since is found (the collision check) and counted as a duplicate; every
/// answer equals a rebuild's, before and after the next save.
#[test]
fn collisions_are_found_in_the_covered_prefix_and_in_the_tail() {
    let (fs, path) = saved(2_000);
    let mut w = writer(fs.clone(), path);
    let (mut ix, _) = open(fs.clone(), path);
    // Record 0 is the header record: entry k is record k + 1.
    assert_eq!(ix.find("00000005"), Some(EntryIndex(6)));
    assert_eq!(ix.find("000007d0"), None);
    assert!(!append(&mut ix, &mut w, "tail0001"));
    assert!(!append(&mut ix, &mut w, "tail0002"));
    assert_eq!(ix.find("tail0001"), Some(EntryIndex(2_001)));
    // A repeat of a prefix id, then of a tail id: the later entry wins lookups.
    assert!(append(&mut ix, &mut w, "00000005"));
    assert!(append(&mut ix, &mut w, "tail0001"));
    assert_eq!(ix.find("00000005"), Some(EntryIndex(2_003)));
    assert_eq!(ix.find("tail0001"), Some(EntryIndex(2_004)));
    assert_eq!(ix.counts().duplicate_ids, 2);
    let live = fingerprint(&ix);
    // Saved (the prefix table and the tail merge), then loaded: the same answers.
    ix.save(w.sync().unwrap()).unwrap();
    let (loaded, report) = open(fs.clone(), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    assert_eq!(fingerprint(&loaded), live);
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&rebuilt), live);
    for i in 0..rebuilt.len() as u32 {
        let Some(id) = rebuilt.id_of(EntryIndex(i)) else {
            continue;
        };
        assert_eq!(loaded.find(id), rebuilt.find(id), "{id}");
        assert_eq!(ix.find(id), rebuilt.find(id), "{id}");
    }
    for absent in ["", "0000000", "000000050", "tail0003", "zzzzzzzz"] {
        assert_eq!(loaded.find(absent), None, "{absent}");
    }
}

/// An entry whose parent was missing when it was indexed resolves to a parent
/// appended after a resume, as a rebuild resolves it (the reference's `byId` holds
/// every entry, later ones included).
#[test]
fn an_orphan_of_the_covered_prefix_finds_a_parent_appended_after_a_resume() {
    let fs = sim();
    let path = Path::new("/s/orphan.jsonl");
    let mut text = synthetic(20);
    text.push_str(&line("child001", "late0001"));
    text.push('\n');
    write(fs.clone(), path, &text);
    open(fs.clone(), path);
    let mut w = writer(fs.clone(), path);
    let (mut ix, report) = open(fs.clone(), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    let child = ix.find("child001").unwrap();
    assert_eq!(ix.parent(child), None);
    append(&mut ix, &mut w, "late0001");
    assert_eq!(ix.parent(child), ix.find("late0001"));
    // A clean close: the index covers the seal, as a rebuild does.
    w.seal().unwrap();
    ix.observe_seal(&w.last_frame().unwrap()).unwrap();
    drop(w);
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&ix), fingerprint(&rebuilt));
    assert_eq!(rebuilt.parent(child), rebuilt.find("late0001"));
}

/// A sidecar of format version 7 (committed as written by `a39a31c`, the last
/// version-7 writer, for `synthetic(20)` at `/s/v7.jsonl`) is rebuilt, never read.
#[test]
fn a_version_7_sidecar_is_rebuilt_not_misread() {
    let fs = sim();
    let path = Path::new("/s/v7.jsonl");
    write(fs.clone(), path, &synthetic(20));
    let old = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sidecar-v7/v7.jsonl.idx"),
    )
    .unwrap();
    assert_eq!(old[8..12], 7u32.to_le_bytes());
    fs.write_raw(&sidecar_path(path), &old);
    let (ix, report) = open(fs.clone(), path);
    assert_eq!(
        report.status,
        IndexStatus::Rebuilt {
            reason: RebuildReason::UnsupportedVersion {
                found: 7,
                supported: session_index::SIDECAR_VERSION,
            }
        }
    );
    assert_eq!(report.saved_coverage, Some(ix.covered_len().0));
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&ix), fingerprint(&rebuilt));
}

/// Every lookup by id a loaded index answers from its id table (before any query
/// builds a map of every record) equals a rebuilt index's, on every corpus journal:
/// string ids, ids of other JSON types reached through `json_parent`, duplicates,
/// entries without ids.
#[test]
fn loaded_tables_answer_every_lookup_as_a_rebuild_on_the_corpus() {
    fn lookups(ix: &Index) -> Vec<String> {
        (0..ix.len() as u32)
            .map(EntryIndex)
            .map(|i| {
                let by_id = ix.id_of(i).map(|id| ix.find(id));
                format!(
                    "{:?} {:?} {:?} {:?}",
                    by_id,
                    ix.json_parent(i),
                    ix.parent(i),
                    ix.label_of(i)
                )
            })
            .collect()
    }
    let mut checked = 0;
    for dir in ["edge", "legacy", "leniency", "generated"] {
        for e in std::fs::read_dir(crate::support::fixtures().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".jsonl") || name.ends_with(".after-open.jsonl") {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let fs = sim();
            let path = Path::new("/s/x.jsonl");
            write(fs.clone(), path, &text);
            let (rebuilt, _) = open(fs.clone(), path);
            let (loaded, report) = open(fs.clone(), path);
            assert_eq!(report.status, IndexStatus::Fresh, "{dir}/{name}");
            assert_eq!(lookups(&loaded), lookups(&rebuilt), "{dir}/{name}");
            assert_eq!(loaded.ids_mapped(), 0, "{dir}/{name}");
            assert_eq!(fingerprint(&loaded), fingerprint(&rebuilt), "{dir}/{name}");
            checked += 1;
        }
    }
    assert!(checked >= 45, "checked {checked}");
}

/// Ids that are not strings are keyed by their JSON value in the id table too: a
/// `parentId` of `5` or `true` finds the entry whose id is that value after a load,
/// never the string `"5"`.
#[test]
fn ids_of_other_json_types_are_found_through_a_loaded_table() {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"j","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"custom","id":5,"parentId":null,"timestamp":"2026-01-01T00:00:01.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"5","parentId":5,"timestamp":"2026-01-01T00:00:02.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":true,"parentId":"5","timestamp":"2026-01-01T00:00:03.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"c","parentId":true,"timestamp":"2026-01-01T00:00:04.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":5.0,"parentId":"c","timestamp":"2026-01-01T00:00:05.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"d","parentId":5,"timestamp":"2026-01-01T00:00:06.000Z"}"#,
        "\n",
    );
    let fs = sim();
    let path = Path::new("/s/json.jsonl");
    write(fs.clone(), path, text);
    open(fs.clone(), path);
    let (ix, report) = open(fs.clone(), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    let parent = |i: u32| {
        ix.json_parent(EntryIndex(i))
            .map(|(t, p)| (t.to_owned(), p))
    };
    // `5.0` is `5`: the later entry has the key.
    assert_eq!(parent(2), Some(("5".to_owned(), Some(EntryIndex(5)))));
    assert_eq!(parent(4), Some(("true".to_owned(), Some(EntryIndex(3)))));
    assert_eq!(parent(6), Some(("5".to_owned(), Some(EntryIndex(5)))));
    assert_eq!(ix.find("5"), Some(EntryIndex(2)));
    assert_eq!(ix.ids_mapped(), 0);
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&ix), fingerprint(&rebuilt));
}

/// An id holding a lone surrogate (`"\uD800"`, which no Rust string holds) is keyed
/// by its exact UTF-16 code units, as the reference's `Map` keys it (D6): a
/// `parentId` spelling it in lower case finds it, the string U+FFFD (what a typed
/// view reads it as) does not, and a surrogate pair spelled as escapes is the string
/// it encodes. The same after a load of the sidecar and after a rebuild.
#[test]
fn ids_holding_lone_surrogates_are_keyed_by_their_code_units() {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"j","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"custom","id":"\uD800","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"\ufffd","parentId":"\ud800","timestamp":"2026-01-01T00:00:02.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"a\ud800","parentId":"\ufffd","timestamp":"2026-01-01T00:00:03.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"\ud83d\ude80","parentId":"\u0061\uD800","timestamp":"2026-01-01T00:00:04.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"b","parentId":"🚀","timestamp":"2026-01-01T00:00:05.000Z"}"#,
        "\n",
        r#"{"type":"custom","id":"c","parentId":"\udc00","timestamp":"2026-01-01T00:00:06.000Z"}"#,
        "\n",
        r#"{"type":"label","id":"l","parentId":"c","timestamp":"2026-01-01T00:00:07.000Z","targetId":"a\ud800","label":"L\ud800"}"#,
        "\n",
    );
    let fs = sim();
    let path = Path::new("/s/surrogates.jsonl");
    write(fs.clone(), path, text);
    let (built, _) = open(fs.clone(), path);
    let (ix, report) = open(fs.clone(), path);
    assert_eq!(report.status, IndexStatus::Fresh);
    for ix in [&built, &ix] {
        let parent = |i: u32| {
            ix.json_parent(EntryIndex(i))
                .map(|(t, p)| (t.to_owned(), p))
                .or_else(|| {
                    ix.parent(EntryIndex(i))
                        .map(|p| ("string".to_owned(), Some(p)))
                })
        };
        assert_eq!(parent(1), None);
        assert_eq!(
            parent(2),
            Some((r#""\ud800""#.to_owned(), Some(EntryIndex(1))))
        );
        assert_eq!(parent(3), Some(("string".to_owned(), Some(EntryIndex(2)))));
        assert_eq!(
            parent(4),
            Some((r#""a\ud800""#.to_owned(), Some(EntryIndex(3))))
        );
        assert_eq!(parent(5), Some(("string".to_owned(), Some(EntryIndex(4)))));
        // A lone low surrogate names no entry: an orphan, not a root.
        assert_eq!(parent(6), Some((r#""\udc00""#.to_owned(), None)));
        assert_eq!(ix.find("🚀"), Some(EntryIndex(4)));
        assert_eq!(ix.find("\u{fffd}"), Some(EntryIndex(2)));
        // Shown as a typed view reads them.
        assert_eq!(
            ix.id_value(EntryIndex(3)),
            Some(serde_json::Value::from("a\u{fffd}"))
        );
        assert_eq!(
            ix.label_of(EntryIndex(3)),
            Some(serde_json::Value::from("L\u{fffd}"))
        );
        assert_eq!(ix.label_of(EntryIndex(2)), None);
    }
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&ix), fingerprint(&rebuilt));
}

/// A key holding a lone surrogate (which no Rust string holds, so a field reader
/// cannot match it) makes no record unreadable: a header's, an entry's, its
/// message's and a text block's such key is read with U+FFFD, values keep their
/// text, and the fields the index reads are read as the reference reads them.
#[test]
fn keys_holding_lone_surrogates_hide_no_field() {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"j","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","\ud800":0}"#,
        "\n",
        r#"{"type":"message","id":"\ud800","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","\udc00":1,"message":{"role":"assistant","\udc00x":true,"content":[{"type":"text","text":"hi","\ud800":2}],"timestamp":1767225601000}}"#,
        "\n",
        r#"{"type":"message","id":"u","parentId":"\ud800","timestamp":"2026-01-01T00:00:02.000Z","message":{"\ud800":0,"role":"user","content":[{"\ud800":1,"type":"text","text":"hello"}],"timestamp":1767225602000}}"#,
        "\n",
        r#"{"type":"label","id":"l","parentId":"u","timestamp":"2026-01-01T00:00:03.000Z","targetId":"\ud800","label":"L","\ud800":null}"#,
        "\n",
    );
    let fs = sim();
    let path = Path::new("/s/keys.jsonl");
    write(fs.clone(), path, text);
    let (ix, _) = open(fs.clone(), path);
    assert_eq!(ix.counts().unparsable, 0);
    let summary = ix.summary();
    assert_eq!(summary.cwd, "/w");
    assert_eq!(summary.message_count, 2);
    assert_eq!(summary.first_message, "hello");
    assert_eq!(
        ix.kind_of(EntryIndex(1)),
        Some(("message", Some("assistant")))
    );
    assert_eq!(ix.kind_of(EntryIndex(2)), Some(("message", Some("user"))));
    assert_eq!(
        ix.json_parent(EntryIndex(2)),
        Some((r#""\ud800""#, Some(EntryIndex(1))))
    );
    assert_eq!(
        ix.label_of(EntryIndex(1)),
        Some(serde_json::Value::from("L"))
    );
    fs.remove_file(&sidecar_path(path)).unwrap();
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&ix), fingerprint(&rebuilt));
}
