//! `cargo xtask difffuzz`: the differential fuzzer against the reference.
//!
//! Generates random legacy sessions from seeds ([`generator`]), asks the reference for its
//! answers in batches (`xtask/difffuzz/oracle.mjs`: one node process per chunk of
//! files), computes ours through what `bcs` runs (`tests/difffuzz/view.rs`, shared
//! with the replay test) and groups the differences into classes.
//!
//! Subcommands (all write under `--out`, default `target/difffuzz`):
//! - `run [--seeds A..B] [--chunk N] [--append]`: fuzz; one result line per seed in
//!   `results.jsonl`, then `summary`.
//! - `summary [--no-minimise]`: classes with counts and the smallest seed of each,
//!   minimised by line deletion (re-asking the reference), in `summary.md` and
//!   `summary.json`; the minimal inputs and their oracles in `min/`.
//! - `record [--replay N]`: commits the CI replay under `tests/fixtures/difffuzz/`:
//!   the inputs of seeds `0..N` (default 300) with their oracles, the minimal input of
//!   every class of the last summary with its oracle, and `known-mismatches.json`.
//! - `known`: rewrites `known-mismatches.json` from the committed inputs and oracles
//!   (no node), after a fix landed.
//! - `gen SEED`: prints the generated file of one seed; `ours FILE`: prints our
//!   answers for a file (as compared); `check FILE…`: compares ours for each file
//!   with its oracle beside it (`FILE` with `.oracle.json` for `.jsonl`) and prints
//!   the mismatches and divergences.
//!
//! Options: `--peer DIR` (the reference; default: installed into `target/peer`),
//! `--out DIR`. Node runs with `TZ=UTC`.

pub(crate) mod generator;

#[path = "../../../tests/difffuzz/view.rs"]
mod view;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

struct Options {
    peer: Option<PathBuf>,
    out: PathBuf,
    seeds: (u64, u64),
    chunk: u64,
    append: bool,
    minimise: bool,
    replay: u64,
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let root = crate::workspace_root();
    let (sub, rest) = match args.split_first() {
        Some((s, rest)) if !s.starts_with("--") => (s.as_str(), rest),
        _ => ("run", args),
    };
    let mut o = Options {
        peer: None,
        out: root.join("target/difffuzz"),
        seeds: (0, 20_000),
        chunk: 500,
        append: false,
        minimise: true,
        replay: 300,
    };
    let mut positional = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--peer" => o.peer = Some(val()?.into()),
            "--out" => o.out = val()?.into(),
            "--seeds" => {
                let v = val()?;
                let (a, b) = v.split_once("..").context("--seeds A..B")?;
                o.seeds = (a.parse()?, b.parse()?);
            }
            "--chunk" => o.chunk = val()?.parse()?,
            "--replay" => o.replay = val()?.parse()?,
            "--append" => o.append = true,
            "--no-minimise" => o.minimise = false,
            other if !other.starts_with("--") => positional.push(other.to_owned()),
            other => bail!("unknown option `{other}`"),
        }
    }
    std::fs::create_dir_all(&o.out)?;
    match sub {
        "run" => {
            fuzz(&o)?;
            summary(&o)
        }
        "summary" => summary(&o),
        "record" => record(&o),
        "known" => {
            let n = write_known(&root.join(FIXTURES))?;
            println!("difffuzz: {n} inputs with known mismatches");
            Ok(())
        }
        "ours" => {
            let file = positional.first().context("ours FILE")?;
            let v = view::ours(Path::new(file), &o.out.join("scratch-ours"));
            println!("{}", serde_json::to_string_pretty(&v)?);
            Ok(())
        }
        "check" => {
            for file in positional.iter().filter(|f| !f.ends_with(".oracle.json")) {
                let file = Path::new(file);
                let oracle = std::fs::read_to_string(file.with_extension("oracle.json"))
                    .with_context(|| format!("the oracle of {}", file.display()))?;
                let theirs = view::parse_oracle(oracle.trim_end())?;
                let v = view::compare(&theirs, &view::ours(file, &o.out.join("scratch-ours")));
                println!("{}:", file.display());
                for d in &v.divergences {
                    println!("  divergence: {d}");
                }
                for m in &v.mismatches {
                    println!("  `{}`: {}", m.class(), m.detail);
                }
            }
            Ok(())
        }
        "gen" => {
            let seed: u64 = positional.first().context("gen SEED")?.parse()?;
            std::io::stdout().write_all(&generator::generate(seed))?;
            Ok(())
        }
        other => bail!(
            "unknown difffuzz subcommand `{other}` (run, summary, record, known, gen, ours, check)"
        ),
    }
}

