//! The session-manager benchmark harness (`docs/benchmarks.md`): resume (open +
//! `build_session_context`) of imported 1k/10k/100k-entry sessions and `list_all` over
//! 2,000 imported sessions.
//!
//! ```text
//! cargo build --release -p session-manager --example manager_bench
//! manager_bench prepare ROOT                 # imports (untimed)
//! manager_bench resume ROOT 1k|10k|100k N    # N timed open+context runs
//! manager_bench resume-once ROOT 100k        # one run, for /usr/bin/time -v
//! manager_bench list ROOT N                  # N timed list_all runs
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

use session_manager::{Layout, Store};

const BIG: &str = "/work/peer/data/big";
const MANY: &str = "/work/peer/data/agent/sessions";

fn store(root: &Path, name: &str) -> Store {
    Store::new(Layout::with_root(root.join(name)).expect("absolute root"))
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn journal_of(root: &Path, name: &str) -> PathBuf {
    let text =
        std::fs::read_to_string(root.join(format!("{name}.path"))).expect("run `prepare` first");
    PathBuf::from(text.trim())
}

/// (open + context ms, context ms, context messages)
fn resume(root: &Path, name: &str) -> (f64, f64, usize) {
    let store = store(root, "big");
    let path = journal_of(root, name);
    let t = Instant::now();
    let s = store.open(&path).expect("open");
    let t_ctx = Instant::now();
    let ctx = s.build_session_context().expect("context");
    let ctx_ms = t_ctx.elapsed().as_secs_f64() * 1000.0;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    (ms, ctx_ms, ctx.messages.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = PathBuf::from(args.get(2).expect("ROOT"));
    match args.get(1).map(String::as_str) {
        Some("prepare") => {
            let big = store(&root, "big");
            for name in ["1k", "10k", "100k"] {
                let t = Instant::now();
                let out = big
                    .import(&Path::new(BIG).join(format!("{name}.jsonl")))
                    .expect("import");
                std::fs::write(
                    root.join(format!("{name}.path")),
                    out.journal.to_string_lossy().as_bytes(),
                )
                .expect("write");
                // Build the index sidecar once, outside any timing.
                drop(big.open(&out.journal).expect("open"));
                println!(
                    "imported {name} in {:.0} ms",
                    t.elapsed().as_secs_f64() * 1000.0
                );
            }
            let many = store(&root, "many");
            let mut n = 0;
            for dir in std::fs::read_dir(MANY).expect("sessions").flatten() {
                for f in std::fs::read_dir(dir.path()).expect("dir").flatten() {
                    if f.path().extension().is_some_and(|e| e == "jsonl") {
                        many.import(&f.path()).expect("import");
                        n += 1;
                    }
                }
            }
            many.list_all(&mut ()).expect("warm catalog");
            println!("imported {n} sessions");
        }
        Some("resume") => {
            let name = args.get(3).expect("NAME");
            let n: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(10);
            resume(&root, name); // warm-up
            let mut times = Vec::new();
            let mut ctx_times = Vec::new();
            let mut msgs = 0;
            for _ in 0..n {
                let (ms, ctx_ms, m) = resume(&root, name);
                times.push(ms);
                ctx_times.push(ctx_ms);
                msgs = m;
            }
            let (med, min, max) = median(times);
            let (cmed, _, _) = median(ctx_times);
            println!(
                "resume {name}: median {med:.2} ms (min {min:.2}, max {max:.2}); of which build_session_context {cmed:.2} ms; {msgs} context messages, n={n}"
            );
        }
        Some("resume-once") => {
            let name = args.get(3).expect("NAME");
            let (ms, ctx_ms, m) = resume(&root, name);
            println!("resume {name}: {ms:.2} ms (context {ctx_ms:.2} ms), {m} context messages");
        }
        Some("list") => {
            let n: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
            let many = store(&root, "many");
            many.list_all(&mut ()).expect("warm-up");
            let mut times = Vec::new();
            let mut count = 0;
            for _ in 0..n {
                let t = Instant::now();
                count = many.list_all(&mut ()).expect("list").len();
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            let (med, min, max) = median(times);
            println!(
                "list_all {count} sessions: median {med:.2} ms (min {min:.2}, max {max:.2}), n={n}"
            );
        }
        _ => eprintln!("usage: manager_bench prepare|resume|resume-once|list ROOT ..."),
    }
}
