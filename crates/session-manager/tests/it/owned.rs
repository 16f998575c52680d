//! Owned sessions: every append, leaf moves, captured bounded reads and limits.

use serde_json::json;
use session_manager::{AppendError, Durability, Limit, NewSessionOptions, ReadError, ReadLimits};
use session_types::{AgentStatus, Entry, GitState, SessionState, Usage, UserContent};

use crate::support::{assistant, ids, roles, store, user};

#[test]
fn every_append_returns_its_id_and_moves_the_leaf() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let mut prev: Option<session_types::EntryId> = None;
    let mut expect_types = Vec::new();
    macro_rules! step {
        ($ty:expr, $call:expr) => {{
            let id = $call.expect($ty);
            assert_eq!(id.as_str().len(), 8, "8-hex id");
            assert!(id.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(s.get_leaf_id(), Some(&id));
            let e = s
                .read_leaf_entry(ReadLimits::default())
                .expect("leaf")
                .expect("some");
            assert_eq!(e.entry_type(), Some($ty));
            assert_eq!(e.parent_id(), prev.as_ref().map(|p| p.as_str()));
            prev = Some(id.clone());
            expect_types.push($ty);
            id
        }};
    }
    let m = step!("message", s.append_message(user("hi")));
    step!(
        "thinking_level_change",
        s.append_thinking_level_change("high")
    );
    step!(
        "service_tier_change",
        s.append_service_tier_change("priority")
    );
    step!("model_change", s.append_model_change("openai", "gpt"));
    let a = step!("message", s.append_message(assistant("yo")));
    step!(
        "compaction",
        s.append_compaction(
            "S",
            m.as_str(),
            100,
            Some(json!({"readFiles":[],"modifiedFiles":[]})),
            Some(false)
        )
    );
    step!("custom", s.append_custom_entry("ext", Some(json!({"k":1}))));
    step!(
        "child_usage_attributed",
        s.append_child_usage_attribution(a.as_str(), Usage::zero(), Usage::zero())
    );
    step!("session_info", s.append_session_info("  My name  "));
    step!(
        "session_state",
        s.append_session_state(SessionState::Archived)
    );
    let status: AgentStatus =
        serde_json::from_value(json!({"summary":"working on it"})).expect("status");
    step!("agent_status", s.append_agent_status(status));
    step!("git_state", s.append_git_state(GitState::default()));
    step!(
        "custom_message",
        s.append_custom_message_entry("ext", UserContent::Text("injected".into()), true, None)
    );
    step!("label", s.append_label_change(m.as_str(), Some("start")));
    let unknown: Entry =
        serde_json::from_value(json!({"type":"future_thing","payload":[1,2]})).expect("unknown");
    step!("future_thing", s.append_entry(unknown));
    assert!(prev.is_some());
    assert_eq!(s.session_name(), Some("My name"));
    let all = s.read_entries(ReadLimits::default()).expect("entries");
    assert_eq!(
        all.iter()
            .map(|e| e.entry_type().unwrap_or(""))
            .collect::<Vec<_>>(),
        expect_types
    );
    // Reopen: same entries, leaf = last appended, name and label from the index.
    let path = s.session_file().expect("file").to_path_buf();
    let leaf = s.get_leaf_id().cloned();
    drop(s);
    let s = store.open(&path).expect("reopen");
    assert_eq!(s.read_entries(ReadLimits::default()).expect("entries"), all);
    assert_eq!(s.get_leaf_id(), leaf.as_ref());
    assert_eq!(s.session_name(), Some("My name"));
    assert_eq!(
        s.read_label(m.as_str(), ReadLimits::default())
            .expect("label")
            .as_deref(),
        Some("start")
    );
}