/// The committed replay corpus, relative to the workspace root.
const FIXTURES: &str = "tests/fixtures/difffuzz";

fn peer(o: &Options) -> Result<PathBuf> {
    match &o.peer {
        Some(p) => Ok(p.clone()),
        None => {
            let root = crate::workspace_root();
            crate::fixtures::install_peer(&root.join("../shared/peer"), &root)
        }
    }
}

fn oracle_script() -> PathBuf {
    crate::workspace_root().join("xtask/difffuzz/oracle.mjs")
}

/// Starts the batch oracle on `files` (their paths listed in `dir/list.txt`).
fn start_oracle(peer: &Path, dir: &Path, files: &[PathBuf]) -> Result<Child> {
    let list = dir.join("list.txt");
    let mut text = String::new();
    for f in files {
        text.push_str(&f.to_string_lossy());
        text.push('\n');
    }
    std::fs::write(&list, text)?;
    Command::new("node")
        .arg(oracle_script())
        .arg(peer.join("lib.mjs"))
        .arg(&list)
        .env("TZ", "UTC")
        .current_dir(peer)
        .stdout(Stdio::piped())
        .spawn()
        .context("running node (needed for the reference)")
}

/// The oracle's lines, by file path.
fn finish_oracle(child: Child) -> Result<BTreeMap<String, (Value, String)>> {
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("the oracle failed: {}", out.status);
    }
    let mut map = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v = view::parse_oracle(line).with_context(|| format!("oracle line {line:.200}"))?;
        let file = v["file"].as_str().unwrap_or_default().to_owned();
        map.insert(file, (v, line.to_owned()));
    }
    Ok(map)
}

/// Asks the reference about `files` in one batch.
fn oracle(peer: &Path, dir: &Path, files: &[PathBuf]) -> Result<BTreeMap<String, (Value, String)>> {
    finish_oracle(start_oracle(peer, dir, files)?)
}

fn write_chunk(dir: &Path, seeds: std::ops::Range<u64>) -> Result<Vec<(u64, PathBuf)>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    seeds
        .map(|s| {
            let p = dir.join(format!("{s:06}.jsonl"));
            std::fs::write(&p, generator::generate(s))?;
            Ok((s, p))
        })
        .collect()
}

