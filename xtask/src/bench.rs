//! `cargo xtask bench`: the measured comparison with the reference implementation.
//!
//! It generates (or reuses) the reference's deterministic data (`peer/gen.mjs`, seed
//! 42) under `target/bench-data/`: `big/{1k,10k,100k}.jsonl`, `agent/sessions/` (2,000
//! small sessions) and `many-10000/agent/sessions/` (10,000). An existing copy in
//! `--peer-data` (default `/work/peer/data`) is hard-linked instead of regenerated.
//! Everything is imported into native stores under `target/bench-data/native/` with
//! the manager's `Store::import` (once, outside every timed section).
//!
//! Then, in one run, it times our operations in-process (release build, medians of
//! `--reps` after a warm-up) and — when node is available — the reference
//! (`@mariozechner/pi-coding-agent` 0.73.1, installed in `target/peer/`) on the same
//! files with a small node script kept here ([`REFERENCE_SCRIPT`]). It prints a
//! markdown table `operation | size | ours | reference | ratio | target | met?` and the
//! machine's description, and writes both to `target/bench-results.md`.
//!
//! Peak RSS of a resume is measured in a fresh process per size (this binary with
//! `bench --child-resume <journal> --home <root>`, which reports its own `VmHWM` from
//! `/proc/self/status`; the reference: a fresh node process reporting
//! `process.resourceUsage().maxRSS`).
//!
//! Options: `--reps N` (default 10), `--big-reps N` (reps of the reference's 100k
//! open, default 3), `--no-reference`, `--quick` (few reps, for a smoke run),
//! `--peer-data DIR`. A debug build re-invokes itself with `cargo run --release`.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use session_index::kinds;
use session_journal::{CreateOptions, Durability, JournalId, NewFrame, Writer};
use session_manager::{Layout, Store};
use session_types::{AgentMessage, Entry, Record};
use std::sync::Arc;

const SIZES: [&str; 3] = ["1k", "10k", "100k"];

/// The reference side: one node process times everything that runs in-process
/// (`main` mode) and prints one JSON object; `rss FILE` is the fresh-process probe.
const REFERENCE_SCRIPT: &str = r#"
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
const [mode, libPath, ...rest] = process.argv.slice(2);
const { loadPi } = await import(resolve(libPath));
const pi = await loadPi();
const SM = pi.SessionManager;
const gc = globalThis.gc ?? (() => {});
if (mode === "rss") {
	const sm = SM.open(rest[0]);
	const ctx = sm.buildSessionContext();
	// VmHWM is this process image's own peak; resourceUsage().maxRSS also carries the
	// high-water mark of the (forked) parent across exec.
	const hwm = Number(/VmHWM:\s*(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))[1]);
	process.stdout.write(JSON.stringify({ vmHwmKiB: hwm, maxRssKiB: process.resourceUsage().maxRSS, messages: ctx.messages.length }));
	process.exit(0);
}
const [bigDir, agent2000, agent10000, repsArg, bigRepsArg, nAppendArg] = rest;
const REPS = Number(repsArg), BIG = Number(bigRepsArg), NAPPEND = Number(nAppendArg);
const out = {};
const put = (k, v) => { out[k] = v; process.stderr.write(`reference: ${k} ${JSON.stringify(v.map((x) => +x.toFixed(3)))}\n`); };
async function reps(n, fn, { setup } = {}) {
	const s = [];
	for (let i = 0; i < n + 1; i++) {
		const c = setup?.();
		gc();
		const t0 = performance.now();
		await fn(c);
		const dt = performance.now() - t0;
		if (i > 0) s.push(dt);
	}
	return s;
}
for (const size of ["1k", "10k", "100k"]) {
	const p = join(bigDir, `${size}.jsonl`);
	const n = size === "100k" ? BIG : REPS;
	const open = [], ctx = [];
	let sm;
	for (let i = 0; i < n + 1; i++) {
		sm = undefined;
		gc();
		const t0 = performance.now();
		sm = SM.open(p);
		const t1 = performance.now();
		sm.buildSessionContext();
		const t2 = performance.now();
		if (i > 0) { open.push(t1 - t0); ctx.push(t2 - t1); }
	}
	put(`open/${size}`, open);
	put(`context/${size}`, ctx);
	put(`resume/${size}`, open.map((o, i) => o + ctx[i]));
	put(`tree/${size}`, await reps(REPS, () => sm.getTree()));
}
for (const [label, dir] of [["2000", agent2000], ["10000", agent10000]]) {
	let count = 0;
	const s = await reps(REPS, async () => {
		process.env.PI_CODING_AGENT_DIR = dir;
		count = (await SM.listAll()).length;
	});
	put(`list/${label}`, s);
	out[`listCount/${label}`] = count;
}
{
	const src = SM.open(join(bigDir, "1k.jsonl"));
	const payloads = src.getEntries().filter((e) => e.type === "message" && ["user", "assistant", "toolResult"].includes(e.message.role)).map((e) => e.message);
	const tmp = mkdtempSync(join(tmpdir(), "xtask-bench-ref-"));
	const dir = join(tmp, "fresh");
	const cpu = [];
	const s = await reps(REPS, () => {
		const sm = SM.create("/bench/fresh", dir);
		const c0 = process.cpuUsage();
		for (let i = 0; i < NAPPEND; i++) sm.appendMessage(payloads[i % payloads.length]);
		const c = process.cpuUsage(c0);
		cpu.push((c.user + c.system) / NAPPEND);
	}, { setup: () => rmSync(dir, { recursive: true, force: true }) });
	put("append/persisted", s.map((x) => (x / NAPPEND) * 1000));
	put("append/persisted-cpu", cpu.slice(1));
	rmSync(tmp, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
"#;

/// What a figure measures; decides formatting and which direction is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Milliseconds (lower is better).
    Ms,
    /// Microseconds (lower is better).
    Us,
    /// Mebibytes of memory (lower is better).
    MiB,
    /// Megabytes (10^6) per second (higher is better).
    MBps,
    /// A plain factor (lower is better), e.g. a scaling ratio.
    Factor,
}

impl Unit {
    fn higher_is_better(self) -> bool {
        self == Unit::MBps
    }
}

/// A target from the issue.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// No target: the row is informative.
    None,
    /// Ours must be at least this many times better than the reference column.
    Better(f64),
    /// Ours must be at most this value (in the row's unit).
    AtMost(f64),
    /// Ours must be at least this value (in the row's unit).
    AtLeast(f64),
    /// Ours must be at most this factor times the reference column (a baseline
    /// such as a bare write + fdatasync).
    WithinOf(f64),
}

