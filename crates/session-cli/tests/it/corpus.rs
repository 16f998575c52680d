//! Done-when 3: `bcs context --json` and `bcs tree --json` on every golden-corpus
//! fixture, after `bcs import`, equal the reference's outputs (`NAME.context.json`);
//! for v1 sources (random ids in the reference) modulo renaming ids by file position.

use std::collections::HashMap;

use serde_json::Value;
use session_types::json::{js_normalized, replace_lone_surrogates};

use crate::support::{Bcs, fixtures};

/// Fixtures our import refuses (documented in docs/format.md §4): the reference
/// replaces them with a fresh header, losing their data.
const REFUSED: &[&str] = &["edge/empty-file", "edge/no-header"];

fn parse(text: &str) -> Value {
    serde_json::from_str(&replace_lone_surrogates(text).0).expect("json")
}

fn ids_in_order(jsonl: &str) -> Vec<String> {
    jsonl
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(&replace_lone_surrogates(l).0).ok())
        .filter(|v| v["type"] != "session")
        .filter_map(|v| v["id"].as_str().map(str::to_owned))
        .collect()
}

fn rename(v: &mut Value, map: &HashMap<String, String>) {
    match v {
        Value::String(s) => {
            if let Some(n) = map.get(s.as_str()) {
                *s = n.clone();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename(x, map)),
        Value::Object(o) => o.values_mut().for_each(|x| rename(x, map)),
        _ => {}
    }
}

#[test]
fn corpus_context_and_tree_equal_the_reference() {
    let mut checked = Vec::new();
    for dir in ["legacy", "edge"] {
        let mut names: Vec<String> = std::fs::read_dir(fixtures().join(dir))
            .expect("dir")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(".context.json").map(str::to_owned))
            .collect();
        names.sort();
        for name in names {
            let key = format!("{dir}/{name}");
            let b = Bcs::new();
            let src = fixtures().join(format!("{key}.jsonl"));
            let r = b.run(&["import", "--json", src.to_str().expect("utf-8")]);
            if REFUSED.contains(&key.as_str()) {
                assert_eq!(r.code, 1, "{key} is refused");
                checked.push(format!("{key}: refused"));
                continue;
            }
            let out: Value = serde_json::from_str(r.ok().trim()).expect("json");
            let id = out["sessionId"].as_str().expect("id").to_owned();
            let mut oracle = parse(
                &std::fs::read_to_string(fixtures().join(format!("{key}.context.json")))
                    .expect("oracle"),
            );
            let v1 = oracle["header"]["version"] == 3 && name.starts_with("v1-");
            if v1 {
                // The reference's v1 ids are random: rename by file position.
                let theirs = ids_in_order(
                    &std::fs::read_to_string(fixtures().join(format!("{key}.after-open.jsonl")))
                        .expect("after-open"),
                );
                let ours = ids_in_order(b.run(&["export", &id]).ok());
                assert_eq!(theirs.len(), ours.len(), "{key}: entry count");
                let map: HashMap<String, String> = theirs.into_iter().zip(ours).collect();
                rename(&mut oracle, &map);
            }
            let ctx = parse(b.run(&["context", &id, "--json"]).ok());
            assert_eq!(
                js_normalized(&ctx),
                js_normalized(&oracle["context"]),
                "{key}: context"
            );
            let tree = parse(b.run(&["tree", &id, "--json"]).ok());
            assert_eq!(tree, oracle["tree"], "{key}: tree");
            checked.push(format!(
                "{key}: equal ({} messages, {} nodes{})",
                ctx["messages"].as_array().map_or(0, Vec::len),
                tree["nodes"].as_array().map_or(0, Vec::len),
                if v1 { ", ids renamed" } else { "" }
            ));
        }
    }
    insta::assert_snapshot!(checked.join("\n"));
}
