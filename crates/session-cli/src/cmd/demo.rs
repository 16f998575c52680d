//! `bcs demo`: the project's main job on the bundled samples. Imports the golden
//! corpus fixtures (`tests/fixtures/legacy` and `tests/fixtures/edge`, reference
//! outputs excluded) into `<workspace>/target/bcs-demo/` (or `--home`), lists the
//! store, and prints the tree and the context of `legacy/v2-hookmessage`. Idempotent:
//! a second run finds everything already imported.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::cmd::import::{import_all, imported_human};
use crate::cmd::read::{list_all, tree_human};
use crate::location::{Location, SessionView};
use crate::out::Out;
use crate::render;

/// The fixture whose tree and context the demo prints.
pub(crate) const RICH: &str = "legacy/v2-hookmessage.jsonl";

/// The workspace root: the nearest ancestor of the current directory holding
/// `tests/fixtures/legacy`, else the one this binary was built from.
pub(crate) fn workspace_root() -> Result<PathBuf> {
    let has = |p: &Path| p.join("tests/fixtures/legacy").is_dir() && p.join("Cargo.toml").is_file();
    if let Ok(cwd) = std::env::current_dir() {
        for a in cwd.ancestors() {
            if has(a) {
                return Ok(a.to_path_buf());
            }
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if has(&built) {
        return Ok(built.canonicalize().unwrap_or(built));
    }
    bail!(
        "cannot find the bundled samples (tests/fixtures/legacy) above {} or in {}",
        std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        built.display()
    )
}

/// The demo's sample files, in order.
pub(crate) fn samples(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in ["legacy", "edge"] {
        let d = root.join("tests/fixtures").join(dir);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .with_context(|| format!("{}: cannot read", d.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let n = p.to_string_lossy();
                n.ends_with(".jsonl") && !n.ends_with(".after-open.jsonl")
            })
            .collect();
        files.sort();
        out.extend(files);
    }
    Ok(out)
}

/// `bcs demo`. `explicit_home`: the user gave `--home`/`--session-dir`; use that store.
pub(crate) fn run(store: Option<Location>, out: &mut Out) -> Result<()> {
    let root = workspace_root()?;
    let store = match store {
        Some(s) => s,
        None => Location::with_layout(
            session_manager::Layout::with_root(root.join("target/bcs-demo"))
                .expect("absolute root"),
        ),
    };
    let files = samples(&root)?;
    out.line(&format!(
        "== bcs import: {} legacy samples into {}",
        files.len(),
        store.sessions_dir().display()
    ))?;
    let results = import_all(&store, &files, out)?;
    let mut rich = None;
    for (source, r) in &results {
        let shown = source
            .strip_prefix(root.join("tests/fixtures"))
            .unwrap_or(source);
        for l in imported_human(shown, r) {
            out.line(&l)?;
        }
        if shown == Path::new(RICH)
            && let Ok(o) = r
        {
            rich = Some(o.journal.clone());
        }
    }
    out.line("")?;
    out.line("== bcs list --all")?;
    list_all(&store, out)?;
    let Some(rich) = rich else {
        bail!("the demo sample {RICH} was not imported");
    };
    let view = SessionView::open(&rich)?;
    let id = crate::location::session_id_of(&rich);
    out.line("")?;
    out.line(&format!("== bcs tree {id}"))?;
    tree_human(&view, out)?;
    out.line("")?;
    out.line(&format!("== bcs context {id}"))?;
    let ctx = crate::cmd::read::context_json(&view, None)?;
    out.text(&render::context(&ctx))?;
    out.line("")?;
    out.line(&format!(
        "Try: bcs --home {} show {id}   (or tree/context --json, verify --all, export)",
        store.layout().root().display()
    ))
}
