//! The path walk: cycles and self-parents are typed errors, returned promptly; deep
//! chains walk without recursion.

use serde_json::json;
use session_context::{
    ContextError, ContextOptions, Leaf, ResidentSource, TextSource, build_context, plan,
};
use session_types::{Entry, EntryBase, EntryId, Timestamp};

use crate::entries_of;

/// Many small entries, built without parsing (debug-mode tests stay fast).
fn users(ids_and_parents: impl Iterator<Item = (String, Option<String>)>) -> Vec<Entry> {
    let template = entries_of(&[user("t", None)]).remove(0);
    ids_and_parents
        .map(|(id, parent)| {
            let mut e = template.clone();
            *e.base_mut().expect("known entry") = EntryBase::new(
                EntryId::new(id),
                parent.map(EntryId::new),
                Timestamp::new("2025-01-01T00:00:00.000Z"),
            );
            e
        })
        .collect()
}

fn user(id: &str, parent: Option<&str>) -> serde_json::Value {
    json!({"type":"message","id":id,"parentId":parent,"timestamp":"2025-01-01T00:00:00.000Z",
           "message":{"role":"user","content":id,"timestamp":1}})
}

/// A chain 0 ← 1 ← … ← n-1 whose root points at `root_parent`.
fn chain(n: usize, root_parent: Option<String>) -> Vec<(String, Option<String>)> {
    (0..n)
        .map(|i| {
            let parent = if i == 0 {
                root_parent.clone()
            } else {
                Some(format!("n{}", i - 1))
            };
            (format!("n{i}"), parent)
        })
        .collect()
}

fn cycle_result(entries: Vec<Entry>, leaf: Leaf<'_>) -> String {
    let source = ResidentSource::new(&entries);
    match build_context(&source, leaf, &ContextOptions::default()) {
        Err(e @ ContextError::Cycle { .. }) => e.to_string(),
        other => panic!("expected a cycle error, got {other:?}"),
    }
}