#[test]
fn labels_on_unknown_targets_and_duplicate_ids_are_refused() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let err = s
        .append_label_change("non-existent", Some("x"))
        .expect_err("unknown");
    assert!(
        err.to_string().ends_with(": entry non-existent not found"),
        "{err}"
    );
    let a = s.append_message(user("q")).expect("user");
    let dup: Entry = serde_json::from_value(json!({"type":"custom","customType":"x","id":a.as_str(),"parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"})).expect("entry");
    assert!(matches!(
        s.append_entry(dup),
        Err(AppendError::InvalidEntry { .. })
    ));
    // A known type with a wrong shape would make its branch's context unbuildable.
    let shapeless: Entry =
        serde_json::from_value(json!({"type":"message","id":"m9","parentId":a.as_str()}))
            .expect("entry");
    let err = s
        .append_entry(shapeless)
        .expect_err("a message without message");
    assert!(matches!(err, AppendError::WrongShape { .. }), "{err}");
    // A parent that names nothing would cut the context off from all history.
    let orphan: Entry = serde_json::from_value(json!({"type":"message","id":"o1","parentId":"nowhere","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}})).expect("entry");
    let err = s.append_entry(orphan).expect_err("dangling parent");
    assert!(err.to_string().contains("\"nowhere\""), "{err}");
    assert_eq!(
        s.build_session_context().expect("context").messages.len(),
        1
    );
    assert!(matches!(
        s.branch_to(Some("nope")),
        Err(AppendError::EntryNotFound { .. })
    ));
    assert!(
        s.branch_with_summary(Some("nope"), "s", None, None)
            .is_err()
    );
}

#[test]
fn branching_moves_the_leaf_and_new_roots_are_possible() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q1")).expect("a");
    let b = s.append_message(assistant("r1")).expect("b");
    s.branch_to(Some(a.as_str())).expect("branch");
    assert_eq!(s.get_leaf_id(), Some(&a));
    let c = s.append_message(user("q2")).expect("c");
    let branch = s.read_branch(None, ReadLimits::default()).expect("branch");
    assert_eq!(ids(&branch), [a.as_str(), c.as_str()]);
    let other = s
        .read_branch(Some(b.as_str()), ReadLimits::default())
        .expect("branch");
    assert_eq!(ids(&other), [a.as_str(), b.as_str()]);
    s.branch_to(None).expect("reset");
    assert_eq!(s.get_leaf_id(), None);
    assert!(
        s.read_branch(None, ReadLimits::default())
            .expect("empty")
            .is_empty()
    );
    assert!(s.build_session_context().expect("ctx").messages.is_empty());
    let root = s.append_thinking_level_change("low").expect("root");
    assert_eq!(
        s.read_entry(root.as_str(), ReadLimits::default())
            .expect("e")
            .parent_id(),
        None
    );
    // branch_with_summary: under `b`, and with None a new root with fromId "root".
    let bs = s
        .branch_with_summary(Some(b.as_str()), "went back", None, Some(false))
        .expect("bs");
    let e = s
        .read_entry(bs.as_str(), ReadLimits::default())
        .expect("bs");
    assert_eq!(e.parent_id(), Some(b.as_str()));
    assert_eq!(s.get_leaf_id(), Some(&bs));
    let ctx = s.build_session_context().expect("ctx");
    assert_eq!(roles(&ctx), ["user", "assistant", "branchSummary"]);
    let r = s
        .branch_with_summary(None, "fresh", None, None)
        .expect("root summary");
    let e = s.read_entry(r.as_str(), ReadLimits::default()).expect("e");
    assert_eq!(e.parent_id(), None);
    assert!(e.to_json().contains(r#""fromId":"root""#));
    let tree = s.read_tree(ReadLimits::default()).expect("tree");
    assert_eq!(tree.roots.len(), 3);
}

#[test]
fn reads_over_the_entry_limit_fail_with_the_need() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    for i in 0..10 {
        s.append_message(user(&format!("m{i}"))).expect("append");
    }
    let limits = ReadLimits {
        max_source_entries: 9,
        ..ReadLimits::default()
    };
    let err = s.read_entries(limits).expect_err("over");
    match err {
        ReadError::LimitExceeded {
            session,
            limit,
            limit_value,
            needed,
            exact,
        } => {
            assert_eq!(
                (limit, limit_value, needed, exact),
                (Limit::SourceEntries, 9, 10, true)
            );
            assert_eq!(Some(std::path::Path::new(&session)), s.session_file());
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        s.read_branch(None, limits)
            .expect_err("path of 10")
            .to_string(),
        format!(
            "{}: read limit exceeded: source entries limit is 9, the read needs 10",
            s.session_file().expect("file").display()
        )
    );
    assert!(s.read_tree(limits).is_err());
    assert_eq!(
        s.read_entries(ReadLimits {
            max_source_entries: 10,
            ..limits
        })
        .expect("fits")
        .len(),
        10
    );
    let ctx_err = s
        .build_session_context_with(limits, &Default::default())
        .expect_err("context of 10");
    assert!(
        matches!(
            ctx_err,
            ReadError::LimitExceeded {
                limit: Limit::SourceEntries,
                exact: false,
                ..
            }
        ),
        "{ctx_err}"
    );
}

#[test]
fn reads_over_the_byte_limit_fail_with_the_need() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let big = "x".repeat(10_000);
    let id = s.append_message(user(&big)).expect("append");
    let e = s
        .read_entry(id.as_str(), ReadLimits::default())
        .expect("read");
    let len = e.to_json().len() as u64;
    let err = s
        .read_entry(id.as_str(), ReadLimits::bytes(1000))
        .expect_err("over");
    match err {
        ReadError::LimitExceeded {
            limit,
            limit_value,
            needed,
            ..
        } => {
            assert_eq!(
                (limit, limit_value, needed),
                (Limit::SourceBytes, 1000, len)
            );
        }
        other => panic!("{other}"),
    }
    assert!(s.read_leaf_entry(ReadLimits::bytes(len - 1)).is_err());
    assert!(s.read_leaf_entry(ReadLimits::bytes(len)).is_ok());
    assert!(
        s.build_session_context_with(ReadLimits::bytes(100), &Default::default())
            .is_err()
    );
}

#[test]
fn read_branches_shares_one_accounting() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("a")).expect("a");
    let b = s.append_message(assistant("b")).expect("b");
    s.branch_to(Some(a.as_str())).expect("branch");
    let c = s.append_message(user("c")).expect("c");
    // Paths a-b and a-c: 3 distinct entries, 4 path positions.
    let limits = ReadLimits {
        max_source_entries: 3,
        ..ReadLimits::default()
    };
    let paths = s
        .read_branches(&[b.as_str(), c.as_str()], limits)
        .expect("fits in 3");
    assert_eq!(ids(&paths[0]), [a.as_str(), b.as_str()]);
    assert_eq!(ids(&paths[1]), [a.as_str(), c.as_str()]);
    // Each path alone fits in 2, but together they need 3: the accounting is shared.
    let two = ReadLimits {
        max_source_entries: 2,
        ..ReadLimits::default()
    };
    assert!(s.read_branch(Some(b.as_str()), two).is_ok());
    assert!(s.read_branch(Some(c.as_str()), two).is_ok());
    let err = s
        .read_branches(&[b.as_str(), c.as_str()], two)
        .expect_err("shared");
    assert!(
        matches!(err, ReadError::LimitExceeded { needed: 3, .. }),
        "{err}"
    );
}

