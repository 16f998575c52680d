//! `cargo xtask bench`: the measured comparison with the reference implementation.
//!
//! It generates (or reuses) the reference's deterministic data (`peer/gen.mjs`, seed
//! 42) under `target/bench-data/`: `big/{1k,10k,100k}.jsonl`, `agent/sessions/` (2,000
//! small sessions) and `many-10000/agent/sessions/` (10,000). An existing copy in
//! `--peer-data` (default `/work/peer/data`) is hard-linked instead of regenerated.
//! Everything is imported into native stores under `target/bench-data/native/` with
//! the manager's `Store::import` (once, outside every timed section): [`data`].
//!
//! Then, in one run, it times our operations in-process (release build, medians of
//! `--reps` after a warm-up; [`ours`]) and — when node is available — the reference
//! (`@mariozechner/pi-coding-agent` 0.73.1, installed in `target/peer/`) on the same
//! files with the node script `reference.mjs` beside this file ([`reference`](mod@reference)). Both
//! sides record named samples; the table is data ([`cases`]): each row names the
//! samples of its two columns and its target. It prints the markdown table
//! `operation | size | ours | reference | ratio | target | met?` ([`report`]) and the
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

mod cases;
mod data;
mod ours;
mod reference;
mod report;

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

const SIZES: [&str; 3] = ["1k", "10k", "100k"];

pub(crate) struct Options {
    reps: usize,
    big_reps: usize,
    reference: bool,
    peer_data: PathBuf,
    /// Run only our measurements whose names contain one of these (empty: all).
    only: Vec<String>,
}

/// The groups of the reference's script (`reference.mjs`), each named as the
/// measurements of ours it compares with are (`list` for `list_all` and `bcs list`).
const REFERENCE_GROUPS: [&str; 4] = ["resume", "tree", "list", "append"];

impl Options {
    /// The reference's groups to time, comma-separated: all of them, or with
    /// `--only` those whose name contains or is contained in one of its words.
    pub(crate) fn reference_groups(&self) -> String {
        REFERENCE_GROUPS
            .iter()
            .filter(|g| {
                self.only.is_empty()
                    || self
                        .only
                        .iter()
                        .any(|o| g.contains(o.as_str()) || o.contains(*g))
            })
            .copied()
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Named samples (a key such as `resume/100k` → the values of each rep).
#[derive(Debug, Default)]
pub(crate) struct Samples(BTreeMap<String, Vec<f64>>);

impl Samples {
    /// The samples of a JSON object of arrays of numbers (other values are skipped).
    fn from_json(v: &Value) -> Self {
        let map = v
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                let values = v.as_array()?.iter().filter_map(Value::as_f64).collect();
                Some((k.clone(), values))
            })
            .collect();
        Self(map)
    }

    fn put(&mut self, key: impl Into<String>, values: Vec<f64>) {
        self.0.insert(key.into(), values);
    }

    fn push(&mut self, key: &str, value: f64) {
        self.0.entry(key.to_owned()).or_default().push(value);
    }

    fn get(&self, key: &str) -> Option<&[f64]> {
        self.0.get(key).map(Vec::as_slice)
    }

    /// The median of a key's samples (`None`: no such key, or no samples).
    fn median(&self, key: &str) -> Option<f64> {
        report::median(self.get(key)?)
    }
}

