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

/// The resident tree orders siblings as V8 does, invalid timestamps included, at any
/// length: orders node produced (`session-types/tests/data/js_sort.json`).
#[test]
fn resident_sibling_order_is_v8s() {
    use session_types::{Entry, Record, SessionHeader};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../session-types/tests/data/js_sort.json");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("data")).expect("json");
    let header = match Record::parse(
        r#"{"type":"session","version":3,"id":"t","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    )
    .expect("header")
    {
        Record::Header(h) => h,
        Record::Entry(_) => unreachable!("a header line"),
    };
    let entry = |id: &str, parent: &str, ts: &str| -> Entry {
        let line = format!(
            r#"{{"type":"custom","customType":"x","id":"{id}","parentId":{parent},"timestamp":"{ts}"}}"#
        );
        match Record::parse(&line).expect("entry") {
            Record::Entry(e) => e,
            Record::Header(_) => unreachable!("an entry line"),
        }
    };
    let mut checked = 0;
    for case in cases.as_array().expect("cases") {
        let keys = case["keys"].as_array().expect("keys");
        if !(3..=100).contains(&keys.len()) || !keys.iter().any(|k| k.is_null()) {
            continue;
        }
        let mut entries = vec![entry("r", "null", "2026-01-01T00:00:00.000Z")];
        for (i, k) in keys.iter().enumerate() {
            let ts = k.as_i64().map_or("garbage".to_owned(), |ms| {
                session_types::Timestamp::from_unix_ms(1_767_225_600_000 + ms).0
            });
            entries.push(entry(&format!("c{i}"), "\"r\"", &ts));
        }
        let s = ResidentSession::from_entries(
            SessionHeader::clone(&header),
            entries,
            Sources::deterministic(T0, 1),
        );
        let got: Vec<String> = s.get_tree().outline()[1..]
            .iter()
            .map(|(_, id)| id.0.clone())
            .collect();
        let want: Vec<String> = case["order"]
            .as_array()
            .expect("order")
            .iter()
            .map(|i| format!("c{i}"))
            .collect();
        assert_eq!(got, want, "{} siblings", keys.len());
        checked += 1;
    }
    assert!(checked >= 100, "{checked} cases");
}