/// Issue 14: `a` (root), `x` (parent `y`), `y` (parent `x`), `x` again (parent `a`):
/// the reference's `getTree()` loops forever on it, its `buildSessionContext`
/// terminates (ids resolve to their last entry, so `y`'s parent is the second `x`,
/// whose parent is `a`). Ours gives its contexts, with no cycle error.
#[test]
fn the_duplicated_id_pattern_that_hangs_the_reference_tree_has_contexts() {
    let entries = entries_of(&[
        user("a", None),
        user("x1", Some("y")),
        user("y", Some("x")),
        user("x2", Some("a")),
    ]);
    // The two `x` entries: ids made equal after building (their contents tell them apart).
    let mut entries = entries;
    for i in [1, 3] {
        entries[i].base_mut().expect("known entry").id = Some(EntryId::new("x"));
    }
    let source = ResidentSource::new(&entries);
    let contents = |leaf| {
        let ctx = build_context(&source, leaf, &ContextOptions::reference()).expect("no cycle");
        ctx.to_reference_json()["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["content"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    // The reference's own answer (tests/fixtures/leniency/duplicate-id-cycle).
    assert_eq!(contents(Leaf::Default), ["a", "x2"]);
    assert_eq!(contents(Leaf::Id("y")), ["a", "x2", "y"]);
    assert_eq!(contents(Leaf::Id("x")), ["a", "x2"]);
}

#[test]
fn self_parent_is_a_cycle_error() {
    let msg = cycle_result(
        entries_of(&[user("a", None), user("b", Some("b"))]),
        Leaf::Default,
    );
    assert_eq!(
        msg,
        "parent cycle: entry `b` is its own ancestor (walking from leaf `b`, 1 entries walked)"
    );
}

#[test]
fn two_cycle_is_a_cycle_error() {
    let msg = cycle_result(
        entries_of(&[user("a", Some("b")), user("b", Some("a"))]),
        Leaf::Default,
    );
    assert_eq!(
        msg,
        "parent cycle: entry `b` is its own ancestor (walking from leaf `b`, 2 entries walked)"
    );
}

#[test]
fn thousand_cycle_is_a_cycle_error() {
    // n0's parent is n999: a 1,000-entry cycle, entered from a tail of 10 entries that
    // hang off n500, among 50,000 unrelated entries (so the count bound is far away).
    let mut values = chain(1000, Some("n999".to_owned()));
    for i in 0..10 {
        let parent = if i == 0 {
            "n500".to_owned()
        } else {
            format!("t{}", i - 1)
        };
        values.push((format!("t{i}"), Some(parent)));
    }
    for i in 0..50_000 {
        values.push((format!("x{i}"), None));
    }
    let msg = cycle_result(users(values.into_iter()), Leaf::Id("t9"));
    assert_eq!(
        msg,
        "parent cycle: entry `n500` is its own ancestor (walking from leaf `t9`, 51010 entries walked)"
    );
}

#[test]
fn deep_chain_walks_iteratively() {
    let entries = users(chain(100_000, None).into_iter());
    let source = ResidentSource::new(&entries);
    let p = plan(&source, Leaf::Default).expect("plan");
    assert_eq!(p.path().len(), 100_000);
    assert_eq!(p.path()[0].handle, 0);
    assert_eq!(p.leaf(), Some("n99999"));
}

#[test]
fn empty_parent_id_ends_the_path_like_a_root() {
    // The reference stops on a falsy parentId even if an entry has the id "".
    let values = vec![user("", None), user("a", Some(""))];
    let entries = entries_of(&values);
    let src = ResidentSource::new(&entries);
    let ctx = build_context(&src, Leaf::Default, &ContextOptions::default()).expect("context");
    assert_eq!(ctx.messages.len(), 1);
}

/// The reference's leaf is the last entry's `id` value (`_buildIndex`): `null` means
/// "before the first entry", the empty context (`buildSessionContext(entries, null)`);
/// an absent `id` is `undefined` and falls back to the last entry. An explicit
/// unknown leaf falls back to the last entry whatever its id (difffuzz `context:
/// /messages: more items in ours`, replay seed 256).
#[test]
fn a_last_entry_whose_id_is_null_is_the_empty_context() {
    let line = |id: &str, parent: &str| {
        format!(
            r#"{{"type":"message",{id}"parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
        )
    };
    for (last, default_len) in [(r#""id":null,"#, 0), ("", 3)] {
        let records = vec![
            line(r#""id":"a","#, "null"),
            line(r#""id":"b","#, r#""a""#),
            line(last, r#""b""#),
        ];
        let entries = crate::parse_all(&records);
        let resident = ResidentSource::new(&entries);
        let lazy = TextSource::new(records.iter().map(String::as_str));
        let lens = |leaf: Leaf<'_>| {
            [
                build_context(&resident, leaf, &ContextOptions::reference())
                    .map(|c| c.messages.len())
                    .map_err(|e| e.to_string()),
                build_context(&lazy, leaf, &ContextOptions::reference())
                    .map(|c| c.messages.len())
                    .map_err(|e| e.to_string()),
            ]
        };
        assert_eq!(
            lens(Leaf::Default),
            [Ok(default_len), Ok(default_len)],
            "{last}"
        );
        assert_eq!(lens(Leaf::Id("zzz")), [Ok(3), Ok(3)], "{last}");
    }
}

/// A source that keeps path marks (computed here by walking, outside what is
/// counted) and counts the nodes the context's walk reads.
struct Marked<'a> {
    inner: ResidentSource<'a>,
    nodes: std::cell::Cell<usize>,
    /// What [`ContextSource::path_marks_ready`] says.
    ready: bool,
}

impl session_context::ContextSource for Marked<'_> {
    type Handle = usize;
    type Error = session_context::EntryNotFound;
    fn last_entry(&self) -> Option<usize> {
        self.inner.last_entry()
    }
    fn find(&self, id: &str) -> Option<usize> {
        self.inner.find(id)
    }
    fn node(&self, entry: usize) -> session_context::Node<'_, usize> {
        self.nodes.set(self.nodes.get() + 1);
        self.inner.node(entry)
    }
    fn id(&self, entry: usize) -> std::borrow::Cow<'_, str> {
        self.inner.id(entry)
    }
    fn load(&self, entry: usize) -> Result<std::borrow::Cow<'_, Entry>, Self::Error> {
        self.inner.load(entry)
    }
    fn entry_count(&self) -> usize {
        self.inner.entry_count()
    }
    fn path_marks_ready(&self) -> bool {
        self.ready
    }
    fn path_marks(&self, entry: usize) -> Option<session_context::PathMarks<usize>> {
        use session_context::{ContextKind, Parent};
        let (mut thinking, mut tier, mut model) = (None, None, None);
        let mut at = entry;
        loop {
            let node = self.inner.node(at);
            match node.kind {
                ContextKind::ThinkingLevelChange => thinking = thinking.or(Some(at)),
                ContextKind::ServiceTierChange => tier = tier.or(Some(at)),
                k if k.is_model_source() => model = model.or(Some(at)),
                _ => {}
            }
            match node.parent {
                Parent::Node(p) => at = p,
                _ => break,
            }
        }
        Some(session_context::PathMarks {
            thinking_level_change: thinking,
            service_tier_change: tier,
            model_source: model,
            top: at,
        })
    }
}