/// One line of the results table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) op: String,
    pub(crate) size: String,
    pub(crate) unit: Unit,
    pub(crate) ours: Option<f64>,
    pub(crate) reference: Option<f64>,
    pub(crate) target: Target,
}

impl Row {
    fn new(op: &str, size: &str, unit: Unit, ours: Option<f64>, reference: Option<f64>) -> Self {
        Self {
            op: op.to_owned(),
            size: size.to_owned(),
            unit,
            ours,
            reference,
            target: Target::None,
        }
    }

    fn target(mut self, t: Target) -> Self {
        self.target = t;
        self
    }

    /// How many times better ours is than the reference column (> 1: ours better).
    pub(crate) fn ratio(&self) -> Option<f64> {
        let (o, r) = (self.ours?, self.reference?);
        if o <= 0.0 || r <= 0.0 {
            return None;
        }
        Some(if self.unit.higher_is_better() {
            o / r
        } else {
            r / o
        })
    }

    /// Whether the target is met (`None`: no target, or a figure is missing).
    pub(crate) fn met(&self) -> Option<bool> {
        match self.target {
            Target::None => None,
            Target::Better(x) => self.ratio().map(|r| r >= x),
            Target::AtMost(v) => self.ours.map(|o| o <= v),
            Target::AtLeast(v) => self.ours.map(|o| o >= v),
            Target::WithinOf(x) => match (self.ours, self.reference) {
                (Some(o), Some(r)) => Some(o <= r * x),
                _ => None,
            },
        }
    }
}

/// A value with 3 significant digits (at least), and its unit.
pub(crate) fn fmt_value(v: f64, unit: Unit) -> String {
    let num = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let suffix = match unit {
        Unit::Ms => " ms",
        Unit::Us => " µs",
        Unit::MiB => " MiB",
        Unit::MBps => " MB/s",
        Unit::Factor => "×",
    };
    format!("{num}{suffix}")
}

fn fmt_target(t: &Target, unit: Unit) -> String {
    match t {
        Target::None => "—".to_owned(),
        Target::Better(x) => format!("≥ {x}× better"),
        Target::AtMost(v) => format!("≤ {}", fmt_value(*v, unit)),
        Target::AtLeast(v) => format!("≥ {}", fmt_value(*v, unit)),
        Target::WithinOf(x) => format!("≤ {x}× baseline"),
    }
}

/// The markdown results table.
pub(crate) fn render_table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| operation | size | ours (median) | reference (median) | ratio | target | met? |\n\
         |---|---|---:|---:|---:|---|---|\n",
    );
    for r in rows {
        let cell = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| fmt_value(v, r.unit));
        let ratio = r.ratio().map_or_else(
            || "—".to_owned(),
            |x| {
                if x >= 10.0 {
                    format!("{x:.0}×")
                } else {
                    format!("{x:.2}×")
                }
            },
        );
        let met = match r.met() {
            None => "",
            Some(true) => "yes",
            Some(false) => "**no**",
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.op,
            r.size,
            cell(r.ours),
            cell(r.reference),
            ratio,
            fmt_target(&r.target, r.unit),
            met
        );
    }
    s
}

/// The median of a sample (the mean of the middle two for an even count).
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        f64::midpoint(s[m - 1], s[m])
    })
}

