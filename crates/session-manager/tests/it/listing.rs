//! The store's listings keep the catalog current: they rewrite it when they may (and
//! list read-only when they may not), closing a session that grew appends its record,
//! deleting one forgets it; with a fresh catalog a listing opens no journal.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use session_journal::vfs::Vfs as _;
use session_manager::{Layout, Sources, Store};
use session_testkit::sim::SimFs;
use session_testkit::{CountingVfs, ReadOnlyVfs};

use crate::support::{T0, user};

const ROOT: &str = "/bcs-listing-test-root";

fn store_over(vfs: Arc<dyn session_journal::vfs::Vfs>) -> Store {
    Store::new(Layout::with_root(ROOT).expect("absolute root"))
        .with_sources(Sources::deterministic(T0, 3))
        .with_vfs(vfs)
}

fn catalog() -> PathBuf {
    Path::new(ROOT).join("sessions/.catalog")
}

/// Five sessions on `fs`, closed; then the racy window passes.
fn five(fs: &Arc<SimFs>) -> Vec<PathBuf> {
    let store = store_over(fs.clone());
    let mut paths = Vec::new();
    for k in 0..5 {
        let mut s = store.create("/w").expect("create");
        s.append_message(user(&format!("hello {k}")))
            .expect("append");
        paths.push(s.session_file().expect("file").to_path_buf());
        s.close().expect("close");
    }
    fs.advance_clock(Duration::from_secs(2));
    paths
}

#[test]
fn a_listing_writes_the_catalog_and_then_opens_no_journal() {
    let fs = Arc::new(SimFs::new());
    five(&fs);
    let store = store_over(fs.clone());
    assert!(fs.read_raw(&catalog()).is_none());
    let first = store.list_all(&mut ()).expect("list");
    assert!(
        fs.read_raw(&catalog()).is_some(),
        "the listing wrote the catalog"
    );
    let counting = Arc::new(CountingVfs::new(fs.clone()));
    let again = store_over(counting.clone())
        .list_all(&mut ())
        .expect("list");
    assert_eq!(again, first);
    assert_eq!(counting.opens_matching(".jsonl"), 0);
    assert_eq!(counting.bytes_read_matching(".jsonl"), 0);
    assert_eq!(counting.opens_matching(".idx"), 0);
}

#[test]
fn closing_a_session_that_grew_appends_its_record_and_delete_forgets_it() {
    let fs = Arc::new(SimFs::new());
    let paths = five(&fs);
    let store = store_over(fs.clone());
    store.list_all(&mut ()).expect("list");
    let before = fs.read_raw(&catalog()).expect("catalog").len();
    // Opened and closed without a change: nothing recorded.
    store.open(&paths[2]).expect("open").close().expect("close");
    assert_eq!(fs.read_raw(&catalog()).expect("catalog").len(), before);
    let mut s = store.open(&paths[2]).expect("open");
    s.append_message(user("one more")).expect("append");
    s.close().expect("close");
    let grown = fs.read_raw(&catalog()).expect("catalog").len();
    assert!(
        grown > before && grown - before < 1024,
        "one record appended"
    );
    // The next listing takes the new record after an O(1) check of that journal:
    // no index opened, no other journal touched.
    let counting = Arc::new(CountingVfs::new(fs.clone()));
    let listed = store_over(counting.clone())
        .list_all(&mut ())
        .expect("list");
    let info = listed.iter().find(|i| i.path == paths[2]).expect("listed");
    assert_eq!(info.summary.message_count, 2);
    assert_eq!(counting.opens_matching(".idx"), 0);
    assert_eq!(counting.opens_matching(".jsonl"), 1);
    assert_eq!(
        counting.opens_matching(&format!("{}", paths[2].display())),
        1
    );
    // Deleting forgets the record (no derived file keeps the session's text).
    store.delete(&paths[2]).expect("delete");
    let cat = fs.read_raw(&catalog()).expect("catalog");
    let name = paths[2]
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(!cat.windows(name.len()).any(|w| w == name.as_bytes()));
    assert_eq!(store.list_all(&mut ()).expect("list").len(), 4);
}

#[test]
fn a_store_that_cannot_write_lists_read_only() {
    let fs = Arc::new(SimFs::new());
    five(&fs);
    let want = store_over(fs.clone()).list_all(&mut ()).expect("list");
    fs.remove_file(&catalog()).expect("no catalog");
    let files = fs.list();
    let ro = store_over(Arc::new(ReadOnlyVfs::new(fs.clone())));
    assert_eq!(ro.list_all(&mut ()).expect("list"), want);
    assert_eq!(fs.list(), files, "nothing written");
}

#[cfg(unix)]
#[test]
fn the_catalog_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = crate::support::store();
    let mut s = store.create("/w").expect("create");
    s.append_message(user("hi")).expect("append");
    s.close().expect("close");
    store.list_all(&mut ()).expect("list");
    let cat = dir.path().join("sessions/.catalog");
    let mode = std::fs::metadata(&cat)
        .expect("catalog")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// Closing a session that grew costs the catalog the same bytes whatever the number
/// of sessions (issue 19 §7): one record appended, its header read, nothing else.
#[test]
fn the_catalog_update_on_close_does_not_grow_with_the_session_count() {
    // Bytes read from and written to the catalog by one append-and-close, in a
    // store of `n` sessions whose catalog is fresh.
    let per_close = |n: usize| -> (u64, u64) {
        let fs = Arc::new(SimFs::new());
        let store = store_over(fs.clone());
        let mut paths = Vec::new();
        // Sessions alike, so the closed one's record has the same size in both.
        for _ in 0..n {
            let mut s = store.create("/w").expect("create");
            s.append_message(user("hello")).expect("append");
            paths.push(s.session_file().expect("file").to_path_buf());
            s.close().expect("close");
        }
        fs.advance_clock(Duration::from_secs(2));
        store.list_all(&mut ()).expect("list");
        let counting = Arc::new(CountingVfs::new(fs.clone()));
        let store = store_over(counting.clone());
        let mut s = store.open(&paths[n / 2]).expect("open");
        s.append_message(user("one more")).expect("append");
        counting.reset();
        s.close().expect("close");
        (
            counting.bytes_read_matching(".catalog"),
            counting.bytes_written_matching(".catalog"),
        )
    };
    let (read_few, written_few) = per_close(3);
    let (read_many, written_many) = per_close(300);
    assert!(written_few > 0, "the close appended a record");
    assert_eq!(written_many, written_few);
    assert_eq!(read_many, read_few);
}
