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

/// The `*.jsonl` files of these fixture directories, directory by directory, each
/// sorted, with the directory's name.
pub(crate) fn fixture_files(dirs: &[&'static str]) -> Vec<(&'static str, PathBuf)> {
    let mut out = Vec::new();
    for &dir in dirs {
        let mut paths: Vec<_> = std::fs::read_dir(fixtures_dir().join(dir))
            .expect("fixture directory exists")
            .map(|e| e.expect("readable dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        paths.sort();
        out.extend(paths.into_iter().map(|p| (dir, p)));
    }
    out
}

/// Every `*.jsonl` file of the corpus, sorted, with its lines.
pub(crate) fn corpus_files() -> Vec<(String, Vec<String>)> {
    fixture_files(&["legacy", "edge"])
        .into_iter()
        .map(|(dir, p)| {
            let text = std::fs::read_to_string(&p).expect("corpus files are UTF-8");
            let name = format!(
                "{dir}/{}",
                p.file_name().expect("file name").to_string_lossy()
            );
            (name, text.split('\n').map(str::to_owned).collect())
        })
        .collect()
}
