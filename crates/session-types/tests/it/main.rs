//! Integration tests of the logical model, mirroring `src/`.

mod construct;
mod corpus;
mod entry_type;
mod errors;
mod forward;
mod js;
mod message_json;
mod write;

use std::path::PathBuf;

/// The workspace's golden corpus (`tests/fixtures/`).
pub(crate) fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every `*.jsonl` file of the corpus, sorted, with its lines.
pub(crate) fn corpus_files() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for dir in ["legacy", "edge"] {
        let mut paths: Vec<_> = std::fs::read_dir(fixtures_dir().join(dir))
            .expect("corpus directory exists")
            .map(|e| e.expect("readable dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        paths.sort();
        for p in paths {
            let text = std::fs::read_to_string(&p).expect("corpus files are UTF-8");
            let name = format!(
                "{dir}/{}",
                p.file_name().expect("file name").to_string_lossy()
            );
            out.push((name, text.split('\n').map(str::to_owned).collect()));
        }
    }
    out
}
