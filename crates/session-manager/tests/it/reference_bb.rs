//! The reference's black-box tests (`legacy-pi-behaviour.md` §4, marked [BB]),
//! re-expressed against this API. Where we deliberately differ the test asserts our
//! behaviour and names the row of `docs/api-mapping.md` that explains why.

use serde_json::json;
use session_manager::{NewSessionOptions, ReadLimits, ResidentSession, Sources};
use session_types::Entry;

use crate::support::{T0, assistant, assistant_from, ids, roles, store, user};

const L: ReadLimits = ReadLimits {
    max_source_entries: session_manager::DEFAULT_MAX_SOURCE_ENTRIES,
    max_source_bytes: session_manager::DEFAULT_MAX_SOURCE_BYTES,
};

// ----- tree-traversal.test.ts -----

#[test]
fn appends_build_a_parent_chain_and_advance_the_leaf() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    assert_eq!(s.get_leaf_id(), None, "null at the start");
    let a = s.append_message(user("1")).expect("1");
    let b = s.append_thinking_level_change("high").expect("2");
    let c = s.append_model_change("openai", "gpt").expect("3");
    let d = s
        .append_compaction("S", a.as_str(), 10, None, None)
        .expect("4");
    let e = s.append_custom_entry("x", None).expect("5");
    let entries = s.read_entries(L).expect("entries");
    assert_eq!(ids(&entries), [&a, &b, &c, &d, &e].map(|x| x.as_str()));
    let parents: Vec<_> = entries
        .iter()
        .map(|x| x.parent_id().map(str::to_owned))
        .collect();
    assert_eq!(
        parents,
        [
            None,
            Some(a.0.clone()),
            Some(b.0.clone()),
            Some(c.0.clone()),
            Some(d.0.clone())
        ]
    );
    assert_eq!(s.get_leaf_id(), Some(&e));
}

#[test]
fn get_branch_cases() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    assert!(s.read_branch(None, L).expect("empty").is_empty());
    let a = s.append_message(user("1")).expect("1");
    assert_eq!(ids(&s.read_branch(None, L).expect("one")), [a.as_str()]);
    let b = s.append_message(assistant("2")).expect("2");
    let c = s.append_message(user("3")).expect("3");
    assert_eq!(
        ids(&s.read_branch(None, L).expect("full")),
        [&a, &b, &c].map(|x| x.as_str())
    );
    assert_eq!(
        ids(&s.read_branch(Some(b.as_str()), L).expect("from")),
        [&a, &b].map(|x| x.as_str())
    );
}

#[test]
fn get_tree_shapes() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    assert!(s.read_tree(L).expect("empty").nodes.is_empty());
    let a = s.append_message(user("a")).expect("a");
    let b = s.append_message(assistant("b")).expect("b");
    let c = s.append_message(user("c")).expect("c");
    let t = s.read_tree(L).expect("linear");
    assert_eq!(
        t.outline().iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    // Three branches at b (c plus two more), in timestamp order.
    s.branch_to(Some(b.as_str())).expect("b");
    let d = s.append_message(user("d")).expect("d");
    s.branch_to(Some(b.as_str())).expect("b");
    let e = s.append_message(user("e")).expect("e");
    let t = s.read_tree(L).expect("branched");
    assert_eq!(t.roots.len(), 1);
    let root = &t.nodes[t.roots[0]];
    assert_eq!(root.entry.id(), Some(a.as_str()));
    let bpos = root.children[0];
    let kids: Vec<_> = t
        .children(bpos)
        .map(|n| n.entry.id().unwrap_or("").to_owned())
        .collect();
    assert_eq!(kids, [c.0.clone(), d.0.clone(), e.0.clone()]);
    // Deep branching: under d.
    s.branch_to(Some(d.as_str())).expect("d");
    s.append_message(assistant("f")).expect("f");
    let t = s.read_tree(L).expect("deep");
    assert_eq!(
        t.outline().iter().map(|(d, _)| *d).collect::<Vec<_>>(),
        [0, 1, 2, 2, 3, 2]
    );
}

#[test]
fn branch_errors_and_children_of_the_branch_point() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("a")).expect("a");
    s.append_message(assistant("b")).expect("b");
    assert!(
        s.branch_to(Some("nonexistent"))
            .expect_err("unknown")
            .to_string()
            .ends_with(": entry nonexistent not found")
    );
    s.branch_to(Some(a.as_str())).expect("branch");
    let c = s.append_message(user("c")).expect("c");
    assert_eq!(
        s.read_entry(c.as_str(), L).expect("c").parent_id(),
        Some(a.as_str())
    );
    let bs = s
        .branch_with_summary(Some(a.as_str()), "summary", None, None)
        .expect("bs");
    assert_eq!(
        s.read_entry(bs.as_str(), L).expect("bs").parent_id(),
        Some(a.as_str())
    );
    assert_eq!(s.get_leaf_id(), Some(&bs));
    assert!(
        s.branch_with_summary(Some("nonexistent"), "s", None, None)
            .is_err()
    );
    assert_eq!(
        s.read_leaf_entry(L)
            .expect("leaf")
            .and_then(|e| e.id().map(str::to_owned)),
        Some(bs.0.clone())
    );
    assert!(
        s.read_entry("nonexistent", L).is_err(),
        "getEntry of an unknown id: an error here (mapping: readEntry)"
    );
}

