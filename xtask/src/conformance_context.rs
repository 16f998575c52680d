//! `cargo xtask conformance-context`: session-context against the reference on
//! generated sessions.
//!
//! For each size it runs the reference (node + `@mariozechner/pi-coding-agent` 0.73.1,
//! imported through the peer's `lib.mjs`) on a temp copy of `<data>/<size>.jsonl` and
//! takes the context of the resume leaf and of the entries at file positions
//! `floor(i * n / K)`, `i = 0..K` (K = 50 by default). It builds the same contexts with
//! `session-context` over a lazily decoding `TextSource` and compares them as values
//! under JavaScript number semantics. `--record FILE` (with one size) writes the oracle
//! file the crate's `cargo test` reads: a blake3 of each canonical context, and the full
//! contexts of the resume leaf and of contexts under 100 KB.
//!
//! Options: `--sizes 10k,100k` `--data DIR` `--peer DIR` `--leaves 50` `--record PATH`.
//! By default the reference is installed into `target/peer` and the data generated
//! there (`target/peer/data/big`) when absent.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use session_context::{ContextOptions, Leaf, TextSource, build_context};
use session_testkit::compare::{first_difference, js_canonical};
use session_types::json::replace_lone_surrogates;

const ORACLE_SCRIPT: &str = r#"
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
const [libPath, file, kArg] = process.argv.slice(2);
const { loadPi } = await import(resolve(libPath));
const pi = await loadPi();
const K = Number(kArg || 50);
const tmp = mkdtempSync(join(tmpdir(), "ctx-oracle-"));
const p = join(tmp, basename(file));
copyFileSync(resolve(file), p);
const sm = pi.SessionManager.open(p);
const entries = sm.getEntries();
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
let t0 = performance.now();
const resume = sm.buildSessionContext();
out({ leaf: sm.getLeafId(), resume: true, ms: performance.now() - t0, context: resume });
const n = entries.length;
for (let i = 0; i < K; i++) {
	const e = entries[Math.floor((i * n) / K)];
	t0 = performance.now();
	const ctx = pi.buildSessionContext(entries, e.id);
	out({ leaf: e.id, resume: false, ms: performance.now() - t0, context: ctx });
}
rmSync(tmp, { recursive: true, force: true });
"#;

pub(crate) fn run(args: &[String]) -> Result<()> {
    let mut sizes = vec!["10k".to_owned(), "100k".to_owned()];
    let mut data: Option<PathBuf> = None;
    let mut peer: Option<PathBuf> = None;
    let mut k: usize = 50;
    let mut record: Option<PathBuf> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => sizes = val()?.split(',').map(str::to_owned).collect(),
            "--data" => data = Some(val()?.into()),
            "--peer" => peer = Some(val()?.into()),
            "--leaves" => k = val()?.parse()?,
            "--record" => record = Some(val()?.into()),
            other => bail!("unknown option `{other}`"),
        }
    }
    if record.is_some() && sizes.len() != 1 {
        bail!("--record needs exactly one size");
    }
    let (peer, data) = match (peer, data) {
        (Some(p), Some(d)) => (p, d),
        (peer, data) => {
            let installed = crate::fixtures::peer_with_data(&crate::workspace_root())?;
            let data = data.unwrap_or_else(|| installed.join("data/big"));
            (peer.unwrap_or(installed), data)
        }
    };
    let dir = std::env::temp_dir().join(format!("xtask-ctx-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let script = dir.join("oracle.mjs");
    std::fs::write(&script, ORACLE_SCRIPT)?;
    println!(
        "| file | entries | leaves | equal | our median ms (lazy source) | reference median ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut failures = 0;
    for size in &sizes {
        let file = data.join(format!("{size}.jsonl"));
        failures += check_file(&file, &script, &peer, k, record.as_deref())?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failures > 0 {
        bail!("{failures} contexts differ from the reference");
    }
    Ok(())
}

fn check_file(
    file: &std::path::Path,
    script: &std::path::Path,
    peer: &std::path::Path,
    k: usize,
    record: Option<&std::path::Path>,
) -> Result<usize> {
    let file =
        &std::fs::canonicalize(file).with_context(|| format!("reading {}", file.display()))?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let lines: Vec<&str> = text
        .trim()
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .collect();
    let source = TextSource::new(lines.iter().copied());
    let mut child = Command::new("node")
        .arg(script)
        .arg(peer.join("lib.mjs"))
        .arg(file)
        .arg(k.to_string())
        .current_dir(peer)
        .stdout(Stdio::piped())
        .spawn()
        .context("running node (needed for the reference)")?;
    let stdout = child.stdout.take().context("node stdout")?;
    let (mut ours_ms, mut theirs_ms) = (Vec::new(), Vec::new());
    let (mut equal, mut total) = (0, 0);
    let mut leaves = Vec::new();
    let mut full = Map::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let (clean, _) = replace_lone_surrogates(&line);
        let o: Value = serde_json::from_str(&clean)?;
        let id = o["leaf"].as_str().unwrap_or_default().to_owned();
        let resume = o["resume"] == true;
        let leaf = if resume { Leaf::Default } else { Leaf::Id(&id) };
        let t = Instant::now();
        let ctx = build_context(&source, leaf, &ContextOptions::reference())
            .with_context(|| format!("{}: leaf {id}", file.display()))?;
        ours_ms.push(t.elapsed().as_secs_f64() * 1e3);
        theirs_ms.push(o["ms"].as_f64().unwrap_or(0.0));
        let ours = ctx.to_reference_json();
        total += 1;
        match first_difference(&ours, &o["context"]) {
            None => equal += 1,
            Some(d) => eprintln!("{}: leaf {id}: {d}", file.display()),
        }
        if record.is_some() {
            let canonical = js_canonical(&o["context"]);
            leaves.push(json!({
                "leaf": id,
                "resume": resume,
                "messages": o["context"]["messages"].as_array().map_or(0, Vec::len),
                "blake3": blake3::hash(canonical.as_bytes()).to_hex().to_string(),
            }));
            if resume || canonical.len() < 100_000 {
                full.insert(id.clone(), o["context"].clone());
            }
        }
    }
    if !child.wait()?.success() {
        bail!("node failed on {}", file.display());
    }
    println!(
        "| {} | {} | {} | {} | {:.3} | {:.3} |",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
        source.len(),
        total,
        equal,
        median(&mut ours_ms),
        median(&mut theirs_ms)
    );
    if let Some(path) = record {
        let out = json!({
            "generatedBy": "cargo xtask conformance-context --record (reference @mariozechner/pi-coding-agent 0.73.1)",
            "source": file.file_name().and_then(|n| n.to_str()),
            "rule": format!("the resume leaf, then the entries at file positions floor(i*n/{k}) for i in 0..{k}"),
            "hash": "blake3 of session_testkit::compare::js_canonical(context)",
            "leaves": leaves,
            "full": full,
        });
        std::fs::write(path, serde_json::to_string(&out)? + "\n")?;
    }
    Ok(total - equal)
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
