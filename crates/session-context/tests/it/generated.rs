//! The generated 1k session (written by the reference's driver, `gen.mjs`): the context
//! for the resume leaf and for 50 other leaves equals the reference's. The oracle was
//! recorded by `cargo xtask conformance-context --sizes 1k --record …`: full contexts
//! for the resume leaf and the small ones, a blake3 of the canonical JSON for all.

use serde_json::Value;
use session_context::{ContextOptions, Leaf, ResidentSource, TextSource, build_context};
use session_testkit::compare::{first_difference, js_canonical};

use crate::{load_jsonl, parse_all, repo_root};

#[test]
fn generated_1k_equals_the_reference_on_51_leaves() {
    let text = std::fs::read_to_string(repo_root().join("tests/fixtures/generated/1k.jsonl"))
        .expect("1k.jsonl");
    let oracle: Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("tests/fixtures/generated/session-context/1k.oracle.json"),
        )
        .expect("oracle"),
    )
    .expect("oracle json");
    let records = load_jsonl(&text);
    let entries = parse_all(&records);
    assert_eq!(entries.len(), 1000);
    let resident = ResidentSource::new(&entries);
    let lazy = TextSource::new(records.iter().map(String::as_str));
    let leaves = oracle["leaves"].as_array().expect("leaves");
    assert_eq!(leaves.len(), 51);
    let mut full = 0;
    for (n, l) in leaves.iter().enumerate() {
        let id = l["leaf"].as_str().expect("leaf id");
        let leaf = if l["resume"] == true {
            Leaf::Default
        } else {
            Leaf::Id(id)
        };
        // The lazy source on a sample (every 10th leaf) keeps the debug-mode test fast.
        let sources: &[&str] = if l["resume"] == true || n % 10 == 0 {
            &["resident", "text"]
        } else {
            &["resident"]
        };
        for &source in sources {
            let (ours, got_leaf) = match source {
                "resident" => {
                    let c = build_context(&resident, leaf, &ContextOptions::reference())
                        .unwrap_or_else(|e| panic!("{id}: {e}"));
                    (c.to_reference_json(), c.leaf)
                }
                _ => {
                    let c = build_context(&lazy, leaf, &ContextOptions::reference())
                        .unwrap_or_else(|e| panic!("{id}: {e}"));
                    (c.to_reference_json(), c.leaf)
                }
            };
            assert_eq!(got_leaf.as_ref().map(|x| x.as_str()), Some(id));
            if let Some(expected) = oracle["full"].get(id) {
                if let Some(d) = first_difference(&ours, expected) {
                    panic!("leaf {id} ({source}): {d}");
                }
                full += 1;
            }
            let hash = blake3::hash(js_canonical(&ours).as_bytes())
                .to_hex()
                .to_string();
            assert_eq!(
                Some(hash.as_str()),
                l["blake3"].as_str(),
                "leaf {id} ({source})"
            );
            assert_eq!(
                ours["messages"].as_array().map(Vec::len),
                l["messages"].as_u64().map(|n| n as usize),
                "leaf {id}"
            );
        }
    }
    assert!(full >= 2, "full oracle contexts checked: {full}");
}