#[test]
fn build_context_follows_the_branch() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q1")).expect("a");
    s.append_message(assistant("r1")).expect("b");
    s.branch_to(Some(a.as_str())).expect("branch");
    s.append_message(user("alt")).expect("c");
    let ctx = s.build_session_context().expect("ctx");
    assert_eq!(roles(&ctx), ["user", "user"]);
}

#[test]
fn create_branched_session_from_the_first_user_message_is_written_at_once() {
    // Reference: the file is not created until an assistant arrives. Ours writes it
    // durably at once (mapping: createBranchedSession).
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q1")).expect("a");
    s.append_message(assistant("r1")).expect("b");
    let n = s.create_branched_session(a.as_str()).expect("branched");
    let path = n.session_file().expect("file").to_path_buf();
    drop(n);
    let v = store.open_read_only(&path).expect("exists");
    assert_eq!(v.get_entries().len(), 1);
    let all: Vec<_> = v.get_entries().iter().filter_map(Entry::id).collect();
    let mut unique = all.clone();
    unique.dedup();
    assert_eq!(all, unique, "unique ids, exactly one header");
    assert!(s.create_branched_session("nonexistent").is_err());
}

// ----- labels.test.ts -----

#[test]
fn labels_set_clear_last_wins_and_stay_out_of_the_context() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q")).expect("a");
    let l = s
        .append_label_change(a.as_str(), Some("checkpoint"))
        .expect("label");
    let e = s.read_entry(l.as_str(), L).expect("label entry");
    assert_eq!(
        e.to_json(),
        format!(
            r#"{{"type":"label","id":"{l}","parentId":"{l_parent}","timestamp":"{ts}","targetId":"{a}","label":"checkpoint"}}"#,
            l = l.as_str(),
            l_parent = a.as_str(),
            ts = e.timestamp().expect("ts"),
            a = a.as_str()
        )
    );
    assert_eq!(
        s.read_label(a.as_str(), L).expect("l").as_deref(),
        Some("checkpoint")
    );
    let clear = s.append_label_change(a.as_str(), None).expect("clear");
    assert!(
        !s.read_entry(clear.as_str(), L)
            .expect("e")
            .to_json()
            .contains("\"label\":"),
        "a clear has no label key"
    );
    assert_eq!(s.read_label(a.as_str(), L).expect("l"), None);
    s.append_label_change(a.as_str(), Some("one")).expect("1");
    s.append_label_change(a.as_str(), Some("two")).expect("2");
    assert_eq!(
        s.read_label(a.as_str(), L).expect("l").as_deref(),
        Some("two")
    );
    let tree = s.read_tree(L).expect("tree");
    let node = tree
        .nodes
        .iter()
        .find(|n| n.entry.id() == Some(a.as_str()))
        .expect("node");
    assert_eq!(node.label.as_deref(), Some("two"));
    assert_eq!(roles(&s.build_session_context().expect("ctx")), ["user"]);
    assert!(
        s.append_label_change("non-existent", Some("x"))
            .expect_err("unknown")
            .to_string()
            .ends_with(": entry non-existent not found")
    );
}

#[test]
fn branched_in_memory_session_keeps_path_labels_only() {
    let mut s = ResidentSession::in_memory("/w", Sources::deterministic(T0, 9));
    let a = s.append_message(user("q1")).expect("a");
    let b = s.append_message(assistant("r1")).expect("b");
    s.append_label_change(a.as_str(), Some("la")).expect("la");
    s.append_label_change(b.as_str(), Some("lb")).expect("lb");
    s.branch_to(Some(a.as_str())).expect("branch");
    let c = s.append_message(user("other")).expect("c");
    s.append_label_change(c.as_str(), Some("lc")).expect("lc");
    let n = s.create_branched_session(b.as_str()).expect("branched");
    let labels: Vec<_> = n
        .get_entries()
        .iter()
        .filter(|e| e.entry_type() == Some("label"))
        .collect();
    assert_eq!(labels.len(), 2, "two new label entries");
    assert_eq!(n.get_label(a.as_str()), Some("la"));
    assert_eq!(n.get_label(b.as_str()), Some("lb"));
    assert_eq!(
        n.get_label(c.as_str()),
        None,
        "labels on other branches are dropped"
    );
}