#[test]
fn entries_appended_after_a_capture_are_invisible_to_it() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("before")).expect("a");
    let snap = s.snapshot();
    let later = s.append_message(assistant("after")).expect("later");
    let seen = s
        .read_entries_in(&snap, ReadLimits::default())
        .expect("entries");
    assert_eq!(ids(&seen), [a.as_str()]);
    assert!(matches!(
        s.read_branch_in(&snap, Some(later.as_str()), ReadLimits::default()),
        Err(ReadError::EntryNotFound { .. })
    ));
    // A fresh read sees both.
    assert_eq!(s.read_entries(ReadLimits::default()).expect("all").len(), 2);
    // Another process's read-only view taken now sees both; one taken before saw one.
    let path = s.session_file().expect("file").to_path_buf();
    assert_eq!(
        store
            .open_read_only(&path)
            .expect("view")
            .get_entries()
            .len(),
        2
    );
}

#[test]
fn create_branched_session_returns_a_new_session_and_keeps_this_one() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q1")).expect("a");
    let b = s.append_message(assistant("r1")).expect("b");
    s.append_label_change(a.as_str(), Some("first"))
        .expect("label a");
    s.branch_to(Some(a.as_str())).expect("branch");
    let c = s.append_message(user("q2 other branch")).expect("c");
    s.append_label_change(c.as_str(), Some("other"))
        .expect("label c");
    let this_id = s.session_id().to_owned();
    let n = s.create_branched_session(b.as_str()).expect("branched");
    assert_eq!(s.session_id(), this_id, "this handle is not repointed");
    assert_ne!(n.session_id(), this_id);
    assert_eq!(
        n.header().parent_session.as_deref(),
        s.session_file()
            .map(|p| p.to_string_lossy().into_owned())
            .as_deref()
    );
    let entries = n.read_entries(ReadLimits::default()).expect("entries");
    // The path a, b copied unchanged, then one re-created label (for a only).
    assert_eq!(&ids(&entries)[..2], [a.as_str(), b.as_str()]);
    assert_eq!(
        entries[0],
        s.read_entry(a.as_str(), ReadLimits::default()).expect("a")
    );
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[2].entry_type(), Some("label"));
    assert_eq!(entries[2].parent_id(), Some(b.as_str()));
    assert_eq!(
        n.read_label(a.as_str(), ReadLimits::default())
            .expect("l")
            .as_deref(),
        Some("first")
    );
    assert_eq!(
        n.read_label(c.as_str(), ReadLimits::default()).expect("l"),
        None
    );
    // Durable at once, even without a later append.
    let path = n.session_file().expect("file").to_path_buf();
    drop(n);
    assert_eq!(
        store
            .open_read_only(&path)
            .expect("view")
            .get_entries()
            .len(),
        3
    );
    assert!(s.create_branched_session("nope").is_err());
}

#[test]
fn new_session_and_set_session_file() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.append_message(user("q")).expect("append");
    let first = s.session_file().expect("file").to_path_buf();
    let n = s
        .new_session(NewSessionOptions::with_parent_session(
            first.to_string_lossy(),
        ))
        .expect("new");
    assert_eq!(n.cwd(), "/w");
    assert_eq!(
        n.header().parent_session.as_deref(),
        Some(first.to_string_lossy().as_ref())
    );
    assert_eq!(s.session_file(), Some(first.as_path()), "not repointed");
    let second = n.session_file().expect("file").to_path_buf();
    drop(n);
    // A failed switch leaves the handle as it was.
    assert!(
        s.set_session_file(&first.with_file_name("missing.jsonl"))
            .is_err()
    );
    assert_eq!(s.session_file(), Some(first.as_path()));
    s.set_session_file(&second).expect("switch");
    assert_eq!(s.session_file(), Some(second.as_path()));
    // The old session's lock was released.
    store.open(&first).expect("old one is free");
}

#[test]
fn child_usage_attribution_reaches_the_context() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.append_message(user("q")).expect("user");
    let a = s.append_message(assistant("r")).expect("assistant");
    let mut agg = Usage::zero();
    agg.input = 500;
    s.append_child_usage_attribution(a.as_str(), Usage::zero(), agg)
        .expect("attr");
    let ctx = s.build_session_context().expect("ctx");
    let json = ctx.to_reference_json();
    assert_eq!(json["messages"][1]["usage"]["input"], 500);
}

#[test]
fn retention_of_imported_and_native_entries() {
    let (d, store) = store();
    let legacy = d.path().join("legacy.jsonl");
    std::fs::write(&legacy, concat!(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#, "\n",
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#, "\n",
    )).expect("write");
    let out = store.import(&legacy).expect("import");
    let mut s = store.open(&out.journal).expect("open");
    let r = s
        .read_entry_retention("a1")
        .expect("retention")
        .expect("imported");
    assert_eq!((r.line, r.source_version), (2, 3));
    let native = s.append_message(user("new")).expect("append");
    assert!(
        s.read_entry_retention(native.as_str())
            .expect("ok")
            .is_none()
    );
    assert!(s.read_entry_retention("zzz").is_err());
}