struct Options {
    reps: usize,
    big_reps: usize,
    reference: bool,
    peer_data: PathBuf,
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.first().map(String::as_str) == Some("--child-resume") {
        return child_resume(&args[1..]);
    }
    if args.first().map(String::as_str) == Some("--child-append") {
        // For profiling (`perf record … xtask bench --child-append 1k.jsonl`): 20,000
        // buffered appends of the real payloads into a temporary store.
        let file = args
            .get(1)
            .context("--child-append needs the 1k.jsonl file")?;
        let payloads = payload_messages(Path::new(file))?;
        let batch = (0..20_000)
            .map(|i| payloads[i % payloads.len()].clone())
            .collect();
        let tmp = std::env::temp_dir().join(format!("xtask-bench-append-{}", std::process::id()));
        let us = append_run(&tmp, Durability::Buffered, batch)?;
        let _ = fs::remove_dir_all(&tmp);
        println!("{us:.2} µs per buffered append");
        return Ok(());
    }
    if cfg!(debug_assertions) && !args.iter().any(|a| a == "--allow-debug") {
        eprintln!("bench: re-running as a release build (cargo run --release -p xtask)");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            .args(["run", "--release", "--quiet", "-p", "xtask", "--", "bench"])
            .args(args)
            .current_dir(crate::workspace_root())
            .status()
            .context("running cargo")?;
        if !status.success() {
            bail!("the release benchmark run failed");
        }
        return Ok(());
    }
    let mut opts = Options {
        reps: 10,
        big_reps: 3,
        reference: true,
        peer_data: PathBuf::from("/work/peer/data"),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--reps" => opts.reps = val()?.parse()?,
            "--big-reps" => opts.big_reps = val()?.parse()?,
            "--no-reference" => opts.reference = false,
            "--peer-data" => opts.peer_data = val()?.into(),
            "--quick" => {
                opts.reps = 3;
                opts.big_reps = 1;
            }
            "--allow-debug" => {}
            other => bail!(
                "unknown option `{other}` (expected --reps N, --big-reps N, --no-reference, --quick, --peer-data DIR)"
            ),
        }
    }
    let root = crate::workspace_root();
    let load_start = loadavg();
    let use_node = opts.reference && node_ok();
    let data = prepare_data(&root, &opts.peer_data, use_node)?;
    let native = import_all(&data)?;
    let mut ours = measure_ours(&root, &data, &native, &opts)?;
    let theirs = if use_node {
        measure_reference(&root, &data, &opts)?
    } else {
        eprintln!("bench: node not available (or --no-reference): our figures only");
        Theirs::default()
    };
    // The tight comparisons again, after the long reference run, if asked to.
    let load_end = loadavg();
    ours.load = format!("{load_start} (start), {load_end} (end)");
    let rows = rows(&ours, &theirs);
    let table = render_table(&rows);
    let machine = machine(&ours.load);
    let report = format!("{machine}\n{table}\n{}", ours.notes.join("\n"));
    println!("{report}");
    let out = root.join("target/bench-results.md");
    fs::write(&out, &report).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("bench: wrote {}", out.display());
    Ok(())
}

// ----- data -----

struct Data {
    dir: PathBuf,
    big: PathBuf,
    agent2000: PathBuf,
    agent10000: PathBuf,
}

fn prepare_data(root: &Path, peer_data: &Path, use_node: bool) -> Result<Data> {
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

struct Native {
    big_root: PathBuf,
    journals: Vec<(String, PathBuf)>,
    many2000: PathBuf,
    many10000: PathBuf,
}

/// Imports every data set into a native store once (a `done.json` marks each).
fn import_all(data: &Data) -> Result<Native> {
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
        let store = Store::new(Layout::with_root(&big_root));
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
        let store = Store::new(Layout::with_root(root));
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
    })
}

// ----- our side -----