/// 0.73.1 (legacy-pi-behaviour §0 delta 5, §3.5): `createBranchedSession` re-creates
/// labels with the timestamp of the label entry that set them (0.58.3 used the current
/// time), and tree nodes report it as `labelTimestamp`. Resident and owned alike.
#[test]
fn branched_sessions_keep_original_label_timestamps_and_trees_report_them() {
    fn label_times(entries: &[Entry]) -> Vec<(String, Option<String>)> {
        entries
            .iter()
            .filter_map(|e| match e {
                Entry::Label(l) => Some((
                    l.target_id.as_str().to_owned(),
                    e.timestamp().map(str::to_owned),
                )),
                _ => None,
            })
            .collect()
    }
    // Resident.
    let mut s = ResidentSession::in_memory("/w", Sources::deterministic(T0, 9));
    let a = s.append_message(user("q1")).expect("a");
    let b = s.append_message(assistant("r1")).expect("b");
    s.append_label_change(a.as_str(), Some("first"))
        .expect("l1");
    s.append_label_change(b.as_str(), Some("lb")).expect("lb");
    let relabel = s
        .append_label_change(a.as_str(), Some("second"))
        .expect("l2");
    s.append_message(user("later")).expect("later");
    let ts_a = s
        .get_entry(relabel.as_str())
        .and_then(|e| e.timestamp())
        .map(str::to_owned);
    let ts_b = s.get_entries().iter().find_map(|e| match e {
        Entry::Label(l) if l.target_id.as_str() == b.as_str() => e.timestamp().map(str::to_owned),
        _ => None,
    });
    let tree = s.get_tree();
    let node_a = tree
        .nodes
        .iter()
        .find(|n| n.entry.id() == Some(a.as_str()))
        .expect("a");
    assert_eq!(node_a.label.as_deref(), Some("second"));
    assert_eq!(node_a.label_timestamp, ts_a);
    let n = s.create_branched_session(b.as_str()).expect("branched");
    assert_eq!(
        label_times(n.get_entries()),
        [
            (a.as_str().to_owned(), ts_a.clone()),
            (b.as_str().to_owned(), ts_b.clone())
        ],
        "first-set order, original timestamps"
    );
    // Owned.
    let (_d, store) = store();
    let mut o = store.create("/w").expect("create");
    let a = o.append_message(user("q1")).expect("a");
    let b = o.append_message(assistant("r1")).expect("b");
    o.append_label_change(a.as_str(), Some("first"))
        .expect("l1");
    let lb = o.append_label_change(b.as_str(), Some("lb")).expect("lb");
    let relabel = o
        .append_label_change(a.as_str(), Some("second"))
        .expect("l2");
    o.append_message(user("later")).expect("later");
    let ts = |id: &str| {
        o.read_entry(id, L)
            .expect("entry")
            .timestamp()
            .map(str::to_owned)
    };
    let (ts_a, ts_b) = (ts(relabel.as_str()), ts(lb.as_str()));
    assert!(ts_a.is_some() && ts_a != ts_b);
    let tree = o.read_tree(L).expect("tree");
    let node_a = tree
        .nodes
        .iter()
        .find(|n| n.entry.id() == Some(a.as_str()))
        .expect("a");
    assert_eq!(node_a.label_timestamp, ts_a);
    let n = o.create_branched_session(b.as_str()).expect("branched");
    let path = n.session_file().expect("file").to_path_buf();
    drop(n);
    let v = store.open_read_only(&path).expect("view");
    assert_eq!(
        label_times(v.get_entries()),
        [(a.as_str().to_owned(), ts_a), (b.as_str().to_owned(), ts_b)]
    );
}

// ----- build-context.test.ts through the manager -----

#[test]
fn build_context_compaction_settings_and_models() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    assert_eq!(
        s.build_session_context()
            .expect("empty")
            .to_reference_json(),
        json!({"messages":[],"thinkingLevel":"off","model":null})
    );
    s.append_model_change("openai", "gpt").expect("model");
    s.append_thinking_level_change("high").expect("thinking");
    s.append_message(user("q1")).expect("q1");
    s.append_message(assistant_from("r1", "p1", "m1", 3))
        .expect("r1");
    let q2 = s.append_message(user("q2")).expect("q2");
    s.append_message(assistant("r2")).expect("r2");
    s.append_compaction("First", q2.as_str(), 100, None, None)
        .expect("c1");
    let q3 = s.append_message(user("q3")).expect("q3");
    s.append_compaction("Second", q3.as_str(), 200, None, None)
        .expect("c2");
    s.append_message(user("q4")).expect("q4");
    let ctx = s.build_session_context().expect("ctx");
    assert_eq!(roles(&ctx), ["compactionSummary", "user", "user"]);
    let j = ctx.to_reference_json();
    assert_eq!(j["messages"][0]["summary"], "Second");
    assert_eq!(j["thinkingLevel"], "high");
    assert_eq!(
        j["model"],
        json!({"provider":"anthropic","modelId":"claude"})
    );
}