/// Issue 16 points 4 and 7: two legacy sessions sharing a header id, imported in one
/// batch, open as two sessions whose `session_id()` is their journal's name; the
/// second's retention names the header's own id.
#[test]
fn a_bulk_import_of_sessions_sharing_a_header_id_gives_each_its_own_id() {
    let (d, store) = store();
    let files: Vec<std::path::PathBuf> = ["a1", "b1"]
        .iter()
        .map(|entry| {
            let legacy = d.path().join(format!("{entry}.jsonl"));
            std::fs::write(&legacy, format!(concat!(
                r#"{{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}}"#, "\n",
                r#"{{"type":"message","id":"{}","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#, "\n",
            ), entry)).expect("write");
            legacy
        })
        .collect();
    let mut finished = 0;
    let results = store
        .import_many(
            &files,
            &session_manager::BulkOptions::default(),
            &mut |_, r| {
                assert!(r.is_ok(), "{r:?}");
                finished += 1;
            },
        )
        .expect("import");
    assert_eq!(finished, 2);
    let outcomes: Vec<_> = results.into_iter().map(|r| r.expect("imported")).collect();
    assert_eq!(outcomes[0].session_id, "s1");
    assert_ne!(outcomes[1].session_id, "s1");
    for (o, entry) in outcomes.iter().zip(["a1", "b1"]) {
        let s = store.open(&o.journal).expect("open");
        assert_eq!(s.session_id(), o.session_id);
        assert_eq!(
            o.journal.file_name().expect("a name").to_string_lossy(),
            format!("{}.jsonl", s.session_id())
        );
        let r = s
            .read_entry_retention(entry)
            .expect("retention")
            .expect("imported");
        let original = (entry == "b1").then_some("s1");
        assert_eq!(r.original_session_id.as_deref(), original);
    }
}

#[test]
fn buffered_appends_are_synced_and_indexed_at_close() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    for i in 0..(session_manager::INDEX_SAVE_EVERY + 10) {
        s.append_custom_entry("tick", Some(json!(i)))
            .expect("append");
    }
    let path = s.session_file().expect("file").to_path_buf();
    let leaf = s.get_leaf_id().cloned();
    s.close().expect("close");
    let (index, report) = session_index::Index::open_or_rebuild(
        &path,
        session_index::OpenIndexOptions {
            save: false,
            ..Default::default()
        },
    )
    .expect("index");
    assert_eq!(
        report.status,
        session_index::IndexStatus::Fresh,
        "sidecar saved at close"
    );
    assert_eq!(
        index.counts().entries,
        u64::from(session_manager::INDEX_SAVE_EVERY) + 10
    );
    let s = store.open(&path).expect("reopen");
    assert_eq!(s.get_leaf_id(), leaf.as_ref());
}

#[test]
fn index_saves_are_spaced_in_proportion_to_the_session() {
    use session_manager::{INDEX_SAVE_EVERY, index_save_interval};
    assert_eq!(index_save_interval(0), INDEX_SAVE_EVERY);
    assert_eq!(index_save_interval(8 * 1024), INDEX_SAVE_EVERY);
    assert_eq!(index_save_interval(100_000), 12_500);
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    let path = s.session_file().expect("file").to_path_buf();
    let side = session_index::sidecar_path(&path);
    let every = INDEX_SAVE_EVERY as usize;
    // Small: saved every INDEX_SAVE_EVERY appends.
    let mut appended = 0usize;
    let mut tick = |s: &mut session_manager::OwnedSession, n: usize| {
        for _ in 0..n {
            s.append_custom_entry("tick", Some(json!(appended)))
                .expect("append");
            appended += 1;
        }
        // A due save is written by the journal's background sync: wait for it (this
        // saves nothing itself unless a save is due and was not started).
        s.sync_journal().expect("sync");
    };
    tick(&mut s, every);
    let first = std::fs::read(&side).expect("saved after the first interval");
    tick(&mut s, 7 * every);
    let at_8k = std::fs::read(&side).expect("sidecar");
    assert_ne!(
        at_8k, first,
        "saved every interval while the session is small"
    );
    // Past 8 × INDEX_SAVE_EVERY entries an interval is an eighth of the session: the
    // next 1,024 appends only sync the journal; the 1,024 after them save.
    assert!(index_save_interval(9 * every + 1) > INDEX_SAVE_EVERY);
    tick(&mut s, every);
    assert_eq!(
        std::fs::read(&side).expect("sidecar"),
        at_8k,
        "not rewritten"
    );
    tick(&mut s, every);
    assert_ne!(std::fs::read(&side).expect("sidecar"), at_8k, "saved");
    s.close().expect("close");
}

#[test]
fn handles_can_move_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<session_manager::OwnedSession>();
    send_sync::<session_manager::ResidentSession>();
    send_sync::<session_manager::Store>();
}

#[test]
fn the_index_kept_while_appending_is_the_one_a_rebuild_reads_back() {
    // Appends feed the index from the typed entries (no re-parse); a rebuild parses
    // the journal. Both must give the same index, down to the sidecar's bytes.
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    let first = s.append_message(user("")).expect("append");
    let blocks: session_types::AgentMessage = serde_json::from_value(json!({"role":"user",
        "content":[{"type":"text","text":"a"},{"type":"image","data":"","mimeType":"x"},{"type":"text","text":"b"}],
        "timestamp":7}))
    .expect("message");
    s.append_message(blocks).expect("append");
    for i in 0..40 {
        let a = s
            .append_message(assistant(&format!("a{i}")))
            .expect("append");
        match i % 8 {
            0 => drop(s.append_label_change(a.as_str(), Some("l")).expect("label")),
            1 => drop(s.append_label_change(first.as_str(), None).expect("label")),
            2 => drop(s.append_session_info(" n ").expect("info")),
            3 => drop(s.append_session_state(SessionState::Crash).expect("state")),
            4 => drop(
                s.append_child_usage_attribution(a.as_str(), Usage::zero(), Usage::zero())
                    .expect("usage"),
            ),
            5 => s.branch_to(Some(first.as_str())).expect("branch"),
            6 => drop(
                s.append_entry(
                    serde_json::from_value(
                        json!({"type":"future","label":"x","message":{"role":"user"}}),
                    )
                    .expect("unknown"),
                )
                .expect("unknown"),
            ),
            _ => drop(
                s.append_entry(
                    // Second roots and a chain of them (a parent that names nothing is
                    // refused on append; orphans come from imports).
                    serde_json::from_value(json!({"type":"model_change","id":format!("o{i}"),
                        "parentId":(i >= 15).then(|| format!("o{}", i - 8)),"provider":"p","modelId":"m"}))
                    .expect("root"),
                )
                .expect("root"),
            ),
        }
    }
    s.sync().expect("sync");
    let path = s.session_file().expect("file").to_path_buf();
    let side = session_index::sidecar_path(&path);
    let live = std::fs::read(&side).expect("sidecar");
    let (tree, counts, summary) = (
        s.index().tree().preorder(),
        s.index().counts(),
        s.index().summary(),
    );
    std::fs::remove_file(&side).expect("remove sidecar");
    let (rebuilt, report) =
        session_index::Index::open_or_rebuild(&path, session_index::OpenIndexOptions::default())
            .expect("rebuild");
    assert!(matches!(
        report.status,
        session_index::IndexStatus::Rebuilt { .. }
    ));
    assert_eq!(rebuilt.tree().preorder(), tree);
    assert_eq!(rebuilt.counts(), counts);
    assert_eq!(rebuilt.summary(), summary);
    assert_eq!(summary.first_message, "a b");
    assert_eq!(std::fs::read(&side).expect("sidecar"), live);
}