/// With path marks, the walk stops where the context does: at the latest
/// compaction's kept window, and an eighth of the session beyond it (walking costs
/// about what computing marks does per entry) unless the marks are ready (stored). A chain of 100,000 entries whose
/// settings are set near its root and whose last compaction keeps 10 entries reads
/// the window and 12,500 more nodes, not 100,000, and gives the context of the whole
/// walk.
#[test]
fn with_path_marks_the_walk_stops_where_the_context_stops() {
    let n = 100_000;
    let mut entries = users(chain(n, None).into_iter());
    let at = |i: usize| format!("n{i}");
    let parent = |i: usize| Some(at(i - 1));
    let line = |v: serde_json::Value| entries_of(&[v]).remove(0);
    let ts = "2025-01-01T00:00:00.000Z";
    entries[1] = line(
        json!({"type":"thinking_level_change","id":at(1),"parentId":parent(1),
        "timestamp":ts,"thinkingLevel":"high"}),
    );
    entries[2] = line(
        json!({"type":"service_tier_change","id":at(2),"parentId":parent(2),
        "timestamp":ts,"serviceTier":"priority"}),
    );
    entries[3] = line(
        json!({"type":"model_change","id":at(3),"parentId":parent(3),
        "timestamp":ts,"provider":"p","modelId":"m"}),
    );
    let c = n - 20;
    entries[c] = line(json!({"type":"compaction","id":at(c),"parentId":parent(c),
        "timestamp":ts,"summary":"s","firstKeptEntryId":at(c - 10),"tokensBefore":1}));
    let whole = ResidentSource::new(&entries);
    let want = build_context(&whole, Leaf::Default, &ContextOptions::default()).expect("context");
    for ready in [false, true] {
        let marked = Marked {
            inner: ResidentSource::new(&entries),
            nodes: std::cell::Cell::new(0),
            ready,
        };
        let got =
            build_context(&marked, Leaf::Default, &ContextOptions::default()).expect("context");
        assert_eq!(got.to_json(), want.to_json());
        assert_eq!(got.messages.len(), 1 + 10 + 19);
        assert_eq!(
            got.settings.model.and_then(|m| m.model_id),
            Some(json!("m"))
        );
        // The window (30 entries) and an eighth of the session (none when the marks
        // are ready: stored, they cost nothing): the settings, set near the root (the
        // model too: no assistant message on the way), come from the marks (and three
        // node reads of theirs: the model source's kind, the top's parent).
        let beyond = if ready { 0 } else { n / 8 };
        assert!(
            marked.nodes.get() <= 30 + beyond + 3,
            "{} nodes read for a 30-entry context (ready: {ready})",
            marked.nodes.get()
        );
    }
}