// ----- save-entry.test.ts -----

#[test]
fn custom_entries_join_the_path_but_not_the_context() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q")).expect("a");
    let c = s
        .append_custom_entry("my-ext", Some(json!({"state":1})))
        .expect("custom");
    let b = s.append_message(assistant("r")).expect("b");
    let e = s.read_entry(c.as_str(), L).expect("custom");
    assert_eq!(e.parent_id(), Some(a.as_str()));
    assert!(
        e.to_json()
            .starts_with(r#"{"type":"custom","customType":"my-ext","data":{"state":1},"id":"#)
    );
    assert_eq!(
        ids(&s.read_branch(None, L).expect("path")),
        [&a, &c, &b].map(|x| x.as_str())
    );
    assert_eq!(
        roles(&s.build_session_context().expect("ctx")),
        ["user", "assistant"]
    );
}

// ----- custom-session-id.test.ts -----

#[test]
fn new_session_with_and_without_an_id() {
    let (_d, store) = store();
    let s = store.create("/w").expect("create");
    let custom = s
        .new_session(NewSessionOptions::with_id("my-custom-id"))
        .expect("custom");
    assert_eq!(custom.session_id(), "my-custom-id");
    assert_eq!(custom.header().id.as_str(), "my-custom-id");
    let random = s.new_session(NewSessionOptions::default()).expect("random");
    assert!(!random.session_id().is_empty());
    assert_ne!(random.session_id(), s.session_id());
}

// ----- migration.test.ts, via explicit import -----

#[test]
fn v1_import_gets_8_hex_ids_a_parent_chain_and_version_3() {
    let (d, store) = store();
    let v1 = d.path().join("v1.jsonl");
    std::fs::write(&v1, concat!(
        r#"{"type":"session","id":"sess-v1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/tmp/x"}"#, "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"u1","timestamp":1}}"#, "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m1","api":"a","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#, "\n",
    )).expect("write");
    let out = store.import(&v1).expect("import");
    let s = store.open(&out.journal).expect("open");
    assert_eq!(s.header().version, Some(3));
    let entries = s.read_entries(L).expect("entries");
    assert_eq!(entries.len(), 2);
    for e in &entries {
        let id = e.id().expect("id");
        assert_eq!(id.len(), 8);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    assert_eq!(entries[0].parent_id(), None);
    assert_eq!(entries[1].parent_id(), entries[0].id());
    assert_eq!(
        s.build_session_context().expect("ctx").to_reference_json()["model"],
        json!({"provider":"p","modelId":"m1"})
    );
}

#[test]
fn v2_import_keeps_ids() {
    let (d, store) = store();
    let v2 = d.path().join("v2.jsonl");
    std::fs::write(&v2, concat!(
        r#"{"type":"session","version":2,"id":"s2","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#, "\n",
        r#"{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"u","timestamp":1}}"#, "\n",
        r#"{"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":2}}"#, "\n",
    )).expect("write");
    let out = store.import(&v2).expect("import");
    let s = store.open(&out.journal).expect("open");
    let entries = s.read_entries(L).expect("entries");
    assert_eq!(ids(&entries), ["aaaa0001", "aaaa0002"]);
    assert!(entries[1].to_json().contains(r#""role":"custom""#));
}

// ----- listing fields, session-info-modified-timestamp.test.ts -----

#[test]
fn listing_fields_and_modified_from_the_last_message_timestamp() {
    let (_d, store) = store();
    let mut s = store.create("/proj").expect("create");
    s.append_message(user("hello")).expect("user");
    s.append_message(assistant_from("resp", "p", "m", 1_767_225_600_000))
        .expect("assistant"); // 2026-01-01
    s.append_session_info(" first ").expect("name");
    let path = s.session_file().expect("file").to_path_buf();
    let id = s.session_id().to_owned();
    drop(s);
    let list = store.list("/proj", &mut ()).expect("list");
    assert_eq!(list.len(), 1);
    let j = list[0].to_json();
    assert_eq!(j["path"], path.to_string_lossy().as_ref());
    assert_eq!(j["id"], id.as_str());
    assert_eq!(j["cwd"], "/proj");
    assert_eq!(j["name"], "first");
    assert_eq!(j["created"], "2025-01-01T00:00:00.000Z");
    assert_eq!(
        j["modified"], "2026-01-01T00:00:00.000Z",
        "the assistant's numeric timestamp, not the mtime"
    );
    assert_eq!(j["messageCount"], 2);
    assert_eq!(j["firstMessage"], "hello");
}
