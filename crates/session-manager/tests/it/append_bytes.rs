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

use crate::support::{store, user};

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
