//! A context serializes (`impl Serialize for SessionContext`, what `bcs context --json`
//! and the owner write) to exactly the bytes of its `to_reference_json` value: the
//! messages are written straight from the context, no `Value` tree is built, and no
//! byte may change for it. Checked on every fixture with an oracle (the golden corpus,
//! the leniency cases with their odd shapes, repeated keys and out-of-range numbers,
//! the generated 1k session, the number-spelling fixture), through both sources.

use std::path::Path;

use session_context::{
    ContextOptions, Leaf, ResidentSource, SessionContext, TextSource, build_context,
};
use session_testkit::corpus::oracle_cases;
use session_types::js::stringify::{to_string, write};

use crate::{load_jsonl, parse_all, repo_root};

/// Both serializations of `ctx`, JavaScript's number spelling (`Out::json`'s): the
/// direct one by `js::stringify::write` (what `bcs context --json` prints) and by
/// serde_json with `JsFormatter`, which must agree, and the value's.
fn both(ctx: &SessionContext<'_>) -> (String, String) {
    let direct = to_string(ctx).expect("serialize");
    let mut fast = Vec::new();
    write(&mut fast, ctx).expect("write");
    assert_eq!(String::from_utf8(fast).expect("utf-8"), direct);
    let through_value = to_string(&ctx.to_reference_json()).expect("serialize value");
    (direct, through_value)
}

fn check_file(path: &Path, failures: &mut Vec<String>) -> usize {
    let bytes = std::fs::read(path).expect("fixture");
    let records = load_jsonl(&String::from_utf8_lossy(&bytes));
    let entries = parse_all(&records);
    let resident = ResidentSource::new(&entries);
    let lazy = TextSource::new(records.iter().map(String::as_str));
    for (source, ctx) in [
        (
            "resident",
            build_context(&resident, Leaf::Default, &ContextOptions::reference())
                .map_err(|e| e.to_string()),
        ),
        (
            "text",
            build_context(&lazy, Leaf::Default, &ContextOptions::reference())
                .map_err(|e| e.to_string()),
        ),
        (
            "resident, attributed",
            build_context(&resident, Leaf::Default, &ContextOptions::default())
                .map_err(|e| e.to_string()),
        ),
    ] {
        match ctx {
            Err(_) => {} // a cycle: nothing to print
            Ok(ctx) => {
                let (direct, value) = both(&ctx);
                if direct != value {
                    failures.push(format!(
                        "{} ({source}):\n  {direct}\n  {value}",
                        path.display()
                    ));
                }
            }
        }
    }
    records.len()
}

#[test]
fn a_context_serializes_to_the_bytes_of_its_reference_json() {
    let fixtures = repo_root().join("tests/fixtures");
    let mut files: Vec<_> = oracle_cases(&fixtures, &["legacy", "edge"])
        .expect("fixture dirs")
        .into_iter()
        .map(|c| c.input)
        .collect();
    let leniency = fixtures.join("leniency");
    let mut names: Vec<_> = std::fs::read_dir(&leniency)
        .expect("leniency")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    files.extend(names.into_iter().map(|n| leniency.join(n)));
    files.push(fixtures.join("generated/1k.jsonl"));
    files.push(repo_root().join("crates/session-cli/tests/data/numbers.jsonl"));
    assert!(files.len() >= 50, "{} fixtures", files.len());
    let mut failures = Vec::new();
    let mut records = 0;
    for f in &files {
        records += check_file(f, &mut failures);
    }
    assert!(records > 1000, "{records} records");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
