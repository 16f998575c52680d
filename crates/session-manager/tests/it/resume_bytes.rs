//! Resume reads each byte it needs once: the journal's prefix and the index's witness
//! frame are read by one reader and handed to the writer's open and to the session.

use std::path::PathBuf;
use std::sync::Arc;

use session_journal::Durability;
use session_journal::vfs::StdVfs;
use session_manager::{Layout, Sources, Store};
use session_testkit::CountingVfs;

use crate::support::{T0, assistant, user};

/// A deterministic store in a fresh directory over a counting file system.
fn counting_store() -> (tempfile::TempDir, Store, CountingVfs) {
    let d = tempfile::tempdir().expect("dir");
    let counting = CountingVfs::new(Arc::new(StdVfs));
    let store = Store::new(Layout::with_root(d.path()).expect("root"))
        .with_sources(Sources::deterministic(T0, 3))
        .with_vfs(Arc::new(counting.clone()));
    (d, store, counting)
}

/// A closed session of `n` messages and a store over a counting file system.
fn session(n: usize) -> (tempfile::TempDir, Store, CountingVfs, PathBuf) {
    let (d, store, counting) = counting_store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    for i in 0..n {
        s.append_message(user(&format!("m{i}"))).expect("append");
    }
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    (d, store, counting, path)
}

#[test]
fn resume_reads_each_journal_byte_once() {
    for n in [10, 1000] {
        let (_d, store, counting, path) = session(n);
        counting.reset();
        let mut s = store.open(&path).expect("open");
        assert_eq!(
            counting.bytes_reread(&path),
            0,
            "{n} entries: open read {:?}",
            counting.reads_of(&path)
        );
        // Nor does the context built right after it (each frame it needs, once).
        counting.reset();
        let ctx = s.build_session_context().expect("context");
        assert_eq!(ctx.messages.len(), n);
        assert_eq!(counting.bytes_reread(&path), 0, "{n} entries: context");
        // The first append after the resume reads nothing of the journal.
        counting.reset();
        s.append_message(user("next")).expect("append");
        assert_eq!(counting.bytes_read(&path), 0, "{n} entries");
    }
}

/// The context's frames are read together: neighbouring frames in one read (each
/// still verified), not one read (and one length check) per entry.
#[test]
fn the_context_reads_neighbouring_frames_in_one_read() {
    let (_d, store, counting, path) = session(1000);
    let s = store.open(&path).expect("open");
    counting.reset();
    let ctx = s.build_session_context().expect("context");
    assert_eq!(ctx.messages.len(), 1000);
    let reads = counting.reads_of(&path);
    let bytes: u64 = reads.iter().map(|r| r.1).sum();
    // 1000 frames of about 200 bytes: runs of up to 64 KiB (a buffer from the heap,
    // reused run after run), so about 200 KB in four reads.
    assert!(
        reads.len() as u64 <= bytes.div_ceil(60 << 10),
        "{} reads of {bytes} bytes",
        reads.len()
    );
    assert!(reads.iter().all(|r| r.1 <= 64 << 10), "{reads:?}");
    assert_eq!(counting.bytes_reread(&path), 0);
}

/// A context's frames with other frames between them (entries the context does not
/// load: extension state here, another branch's or an import's frames elsewhere) are
/// still read together: the bytes between them are read and skipped, not a read per
/// entry.
#[test]
fn the_context_reads_frames_a_few_bytes_apart_in_one_read() {
    let (_dir, store, counting) = counting_store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    for i in 0..200 {
        s.append_message(user(&format!("m{i}"))).expect("append");
        s.append_custom_entry("state", Some(serde_json::json!({ "i": i })))
            .expect("custom");
    }
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    let s = store.open(&path).expect("open");
    counting.reset();
    let ctx = s.build_session_context().expect("context");
    assert_eq!(ctx.messages.len(), 200);
    let reads = counting.reads_of(&path);
    assert!(reads.len() <= 2, "{} reads: {reads:?}", reads.len());
    assert_eq!(counting.bytes_reread(&path), 0);
}

/// A damaged frame inside a run read ahead is reported as a frame read alone reports
/// it (its offset, the failed check), and the entries before it are not lost to it.
#[test]
fn a_damaged_frame_read_ahead_fails_the_context_where_it_is() {
    let (_d, store, _counting, path) = session(50);
    let clean = std::fs::read(&path).expect("read");
    let s = store.open(&path).expect("open");
    let frames: Vec<_> = {
        let r = session_journal::Reader::open(&path, Default::default()).expect("reader");
        r.frames(None).map(|f| f.expect("frame").info).collect()
    };
    drop(s);
    // A payload byte of the 30th entry frame (the first is the session header).
    let victim = frames[30];
    let mut damaged = clean.clone();
    damaged[(victim.offset.get() + 64) as usize] ^= 0x01;
    std::fs::write(&path, &damaged).expect("write");
    let s = store.open(&path).expect("open");
    let e = s.build_session_context().expect_err("damaged");
    let text = e.to_string();
    assert!(
        text.contains(&format!("offset {}", victim.offset.get())),
        "{text}"
    );
    assert!(text.contains("check"), "{text}");
}