/// `cargo xtask bench --help`.
const USAGE: &str = "\
cargo xtask bench [options]: medians of our operations vs the reference on generated data

  --reps N          reps of each timing after a warm-up (default 10)
  --big-reps N      reps of the reference's 100k open (default 3)
  --quick           few reps (3, and 1 of the reference's 100k open), for a smoke run
  --no-reference    our figures only (also when node is missing)
  --peer-data DIR   an existing copy of the reference's data (default /work/peer/data)
  --only A[,B]      only our measurements whose names contain A or B (e.g. owner,
                    list); rows of the others stay empty, and the reference times
                    only its groups (resume, tree, list, append) named alike

Prints the results table and the machine and writes both to target/bench-results.md.
A debug build re-runs itself as a release build. For profiling and probes:
  --child-resume JOURNAL --home ROOT   one resume; prints this process's peak RSS
  --child-append 1k.jsonl              20,000 buffered appends; prints µs per append";

pub(crate) fn run(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("--child-resume") => return ours::child_resume(&args[1..]),
        Some("--child-append") => return ours::child_append(&args[1..]),
        _ => {}
    }
    if wants_help(args) {
        println!("{USAGE}");
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
    let opts = parse_options(args)?;
    let root = crate::workspace_root();
    let load_start = report::loadavg();
    let use_node = opts.reference && node_ok();
    let data = data::prepare_data(&root, &opts.peer_data, use_node)?;
    let mut native = data::import_all(&data)?;
    if ours::wants_huge(&opts) {
        native.huge = Some(data::huge(&root, &opts.peer_data, &data, use_node)?);
    }
    let (local, notes) = ours::measure(&root, &data, &native, &opts)?;
    let node = if use_node {
        reference::measure(&root, &data, &opts)?
    } else {
        eprintln!("bench: node not available (or --no-reference): our figures only");
        Samples::default()
    };
    let load = format!("{load_start} (start), {} (end)", report::loadavg());
    let rows = cases::rows(&cases::cases(), &local, &node);
    let table = report::render_table(&rows);
    let machine = report::machine(&load);
    let report = format!("{machine}\n{table}\n{}", notes.join("\n"));
    println!("{report}");
    let out = root.join("target/bench-results.md");
    fs::write(&out, &report).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("bench: wrote {}", out.display());
    Ok(())
}

fn wants_help(args: &[String]) -> bool {
    args.iter().any(|a| a == "--help" || a == "-h")
}

fn parse_options(args: &[String]) -> Result<Options> {
    let mut opts = Options {
        reps: 10,
        big_reps: 3,
        reference: true,
        peer_data: PathBuf::from("/work/peer/data"),
        only: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--reps" => opts.reps = val()?.parse()?,
            "--big-reps" => opts.big_reps = val()?.parse()?,
            "--no-reference" => opts.reference = false,
            "--peer-data" => opts.peer_data = val()?.into(),
            "--only" => opts.only = val()?.split(',').map(str::to_owned).collect(),
            "--quick" => {
                opts.reps = 3;
                opts.big_reps = 1;
            }
            "--allow-debug" => {}
            other => bail!(
                "unknown option `{other}` (expected --reps N, --big-reps N, --no-reference, --quick, --peer-data DIR, --only A[,B])"
            ),
        }
    }
    Ok(opts)
}

fn node_ok() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    /// `--help` answers at once (no release build, no data) and names every option
    /// the parser takes.
    #[test]
    fn help_is_asked_for_and_lists_every_option() {
        assert!(wants_help(&args(&["--quick", "--help"])));
        assert!(wants_help(&args(&["-h"])));
        assert!(!wants_help(&args(&["--quick"])));
        for option in [
            "--reps",
            "--big-reps",
            "--quick",
            "--no-reference",
            "--peer-data",
            "--only",
        ] {
            assert!(USAGE.contains(option), "{option}");
            let mut a = args(&[option]);
            if option == "--reps" || option == "--big-reps" {
                a.push("2".into());
            } else if option == "--peer-data" {
                a.push("/tmp".into());
            } else if option == "--only" {
                a.push("owner".into());
            }
            parse_options(&a).unwrap_or_else(|e| panic!("{option}: {e}"));
        }
        assert!(parse_options(&args(&["--help"])).is_err());
        let only = parse_options(&args(&["--only", "list_all"])).expect("--only list_all");
        assert_eq!(only.reference_groups(), "list");
        let only = parse_options(&args(&["--only", "owner"])).expect("--only owner");
        assert_eq!(only.reference_groups(), "");
        let all = parse_options(&args(&[])).expect("defaults");
        assert_eq!(all.reference_groups(), REFERENCE_GROUPS.join(","));
    }
}
