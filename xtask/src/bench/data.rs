//! The data the harness measures on: the reference's deterministic sessions
//! (`peer/gen.mjs`, seed 42) under `target/bench-data/`, hard-linked from
//! `--peer-data` when a copy is there, and their native imports (made once, untimed).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use session_manager::{Layout, Store};

use super::SIZES;

/// The legacy data sets.
pub(crate) struct Data {
    pub(crate) dir: PathBuf,
    /// `{1k,10k,100k}.jsonl`.
    pub(crate) big: PathBuf,
    /// An agent dir with 2,000 sessions.
    pub(crate) agent2000: PathBuf,
    /// An agent dir with 10,000 sessions.
    pub(crate) agent10000: PathBuf,
}

/// Generates or links the legacy data sets (node is needed only to generate).
pub(crate) fn prepare_data(root: &Path, peer_data: &Path, use_node: bool) -> Result<Data> {
    let dir = root.join("target/bench-data");
    let data = Data {
        big: dir.join("big"),
        agent2000: dir.join("agent"),
        agent10000: dir.join("many-10000/agent"),
        dir: dir.clone(),
    };
    fs::create_dir_all(&data.big)?;
    let missing_big: Vec<&str> = SIZES
        .iter()
        .copied()
        .filter(|s| !data.big.join(format!("{s}.jsonl")).is_file())
        .collect();
    for s in &missing_big {
        let src = peer_data.join(format!("big/{s}.jsonl"));
        if src.is_file() {
            link_or_copy(&src, &data.big.join(format!("{s}.jsonl")))?;
        }
    }
    let still: Vec<&str> = SIZES
        .iter()
        .copied()
        .filter(|s| !data.big.join(format!("{s}.jsonl")).is_file())
        .collect();
    if !still.is_empty() {
        generate(
            root,
            use_node,
            &dir,
            &["--sizes", &still.join(","), "--only", "big"],
        )?;
    }
    if !data.agent2000.join("sessions").is_dir() {
        let src = peer_data.join("agent/sessions");
        if src.is_dir() {
            link_tree(&src, &data.agent2000.join("sessions"))?;
        } else {
            generate(root, use_node, &dir, &["--many", "2000", "--only", "many"])?;
        }
    }
    if !data.agent10000.join("sessions").is_dir() {
        let out = dir.join("many-10000");
        generate(root, use_node, &out, &["--many", "10000", "--only", "many"])?;
    }
    Ok(data)
}

fn generate(root: &Path, use_node: bool, out: &Path, args: &[&str]) -> Result<()> {
    if !use_node {
        bail!(
            "bench data missing under {} and node is not available to generate it",
            out.display()
        );
    }
    let work = crate::fixtures::install_peer(&root.join("../shared/peer"), root)?;
    eprintln!(
        "bench: node gen.mjs --out {} {}",
        out.display(),
        args.join(" ")
    );
    let status = Command::new("node")
        .arg("gen.mjs")
        .arg("--out")
        .arg(out)
        .args(args)
        .current_dir(&work)
        .status()
        .context("running node gen.mjs")?;
    if !status.success() {
        bail!("gen.mjs failed");
    }
    Ok(())
}

fn link_or_copy(src: &Path, dest: &Path) -> Result<()> {
    if let Some(d) = dest.parent() {
        fs::create_dir_all(d)?;
    }
    if fs::hard_link(src, dest).is_err() {
        fs::copy(src, dest).with_context(|| format!("copying {}", src.display()))?;
    }
    Ok(())
}

fn link_tree(src: &Path, dest: &Path) -> Result<()> {
    let staging = dest.with_file_name("sessions-partial");
    let _ = fs::remove_dir_all(&staging);
    link_all(src, &staging)?;
    fs::rename(&staging, dest)?;
    Ok(())
}

fn link_all(src: &Path, dest: &Path) -> Result<()> {
    fs::create_dir_all(dest)?;
    for e in fs::read_dir(src)? {
        let e = e?;
        let to = dest.join(e.file_name());
        if e.file_type()?.is_dir() {
            link_all(&e.path(), &to)?;
        } else {
            link_or_copy(&e.path(), &to)?;
        }
    }
    Ok(())
}