/// A path longer than the default read limits can be branched with larger ones.
#[test]
fn create_branched_session_takes_limits() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    let n = ReadLimits::default().max_source_entries + 10;
    for i in 0..n {
        s.append_custom_entry("k", Some(json!(i))).expect("append");
    }
    let leaf = s.get_leaf_id().expect("leaf").clone();
    let err = s
        .create_branched_session(leaf.as_str())
        .expect_err("over the default limits");
    assert!(
        matches!(
            err,
            session_manager::OpenError::Read(ref e) if matches!(**e, ReadError::LimitExceeded { .. })
        ),
        "{err}"
    );
    let limits = ReadLimits {
        max_source_entries: n + 1,
        ..ReadLimits::default()
    };
    let branched = s
        .create_branched_session_with(leaf.as_str(), limits)
        .expect("with limits");
    assert_eq!(branched.get_leaf_id(), Some(&leaf));
}

/// `read_label` honours its limits: a label is accounted as the entry that set it.
#[test]
fn read_label_honours_its_limits() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q")).expect("append");
    let big = "L".repeat(4096);
    s.append_label_change(a.as_str(), Some(&big))
        .expect("label");
    let tight = ReadLimits {
        max_source_bytes: 1024,
        ..ReadLimits::default()
    };
    let err = s
        .read_label(a.as_str(), tight)
        .expect_err("over the byte limit");
    assert!(matches!(err, ReadError::LimitExceeded { .. }), "{err}");
    // Ids go in as they come out: an `EntryId` (or `&EntryId`) or a `&str`.
    assert_eq!(
        s.read_label(&a, ReadLimits::default()).expect("label"),
        Some(big)
    );
    assert!(s.read_entry(a, ReadLimits::default()).is_ok());
}

/// `sync_journal` makes buffered appends durable without rewriting the sidecar (a
/// group commit's sync must not grow with the session); `sync` saves it.
#[test]
fn sync_journal_makes_appends_durable_without_saving_the_index() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.sync().expect("sync");
    let side = session_index::sidecar_path(s.session_file().expect("file"));
    let before = std::fs::read(&side).expect("sidecar");
    s.set_durability(Durability::Buffered);
    s.append_message(user("q")).expect("append");
    s.sync_journal().expect("sync journal");
    assert_eq!(
        std::fs::read(&side).expect("sidecar"),
        before,
        "sidecar rewritten"
    );
    s.sync().expect("sync");
    assert_ne!(
        std::fs::read(&side).expect("sidecar"),
        before,
        "sync saves it"
    );
}

/// The tree as the reference's `getTree()` returns it, nested, key order included; and
/// a session 100,000 entries deep is written without recursing on its depth.
#[test]
fn the_tree_writes_nested_as_get_tree_returns_it() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q")).expect("a");
    let b = s.append_message(assistant("r")).expect("b");
    s.branch_to(Some(a.as_str())).expect("branch");
    let c = s.append_message(user("q2")).expect("c");
    s.append_label_change(&a, Some("start")).expect("label");
    let tree = s.read_tree(ReadLimits::default()).expect("tree");
    let v: serde_json::Value = serde_json::from_str(&tree.to_nested_json()).expect("json");
    assert_eq!(v.as_array().expect("roots").len(), 1);
    let root = &v[0];
    let keys: Vec<&str> = root
        .as_object()
        .expect("node")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["entry", "children", "label", "labelTimestamp"]);
    assert_eq!(root["entry"]["id"], a.as_str());
    assert_eq!(root["label"], "start");
    let kids: Vec<&str> = root["children"]
        .as_array()
        .expect("children")
        .iter()
        .map(|n| n["entry"]["id"].as_str().expect("id"))
        .collect();
    assert_eq!(kids, [b.as_str(), c.as_str()]);

    let (_d2, store2) = crate::support::store();
    let mut deep = store2.create("/w").expect("create");
    deep.set_durability(Durability::Buffered);
    for i in 0..100_000 {
        deep.append_custom_entry("k", Some(json!(i)))
            .expect("append");
    }
    let limits = ReadLimits {
        max_source_entries: 200_000,
        max_source_bytes: 1 << 30,
    };
    let tree = deep.read_tree(limits).expect("tree");
    let mut sink = std::io::sink();
    tree.write_nested_json(&mut sink)
        .expect("written without overflowing the stack");
}

