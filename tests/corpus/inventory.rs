//! The corpus is what its README says it is: every fixture has its oracle outputs,
//! and every top-level kind of file is documented.

use std::path::Path;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures"))
}

#[test]
fn every_legacy_and_edge_fixture_has_a_context_oracle() {
    let mut count = 0;
    for dir in ["legacy", "edge"] {
        for e in std::fs::read_dir(fixtures().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".jsonl") && !name.ends_with(".after-open.jsonl") {
                let stem = name.trim_end_matches(".jsonl");
                let oracle = p.with_file_name(format!("{stem}.context.json"));
                assert!(oracle.is_file(), "{dir}/{name} has no {stem}.context.json");
                let v: serde_json::Value = serde_json::from_str(
                    &session_types::json::replace_lone_surrogates(
                        &std::fs::read_to_string(&oracle).unwrap(),
                    )
                    .0,
                )
                .unwrap();
                assert!(
                    v["context"]["messages"].is_array(),
                    "{stem}: oracle has no context"
                );
                count += 1;
            }
        }
    }
    assert_eq!(
        count, 14,
        "the corpus README lists 8 legacy and 6 edge fixtures"
    );
}

#[test]
fn index_json_names_only_existing_files() {
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("index.json")).unwrap())
            .unwrap();
    let entries = index.as_array().expect("index.json is an array");
    assert!(!entries.is_empty());
    for e in entries {
        let file = e["file"].as_str().expect("each entry names its file");
        assert!(
            fixtures().join(file).is_file(),
            "index.json names missing {file}"
        );
    }
}

#[test]
fn the_readme_documents_every_top_level_entry() {
    let readme = std::fs::read_to_string(fixtures().join("README.md")).unwrap();
    for e in std::fs::read_dir(fixtures()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        assert!(
            readme.contains(&format!("`{name}")),
            "tests/fixtures/README.md does not mention {name}"
        );
    }
}
