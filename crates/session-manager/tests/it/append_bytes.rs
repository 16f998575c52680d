//! The bytes an append writes are pinned: the payload of each frame is exactly
//! serde_json's compact text of the entry, and the whole journal (frames, checks,
//! seal) matches a digest recorded when the entries were serialized by serde_json
//! itself. A faster serializer (or any other change to the append path) must not move
//! a byte.

use std::path::Path;

use serde_json::Value;
use session_journal::{Reader, ReaderOptions};
use session_manager::{Durability, ReadLimits};
use session_types::{Entry, Record};

use crate::support::{store, store_at, user};

/// Every entry of the edge fixtures (escapes, lone surrogates, big and odd numbers,
/// unknown types and fields) and the first 400 of the reference generator's 1k
/// session (real message bodies: code, tool output), each with its id and parent
/// cleared so the session gives it a fresh id under its leaf.
fn fixture_entries() -> Vec<Entry> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(fixtures.join("edge"))
        .expect("the edge fixtures")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "jsonl") && !p.to_string_lossy().contains(".after-")
        })
        .collect();
    files.sort();
    files.push(fixtures.join("generated/1k.jsonl"));
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a fixture");
        for line in text.lines().take(400) {
            let Ok(Record::Entry(mut e)) = Record::parse(line) else {
                continue;
            };
            if let Some(base) = e.base_mut() {
                base.id = None;
                base.parent_id = None;
            } else if let Entry::Unknown(map) = &mut e {
                map.shift_remove("id");
                map.shift_remove("parentId");
            }
            out.push(e);
        }
    }
    out
}

#[test]
fn appended_frames_hold_serde_json_text_and_the_journal_bytes_are_pinned() {
    let (dir, store) = store();
    let mut s = store.create("/pinned").expect("create");
    s.set_durability(Durability::Buffered);
    let entries = fixture_entries();
    assert!(entries.len() > 400, "the fixtures hold {}", entries.len());
    let mut written = Vec::new();
    // Strings that cross the escaper's 16-byte blocks in every way: each ASCII byte
    // (controls, quote, backslash, DEL) at every offset of a block, and runs of
    // multi-byte characters.
    for pad in 0..=17 {
        let ascii: String = (0u8..0x80).map(char::from).collect();
        let text = format!("{}{ascii}{}", "p".repeat(pad), "é🎉\u{2028}\"".repeat(pad));
        let id = s.append_message(user(&text)).expect("append");
        let stored = s
            .read_entry(id.as_str(), ReadLimits::default())
            .expect("read");
        written.push(serde_json::to_string(&stored).expect("serde_json"));
    }
    for e in entries {
        // Entries the strict reading refuses are not written.
        if let Ok(id) = s.append_entry(e) {
            // What the session stored under that id, read back and written by
            // serde_json.
            let stored = s
                .read_entry(id.as_str(), ReadLimits::default())
                .expect("the entry just appended");
            written.push(serde_json::to_string(&stored).expect("serde_json"));
        }
    }
    let path = s.session_file().expect("a journal").to_path_buf();
    s.close().expect("close");

    let reader = Reader::open(&path, ReaderOptions::default()).expect("reader");
    let payloads: Vec<String> = reader
        .frames(None)
        .map(|f| String::from_utf8(f.expect("a verified frame").payload).expect("utf-8"))
        .filter(|p| serde_json::from_str::<Value>(p).is_ok_and(|v| v.get("parentId").is_some()))
        .collect();
    assert_eq!(payloads, written);

    let bytes = std::fs::read(&path).expect("journal bytes");
    assert_eq!(
        blake3::hash(&bytes).to_hex().as_str(),
        "0d1db3d846da2bc41b3917f2a31207e5239b091ad7d13f130885dc5a4343b117",
        "the journal's bytes ({} of them) moved",
        bytes.len()
    );
    drop(dir);
}

/// A message appended by reference (its caller keeps it, as the seed's callers keep
/// theirs) is written and indexed exactly as the same message appended by value: two
/// stores with the same deterministic sources, fed every message of the fixtures
/// (edge shapes and the reference generator's 1k session) one way each, hold the same
/// journal bytes and give the same answers; the borrowed messages are untouched.
#[test]
fn a_message_appended_by_reference_is_the_message_appended_by_value() {
    let messages: Vec<_> = fixture_entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Message(m) => Some(m.message),
            _ => None,
        })
        .collect();
    assert!(messages.len() > 300, "{} messages", messages.len());
    let kept = messages.clone();
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (store_at(a_dir.path(), 7), store_at(b_dir.path(), 7));
    let (mut by_ref, mut by_value) = (a.create("/same").unwrap(), b.create("/same").unwrap());
    for s in [&mut by_ref, &mut by_value] {
        s.set_durability(Durability::Buffered);
    }
    for m in &messages {
        let x = by_ref.append_message(m).expect("by reference");
        let y = by_value.append_message(m.clone()).expect("by value");
        assert_eq!(x, y);
    }
    assert_eq!(
        messages, kept,
        "the borrowed messages are the caller's, unchanged"
    );
    let answers = |s: &session_manager::OwnedSession| {
        let context = s.build_session_context().expect("context");
        let tree = s.read_tree(ReadLimits::default()).expect("tree");
        (
            serde_json::to_string(&context.to_reference_json()).unwrap(),
            format!("{tree:?}"),
            s.get_leaf_id().map(|id| id.to_string()),
        )
    };
    assert_eq!(answers(&by_ref), answers(&by_value));
    let files = [by_ref.session_file(), by_value.session_file()]
        .map(|p| p.expect("a journal").to_path_buf());
    by_ref.close().expect("close");
    by_value.close().expect("close");
    let [x, y] = files.map(|p| std::fs::read(p).expect("journal bytes"));
    assert!(
        x == y,
        "the journals differ ({} and {} bytes)",
        x.len(),
        y.len()
    );
}
