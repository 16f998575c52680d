//! Resident views: in-memory sessions and read-only views of journals.

use session_manager::{AppendError, NewSessionOptions, ReadLimits, ResidentSession, Sources};

use crate::support::{T0, assistant, store, user};

fn mem() -> ResidentSession {
    ResidentSession::in_memory("/mem", Sources::deterministic(T0, 5))
}

#[test]
fn in_memory_sessions_persist_nothing_and_have_the_getters() {
    let mut s = mem();
    assert!(!s.is_persisted());
    assert!(!s.supports_captured_history_reads());
    assert_eq!(s.session_file(), None);
    assert_eq!(s.session_dir(), std::path::Path::new(""));
    assert_eq!(s.session_artifact_dir(), None);
    assert_eq!(s.cwd(), "/mem");
    let a = s.append_message(user("q")).expect("a");
    let b = s.append_message(assistant("r")).expect("b");
    assert_eq!(
        s.get_entry(a.as_str()).and_then(|e| e.id()),
        Some(a.as_str())
    );
    assert_eq!(s.get_entries().len(), 2);
    assert_eq!(s.get_leaf_entry().and_then(|e| e.id()), Some(b.as_str()));
    assert_eq!(s.get_children(a.as_str()).len(), 1);
    assert_eq!(s.get_branch(None).len(), 2);
    assert_eq!(s.build_session_context().expect("ctx").messages.len(), 2);
    s.append_session_info(" named ").expect("name");
    assert_eq!(s.session_name(), Some("named"));
    let n = s.new_session(NewSessionOptions::with_id("custom"));
    assert_eq!(n.session_id(), "custom");
    assert!(n.get_entries().is_empty());
}

#[test]
fn read_only_views_refuse_appends_and_never_write() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q")).expect("a");
    let path = s.session_file().expect("file").to_path_buf();
    let before = std::fs::read(&path).expect("bytes");
    let mut v = store.open_read_only(&path).expect("view");
    assert!(v.is_persisted());
    assert_eq!(v.session_file(), Some(path.as_path()));
    assert!(v.session_artifact_dir().is_some());
    assert!(matches!(
        v.append_message(user("x")),
        Err(AppendError::ReadOnly { .. })
    ));
    v.branch_to(None).expect("leaf moves are in memory");
    assert_eq!(v.get_leaf_id(), None);
    assert_eq!(
        v.get_entry(a.as_str()),
        Some(&s.read_entry(a.as_str(), ReadLimits::default()).expect("a"))
    );
    drop(v);
    assert_eq!(std::fs::read(&path).expect("bytes"), before);
}

#[test]
fn resident_and_owned_views_agree_on_tree_branch_and_context() {
    use crate::support::store_at;
    let dir = tempfile::tempdir().expect("dir");
    let store = store_at(dir.path(), 11);
    let mut owned = store.create("/same").expect("create");
    let sources = Sources::deterministic(T0, 11);
    let mut mem = ResidentSession::in_memory("/same", sources.clone());
    // `create` also drew a journal id; draw it here so both id streams line up.
    sources.ids.journal_id();
    macro_rules! both {
        ($($call:tt)*) => {{
            let a = owned.$($call)*.expect("owned");
            let b = mem.$($call)*.expect("resident");
            assert_eq!(a, b, "same ids from the same sources");
            a
        }};
    }
    let q = both!(append_message(user("q1")));
    both!(append_message(assistant("r1")));
    owned.branch_to(Some(q.as_str())).expect("branch");
    mem.branch_to(Some(q.as_str())).expect("branch");
    both!(append_message(user("q2")));
    both!(append_label_change(q.as_str(), Some("L")));
    both!(append_compaction("S", q.as_str(), 5, None, None));
    let tree = owned.read_tree(ReadLimits::default()).expect("tree");
    assert_eq!(tree, mem.get_tree());
    let branch = owned
        .read_branch(None, ReadLimits::default())
        .expect("branch");
    assert_eq!(branch.iter().collect::<Vec<_>>(), mem.get_branch(None));
    assert_eq!(
        owned.build_session_context().expect("ctx").to_json(),
        mem.build_session_context().expect("ctx").to_json()
    );
    assert_eq!(
        owned.read_entries(ReadLimits::default()).expect("entries"),
        mem.get_entries()
    );
}
