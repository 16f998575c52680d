//! One clock, one id source and one file system, from the store to the bottom: a store
//! over the simulated file system never touches the real one, and two stores with the
//! same sources making the same calls write the same bytes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_manager::{Layout, Sources, Store};
use session_testkit::sim::SimFs;

use crate::support::{T0, user};

const ROOT: &str = "/bcs-seams-test-root";

const LEGACY: &str = concat!(
    r#"{"type":"session","version":3,"id":"legacy-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    "\n",
    r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
    "\n"
);

/// Runs create, append, import, list, export and delete on a store over `fs`.
fn workload(fs: &SimFs) -> Store {
    let store = Store::new(Layout::with_root(ROOT).expect("absolute root"))
        .with_sources(Sources::deterministic(T0, 7))
        .with_vfs(Arc::new(fs.clone()));
    let mut s = store.create("/w").expect("create");
    s.append_message(user("one")).expect("append");
    s.append_message(user("two")).expect("append");
    let path = s.session_file().expect("file").to_path_buf();
    s.session_artifact_dir().expect("artifacts");
    s.close().expect("close");
    let src = Path::new("/elsewhere/legacy.jsonl");
    fs.write_raw(src, LEGACY.as_bytes());
    let imported = store.import(src).expect("import");
    assert_eq!(store.list_all(&mut ()).expect("list").len(), 2);
    let out = Path::new("/elsewhere/out.jsonl");
    store.export(&path, out).expect("export");
    let exported = String::from_utf8(fs.read_raw(out).expect("exported")).expect("utf-8");
    assert!(exported.contains("\"one\"") && exported.contains("\"two\""));
    let mut streamed = Vec::new();
    store
        .export_to(&imported.journal, &mut streamed, Path::new("<memory>"))
        .expect("export_to");
    assert_eq!(String::from_utf8(streamed).expect("utf-8"), LEGACY);
    let mut reopened = store.open(&imported.journal).expect("open");
    let first = reopened.get_leaf_id().expect("leaf").clone();
    assert!(
        reopened
            .read_entry_retention(first.as_str())
            .expect("retention")
            .is_some()
    );
    reopened.append_message(user("after")).expect("append");
    reopened.close().expect("close");
    store.delete(&path).expect("delete");
    assert_eq!(store.list_all(&mut ()).expect("list").len(), 1);
    store
}

#[test]
fn a_store_over_the_simulated_file_system_never_touches_the_real_one() {
    let fs = SimFs::new();
    workload(&fs);
    assert!(
        !Path::new(ROOT).exists() && !Path::new("/elsewhere").exists(),
        "the real file system was touched"
    );
    let files: Vec<PathBuf> = fs.list();
    assert!(
        files.iter().any(|p| p.starts_with(ROOT)),
        "the work happened in the simulation: {files:?}"
    );
}

#[test]
fn the_same_sources_and_calls_write_the_same_bytes() {
    let (a, b) = (SimFs::new(), SimFs::new());
    workload(&a);
    workload(&b);
    let (fa, fb) = (a.list(), b.list());
    assert_eq!(fa, fb, "the same files");
    for f in &fa {
        assert_eq!(a.read_raw(f), b.read_raw(f), "{} differs", f.display());
    }
}
