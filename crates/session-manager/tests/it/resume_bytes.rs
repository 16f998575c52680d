//! Resume reads each byte it needs once: the journal's prefix and the index's witness
//! frame are read by one reader and handed to the writer's open and to the session.

use std::path::PathBuf;
use std::sync::Arc;

use session_journal::Durability;
use session_journal::vfs::StdVfs;
use session_manager::{Layout, Sources, Store};
use session_testkit::CountingVfs;

use crate::support::{T0, user};

/// A closed session of `n` messages and a store over a counting file system.
fn session(n: usize) -> (tempfile::TempDir, Store, CountingVfs, PathBuf) {
    let d = tempfile::tempdir().expect("dir");
    let counting = CountingVfs::new(Arc::new(StdVfs));
    let store = Store::new(Layout::with_root(d.path()).expect("root"))
        .with_sources(Sources::deterministic(T0, 3))
        .with_vfs(Arc::new(counting.clone()));
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