/// Entry ids from a script, then from a seeded source (session and journal ids too).
#[derive(Debug)]
struct ScriptedIds {
    script: std::sync::Mutex<std::collections::VecDeque<String>>,
    next: std::sync::atomic::AtomicU64,
    rest: session_manager::SeededIds,
}

impl ScriptedIds {
    fn push(&self, ids: &[&str]) {
        let mut s = self.script.lock().expect("script");
        s.extend(ids.iter().map(|s| (*s).to_owned()));
    }
}

impl session_manager::IdSource for ScriptedIds {
    fn session_id(&self, now_ms: i64) -> String {
        self.rest.session_id(now_ms)
    }
    fn entry_id(&self) -> session_types::EntryId {
        let scripted = self.script.lock().expect("script").pop_front();
        session_types::EntryId::new(scripted.unwrap_or_else(|| {
            let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("{n:08x}")
        }))
    }
    fn journal_id(&self) -> [u8; 16] {
        self.rest.journal_id()
    }
}

/// After a resume, a drawn id that an entry of the covered prefix or one appended
/// since already has is refused, and the next candidate is taken.
#[test]
fn the_first_appends_after_a_resume_skip_ids_of_the_prefix_and_the_tail() {
    let d = tempfile::tempdir().expect("dir");
    let ids = Arc::new(ScriptedIds {
        script: Default::default(),
        next: Default::default(),
        rest: session_manager::SeededIds::new(5),
    });
    let sources = Sources {
        ids: ids.clone(),
        ..Sources::deterministic(T0, 5)
    };
    let store = Store::new(Layout::with_root(d.path()).expect("root")).with_sources(sources);
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    for i in 0..3000 {
        s.append_message(user(&format!("m{i}"))).expect("append");
    }
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    let mut s = store.open(&path).expect("open");
    // Entries 00000000..00000bb7 are in the sidecar's table.
    ids.push(&["00000005", "00000bb7", "tail0001"]);
    let first = s.append_message(user("first")).expect("append");
    assert_eq!(first.as_str(), "tail0001");
    ids.push(&["tail0001", "00000007", "tail0002"]);
    let second = s.append_message(user("second")).expect("append");
    assert_eq!(second.as_str(), "tail0002");
    assert!(ids.script.lock().expect("script").is_empty());
    s.close().expect("close");
    // Every id once: the journal reads back with no duplicate.
    let s = store.open(&path).expect("reopen");
    let ctx = s.build_session_context().expect("context");
    assert_eq!(ctx.messages.len(), 3002);
}

/// A closed session of about `n` entries as agents write them: user and assistant
/// messages, a thinking level set near the root, a compaction every 500 entries
/// keeping the last 100 before it, the last one 100 entries before the end (so the
/// context is the same size at any `n`).
fn compacted(n: usize) -> (tempfile::TempDir, Store, CountingVfs, PathBuf) {
    let (d, store, counting) = counting_store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    s.append_thinking_level_change("high").expect("thinking");
    let mut ids: Vec<session_types::EntryId> = Vec::with_capacity(n);
    for i in 1..n {
        let id = if i >= 200 && i % 500 == (n - 100) % 500 {
            let kept = ids[ids.len() - 100].clone();
            s.append_compaction("summary", kept, 1000, None, None)
                .expect("compaction")
        } else if i % 2 == 0 {
            s.append_message(assistant(&format!("a{i:06}")))
                .expect("append")
        } else {
            s.append_message(user(&format!("u{i:06}"))).expect("append")
        };
        ids.push(id);
    }
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    (d, store, counting, path)
}

/// Resume cost follows the context, not the session (issue 19, point 1): opening a
/// session and building its context reads, of every file, no more than 64 KiB more
/// at 50,000 entries than at 1,000 with a context of the same size — the sidecar's
/// head and the pages of the context's records, the journal's frames of the context.
#[test]
fn open_and_context_read_the_same_bytes_at_1k_and_50k_entries() {
    let mut read = Vec::new();
    for n in [1_000, 50_000] {
        let (_d, store, counting, path) = compacted(n);
        counting.reset();
        let s = store.open(&path).expect("open");
        let ctx = s.build_session_context().expect("context");
        assert_eq!(ctx.messages.len(), 1 + 100 + 99, "{n}");
        read.push(counting.bytes_read_matching(""));
    }
    assert!(
        read[1] <= read[0] + (64 << 10),
        "bytes read by open and context at 1k and 50k entries: {read:?}"
    );
}