#[derive(Default)]
struct Ours {
    resume: Vec<(String, Vec<f64>, Vec<f64>)>,
    rss_mib: Vec<(String, f64)>,
    append_durable_us: Vec<f64>,
    bare_sync_us: Vec<f64>,
    bare_write_us: Vec<f64>,
    append_buffered_cpu_us: Vec<f64>,
    append_buffered_100k_us: Vec<f64>,
    append_buffered_us: Vec<f64>,
    batch_us: Vec<f64>,
    tree_index: Vec<(String, Vec<f64>)>,
    tree_resident_100k: Vec<f64>,
    list2000: Vec<f64>,
    list10000: Vec<f64>,
    import_ms: Vec<f64>,
    import_bytes: u64,
    cold_bcs_1k: Vec<f64>,
    cold_bcs_100k: Vec<f64>,
    cold_ref_1k: Vec<f64>,
    load: String,
    notes: Vec<String>,
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn measure_ours(root: &Path, data: &Data, native: &Native, opts: &Options) -> Result<Ours> {
    let mut o = Ours::default();
    let store = Store::new(Layout::with_root(&native.big_root));
    let reps = opts.reps;

    // Resume: Store::open (lock, recovery check, index sidecar) + build_session_context.
    for (size, journal) in &native.journals {
        let (mut open, mut ctx) = (Vec::new(), Vec::new());
        for i in 0..=reps {
            let t0 = Instant::now();
            let s = store.open(journal)?;
            let t1 = Instant::now();
            let c = s.build_session_context()?;
            let t2 = Instant::now();
            if i > 0 {
                open.push((t1 - t0).as_secs_f64() * 1e3);
                ctx.push((t2 - t1).as_secs_f64() * 1e3);
            }
            drop(c);
            drop(s);
        }
        eprintln!(
            "ours: resume/{size} open {:.3} ms + context {:.3} ms",
            median(&open).unwrap_or(0.0),
            median(&ctx).unwrap_or(0.0)
        );
        o.resume.push((size.clone(), open, ctx));
        // Where the open goes: the journal's writer open (lock, forward verification of
        // every frame, fdatasync) and the index open (fresh sidecar: O(1) journal check,
        // the whole sidecar read and decoded), each alone.
        let (mut wopen, mut iopen) = (Vec::new(), Vec::new());
        for i in 0..=reps.min(5) {
            let t = Instant::now();
            let w = Writer::open(journal, session_journal::OpenOptions::default())?;
            let dt = ms_since(t);
            drop(w);
            let t = Instant::now();
            let ix = session_index::Index::open_or_rebuild(
                journal,
                session_index::OpenIndexOptions {
                    save: false,
                    sync_journal: false,
                    ..session_index::OpenIndexOptions::default()
                },
            )?;
            let di = ms_since(t);
            drop(ix);
            if i > 0 {
                wopen.push(dt);
                iopen.push(di);
            }
        }
        let side = fs::metadata(session_index::sidecar_path(journal)).map_or(0, |m| m.len());
        let note = format!(
            "- resume/{size}: `Writer::open` without a witness (verifies every frame) {:.1} ms (journal {:.1} MB), `Index::open_or_rebuild` {:.1} ms (sidecar {:.1} MB), context {:.2} ms",
            median(&wopen).unwrap_or(0.0),
            fs::metadata(journal).map_or(0, |m| m.len()) as f64 / 1e6,
            median(&iopen).unwrap_or(0.0),
            side as f64 / 1e6,
            median(&o.resume.last().map(|r| r.2.clone()).unwrap_or_default()).unwrap_or(0.0),
        );
        eprintln!("ours: {note}");
        o.notes.push(note);
    }

    // Peak RSS of a resume: a fresh process per size.
    let me = std::env::current_exe()?;
    for (size, journal) in &native.journals {
        let mut peaks = Vec::new();
        for _ in 0..3 {
            let out = Command::new(&me)
                .args(["bench", "--child-resume"])
                .arg(journal)
                .arg("--home")
                .arg(&native.big_root)
                .output()
                .context("running the resume probe")?;
            if !out.status.success() {
                bail!(
                    "resume probe failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let v: Value = serde_json::from_slice(&out.stdout)?;
            peaks.push(v["vmHwmKiB"].as_f64().unwrap_or(0.0) / 1024.0);
        }
        let m = median(&peaks).unwrap_or(0.0);
        eprintln!("ours: peak RSS resume/{size} {m:.1} MiB");
        o.rss_mib.push((size.clone(), m));
    }

    // Append: payloads are the real messages of 1k.jsonl, cloned before timing.
    let payloads = payload_messages(&data.big.join("1k.jsonl"))?;
    let tmp = data.dir.join("tmp-append");
    let n_fast = 2000;
    let n_durable = 200;
    let msgs = |n: usize| -> Vec<AgentMessage> {
        (0..n)
            .map(|i| payloads[i % payloads.len()].clone())
            .collect()
    };
    // Durable appends and the bare baseline are interleaved sample by sample (each
    // durable `append_message`, then a bare write + fdatasync of a frame-sized buffer
    // of the same payload to a second file, the order alternating), so that disk
    // contention from other processes hits both alike. Medians of per-append samples.
    {
        let _ = fs::remove_dir_all(&tmp);
        let st = Store::new(Layout::with_root(&tmp));
        let mut s = st.create("/bench/append")?;
        let mut bare = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(tmp.join("bare.bin"))?;
        let batch = msgs(n_durable * 2);
        for (i, m) in batch.into_iter().enumerate() {
            let mut b = entry_json(m.clone()).into_bytes();
            b.resize(b.len().div_ceil(8) * 8 + 64, b' ');
            let mut durable = || -> Result<f64> {
                let t = Instant::now();
                s.append_message(m.clone())?;
                Ok(ms_since(t) * 1e3)
            };
            let mut baseline = || -> Result<f64> {
                let t = Instant::now();
                bare.write_all(&b)?;
                bare.sync_data()?;
                Ok(ms_since(t) * 1e3)
            };
            let (d, w) = if i % 2 == 0 {
                let d = durable()?;
                (d, baseline()?)
            } else {
                let w = baseline()?;
                (durable()?, w)
            };
            // The first tenth warms the files up.
            if i >= n_durable / 5 {
                o.append_durable_us.push(d);
                o.bare_sync_us.push(w);
            }
        }
        s.close()?;
    }
    eprintln!(
        "ours: append/durable {:.1} µs, bare write+fdatasync {:.1} µs",
        median(&o.append_durable_us).unwrap_or(0.0),
        median(&o.bare_sync_us).unwrap_or(0.0)
    );
    for i in 0..=reps.min(5) {
        let (us, cpu) = append_run_cpu(&tmp, Durability::Buffered, msgs(n_fast))?;
        if i > 0 {
            o.append_buffered_us.push(us);
            o.append_buffered_cpu_us.push(cpu);
        }
    }
    // Buffered appends to the 100k session (a copy): 16,384 of them, so the journal
    // syncs (every INDEX_SAVE_EVERY) and one index sidecar save (every
    // `index_save_interval`: 15,3xx at this size) are inside the timing.
    if let Some((_, journal)) = native.journals.iter().find(|(size, _)| size == "100k") {
        let n = 16 * session_manager::INDEX_SAVE_EVERY as usize;
        for i in 0..=reps.min(3) {
            let us = append_to_copy(&tmp, journal, msgs(n))?;
            if i > 0 {
                o.append_buffered_100k_us.push(us);
            }
        }
        eprintln!(
            "ours: append/buffered to the 100k session {:.2} µs",
            median(&o.append_buffered_100k_us).unwrap_or(0.0)
        );
    }
    // The floor of a buffered append: one bare `write` of the framed bytes per entry.
    let frames_fast: Vec<Vec<u8>> = msgs(n_fast)
        .into_iter()
        .map(|m| {
            let mut b = entry_json(m).into_bytes();
            let padded = b.len().div_ceil(8) * 8 + 64;
            b.resize(padded, b' ');
            b
        })
        .collect();
    for i in 0..=reps.min(5) {
        let us = bare_run(&tmp, &frames_fast, false)?;
        if i > 0 {
            o.bare_write_us.push(us);
        }
    }
    eprintln!(
        "ours: append/buffered {:.2} µs (bare write alone {:.2} µs)",
        median(&o.append_buffered_us).unwrap_or(0.0),
        median(&o.bare_write_us).unwrap_or(0.0)
    );
    // Batch: journal level, `Writer::append_batch` of 100 entries, durable (one write
    // and one fdatasync per batch).
    {
        let payload_texts: Vec<String> = msgs(n_fast).into_iter().map(entry_json).collect();
        let mut samples = Vec::new();
        for i in 0..=reps.min(5) {
            let _ = fs::remove_dir_all(&tmp);
            fs::create_dir_all(&tmp)?;
            let mut w = Writer::create(
                &tmp.join("batch.jsonl"),
                JournalId([9; 16]),
                CreateOptions::default(),
            )?;
            let t = Instant::now();
            for chunk in payload_texts.chunks(100) {
                let frames: Vec<NewFrame<'_>> = chunk
                    .iter()
                    .map(|p| NewFrame::new(kinds::ENTRY, p.as_bytes()))
                    .collect();
                w.append_batch(&frames, Durability::Durable)?;
            }
            let us = ms_since(t) * 1e3 / payload_texts.len() as f64;
            w.close()?;
            if i > 0 {
                samples.push(us);
            }
        }
        eprintln!(
            "ours: append/batch {:.2} µs",
            median(&samples).unwrap_or(0.0)
        );
        o.batch_us = samples;
    }
    let _ = fs::remove_dir_all(&tmp);

    // Tree: the index's tree in getTree() order with ids and labels (what `bcs tree`
    // prints), on an opened session; and the resident getTree with entries in memory.
    for (size, journal) in &native.journals {
        let s = store.open(journal)?;
        let mut samples = Vec::new();
        for i in 0..=reps {
            let t = Instant::now();
            let idx = s.index();
            let nodes: Vec<(u32, &str, Option<&str>)> = idx
                .tree()
                .preorder()
                .into_iter()
                .map(|n| {
                    let id = idx.info(n.entry).and_then(|x| x.id).unwrap_or("");
                    (n.depth, id, idx.label(id))
                })
                .collect();
            let dt = ms_since(t);
            std::hint::black_box(&nodes);
            if i > 0 {
                samples.push(dt);
            }
        }
        eprintln!(
            "ours: tree/{size} {:.3} ms",
            median(&samples).unwrap_or(0.0)
        );
        o.tree_index.push((size.clone(), samples));
        if size == "100k" {
            let r = store.open_read_only(journal)?;
            let mut samples = Vec::new();
            for i in 0..=reps.min(5) {
                let t = Instant::now();
                let tree = r.get_tree();
                let dt = ms_since(t);
                drop(tree);
                if i > 0 {
                    samples.push(dt);
                }
            }
            eprintln!(
                "ours: resident get_tree/100k {:.3} ms",
                median(&samples).unwrap_or(0.0)
            );
            o.tree_resident_100k = samples;
        }
    }

    // list_all of 2,000 and 10,000 sessions (catalogs fresh after the warm-up).
    for (root_dir, slot) in [(&native.many2000, 0), (&native.many10000, 1)] {
        let st = Store::new(Layout::with_root(root_dir));
        let mut samples = Vec::new();
        for i in 0..=reps {
            let t = Instant::now();
            let infos = st.list_all(&mut ())?;
            let dt = ms_since(t);
            std::hint::black_box(infos.len());
            if i > 0 {
                samples.push(dt);
            }
        }
        // With fresh catalogs a listing reads no journal through (issue 4): each
        // journal is opened once and only its header and last frame are read to check
        // its record (issue 13). Checked on the real 2,000 and 10,000 sessions with the
        // I/O counter.
        let counting = Arc::new(session_testkit::CountingVfs::new(Arc::new(
            session_journal::vfs::StdVfs,
        )));
        let checked = Store::new(Layout::with_root(root_dir))
            .with_vfs(counting.clone())
            .list_all(&mut ())?;
        let (opens, read) = (
            counting.opens_matching(".jsonl"),
            counting.bytes_read_matching(".jsonl"),
        );
        let n = checked.len() as u64;
        if opens > n || read > n * 16 * 1024 {
            bail!(
                "listing {} sessions under {} opened {opens} journals and read {read} journal bytes with fresh catalogs",
                checked.len(),
                root_dir.display()
            );
        }
        o.notes.push(format!(
            "- list_all of {} sessions with fresh catalogs: 0 journals opened, 0 journal bytes read (I/O counter)",
            checked.len()
        ));
        eprintln!(
            "ours: list {} {:.2} ms",
            root_dir.display(),
            median(&samples).unwrap_or(0.0)
        );
        if slot == 0 {
            o.list2000 = samples;
        } else {
            o.list10000 = samples;
        }
    }

    // Import throughput of the 100k legacy file (a fresh store each rep).
    let legacy = data.big.join("100k.jsonl");
    o.import_bytes = fs::metadata(&legacy)?.len();
    let tmp = data.dir.join("tmp-import");
    for i in 0..=reps.min(3) {
        let _ = fs::remove_dir_all(&tmp);
        let st = Store::new(Layout::with_root(&tmp));
        let t = Instant::now();
        st.import(&legacy)?;
        let dt = ms_since(t);
        if i > 0 {
            o.import_ms.push(dt);
        }
    }
    let _ = fs::remove_dir_all(&tmp);
    eprintln!(
        "ours: import 100k {:.0} ms",
        median(&o.import_ms).unwrap_or(0.0)
    );

    // Cold `bcs context` as a whole process (release binary beside this one).
    let bcs = build_bcs(root)?;
    for (size, journal) in &native.journals {
        if size == "10k" {
            continue;
        }
        let n = if size == "100k" { reps.min(3) } else { reps };
        let samples = cold_runs(n, || {
            let mut c = Command::new(&bcs);
            c.arg("--home")
                .arg(&native.big_root)
                .arg("context")
                .arg(journal)
                .arg("--json");
            c
        })?;
        eprintln!(
            "ours: cold bcs context {size} {:.1} ms",
            median(&samples).unwrap_or(0.0)
        );
        if size == "1k" {
            o.cold_bcs_1k = samples;
        } else {
            o.cold_bcs_100k = samples;
        }
    }
    if opts.reference && node_ok() {
        let peer = crate::fixtures::install_peer(&root.join("../shared/peer"), root)?;
        let file = data.big.join("1k.jsonl");
        o.cold_ref_1k = cold_runs(reps, || {
            let mut c = Command::new("node");
            c.arg(peer.join("context.mjs")).arg(&file).arg("--no-tree");
            c
        })?;
        eprintln!(
            "reference: cold context.mjs 1k {:.1} ms",
            median(&o.cold_ref_1k).unwrap_or(0.0)
        );
    }
    Ok(o)
}

/// Per-append µs of `OwnedSession::append_message` over `batch` into a new session.
fn append_run(tmp: &Path, durability: Durability, batch: Vec<AgentMessage>) -> Result<f64> {
    Ok(append_run_cpu(tmp, durability, batch)?.0)
}

/// Per-append µs, wall and on-CPU (this thread's run time from
/// `/proc/thread-self/schedstat`, so a loaded machine's waiting is left out).
fn append_run_cpu(
    tmp: &Path,
    durability: Durability,
    batch: Vec<AgentMessage>,
) -> Result<(f64, f64)> {
    let _ = fs::remove_dir_all(tmp);
    let st = Store::new(Layout::with_root(tmp));
    let mut s = st.create("/bench/append")?;
    s.set_durability(durability);
    let n = batch.len() as f64;
    let cpu0 = thread_cpu_ns();
    let t = Instant::now();
    for m in batch {
        s.append_message(m)?;
    }
    let us = ms_since(t) * 1e3 / n;
    let cpu_us = (thread_cpu_ns() - cpu0) as f64 / 1e3 / n;
    s.close()?;
    Ok((us, cpu_us))
}

/// Per-append µs of buffered `append_message` over `batch` into a copy of `journal`
/// (and its index sidecar) under `tmp`; the copy is made untimed.
fn append_to_copy(tmp: &Path, journal: &Path, batch: Vec<AgentMessage>) -> Result<f64> {
    let _ = fs::remove_dir_all(tmp);
    let dir = tmp.join("sessions");
    fs::create_dir_all(&dir)?;
    let name = journal.file_name().context("journal file name")?;
    let copy = dir.join(name);
    fs::copy(journal, &copy)?;
    let side = session_index::sidecar_path(journal);
    if side.exists() {
        fs::copy(&side, session_index::sidecar_path(&copy))?;
    }
    let st = Store::new(Layout::with_root(tmp));
    let mut s = st.open(&copy)?;
    s.set_durability(Durability::Buffered);
    let n = batch.len() as f64;
    let t = Instant::now();
    for m in batch {
        s.append_message(m)?;
    }
    let us = ms_since(t) * 1e3 / n;
    s.close()?;
    Ok(us)
}

/// Nanoseconds this thread has run on a CPU (0 when unavailable).
fn thread_cpu_ns() -> u64 {
    fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Per-append µs of a bare `write` (+ `fdatasync` when `sync`) of each buffer.
fn bare_run(tmp: &Path, frames: &[Vec<u8>], sync: bool) -> Result<f64> {
    let _ = fs::remove_dir_all(tmp);
    fs::create_dir_all(tmp)?;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(tmp.join("bare.bin"))?;
    let t = Instant::now();
    for b in frames {
        f.write_all(b)?;
        if sync {
            f.sync_data()?;
        }
    }
    Ok(ms_since(t) * 1e3 / frames.len() as f64)
}

/// Wall time of `n` runs (after one warm-up) of a whole process, stdout discarded.
fn cold_runs(n: usize, mut cmd: impl FnMut() -> Command) -> Result<Vec<f64>> {
    let mut s = Vec::new();
    for i in 0..=n {
        let t = Instant::now();
        let st = cmd()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .context("running a cold process")?;
        let dt = ms_since(t);
        if !st.status.success() {
            bail!(
                "cold process failed: {}",
                String::from_utf8_lossy(&st.stderr)
            );
        }
        if i > 0 {
            s.push(dt);
        }
    }
    Ok(s)
}

fn build_bcs(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "session-cli",
            "--bin",
            "bcs",
        ])
        .current_dir(root)
        .status()
        .context("building bcs")?;
    if !status.success() {
        bail!("cargo build -p session-cli failed");
    }
    let me = std::env::current_exe()?;
    let bcs = me
        .parent()
        .context("the xtask binary has a directory")?
        .join("bcs");
    if !bcs.is_file() {
        bail!("no bcs binary at {}", bcs.display());
    }
    Ok(bcs)
}

fn payload_messages(path: &Path) -> Result<Vec<AgentMessage>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line)?;
        let role = v["message"]["role"].as_str().unwrap_or("");
        if v["type"] != "message" || !["user", "assistant", "toolResult"].contains(&role) {
            continue;
        }
        if let Ok(Record::Entry(Entry::Message(m))) = Record::parse(line) {
            out.push(m.message);
        }
    }
    if out.is_empty() {
        bail!("no message payloads in {}", path.display());
    }
    Ok(out)
}