fn fuzz(o: &Options) -> Result<()> {
    let peer = peer(o)?;
    let (a, b) = o.seeds;
    let results = o.out.join("results.jsonl");
    let mut sink = std::fs::OpenOptions::new()
        .create(true)
        .append(o.append)
        .write(true)
        .truncate(!o.append)
        .open(&results)?;
    let started = Instant::now();
    let scratch = o.out.join("scratch");
    let chunks: Vec<(u64, u64)> = (a..b)
        .step_by(usize::try_from(o.chunk.max(1)).unwrap_or(500))
        .map(|s| (s, (s + o.chunk).min(b)))
        .collect();
    // The reference answers chunk k+1 while we compute chunk k.
    let mut next: Option<(Vec<(u64, PathBuf)>, Child)> = None;
    let (mut files_done, mut with_mismatch) = (0u64, 0u64);
    for (k, &(s, e)) in chunks.iter().enumerate() {
        let (files, child) = match next.take() {
            Some(n) => n,
            None => {
                let dir = o.out.join(format!("chunk-{}", k % 2));
                let files = write_chunk(&dir, s..e)?;
                let paths: Vec<PathBuf> = files.iter().map(|f| f.1.clone()).collect();
                let child = start_oracle(&peer, &dir, &paths)?;
                (files, child)
            }
        };
        let theirs = finish_oracle(child)?;
        if let Some(&(s2, e2)) = chunks.get(k + 1) {
            let dir = o.out.join(format!("chunk-{}", (k + 1) % 2));
            let files2 = write_chunk(&dir, s2..e2)?;
            let paths: Vec<PathBuf> = files2.iter().map(|f| f.1.clone()).collect();
            next = Some((files2.clone(), start_oracle(&peer, &dir, &paths)?));
        }
        for (seed, path) in &files {
            let key = path.to_string_lossy().into_owned();
            let Some((t, _)) = theirs.get(&key) else {
                bail!("the oracle gave no answer for {key}");
            };
            let ours = view::ours(path, &scratch);
            let verdict = view::compare(t, &ours);
            files_done += 1;
            with_mismatch += u64::from(!verdict.mismatches.is_empty());
            let line = json!({
                "seed": seed,
                "mismatches": verdict.mismatches.iter().map(|m| json!({
                    "class": m.class(), "detail": m.detail,
                })).collect::<Vec<_>>(),
                "divergences": verdict.divergences,
            });
            writeln!(sink, "{line}")?;
        }
        sink.flush()?;
        eprintln!(
            "difffuzz: seeds {s}..{e} done ({files_done} files, {with_mismatch} with mismatches, {:.0} s)",
            started.elapsed().as_secs_f64()
        );
    }
    for k in 0..2 {
        let _ = std::fs::remove_dir_all(o.out.join(format!("chunk-{k}")));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let meta = json!({
        "seeds": [a, b], "files": files_done, "withMismatch": with_mismatch,
        "seconds": started.elapsed().as_secs_f64().round(),
    });
    std::fs::write(o.out.join("run.json"), format!("{meta}\n"))?;
    println!(
        "difffuzz: {files_done} seeds in {:.0} s, {with_mismatch} with mismatches",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One class: how many seeds show it, the smallest, and an example detail.
#[derive(Default)]
struct Class {
    count: u64,
    smallest: Option<u64>,
    detail: String,
}

/// A short file-name-safe name for a class.
fn slug(class: &str) -> String {
    // Boilerplate of our error messages is not what tells classes apart.
    let mut short = class.to_owned();
    for noise in [
        "<path>: ",
        "entry at offset N: ",
        " at column N",
        "data did not match any variant of untagged enum ",
        "invalid type: T, ",
        "context: entry `…`: ",
    ] {
        short = short.replace(noise, "");
    }
    let mut s: String = short
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s: String = s.trim_matches('-').chars().take(60).collect();
    let h = blake3::hash(class.as_bytes()).to_hex();
    format!("{}-{}", s.trim_end_matches('-'), &h.as_str()[..6])
}

fn summary(o: &Options) -> Result<()> {
    let text = std::fs::read_to_string(o.out.join("results.jsonl"))
        .context("no results.jsonl: run `cargo xtask difffuzz run` first")?;
    let mut classes: BTreeMap<String, Class> = BTreeMap::new();
    let mut divergences: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let (mut files, mut clean, mut min_seed, mut max_seed) = (0u64, 0u64, u64::MAX, 0u64);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line)?;
        let seed = v["seed"].as_u64().unwrap_or(0);
        files += 1;
        min_seed = min_seed.min(seed);
        max_seed = max_seed.max(seed);
        let ms = v["mismatches"].as_array().cloned().unwrap_or_default();
        clean += u64::from(ms.is_empty());
        let mut seen = std::collections::BTreeSet::new();
        for m in ms {
            let class = m["class"].as_str().unwrap_or_default().to_owned();
            if !seen.insert(class.clone()) {
                continue;
            }
            let c = classes.entry(class).or_default();
            c.count += 1;
            if c.smallest.is_none_or(|s| seed < s) {
                c.smallest = Some(seed);
                c.detail = m["detail"].as_str().unwrap_or_default().to_owned();
            }
        }
        for d in v["divergences"].as_array().cloned().unwrap_or_default() {
            let d = d.as_str().unwrap_or_default().to_owned();
            let e = divergences.entry(d).or_insert((0, seed));
            e.0 += 1;
            e.1 = e.1.min(seed);
        }
    }
    let min_dir = o.out.join("min");
    let _ = std::fs::remove_dir_all(&min_dir);
    std::fs::create_dir_all(&min_dir)?;
    let minimal = if o.minimise && !classes.is_empty() {
        minimise(o, &classes, &min_dir)?
    } else {
        BTreeMap::new()
    };
    let mut md = String::new();
    md.push_str(&format!(
        "# difffuzz summary\n\n{files} seeds ({min_seed}..={max_seed}); {clean} without any mismatch; {} mismatch classes.\n\n",
        classes.len()
    ));
    md.push_str("| class | seeds | smallest seed | minimal input |\n|---|---:|---:|---|\n");
    let mut sorted: Vec<(&String, &Class)> = classes.iter().collect();
    sorted.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    let mut js = Vec::new();
    for (class, c) in &sorted {
        let min = minimal.get(*class);
        md.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            class.replace('|', "\\|"),
            c.count,
            c.smallest.unwrap_or(0),
            min.map_or("–".to_owned(), |m| format!(
                "`min/{}.jsonl` ({} lines)",
                m.slug, m.lines
            ))
        ));
        js.push(json!({
            "class": class, "count": c.count, "smallestSeed": c.smallest,
            "detail": c.detail, "minimal": min.map(|m| m.slug.clone()),
        }));
    }
    md.push_str("\n## Divergences (the reference hangs, throws or discards the file)\n\n| divergence | seeds | smallest seed |\n|---|---:|---:|\n");
    for (d, (n, s)) in &divergences {
        md.push_str(&format!("| {} | {n} | {s} |\n", d.replace('|', "\\|")));
    }
    md.push_str("\n## Details of the smallest seeds\n\n");
    for (class, c) in &sorted {
        md.push_str(&format!(
            "- `{class}` (seed {}): {}\n",
            c.smallest.unwrap_or(0),
            c.detail.replace('\n', " ")
        ));
        if let Some(m) = minimal.get(*class) {
            md.push_str(&format!(
                "  minimal:\n\n  ```\n{}\n  ```\n",
                String::from_utf8_lossy(&m.bytes)
                    .lines()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    std::fs::write(o.out.join("summary.md"), &md)?;
    std::fs::write(
        o.out.join("summary.json"),
        serde_json::to_string_pretty(&json!({
            "files": files, "clean": clean, "classes": js,
            "divergences": divergences.iter().map(|(d, (n, s))| json!({"divergence": d, "count": n, "smallestSeed": s})).collect::<Vec<_>>(),
        }))? + "\n",
    )?;
    println!("{md}");
    Ok(())
}

struct Minimal {
    slug: String,
    lines: usize,
    bytes: Vec<u8>,
}

/// Splits a file into lines keeping their terminators (so CRLF, BOM and a missing
/// final newline survive deletion of other lines).
fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            out.push(bytes[start..=i].to_vec());
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out.push(bytes[start..].to_vec());
    }
    out
}

/// Shrinks each class's smallest seed by deleting runs of lines while the class
/// persists (one oracle batch per round for all classes; per class the smallest
/// surviving candidate wins), and writes `min/<slug>.jsonl` with
/// `min/<slug>.oracle.json`.
fn minimise(
    o: &Options,
    classes: &BTreeMap<String, Class>,
    min_dir: &Path,
) -> Result<BTreeMap<String, Minimal>> {
    let peer = peer(o)?;
    let work = o.out.join("minimise");
    let scratch = o.out.join("scratch-min");
    let mut current: BTreeMap<String, Vec<Vec<u8>>> = classes
        .iter()
        .filter_map(|(c, k)| {
            k.smallest
                .map(|s| (c.clone(), split_lines(&generator::generate(s))))
        })
        .collect();
    let mut done: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for round in 0..60 {
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work)?;
        let mut candidates: Vec<(String, Vec<Vec<u8>>, PathBuf)> = Vec::new();
        for (ci, (class, lines)) in current.iter().enumerate() {
            if done.contains(class) || lines.len() <= 1 {
                continue;
            }
            // Remove runs of lines: halves, quarters, … down to single lines, while
            // the round stays under ~64 candidates per class (the header is line 0).
            let n = lines.len();
            let mut size = n.div_ceil(2);
            let mut made = 0;
            loop {
                for start in (0..n).step_by(size) {
                    let mut c = lines.clone();
                    c.drain(start..(start + size).min(n));
                    let p = work.join(format!("{ci}-{size}-{start}.jsonl"));
                    std::fs::write(&p, c.concat())?;
                    candidates.push((class.clone(), c, p));
                    made += 1;
                }
                if size == 1 || made + n.div_ceil(size / 2) > 64 {
                    break;
                }
                size /= 2;
            }
        }
        if candidates.is_empty() {
            break;
        }
        let paths: Vec<PathBuf> = candidates.iter().map(|c| c.2.clone()).collect();
        let theirs = oracle(&peer, &work, &paths)?;
        // The smallest candidate (fewest lines, then bytes) that keeps the class.
        let mut improved: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        for (class, lines, path) in candidates {
            let Some((t, _)) = theirs.get(path.to_string_lossy().as_ref()) else {
                continue;
            };
            let best = &current[&class];
            let key = |l: &Vec<Vec<u8>>| (l.len(), l.iter().map(Vec::len).sum::<usize>());
            if key(&lines) >= key(best) {
                continue;
            }
            let v = view::compare(t, &view::ours(&path, &scratch));
            if v.mismatches.iter().any(|m| m.class() == class) {
                current.insert(class.clone(), lines);
                improved.insert(class);
            }
        }
        for class in current.keys() {
            if !improved.contains(class) {
                done.insert(class.clone());
            }
        }
        eprintln!(
            "difffuzz: minimising, round {round}: {} classes still shrinking",
            improved.len()
        );
        if improved.is_empty() {
            break;
        }
    }
    // Final oracles for the minimal inputs.
    let mut out = BTreeMap::new();
    let mut paths = Vec::new();
    for (class, lines) in &current {
        let s = slug(class);
        let p = min_dir.join(format!("{s}.jsonl"));
        std::fs::write(&p, lines.concat())?;
        paths.push(p);
        out.insert(
            class.clone(),
            Minimal {
                slug: s,
                lines: lines.len(),
                bytes: lines.concat(),
            },
        );
    }
    let theirs = oracle(&peer, min_dir, &paths)?;
    let _ = std::fs::remove_file(min_dir.join("list.txt"));
    for p in &paths {
        if let Some((_, raw)) = theirs.get(p.to_string_lossy().as_ref()) {
            std::fs::write(p.with_extension("oracle.json"), relative_oracle(raw, p)?)?;
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(out)
}

/// An oracle line with its `file` made the file's name (no machine paths committed).
/// The line is re-serialized only when it holds no lone surrogate escapes (serde
/// cannot hold them); otherwise the path is replaced textually.
fn relative_oracle(raw: &str, file: &Path) -> Result<String> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let abs = serde_json::to_string(&file.to_string_lossy())?;
    Ok(raw.replacen(&abs, &serde_json::to_string(&name)?, 1) + "\n")
}

/// Writes the CI replay corpus: the generated inputs of seeds `0..replay` with their
/// oracles (`replay/`), each class's minimal input with its oracle (`classes/`), and
/// the known mismatches of all of them.
fn record(o: &Options) -> Result<()> {
    let root = crate::workspace_root();
    let peer = peer(o)?;
    let fixtures = root.join(FIXTURES);
    let replay = fixtures.join("replay");
    let _ = std::fs::remove_dir_all(&replay);
    std::fs::create_dir_all(&replay)?;
    let files = write_chunk(&replay, 0..o.replay)?;
    let paths: Vec<PathBuf> = files.iter().map(|f| f.1.clone()).collect();
    let theirs = oracle(&peer, &o.out, &paths)?;
    let _ = std::fs::remove_file(o.out.join("list.txt"));
    let mut oracles = String::new();
    for p in &paths {
        let (_, raw) = theirs
            .get(p.to_string_lossy().as_ref())
            .with_context(|| format!("no oracle for {}", p.display()))?;
        oracles.push_str(&relative_oracle(raw, p)?);
    }
    std::fs::write(replay.join("oracles.jsonl"), oracles)?;
    let classes = fixtures.join("classes");
    let min = o.out.join("min");
    if min.is_dir() {
        let _ = std::fs::remove_dir_all(&classes);
        std::fs::create_dir_all(&classes)?;
        for e in std::fs::read_dir(&min)? {
            let p = e?.path();
            if let Some(name) = p.file_name()
                && p.extension().is_some_and(|x| x == "jsonl" || x == "json")
            {
                std::fs::copy(&p, classes.join(name))?;
            }
        }
    }
    let n = write_known(&fixtures)?;
    println!(
        "difffuzz: recorded {} replay inputs and the class fixtures under {}; {n} with known mismatches",
        paths.len(),
        fixtures.display()
    );
    Ok(())
}

/// Every committed input with its oracle: (name, input path, oracle value).
fn committed(fixtures: &Path) -> Result<Vec<(String, PathBuf, Value)>> {
    let mut out = Vec::new();
    let replay = fixtures.join("replay");
    let text = std::fs::read_to_string(replay.join("oracles.jsonl"))?;
    for line in text.lines() {
        let v = view::parse_oracle(line)?;
        let name = v["file"].as_str().unwrap_or_default().to_owned();
        out.push((format!("replay/{name}"), replay.join(&name), v));
    }
    let classes = fixtures.join("classes");
    if classes.is_dir() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&classes)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        names.sort();
        for p in names {
            let n = p.to_string_lossy();
            if n.ends_with(".oracle.json") {
                continue;
            }
            let oracle = std::fs::read_to_string(p.with_extension("oracle.json"))?;
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((
                format!("classes/{name}"),
                p.clone(),
                view::parse_oracle(oracle.trim_end())?,
            ));
        }
    }
    Ok(out)
}

