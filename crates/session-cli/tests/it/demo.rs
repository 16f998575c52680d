//! `bcs demo`: imports the bundled samples, lists them, prints a tree and a context;
//! idempotent.

use crate::support::Bcs;

#[test]
fn demo_lists_and_prints_a_tree_and_a_context_and_is_idempotent() {
    let b = Bcs::new();
    let first = b.run(&["demo"]);
    let text = b.redact(first.ok());
    for part in [
        "== bcs import",
        "== bcs list --all",
        "== bcs tree ",
        "== bcs context ",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert!(text.contains("refused   edge/empty-file.jsonl"), "{text}");
    insta::assert_snapshot!("demo_first_run", text);
    let second = b.redact(b.run(&["demo"]).ok());
    assert!(
        second.contains("already imported  legacy/v2-hookmessage.jsonl"),
        "{second}"
    );
    assert!(!second.contains("\nimported "), "{second}");
}