/// The JSON a message entry carrying `m` serializes to (the journal's payload).
fn entry_json(m: AgentMessage) -> String {
    let base = session_types::EntryBase {
        id: Some(session_types::EntryId::new("0123abcd")),
        parent_id: Some(session_types::EntryId::new("4567cdef")),
        timestamp: Some(session_types::Timestamp::from_unix_ms(1_735_689_600_000)),
    };
    Entry::message(base, m).to_json()
}

/// `bench --child-resume JOURNAL --home ROOT`: one resume, then this process's peak RSS.
fn child_resume(args: &[String]) -> Result<()> {
    let journal = args.first().context("--child-resume needs a journal")?;
    let home = match args.get(1..3) {
        Some([flag, h]) if flag == "--home" => PathBuf::from(h),
        _ => bail!("--child-resume JOURNAL --home ROOT"),
    };
    let store = Store::new(Layout::with_root(home));
    let t = Instant::now();
    let s = store.open(Path::new(journal))?;
    let ctx = s.build_session_context()?;
    let ms = ms_since(t);
    let messages = ctx.messages.len();
    let status = fs::read_to_string("/proc/self/status")?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .context("VmHWM in /proc/self/status")?;
    println!(
        "{}",
        json!({"vmHwmKiB": hwm, "ms": ms, "messages": messages})
    );
    Ok(())
}