/// Legacy files of an agent dir (`sessions/*/*.jsonl`), sorted.
fn agent_files(agent: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for d in fs::read_dir(agent.join("sessions"))? {
        let d = d?;
        if !d.file_type()?.is_dir() {
            continue;
        }
        for f in fs::read_dir(d.path())? {
            let p = f?.path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The native imports of [`Data`].
pub(crate) struct Native {
    /// The store holding the big sessions.
    pub(crate) big_root: PathBuf,
    /// (size, journal) of each big session, in [`SIZES`] order.
    pub(crate) journals: Vec<(String, PathBuf)>,
    pub(crate) many2000: PathBuf,
    pub(crate) many10000: PathBuf,
    /// The 1M-entry session's (store root, journal), when a resume row is measured
    /// ([`huge`]).
    pub(crate) huge: Option<(PathBuf, PathBuf)>,
}

/// Imports every data set into a native store once (a `done.json` marks each).
pub(crate) fn import_all(data: &Data) -> Result<Native> {
    let n = data.dir.join("native");
    let big_root = n.join("big");
    let marker = big_root.join("done.json");
    let journals: Vec<(String, PathBuf)> = if let Ok(text) = fs::read_to_string(&marker) {
        let v: Value = serde_json::from_str(&text)?;
        SIZES
            .iter()
            .map(|s| {
                let p = v[*s].as_str().context("done.json names every size")?;
                Ok(((*s).to_owned(), PathBuf::from(p)))
            })
            .collect::<Result<_>>()?
    } else {
        let _ = fs::remove_dir_all(&big_root);
        let store = Store::new(Layout::with_root(&big_root).expect("absolute root"));
        let mut m = serde_json::Map::new();
        let mut out = Vec::new();
        for s in SIZES {
            eprintln!("bench: importing {s}.jsonl");
            let o = store.import(&data.big.join(format!("{s}.jsonl")))?;
            // Build and save the index sidecar now (outside every timed section).
            store.open(&o.journal)?.close()?;
            m.insert(s.to_owned(), json!(o.journal.to_string_lossy()));
            out.push((s.to_owned(), o.journal));
        }
        fs::write(&marker, Value::Object(m).to_string())?;
        out
    };
    let import_many = |agent: &Path, root: &Path| -> Result<()> {
        let marker = root.join("done.json");
        if marker.is_file() {
            return Ok(());
        }
        let _ = fs::remove_dir_all(root);
        let store = Store::new(Layout::with_root(root).expect("absolute root"));
        let files = agent_files(agent)?;
        eprintln!(
            "bench: importing {} sessions into {}",
            files.len(),
            root.display()
        );
        for f in &files {
            store.import(f)?;
        }
        // The first listing builds the catalog.
        let listed = store.list_all(&mut ())?.len();
        if listed != files.len() {
            bail!(
                "{} lists {listed} sessions, expected {}",
                root.display(),
                files.len()
            );
        }
        fs::write(&marker, json!({"sessions": listed}).to_string())?;
        Ok(())
    };
    let many2000 = n.join("many-2000");
    let many10000 = n.join("many-10000");
    import_many(&data.agent2000, &many2000)?;
    import_many(&data.agent10000, &many10000)?;
    Ok(Native {
        big_root,
        journals,
        many2000,
        many10000,
        huge: None,
    })
}

/// The size of the largest session, measured only by the resume rows (issue 19):
/// `big/1m.jsonl`, about 2.2 GB.
pub(crate) const HUGE: &str = "1m";

/// The 1M-entry session imported into its own store (`native/huge/`): (store root,
/// journal). The legacy file is hard-linked from `--peer-data` when there, else
/// generated (`gen.mjs --sizes 1k,1m`: with 1k the smallest size, the generator does
/// not fork the 1M session, which needs the whole file as one string). Imported once
/// (a `done.json` marks it), untimed.
pub(crate) fn huge(
    root: &Path,
    peer_data: &Path,
    data: &Data,
    use_node: bool,
) -> Result<(PathBuf, PathBuf)> {
    let file = data.big.join(format!("{HUGE}.jsonl"));
    if !file.is_file() {
        let src = peer_data.join(format!("big/{HUGE}.jsonl"));
        if src.is_file() {
            link_or_copy(&src, &file)?;
        } else {
            let scratch = data.dir.join("gen-1m");
            let _ = fs::remove_dir_all(&scratch);
            generate(
                root,
                use_node,
                &scratch,
                &["--sizes", &format!("1k,{HUGE}"), "--only", "big"],
            )?;
            fs::rename(scratch.join(format!("big/{HUGE}.jsonl")), &file)?;
            let _ = fs::remove_dir_all(&scratch);
        }
    }
    let store_root = data.dir.join("native/huge");
    let marker = store_root.join("done.json");
    if let Ok(text) = fs::read_to_string(&marker) {
        let v: Value = serde_json::from_str(&text)?;
        let journal = v[HUGE].as_str().context("done.json names the journal")?;
        return Ok((store_root, PathBuf::from(journal)));
    }
    let _ = fs::remove_dir_all(&store_root);
    let store = Store::new(Layout::with_root(&store_root).expect("absolute root"));
    eprintln!("bench: importing {HUGE}.jsonl (once)");
    let o = store.import(&file)?;
    store.open(&o.journal)?.close()?;
    fs::write(
        &marker,
        json!({ HUGE: o.journal.to_string_lossy() }).to_string(),
    )?;
    Ok((store_root, o.journal))
}
