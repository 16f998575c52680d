//! The messages and entries views against the reference vectors V1–V20 (expected
//! outputs produced by the reference) and our seed vectors (child usage, service tier).

use serde_json::Value;
use session_context::{
    ContextOptions, ContextWarning, Leaf, ResidentSource, TextSource, build_context,
    context_entries, own_usage,
};
use session_testkit::compare::first_difference;

use crate::{entries_of, leaf_of, repo_root};

fn load(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo_root().join(path)).expect("vector file");
    serde_json::from_str(&text).expect("vector json")
}

#[test]
fn reference_vectors() {
    let vectors = load("tests/fixtures/generated/session-context/vectors.json");
    assert!(vectors.len() >= 21, "V1–V20 and more");
    for v in &vectors {
        let name = v["name"].as_str().expect("name");
        let raw = v["entries"].as_array().expect("entries");
        let entries = entries_of(raw);
        let resident = ResidentSource::new(&entries);
        let texts: Vec<String> = raw.iter().map(Value::to_string).collect();
        let text = TextSource::new(texts.iter().map(String::as_str));
        let leaf = leaf_of(v);
        let opts = ContextOptions::reference();
        for (source, ctx) in [
            (
                "resident",
                build_context(&resident, leaf, &opts).map_err(|e| e.to_string()),
            ),
            (
                "text",
                build_context(&text, leaf, &opts).map_err(|e| e.to_string()),
            ),
        ] {
            let ctx = ctx.unwrap_or_else(|e| panic!("{name} ({source}): {e}"));
            let ours = ctx.to_reference_json();
            if let Some(d) = first_difference(&ours, &v["expected"]) {
                panic!("{name} ({source}): {d}");
            }
            // Synthesized and typed messages keep the reference's key order too.
            assert_eq!(
                ours.to_string(),
                v["expected"].to_string(),
                "{name} ({source})"
            );
        }
    }
}

/// The entries view is one entry per message, in the same order.
#[test]
fn entries_view_matches_messages() {
    for v in &load("tests/fixtures/generated/session-context/vectors.json") {
        let entries = entries_of(v["entries"].as_array().expect("entries"));
        let source = ResidentSource::new(&entries);
        let view = context_entries(&source, leaf_of(v)).expect("entries view");
        let ids: Vec<&str> = view.entries.iter().map(|e| e.id().unwrap_or("")).collect();
        let n = v["expected"]["messages"]
            .as_array()
            .expect("messages")
            .len();
        assert_eq!(ids.len(), n, "{}", v["name"]);
        let snapshot = format!("{}: {}", v["name"].as_str().unwrap_or(""), ids.join(" "));
        let expected_first = if v["expected"]["messages"]
            .get(0)
            .is_some_and(|m| m["role"] == "compactionSummary")
        {
            Some("compaction")
        } else {
            None
        };
        if let Some(t) = expected_first {
            assert_eq!(view.entries[0].entry_type(), Some(t), "{snapshot}");
        }
    }
}

#[test]
fn warnings_for_unknown_leaf_and_missing_parent() {
    let vectors = load("tests/fixtures/generated/session-context/vectors.json");
    let find = |n: &str| vectors.iter().find(|v| v["name"] == n).expect(n).clone();
    let v12 = find("V12");
    let e = entries_of(v12["entries"].as_array().expect("entries"));
    let src = ResidentSource::new(&e);
    let ctx = build_context(&src, leaf_of(&v12), &ContextOptions::default()).expect("context");
    assert_eq!(ctx.leaf.as_ref().map(|l| l.as_str()), Some("3"));
    assert!(
        matches!(&ctx.warnings[..], [ContextWarning::UnknownLeaf { requested }] if requested.as_str() == "nope")
    );
    let v13 = find("V13");
    let e = entries_of(v13["entries"].as_array().expect("entries"));
    let src = ResidentSource::new(&e);
    let ctx = build_context(&src, leaf_of(&v13), &ContextOptions::default()).expect("context");
    assert_eq!(
        ctx.warnings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["entry `2` names missing parent `MISSING`; the path starts at `2`"]
    );
}