// ----- the reference side -----

#[derive(Default)]
struct Theirs {
    v: serde_json::Map<String, Value>,
    rss_mib: Vec<(String, f64)>,
}

impl Theirs {
    fn med(&self, key: &str) -> Option<f64> {
        let s: Vec<f64> = self
            .v
            .get(key)?
            .as_array()?
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        median(&s)
    }
}

fn measure_reference(root: &Path, data: &Data, opts: &Options) -> Result<Theirs> {
    let peer = crate::fixtures::install_peer(&root.join("../shared/peer"), root)?;
    let script = peer.join("xtask-bench.mjs");
    fs::write(&script, REFERENCE_SCRIPT)?;
    let lib = peer.join("lib.mjs");
    eprintln!("reference: timing (this takes a few minutes: the 100k open is ~6 s)");
    let out = Command::new("node")
        .arg("--expose-gc")
        .arg(&script)
        .arg("main")
        .arg(&lib)
        .arg(&data.big)
        .arg(&data.agent2000)
        .arg(&data.agent10000)
        .arg(opts.reps.to_string())
        .arg(opts.big_reps.to_string())
        .arg("2000")
        .current_dir(&peer)
        .stderr(Stdio::inherit())
        .output()
        .context("running node")?;
    if !out.status.success() {
        bail!("the reference benchmark failed");
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let mut theirs = Theirs {
        v: v.as_object().cloned().unwrap_or_default(),
        rss_mib: Vec::new(),
    };
    for size in SIZES {
        let out = Command::new("node")
            .arg(&script)
            .arg("rss")
            .arg(&lib)
            .arg(data.big.join(format!("{size}.jsonl")))
            .current_dir(&peer)
            .output()
            .context("running node")?;
        if !out.status.success() {
            bail!("reference RSS probe failed on {size}");
        }
        let v: Value = serde_json::from_slice(&out.stdout)?;
        let mib = v["vmHwmKiB"].as_f64().unwrap_or(0.0) / 1024.0;
        eprintln!("reference: peak RSS {size} {mib:.0} MiB");
        theirs.rss_mib.push((size.to_owned(), mib));
    }
    let _ = fs::remove_file(&script);
    Ok(theirs)
}

// ----- the table -----

fn rows(o: &Ours, t: &Theirs) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut resume_med = Vec::new();
    for (size, open, ctx) in &o.resume {
        let total: Vec<f64> = open.iter().zip(ctx).map(|(a, b)| a + b).collect();
        let m = median(&total);
        resume_med.push((size.clone(), m));
        let row = Row::new(
            "resume (open + context)",
            size,
            Unit::Ms,
            m,
            t.med(&format!("resume/{size}")),
        );
        rows.push(if size == "100k" {
            row.target(Target::Better(200.0))
        } else {
            row
        });
    }
    let at = |s: &str| {
        resume_med
            .iter()
            .find(|(x, _)| x == s)
            .and_then(|(_, m)| *m)
    };
    if let (Some(a), Some(b)) = (at("1k"), at("100k")) {
        rows.push(
            Row::new(
                "resume scaling (100k / 1k)",
                "100k/1k",
                Unit::Factor,
                Some(b / a),
                None,
            )
            .target(Target::AtMost(2.0)),
        );
    }
    for (size, mib) in &o.rss_mib {
        let r = t.rss_mib.iter().find(|(s, _)| s == size).map(|(_, m)| *m);
        let row = Row::new(
            "peak RSS of resume (fresh process)",
            size,
            Unit::MiB,
            Some(*mib),
            r,
        );
        rows.push(if size == "100k" {
            row.target(Target::AtMost(64.0))
        } else {
            row
        });
    }
    rows.push(
        Row::new(
            "list_all",
            "2,000 sessions",
            Unit::Ms,
            median(&o.list2000),
            t.med("list/2000"),
        )
        .target(Target::Better(30.0)),
    );
    rows.push(
        Row::new(
            "list_all",
            "10,000 sessions",
            Unit::Ms,
            median(&o.list10000),
            t.med("list/10000"),
        )
        .target(Target::AtMost(150.0)),
    );
    for (size, s) in &o.tree_index {
        let row = Row::new(
            "tree (index, getTree order + labels)",
            size,
            Unit::Ms,
            median(s),
            t.med(&format!("tree/{size}")),
        );
        rows.push(if size == "100k" {
            row.target(Target::Better(3.0))
        } else {
            row
        });
    }
    rows.push(Row::new(
        "tree (ResidentSession::get_tree, nodes borrow the entries)",
        "100k",
        Unit::Ms,
        median(&o.tree_resident_100k),
        t.med("tree/100k"),
    ));
    rows.push(
        Row::new(
            "append, buffered (per entry)",
            "×2000",
            Unit::Us,
            median(&o.append_buffered_us),
            t.med("append/persisted"),
        )
        .target(Target::Better(6.0)),
    );
    rows.push(
        Row::new(
            "append, buffered, on-CPU time per entry (reference: process CPU)",
            "×2000",
            Unit::Us,
            median(&o.append_buffered_cpu_us),
            t.med("append/persisted-cpu"),
        )
        .target(Target::Better(6.0)),
    );
    rows.push(Row::new(
        "append, buffered, to the 100k session (per entry; journal synced every 1,024, index saved every 1/8 of the session)",
        "×16384",
        Unit::Us,
        median(&o.append_buffered_100k_us),
        t.med("append/persisted"),
    ));
    rows.push(Row::new(
        "bare write of the same framed bytes, no sync (floor of a buffered append)",
        "×2000",
        Unit::Us,
        median(&o.bare_write_us),
        t.med("append/persisted"),
    ));
    rows.push(Row::new(
        "append, durable (per entry)",
        "×200",
        Unit::Us,
        median(&o.append_durable_us),
        t.med("append/persisted"),
    ));
    rows.push(
        Row::new(
            "append, durable vs bare write+fdatasync (reference column = bare)",
            "×200",
            Unit::Us,
            median(&o.append_durable_us),
            median(&o.bare_sync_us),
        )
        .target(Target::WithinOf(1.2)),
    );
    rows.push(Row::new(
        "append, batch of 100, durable (journal level, per entry)",
        "×2000",
        Unit::Us,
        median(&o.batch_us),
        t.med("append/persisted"),
    ));
    let import_ms = median(&o.import_ms);
    let mbps = import_ms.map(|ms| o.import_bytes as f64 / 1e6 / (ms / 1e3));
    let ref_open = t.med("open/100k");
    rows.push(
        Row::new(
            "import throughput (reference: open)",
            "100k (224 MB)",
            Unit::MBps,
            mbps,
            ref_open.map(|ms| o.import_bytes as f64 / 1e6 / (ms / 1e3)),
        )
        .target(Target::AtLeast(150.0)),
    );
    rows.push(
        Row::new(
            "import vs reference open",
            "100k",
            Unit::Ms,
            import_ms,
            ref_open,
        )
        .target(Target::Better(4.0)),
    );
    rows.push(Row::new(
        "cold `bcs context --json` (reference: `node context.mjs --no-tree`)",
        "1k",
        Unit::Ms,
        median(&o.cold_bcs_1k),
        median(&o.cold_ref_1k),
    ));
    rows.push(Row::new(
        "cold `bcs context --json`",
        "100k",
        Unit::Ms,
        median(&o.cold_bcs_100k),
        None,
    ));
    rows
}