/// Rewrites `known-mismatches.json`: for every committed input whose comparison
/// differs today, its mismatch classes. Returns how many inputs are listed.
fn write_known(fixtures: &Path) -> Result<usize> {
    let scratch = crate::workspace_root().join("target/difffuzz-known");
    let mut known = serde_json::Map::new();
    for (name, path, theirs) in committed(fixtures)? {
        let v = view::compare(&theirs, &view::ours(&path, &scratch));
        let mut classes: Vec<String> = v.mismatches.iter().map(view::Mismatch::class).collect();
        classes.sort();
        classes.dedup();
        if !classes.is_empty() {
            known.insert(name, json!(classes));
        }
    }
    let n = known.len();
    let doc = json!({
        "about": "Mismatches with the reference that are expected today, by committed input (tests/fixtures/difffuzz/README.md). The difffuzz test fails on any other mismatch and on a listed one that no longer occurs; rewrite with `cargo xtask difffuzz known`.",
        "known": known,
    });
    std::fs::write(
        fixtures.join("known-mismatches.json"),
        serde_json::to_string_pretty(&doc)? + "\n",
    )?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed replay inputs are what the generator writes for their seeds: a
    /// change to the generator must be deliberate (re-record with `cargo xtask
    /// difffuzz record`), never silent.
    #[test]
    fn committed_replay_inputs_are_the_generators_output() {
        let replay = crate::workspace_root().join(FIXTURES).join("replay");
        let mut checked = 0;
        for e in std::fs::read_dir(&replay).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let Some(seed) = name
                .strip_suffix(".jsonl")
                .and_then(|s| s.parse::<u64>().ok())
            else {
                continue;
            };
            assert_eq!(
                std::fs::read(&p).unwrap(),
                generator::generate(seed),
                "{name} differs from the generator's output for seed {seed}"
            );
            checked += 1;
        }
        assert!(checked >= 300, "{checked} replay inputs");
    }

    #[test]
    fn slugs_are_file_names() {
        let s = slug("context: ours fails: <path>: <path>: entry at offset N: `message` entry");
        assert!(s.starts_with("context-ours-fails-message-entry-"), "{s}");
        assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }

    #[test]
    fn lines_keep_their_terminators() {
        assert_eq!(
            split_lines(b"a\r\nb\nc"),
            vec![b"a\r\n".to_vec(), b"b\n".to_vec(), b"c".to_vec()]
        );
    }
}