/// Seed vectors: child-usage attribution and service tier. The expected outputs are
/// ours (the reference knows neither entry type); `docs/context.md` explains them.
#[test]
fn seed_vectors() {
    let vectors = load("crates/session-context/tests/it/data/seed-vectors.json");
    for v in &vectors {
        let name = v["name"].as_str().expect("name");
        let entries = entries_of(v["entries"].as_array().expect("entries"));
        let source = ResidentSource::new(&entries);
        let ctx = build_context(&source, leaf_of(v), &ContextOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = ctx.to_json();
        if let Some(d) = first_difference(&ours, &v["expected"]) {
            panic!("{name}: {d}\nours: {ours}");
        }
        assert_eq!(ours.to_string(), v["expected"].to_string(), "{name}");
        if let Some(own) = v.get("ownUsage").and_then(Value::as_object) {
            for (id, expected) in own {
                let usage = own_usage(&source, id).expect("own usage");
                let got = serde_json::to_value(&usage).expect("usage json");
                assert_eq!(
                    first_difference(&got, expected),
                    None,
                    "{name}: own usage of {id}"
                );
            }
        }
        if let Some(reference) = v.get("expectedReference") {
            let ctx = build_context(&source, leaf_of(v), &ContextOptions::reference())
                .expect("reference mode");
            assert_eq!(
                first_difference(&ctx.to_reference_json(), reference),
                None,
                "{name} (reference mode)"
            );
        }
    }
}

#[test]
fn null_leaf_is_empty_even_with_settings() {
    let vectors = load("tests/fixtures/generated/session-context/vectors.json");
    let v3 = vectors.iter().find(|v| v["name"] == "V3").expect("V3");
    let e = entries_of(v3["entries"].as_array().expect("entries"));
    let src = ResidentSource::new(&e);
    let ctx = build_context(&src, Leaf::None, &ContextOptions::default()).expect("context");
    assert_eq!(
        ctx.to_json().to_string(),
        r#"{"messages":[],"thinkingLevel":"off","model":null}"#
    );
}

/// A `message` entry whose `message` is not an object: the reference pushes
/// `entry.message` as it is (`(1).role` is `undefined`, no throw), so a string, number,
/// boolean or array is a message of the context (difffuzz classes `context:
/// /messages/*: ours other vs theirs number|string|other`, `…fewer items in ours`).
/// `null` makes the reference throw (`entry.message.role`); a `1e400` message is
/// `Infinity` to it, printed `null`, and `null` to us: both push `null`.
#[test]
fn messages_that_are_not_objects_are_pushed_as_they_are() {
    let records: Vec<String> = [
        r#""zzz""#,
        "1.0",
        "false",
        r#"["a",1]"#,
        "null",
        r#"{"role":"user","content":"x","timestamp":1}"#,
    ]
    .iter()
    .enumerate()
    .map(|(i, m)| {
        let parent = if i == 0 {
            "null".to_owned()
        } else {
            format!("\"e{}\"", i - 1)
        };
        format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{m}}}"#
        )
    })
    .collect();
    let entries = crate::parse_all(&records);
    let resident = ResidentSource::new(&entries);
    let lazy = TextSource::new(records.iter().map(String::as_str));
    let expected = r#"{"messages":["zzz",1,false,["a",1],null,{"role":"user","content":"x","timestamp":1}],"thinkingLevel":"off","model":null}"#;
    for ctx in [
        build_context(&resident, Leaf::Default, &ContextOptions::reference())
            .map(|c| c.to_reference_json())
            .map_err(|e| e.to_string()),
        build_context(&lazy, Leaf::Default, &ContextOptions::reference())
            .map(|c| c.to_reference_json())
            .map_err(|e| e.to_string()),
    ] {
        let json = ctx.expect("context");
        assert_eq!(
            session_types::js::stringify::to_string(&json).expect("json"),
            expected
        );
    }
}

/// A source that keeps each record's text reads a field as the reference does where
/// the loaded entry cannot (`ContextSource::raw_field`, D11): a branch summary whose
/// `summary` is `1e400` is `Infinity` to the reference, truthy, so it adds its
/// message (printed `"summary":null`), though the loaded entry reads `null`. The
/// difffuzz fixtures of seeds 48792 and 227941 (a line ending in U+3000), against
/// their oracles.
#[test]
fn a_text_source_reads_an_infinite_summary_from_the_record_text() {
    for name in [
        "branch-summary-summary-infinite-v3",
        "branch-summary-summary-infinite-js-trimmed-v3",
    ] {
        let dir = repo_root().join("tests/fixtures/difffuzz/classes");
        let file = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).expect("fixture");
        let oracle: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.oracle.json"))).expect("oracle"),
        )
        .expect("oracle json");
        // The reference's reading of the file: trimmed, split, the header dropped.
        let lines: Vec<&str> = session_types::js::trim(&file).split('\n').skip(1).collect();
        let text = TextSource::new(lines.iter().copied());
        let ctx = build_context(&text, Leaf::Default, &ContextOptions::reference())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(ctx.to_reference_json(), oracle["context"], "{name}");
    }
}