/// Option structs are set by chaining: a new session with an id and a parent, a
/// compaction with details and fromHook.
#[test]
fn option_structs_chain() {
    let (_d, store) = store();
    let mut s = store
        .create_with(
            "/w",
            NewSessionOptions::default()
                .id("chained")
                .parent_session("/p.jsonl"),
        )
        .expect("create");
    assert_eq!(s.session_id(), "chained");
    assert_eq!(s.header().parent_session.as_deref(), Some("/p.jsonl"));
    let a = s.append_message(user("q")).expect("append");
    let id = s
        .append_compaction_with(
            "sum",
            &a,
            10,
            session_manager::CompactionOptions::default()
                .details(json!({"k": 1}))
                .from_hook(true),
        )
        .expect("compaction");
    let e = serde_json::to_value(s.read_entry(&id, ReadLimits::default()).expect("entry"))
        .expect("json");
    assert_eq!(
        (e["details"]["k"].clone(), e["fromHook"].clone()),
        (json!(1), json!(true))
    );
}

/// `SessionInfo` and `SessionContext` serialize in the reference's shapes.
#[test]
fn listings_and_contexts_serialize_as_the_reference_shapes_them() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.append_message(user("hello")).expect("append");
    let ctx = s.build_session_context().expect("context");
    assert_eq!(
        serde_json::to_value(&ctx).expect("context json"),
        ctx.to_reference_json()
    );
    s.close().expect("close");
    let infos = store.list("/w", &mut ()).expect("list");
    let v = serde_json::to_value(&infos[0]).expect("info json");
    assert_eq!(v, infos[0].to_json());
    assert_eq!(v["firstMessage"], "hello");
}

/// `sync_journal_shared` syncs through `&self`, so reads go on beside it on other
/// threads (an owner answers reads during a group commit's sync); the `sync_journal`
/// after it costs no second sync. `last_entry_id` is the last appended entry, which
/// `branch_to` does not move.
#[test]
fn a_shared_sync_lets_reads_go_on_and_costs_one_sync() {
    let fs = session_testkit::sim::SimFs::new();
    let store = session_manager::Store::new(
        session_manager::Layout::with_root("/sim").expect("absolute root"),
    )
    .with_sources(session_manager::Sources::deterministic(
        crate::support::T0,
        7,
    ))
    .with_vfs(std::sync::Arc::new(fs.clone()));
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    let a = s.append_message(user("one")).expect("append");
    let b = s.append_message(user("two")).expect("append");
    let before = fs.stats().syncs;
    let session = &s;
    let read = std::thread::scope(|scope| {
        let reader = scope.spawn(move || session.read_entries(ReadLimits::default()));
        session.sync_journal_shared().expect("shared sync");
        reader.join().expect("the reader")
    })
    .expect("read beside the sync");
    assert_eq!(read.len(), 2);
    assert_eq!(fs.stats().syncs, before + 1, "one sync");
    s.sync_journal().expect("sync journal");
    assert_eq!(fs.stats().syncs, before + 1, "nothing left to sync");
    s.branch_to(Some(a.as_str())).expect("branch");
    assert_eq!(s.last_entry_id(), Some(b.as_str()));
    assert_eq!(s.get_leaf_id(), Some(&a));
}

/// A clean close seals the journal: a flipped bit in the session's last entry is then
/// refused as corruption at reopen, never cut as a torn tail; an unflipped reopen
/// resumes where the session was and appends after the seal.
#[test]
fn close_seals_the_journal_so_damage_to_the_last_entry_is_corruption() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    s.append_message(user("one")).expect("append");
    let last = s.append_message(user("two")).expect("append");
    let path = s.session_file().expect("file").to_path_buf();
    s.close().expect("close");
    let report = session_journal::verify(&path, &Default::default()).expect("verify");
    assert!(report.sealed, "a clean close seals the journal");
    let clean = std::fs::read(&path).expect("read");
    let seal = report.last_frame.expect("seal");
    assert!(seal.kind.is_seal());

    // The last entry ends where the seal starts: flip a bit in its payload.
    let mut damaged = clean.clone();
    damaged[seal.offset.get() as usize - 16] ^= 0x10;
    std::fs::write(&path, &damaged).expect("write");
    // With the sidecar saved at close, the open trusts the indexed prefix (damage
    // there is found where it is read): nothing is cut, and the entry is not served.
    if let Ok(s) = store.open(&path) {
        assert!(s.read_leaf_entry(ReadLimits::default()).is_err());
    }
    assert_eq!(std::fs::read(&path).expect("read"), damaged, "nothing cut");
    // Without it, the open verifies the whole journal: corruption, nothing cut.
    let mut sidecar = path.clone().into_os_string();
    sidecar.push(".idx");
    std::fs::remove_file(&sidecar).expect("sidecar");
    match store.open(&path) {
        Err(e) => assert!(e.to_string().contains("corrupt"), "{e}"),
        Ok(_) => panic!("a damaged closed session opened"),
    }
    assert_eq!(std::fs::read(&path).expect("read"), damaged, "nothing cut");

    std::fs::write(&path, &clean).expect("write");
    let mut s = store.open(&path).expect("reopen");
    assert_eq!(s.get_leaf_id(), Some(&last));
    s.append_message(user("three"))
        .expect("append after the seal");
    s.close().expect("close");
    let s = store.open(&path).expect("reopen");
    assert_eq!(
        s.read_leaf_entry(ReadLimits::default())
            .expect("leaf")
            .expect("some")
            .entry_type(),
        Some("message")
    );
}

