//! Replays the differential fuzzer's committed inputs (`tests/fixtures/difffuzz/`)
//! against their committed reference oracles, with no node: every mismatch must be
//! listed in `known-mismatches.json`, and every listed mismatch must still occur (so
//! the list shrinks as fixes land). `cargo xtask difffuzz known` rewrites the list;
//! `cargo xtask difffuzz record` regenerates inputs and oracles (needs node).

mod view;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/difffuzz")
}

/// Every committed input: (name, path, oracle).
fn committed() -> Vec<(String, PathBuf, Value)> {
    let dir = fixtures();
    let mut out = Vec::new();
    let replay = dir.join("replay");
    let text = std::fs::read_to_string(replay.join("oracles.jsonl")).expect("replay oracles");
    for line in text.lines() {
        let v = view::parse_oracle(line).expect("an oracle line");
        let name = v["file"].as_str().expect("a file name").to_owned();
        out.push((format!("replay/{name}"), replay.join(&name), v));
    }
    let mut classes: Vec<PathBuf> = std::fs::read_dir(dir.join("classes"))
        .expect("class fixtures")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| !p.to_string_lossy().ends_with(".oracle.json"))
        .collect();
    classes.sort();
    for p in classes {
        let oracle = std::fs::read_to_string(p.with_extension("oracle.json")).expect("its oracle");
        let name = p
            .file_name()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let v = view::parse_oracle(oracle.trim_end()).expect("an oracle");
        out.push((format!("classes/{name}"), p, v));
    }
    out
}

fn known() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(fixtures().join("known-mismatches.json")).expect("known");
    let v: Value = serde_json::from_str(&text).expect("known-mismatches.json is JSON");
    v["known"]
        .as_object()
        .expect("a `known` object")
        .iter()
        .map(|(k, list)| {
            let set = list
                .as_array()
                .expect("a list of classes")
                .iter()
                .map(|c| c.as_str().expect("a class").to_owned())
                .collect();
            (k.clone(), set)
        })
        .collect()
}

/// The stack of the replay's threads: the committed inputs include records nested
/// as deep as the reference reads (`classes/deep-1000-v3`), which the comparison's
/// recursive walks and a debug build's frames take more than a default 2 MiB for.
const REPLAY_STACK: usize = 256 << 20;

#[test]
fn committed_inputs_match_the_reference_except_known_mismatches() {
    std::thread::Builder::new()
        .stack_size(REPLAY_STACK)
        .spawn(replay)
        .expect("the replay thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

fn replay() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let inputs = committed();
    assert!(inputs.len() >= 300, "{} committed inputs", inputs.len());
    let mut known = known();
    // Ours for every input, on two threads (each input in its own scratch store).
    let verdicts: Vec<view::Verdict> = std::thread::scope(|s| {
        let half = inputs.len().div_ceil(2);
        let workers: Vec<_> = inputs
            .chunks(half)
            .enumerate()
            .map(|(k, part)| {
                let scratch = scratch.path().join(k.to_string());
                std::thread::Builder::new()
                    .stack_size(REPLAY_STACK)
                    .spawn_scoped(s, move || {
                        part.iter()
                            .map(|(_, path, theirs)| {
                                view::compare(theirs, &view::ours(path, &scratch))
                            })
                            .collect::<Vec<_>>()
                    })
                    .expect("a replay thread")
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a replay thread"))
            .collect()
    });
    let mut problems = Vec::new();
    for ((name, _, _), verdict) in inputs.iter().zip(&verdicts) {
        let expected = known.remove(name).unwrap_or_default();
        let found: BTreeSet<String> = verdict
            .mismatches
            .iter()
            .map(view::Mismatch::class)
            .collect();
        for m in &verdict.mismatches {
            if !expected.contains(&m.class()) {
                problems.push(format!(
                    "{name}: NEW mismatch `{}`: {}",
                    m.class(),
                    m.detail
                ));
            }
        }
        for c in expected.difference(&found) {
            problems.push(format!(
                "{name}: `{c}` no longer occurs: remove it from known-mismatches.json (`cargo xtask difffuzz known`)"
            ));
        }
    }
    for name in known.keys() {
        problems.push(format!(
            "{name}: listed in known-mismatches.json but not committed"
        ));
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn javascript_number_spelling() {
    for (x, s) in [
        (1.0, "1"),
        (-0.0, "0"),
        (1000.0, "1000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e21, "1.5e+21"),
        (1e21, "1e+21"),
        (123_456_789_012_345_680_000.0, "123456789012345680000"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
    ] {
        assert_eq!(view::js_number_text(x), s, "{x}");
    }
}
