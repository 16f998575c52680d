//! `cargo xtask conformance-import`: import → export → the reference.
//!
//! Every legacy, edge and leniency fixture of the golden corpus is imported with
//! `session-import` into a scratch store, exported back to v3 JSONL, and the export
//! is opened by the reference implementation (`peer/context.mjs`, node +
//! `@mariozechner/pi-coding-agent` 0.73.1). Its context, session name, entry count
//! and labels must equal the fixture's oracle (`NAME.context.json`, built by the
//! reference from the original source). Fixtures our import refuses (documented in
//! docs/format.md §4) are listed as refused. Needs node; installs the pinned package
//! into `target/peer/` on first use.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use session_import::{Destination, ImportOptions, export, import};
use session_types::json::{js_normalized, replace_lone_surrogates};

pub(crate) fn run(args: &[String]) -> Result<()> {
    if !args.is_empty() {
        bail!("`cargo xtask conformance-import` takes no arguments");
    }
    let root = crate::workspace_root();
    let peer = crate::fixtures::install_peer(&root.join("../shared/peer"), &root)?;
    let scratch = root
        .join("target")
        .join(format!("xtask-conformance-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let corpus = root.join("tests/fixtures");
    let mut rows = Vec::new();
    let mut failures = 0;
    for dir in ["legacy", "edge", "leniency"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join(dir))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        files.retain(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".jsonl") && !n.ends_with(".after-open.jsonl")
        });
        files.sort();
        for source in files {
            let stem = source
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = format!("{dir}/{stem}");
            let store = scratch.join(&name);
            std::fs::create_dir_all(&store)?;
            let outcome = match import(
                &source,
                &Destination::Dir(store.clone()),
                &ImportOptions::default(),
            ) {
                Ok(o) => o,
                Err(e) => {
                    rows.push(format!("| {name} | refused: {e} | – |"));
                    continue;
                }
            };
            let exported = store.join("export.jsonl");
            export(&outcome.journal, &exported).with_context(|| format!("exporting {name}"))?;
            let ours = reference_view(&peer, &exported)?;
            let oracle = read_json(&source.with_file_name(format!("{stem}.context.json")))?;
            let mut diffs = Vec::new();
            for key in ["context", "sessionName", "entryCount", "labels"] {
                if js_normalized(&ours[key]) != js_normalized(&oracle[key]) {
                    diffs.push(key);
                }
            }
            if diffs.is_empty() {
                rows.push(format!(
                    "| {name} | equal | {} entries |",
                    ours["entryCount"]
                ));
            } else {
                failures += 1;
                rows.push(format!(
                    "| {name} | **differs**: {} | {} entries |",
                    diffs.join(", "),
                    ours["entryCount"]
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!("| fixture | reference view of our export vs oracle | |\n|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    if failures > 0 {
        bail!("{failures} fixture(s) differ");
    }
    Ok(())
}

/// What the reference sees when it opens `file` (`context.mjs` works on a copy).
fn reference_view(peer: &Path, file: &Path) -> Result<Value> {
    let out = Command::new("node")
        .arg("context.mjs")
        .arg(file)
        .arg("--no-tree")
        .current_dir(peer)
        .output()
        .context("running node context.mjs")?;
    if !out.status.success() {
        bail!(
            "context.mjs {} failed: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8(out.stdout).context("context.mjs printed non-UTF-8")?;
    Ok(serde_json::from_str(&replace_lone_surrogates(&text).0)?)
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(serde_json::from_str(&replace_lone_surrogates(&text).0)?)
}
