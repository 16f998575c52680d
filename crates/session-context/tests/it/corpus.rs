//! The golden corpus: every v3 fixture and every reference-migrated fixture
//! (`*.after-open.jsonl`) against its `*.context.json` oracle.

use std::path::Path;

use serde_json::Value;
use session_context::{ContextOptions, Leaf, ResidentSource, TextSource, build_context};
use session_testkit::compare::first_difference;
use session_testkit::corpus::{OracleCase, oracle_cases};
use session_types::json::replace_lone_surrogates;

use crate::{load_jsonl, parse_all, repo_root};

fn oracle(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("oracle");
    // The reference writes lone surrogates escaped; we read them as U+FFFD on both sides.
    let (clean, _) = replace_lone_surrogates(&text);
    serde_json::from_str(&clean).expect("oracle json")
}

#[test]
fn corpus_contexts_equal_the_reference() {
    let cases = oracle_cases(&repo_root().join("tests/fixtures"), &["legacy", "edge"])
        .expect("fixture dirs");
    assert!(cases.len() >= 14, "{} fixtures", cases.len());
    let mut summary = Vec::new();
    for OracleCase {
        name,
        input,
        oracle: oracle_path,
        ..
    } in &cases
    {
        let text = std::fs::read_to_string(input).expect("fixture");
        let records = load_jsonl(&text);
        let entries = parse_all(&records);
        let expected = oracle(oracle_path);
        let resident = ResidentSource::new(&entries);
        let lazy = TextSource::new(records.iter().map(String::as_str));
        for ctx in [
            build_context(&resident, Leaf::Default, &ContextOptions::reference())
                .map_err(|e| e.to_string()),
            build_context(&lazy, Leaf::Default, &ContextOptions::reference())
                .map_err(|e| e.to_string()),
        ] {
            let ctx = ctx.unwrap_or_else(|e| panic!("{name}: {e}"));
            if let Some(d) = first_difference(&ctx.to_reference_json(), &expected["context"]) {
                panic!("{name}: {d}");
            }
            assert_eq!(
                ctx.leaf.as_ref().map(|l| l.as_str()),
                expected["leafId"].as_str(),
                "{name}: leaf"
            );
        }
        summary.push(format!(
            "{name}: {} records, {} messages",
            records.len(),
            expected["context"]["messages"]
                .as_array()
                .map_or(0, Vec::len)
        ));
    }
    insta::assert_snapshot!(summary.join("\n"));
}

/// Issue 14: the leniency fixtures (`tests/fixtures/leniency/`), read as the
/// reference reads the file (Node's lossy UTF-8 decoding, `trim()`, `JSON.parse` per
/// line): odd field types, repeated keys and out-of-range numbers give the
/// reference's context through both sources.
#[test]
fn leniency_contexts_equal_the_reference() {
    let dir = repo_root().join("tests/fixtures/leniency");
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases"))
            .expect("json");
    let mut failures = Vec::new();
    for case in cases.as_array().expect("array") {
        let name = case["name"].as_str().expect("name");
        let bytes = std::fs::read(dir.join(format!("{name}.jsonl"))).expect("fixture");
        let records = load_jsonl(&String::from_utf8_lossy(&bytes));
        let entries = parse_all(&records);
        let expected = oracle(&dir.join(format!("{name}.context.json")));
        let resident = ResidentSource::new(&entries);
        let lazy = TextSource::new(records.iter().map(String::as_str));
        for ctx in [
            build_context(&resident, Leaf::Default, &ContextOptions::reference())
                .map_err(|e| e.to_string()),
            build_context(&lazy, Leaf::Default, &ContextOptions::reference())
                .map_err(|e| e.to_string()),
        ] {
            match ctx {
                Err(e) => failures.push(format!("{name}: {e}")),
                Ok(ctx) => {
                    if let Some(d) =
                        first_difference(&ctx.to_reference_json(), &expected["context"])
                    {
                        failures.push(format!("{name}: {d}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