/// An imported session's first open is a resume: the import (single or bulk) leaves
/// a fresh sidecar, so opening it does not scan the journal to rebuild one (the owner
/// opened a freshly imported 100k session in 0.8 s before this).
#[test]
fn an_import_leaves_a_fresh_index_behind() {
    use session_index::{Index, IndexStatus, OpenIndexOptions};
    let (d, store) = store();
    let files: Vec<std::path::PathBuf> = ["one", "two", "three"]
        .iter()
        .map(|id| {
            let legacy = d.path().join(format!("{id}.jsonl"));
            std::fs::write(&legacy, format!(concat!(
                r#"{{"type":"session","version":3,"id":"{}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}}"#, "\n",
                r#"{{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","timestamp":1}}}}"#, "\n",
            ), id)).expect("write");
            legacy
        })
        .collect();
    let single = store.import(&files[0]).expect("import");
    let bulk = store
        .import_many(
            &files[1..],
            &session_manager::BulkOptions::default(),
            &mut |_, _| {},
        )
        .expect("import");
    let mut journals = vec![single.journal];
    journals.extend(bulk.into_iter().map(|r| r.expect("imported").journal));
    for journal in journals {
        let (_, report) = Index::open_or_rebuild(
            &journal,
            OpenIndexOptions {
                save: false,
                sync_journal: false,
                ..OpenIndexOptions::default()
            },
        )
        .expect("index");
        assert!(
            matches!(report.status, IndexStatus::Fresh),
            "{}: {:?}",
            journal.display(),
            report.status
        );
    }
}

/// Releases a held sync when dropped.
struct Release(session_testkit::HeldSyncs);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A store on a simulated file system whose syncs pass through `held`.
fn held_store(
    fs: &session_testkit::sim::SimFs,
    held: &session_testkit::HeldSyncs,
) -> session_manager::Store {
    let vfs = session_testkit::Interposed::wrap(std::sync::Arc::new(fs.clone()), held.clone());
    session_manager::Store::new(session_manager::Layout::with_root("/sim").expect("absolute root"))
        .with_sources(session_manager::Sources::deterministic(
            crate::support::T0,
            7,
        ))
        .with_vfs(std::sync::Arc::new(vfs))
}

/// The periodic sync of a buffered session (every `INDEX_SAVE_EVERY` appends) and
/// the index save riding with it run on the writer's background sync: the appending
/// thread never makes them and never waits for them; the sidecar is written only
/// after the journal bytes it covers are durable.
#[test]
fn buffered_appends_never_wait_for_the_periodic_sync_and_save() {
    let fs = session_testkit::sim::SimFs::new();
    let held = session_testkit::HeldSyncs::default();
    let store = held_store(&fs, &held);
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    let path = s.session_file().expect("file").to_path_buf();
    let side = session_index::sidecar_path(&path);
    let every = session_manager::INDEX_SAVE_EVERY;
    let me = std::thread::current().id();
    let before = held.done().len();
    let created = fs.read_raw(&side);
    // A failing assertion must not leave the sync held (dropping the session waits
    // for it).
    let _release = Release(held.clone());
    held.arm();
    for i in 0..every {
        s.append_custom_entry("tick", Some(json!(i)))
            .expect("append");
    }
    assert!(held.wait_holding(), "the 1,024th append started a sync");
    // Appends go on while it is held; nothing is saved before the journal is synced.
    for i in 0..10 {
        s.append_custom_entry("tock", Some(json!(i)))
            .expect("append");
    }
    assert!(held.holding());
    assert_eq!(
        fs.read_raw(&side),
        created,
        "no save before the sync returns"
    );
    held.release();
    s.sync_journal().expect("sync");
    assert!(!held.timed_out(), "no append waited for the held sync");
    let syncs = held.done();
    // The first sync after the appends began is the journal's periodic one (the
    // journal's handle is named by its creation's temporary), then the sidecar's.
    assert!(
        syncs.len() >= before + 2 && syncs[before..before + 2].iter().all(|(_, t)| *t != me),
        "the periodic sync and save ran off the appending thread: {:?}",
        &syncs[before..]
    );
    // The sidecar saved by the background sync covers the first INDEX_SAVE_EVERY
    // appends: an open trusts it and catches up the 10 after.
    assert_ne!(fs.read_raw(&side), created, "saved once the sync returned");
    drop(s);
    let plain = session_manager::Store::new(
        session_manager::Layout::with_root("/sim").expect("absolute root"),
    )
    .with_vfs(std::sync::Arc::new(fs.clone()));
    let s = plain.open(&path).expect("reopen");
    assert_eq!(
        s.read_entries(ReadLimits::default())
            .expect("entries")
            .len(),
        every as usize + 10
    );
}

/// A failed periodic (background) sync poisons the session's writer: the next sync
/// reports the error, and nothing after it is acknowledged.
#[test]
fn a_failed_periodic_sync_is_reported_and_poisons_the_session() {
    let fs = session_testkit::sim::SimFs::new();
    let store = session_manager::Store::new(
        session_manager::Layout::with_root("/sim").expect("absolute root"),
    )
    .with_sources(session_manager::Sources::deterministic(
        crate::support::T0,
        7,
    ))
    .with_vfs(std::sync::Arc::new(fs.clone()));
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    let every = session_manager::INDEX_SAVE_EVERY;
    for i in 0..every - 1 {
        s.append_custom_entry("tick", Some(json!(i)))
            .expect("append");
    }
    fs.fail_sync_after(1);
    // The 1,024th append starts the background sync, which fails.
    s.append_custom_entry("tick", Some(json!(every)))
        .expect("handed to the OS");
    let err = s.sync().expect_err("the failed sync is reported");
    assert!(
        matches!(
            err,
            AppendError::Journal(session_journal::AppendError::Io {
                op: "background sync",
                ..
            })
        ),
        "{err}"
    );
    let leaf = s.get_leaf_id().cloned();
    assert!(leaf.is_some());
    let later = s.append_custom_entry("later", None).expect_err("poisoned");
    assert!(
        matches!(
            later,
            AppendError::Journal(session_journal::AppendError::Poisoned { .. })
        ),
        "{later}"
    );
    // A refused append leaves the leaf where it was.
    assert_eq!(s.get_leaf_id(), leaf.as_ref());
    assert!(s.close().is_err());
}