// ----- machine -----

fn node_ok() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn cmd_line(prog: &str, args: &[&str]) -> String {
    Command::new(prog)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn machine(load: &str) -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or_else(String::new, |kib| {
            format!("{:.1} GiB", kib / 1024.0 / 1024.0)
        });
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    format!(
        "- date: {}\n- cpus: {cpus} ({cpu})\n- RAM: {mem}\n- kernel: {}\n- {}\n- node {}\n- load average (1/5/15 min): {load}\n",
        cmd_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        kernel.trim(),
        cmd_line("rustc", &["--version"]),
        cmd_line("node", &["--version"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shows_ratio_target_and_verdict() {
        let rows = vec![
            Row::new("resume", "100k", Unit::Ms, Some(2.0), Some(5000.0))
                .target(Target::Better(200.0)),
            Row::new("peak RSS", "100k", Unit::MiB, Some(80.0), Some(1600.0))
                .target(Target::AtMost(64.0)),
            Row::new("import", "100k", Unit::MBps, Some(300.0), Some(36.0))
                .target(Target::AtLeast(150.0)),
            Row::new("durable", "×200", Unit::Us, Some(1100.0), Some(1000.0))
                .target(Target::WithinOf(1.2)),
            Row::new("cold", "1k", Unit::Ms, Some(3.5), None),
        ];
        let want = "\
| operation | size | ours (median) | reference (median) | ratio | target | met? |
|---|---|---:|---:|---:|---|---|
| resume | 100k | 2.00 ms | 5000 ms | 2500× | ≥ 200× better | yes |
| peak RSS | 100k | 80.0 MiB | 1600 MiB | 20× | ≤ 64.0 MiB | **no** |
| import | 100k | 300 MB/s | 36.0 MB/s | 8.33× | ≥ 150 MB/s | yes |
| durable | ×200 | 1100 µs | 1000 µs | 0.91× | ≤ 1.2× baseline | yes |
| cold | 1k | 3.50 ms | — | — | — |  |
";
        assert_eq!(render_table(&rows), want);
    }

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(fmt_value(0.1234, Unit::Factor), "0.123×");
    }
}
