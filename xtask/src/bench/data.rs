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
    /// The store of [`SMALL_SESSIONS`] small sessions (made only when a measurement
    /// asks for it: [`many_small`]).
    pub(crate) many100000: PathBuf,
}

/// How many sessions the listing-at-scale rows list (issue 19 §7).
pub(crate) const SMALL_SESSIONS: usize = 100_000;

/// One small legacy session (v3 JSONL, about 1 KB): a header, a model change, a user
/// message of 40–400 bytes and a short assistant reply. Deterministic in `i`; each
/// in its own cwd of 1,000, with times an hour apart per session.
fn small_session(i: usize) -> String {
    // A linear congruential sequence seeded by `i`: varied, reproducible text.
    let mut x = (i as u64)
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    const WORDS: [&str; 16] = [
        "fix",
        "the",
        "parser",
        "cache",
        "build",
        "test",
        "rename",
        "module",
        "listing",
        "faster",
        "why",
        "does",
        "compaction",
        "fail",
        "on",
        "ci",
    ];
    let words = 8 + next() % 72;
    let text: Vec<&str> = (0..words).map(|_| WORDS[next() % WORDS.len()]).collect();
    let text = text.join(" ");
    let t0 = 1_767_225_600_000i64 + (i as i64) * 3_600_000;
    let iso = |ms: i64| {
        session_types::Timestamp::from_unix_ms(ms)
            .as_str()
            .to_owned()
    };
    let id = format!(
        "019b{:04x}-{:04x}-7{:03x}-8{:03x}-{:012x}",
        (i >> 16) & 0xffff,
        i & 0xffff,
        next() & 0xfff,
        next() & 0xfff,
        (next() as u64) << 16 | (i as u64 & 0xffff)
    );
    let cwd = format!("/home/dev/src/project-{}", i % 1000);
    let lines = [
        json!({"type":"session","version":3,"id":id,"timestamp":iso(t0),"cwd":cwd}),
        json!({"type":"model_change","id":"a0000001","parentId":null,"timestamp":iso(t0),
               "provider":"anthropic","modelId":"claude-sonnet-4-5"}),
        json!({"type":"message","id":"a0000002","parentId":"a0000001","timestamp":iso(t0 + 1000),
               "message":{"role":"user","content":text,"timestamp":t0 + 1000}}),
        json!({"type":"message","id":"a0000003","parentId":"a0000002","timestamp":iso(t0 + 5000),
               "message":{"role":"assistant","content":[{"type":"text","text":"done."}],
                          "api":"anthropic-messages","provider":"anthropic",
                          "model":"claude-sonnet-4-5","usage":{"input":100,"output":5,
                          "cacheRead":0,"cacheWrite":0,"totalTokens":105,
                          "cost":{"input":0.0003,"output":0.000075,"cacheRead":0,
                                  "cacheWrite":0,"total":0.000375}},
                          "stopReason":"stop","timestamp":t0 + 5000}}),
    ];
    let mut out = String::new();
    for l in lines {
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out
}

/// The store of [`SMALL_SESSIONS`] small sessions at `root` (`native.many100000`),
/// made once (a `done.json` marks it): the legacy files are written under
/// `target/bench-data/small-legacy/` in Rust (not by the reference's generator,
/// whose sessions average 27 KB: 100,000 of them and their imports would be about 5
/// GB; these are about 1 KB), imported in batches with `Store::import_many`, listed
/// once (which writes the catalog), and the legacy files deleted. The store takes
/// about 1 GB (journal, index sidecar and a block each); delete it with
/// `rm -r target/bench-data/native/many-100000`.
pub(crate) fn many_small(data: &Data, root: &Path) -> Result<()> {
    let marker = root.join("done.json");
    if marker.is_file() {
        return Ok(());
    }
    let _ = fs::remove_dir_all(root);
    let legacy = data.dir.join("small-legacy");
    let _ = fs::remove_dir_all(&legacy);
    fs::create_dir_all(&legacy)?;
    eprintln!(
        "bench: writing {SMALL_SESSIONS} small legacy sessions under {}",
        legacy.display()
    );
    let files: Vec<PathBuf> = (0..SMALL_SESSIONS)
        .map(|i| {
            let p = legacy.join(format!("{i:06}.jsonl"));
            fs::write(&p, small_session(i))?;
            Ok(p)
        })
        .collect::<Result<_>>()?;
    eprintln!("bench: importing them into {}", root.display());
    let store = Store::new(Layout::with_root(root).expect("absolute root"));
    let mut failed = 0usize;
    store.import_many(
        &files,
        &session_manager::BulkOptions::default(),
        &mut |_, r| {
            failed += usize::from(r.is_err());
        },
    )?;
    fs::remove_dir_all(&legacy)?;
    if failed > 0 {
        bail!("{failed} of the small sessions failed to import");
    }
    let listed = store.list_all(&mut ())?.len();
    if listed != SMALL_SESSIONS {
        bail!(
            "{} lists {listed} sessions, expected {SMALL_SESSIONS}",
            root.display()
        );
    }
    fs::write(&marker, json!({"sessions": listed}).to_string())?;
    Ok(())
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
        many100000: n.join("many-100000"),
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