/// A sync started with `start_sync` runs without the session: appends go on while
/// it runs, and only what was appended before it started counts as durable after
/// `finish_sync`; the next sync covers the rest.
#[test]
fn a_started_sync_runs_beside_appends_and_covers_what_came_before_it() {
    let fs = session_testkit::sim::SimFs::new();
    let store = session_manager::Store::new(
        session_manager::Layout::with_root("/sim").expect("absolute root"),
    )
    .with_sources(session_manager::Sources::deterministic(
        crate::support::T0,
        7,
    ))
    .with_vfs(std::sync::Arc::new(fs.clone()));
    let mut s = store.create("/w").expect("create");
    s.set_durability(Durability::Buffered);
    s.append_message(user("one")).expect("append");
    let before = fs.stats().syncs;
    let pending = s.start_sync().expect("start").expect("something to sync");
    let sync = std::thread::spawn(move || pending.run());
    s.append_message(user("two"))
        .expect("an append while the sync runs");
    let done = sync.join().expect("the sync thread");
    s.finish_sync(done).expect("finish");
    assert_eq!(fs.stats().syncs, before + 1, "one sync");
    assert!(
        s.start_sync().expect("start").is_some(),
        "the append made during the sync is not durable yet"
    );
    s.sync_journal().expect("sync journal");
    assert_eq!(fs.stats().syncs, before + 2, "the second append's own sync");
    assert!(s.start_sync().expect("start").is_none(), "all durable");
}

/// A clock whose `stamp_ms` tells its two times apart from its `now_ms` and
/// `peek_ms`: an append takes its entry's and its frame's time from that one
/// stamp (a real clock reads once for both).
#[test]
fn an_append_stamps_its_entry_and_its_frame_from_one_stamp() {
    #[derive(Debug)]
    struct Stamping;
    impl session_manager::TimeSource for Stamping {
        fn now_ms(&self) -> i64 {
            1_000_000_000_000
        }
        fn stamp_ms(&self) -> (i64, i64) {
            (1_735_689_600_123, 1_735_689_600_456)
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let sources = session_manager::Sources {
        clock: std::sync::Arc::new(Stamping),
        ids: std::sync::Arc::new(session_manager::SeededIds::new(1)),
    };
    let store =
        session_manager::Store::new(session_manager::Layout::with_root(dir.path()).expect("root"))
            .with_sources(sources);
    let mut s = store.create("/w").expect("create");
    let id = s.append_message(user("hi")).expect("append");
    let entry = s
        .read_entry(id.as_str(), ReadLimits::default())
        .expect("read");
    assert_eq!(entry.timestamp(), Some("2025-01-01T00:00:00.123Z"));
    // Indexed from the same milliseconds (no parse): what a rebuild reads.
    let path = s.session_file().expect("file").to_path_buf();
    let summary = s.index().summary();
    s.close().expect("close");
    let reader = session_journal::Reader::open(&path, Default::default()).expect("reader");
    let last_entry = reader
        .frames(None)
        .map(|f| f.expect("a verified frame"))
        .filter(|f| f.info.kind == session_index::kinds::ENTRY)
        .last()
        .expect("the entry's frame");
    assert_eq!(last_entry.info.time.0, 1_735_689_600_456);
    let side = session_index::sidecar_path(&path);
    std::fs::remove_file(&side).expect("remove sidecar");
    let (rebuilt, _) =
        session_index::Index::open_or_rebuild(&path, session_index::OpenIndexOptions::default())
            .expect("rebuild");
    assert_eq!(rebuilt.summary(), summary);
}

/// A re-created label keeps its label's time, not the append's: the index takes the
/// time the entry carries (the one it would read back from the journal), as a
/// rebuild does.
#[test]
fn a_recreated_label_is_indexed_at_its_own_time() {
    let (_d, store) = store();
    let mut s = store.create("/w").expect("create");
    let a = s.append_message(user("q1")).expect("a");
    s.append_label_change(a.as_str(), Some("first"))
        .expect("label");
    let b = s.append_message(assistant("r1")).expect("b");
    let n = s.create_branched_session(b.as_str()).expect("branched");
    let entries = n.read_entries(ReadLimits::default()).expect("entries");
    let label = entries.last().expect("the re-created label");
    let kept = label.timestamp().expect("a time").to_owned();
    let times = |idx: &session_index::Index| -> Vec<Option<i64>> {
        (0..idx.len() as u32)
            .map(|i| {
                idx.info(session_index::EntryIndex(i))
                    .and_then(|x| x.timestamp_ms)
            })
            .collect()
    };
    let indexed = times(n.index());
    let path = n.session_file().expect("file").to_path_buf();
    n.close().expect("close");
    std::fs::remove_file(session_index::sidecar_path(&path)).expect("remove sidecar");
    let (rebuilt, _) =
        session_index::Index::open_or_rebuild(&path, session_index::OpenIndexOptions::default())
            .expect("rebuild");
    assert_eq!(indexed, times(&rebuilt));
    assert_eq!(
        indexed.last().copied().flatten(),
        session_types::Timestamp::new(kept).unix_ms(),
        "the label's own time"
    );
}
