//! The results table as data: one [`Case`] per row, saying what the row reports, which
//! samples give its two columns and the target for it. [`rows`] turns the
//! cases and the measured samples into the table, in this order.

use super::report::{Row, Target, Unit};
use super::{SIZES, Samples};

/// Where a column's figure comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Figure {
    /// No figure: the reference has no such operation.
    None,
    /// The median of a sample this process timed ([`super::ours`]: our operations,
    /// the bare baselines, and whole processes it starts, the reference's included).
    Local(String),
    /// The median of a sample the reference's script timed, or its RSS probe reported
    /// ([`super::reference`]).
    Node(String),
    /// A scaling factor: the local median of the first key over that of the second.
    Scaling(String, String),
    /// Megabytes per second: the local `import/bytes` over the inner figure's
    /// milliseconds.
    Throughput(Box<Figure>),
}

impl Figure {
    /// The reference's sample keys this figure reads.
    #[cfg(test)]
    fn node_keys<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Figure::Node(key) => out.push(key),
            Figure::Throughput(inner) => inner.node_keys(out),
            Figure::None | Figure::Local(_) | Figure::Scaling(..) => {}
        }
    }

    fn value(&self, local: &Samples, node: &Samples) -> Option<f64> {
        match self {
            Figure::None => None,
            Figure::Local(key) => local.median(key),
            Figure::Node(key) => node.median(key),
            Figure::Scaling(a, b) => Some(local.median(a)? / local.median(b)?),
            Figure::Throughput(ms) => {
                let bytes = local.median("import/bytes")?;
                Some(bytes / 1e6 / (ms.value(local, node)? / 1e3))
            }
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Case {
    pub(crate) op: &'static str,
    pub(crate) size: String,
    pub(crate) unit: Unit,
    pub(crate) ours: Figure,
    pub(crate) reference: Figure,
    pub(crate) target: Target,
}

impl Case {
    fn new(op: &'static str, size: &str, unit: Unit, ours: Figure, reference: Figure) -> Self {
        Self {
            op,
            size: size.to_owned(),
            unit,
            ours,
            reference,
            target: Target::None,
        }
    }

    /// The reference's sample keys this row reads.
    #[cfg(test)]
    pub(crate) fn node_keys(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.ours.node_keys(&mut out);
        self.reference.node_keys(&mut out);
        out
    }

    fn target(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// The target only on the 100k row of a per-size series.
    fn target_at_100k(self, target: Target) -> Self {
        if self.size == "100k" {
            self.target(target)
        } else {
            self
        }
    }
}

fn local(key: &str) -> Figure {
    Figure::Local(key.to_owned())
}

fn node(key: &str) -> Figure {
    Figure::Node(key.to_owned())
}

/// Every row of the results table, in order.
pub(crate) fn cases() -> Vec<Case> {
    use Unit::{Factor, MBps, MiB, Ms, Us};
    let mut c = Vec::new();
    for size in SIZES {
        let key = format!("resume/{size}");
        c.push(
            Case::new("resume (open + context)", size, Ms, local(&key), node(&key))
                .target_at_100k(Target::Better(200.0)),
        );
    }
    c.push(
        Case::new(
            "resume scaling (100k / 1k)",
            "100k/1k",
            Factor,
            Figure::Scaling("resume/100k".into(), "resume/1k".into()),
            Figure::None,
        )
        .target(Target::AtMost(2.0)),
    );
    for size in SIZES {
        let key = format!("rss/{size}");
        c.push(
            Case::new(
                "peak RSS of resume (fresh process)",
                size,
                MiB,
                local(&key),
                node(&key),
            )
            .target_at_100k(Target::AtMost(64.0)),
        );
    }
    c.push(
        Case::new(
            "list_all",
            "2,000 sessions",
            Ms,
            local("list/2000"),
            node("list/2000"),
        )
        .target(Target::Better(30.0)),
    );
    c.push(
        Case::new(
            "list_all",
            "10,000 sessions",
            Ms,
            local("list/10000"),
            node("list/10000"),
        )
        .target(Target::AtMost(150.0)),
    );
    c.push(
        Case::new(
            "bcs list --all --json, whole process (reference: listAll in-process)",
            "2,000 sessions",
            Ms,
            local("cold-list/2000"),
            node("list/2000"),
        )
        .target(Target::Better(40.0)),
    );
    c.push(
        Case::new(
            "bcs list --all --json, whole process (reference: listAll in-process)",
            "10,000 sessions",
            Ms,
            local("cold-list/10000"),
            node("list/10000"),
        )
        .target(Target::AtMost(60.0)),
    );
    for (label, size) in [("2000", "2,000 sessions"), ("10000", "10,000 sessions")] {
        c.push(Case::new(
            "bcs list --all --json, whole process, CPU time (user + system)",
            size,
            Ms,
            local(&format!("cold-list-cpu/{label}")),
            Figure::None,
        ));
    }
    c.push(
        Case::new(
            "bcs list --all --json, whole process (small sessions of about 1 KB)",
            "100,000 sessions",
            Ms,
            local("cold-list/100000"),
            Figure::None,
        )
        .target(Target::AtMost(500.0)),
    );
    c.push(
        Case::new(
            "bcs list --all --json, whole process, peak RSS",
            "100,000 sessions",
            MiB,
            local("cold-list-rss/100000"),
            Figure::None,
        )
        .target(Target::AtMost(128.0)),
    );
    for size in SIZES {
        let key = format!("tree/{size}");
        c.push(
            Case::new(
                "tree (index, getTree order + labels)",
                size,
                Ms,
                local(&key),
                node(&key),
            )
            .target_at_100k(Target::Better(3.0)),
        );
    }
    c.push(Case::new(
        "tree (ResidentSession::get_tree, nodes borrow the entries)",
        "100k",
        Ms,
        local("tree-resident/100k"),
        node("tree/100k"),
    ));
    let persisted = || node("append/persisted");
    c.push(
        Case::new(
            "append, buffered (per entry)",
            "×2000",
            Us,
            local("append/buffered"),
            persisted(),
        )
        .target(Target::Better(6.0)),
    );
    c.push(
        Case::new(
            "append, buffered, on-CPU time per entry (reference: process CPU)",
            "×2000",
            Us,
            local("append/buffered-cpu"),
            node("append/persisted-cpu"),
        )
        .target(Target::Better(6.0)),
    );
    c.push(Case::new(
        "append, buffered, to the 100k session (per entry; journal synced every 1,024, index saved every 1/8 of the session)",
        "×16384",
        Us,
        local("append/buffered-100k"),
        persisted(),
    ));
    c.push(Case::new(
        "bare write of the same framed bytes, no sync (floor of a buffered append)",
        "×2000",
        Us,
        local("append/bare-write"),
        persisted(),
    ));
    c.push(
        Case::new(
            "append, buffered vs its floor: each frame's keyed checks + one pwrite of its bytes, same frames, interleaved (reference column = floor)",
            "×2000",
            Us,
            local("append/buffered"),
            local("append/floor"),
        )
        .target(Target::WithinOf(1.5)),
    );
    c.push(Case::new(
        "append, durable (per entry)",
        "×200",
        Us,
        local("append/durable"),
        persisted(),
    ));
    c.push(
        Case::new(
            "append, durable vs bare write+fdatasync (reference column = bare)",
            "×200",
            Us,
            local("append/durable"),
            local("append/bare-sync"),
        )
        .target(Target::WithinOf(1.2)),
    );
    c.push(Case::new(
        "append, batch of 100, durable (journal level, per entry)",
        "×2000",
        Us,
        local("append/batch"),
        persisted(),
    ));
    c.push(
        Case::new(
            "import throughput (reference: open)",
            "100k (224 MB)",
            MBps,
            Figure::Throughput(Box::new(local("import/100k"))),
            Figure::Throughput(Box::new(node("open/100k"))),
        )
        .target(Target::AtLeast(150.0)),
    );
    c.push(
        Case::new(
            "import vs reference open",
            "100k",
            Ms,
            local("import/100k"),
            node("open/100k"),
        )
        .target(Target::Better(4.0)),
    );
    c.push(
        Case::new(
            "cold `bcs context --json` (reference: `node context.mjs --no-tree`)",
            "1k",
            Ms,
            local("cold/1k"),
            local("cold-reference/1k"),
        )
        .target(Target::AtMost(5.0)),
    );
    c.push(
        Case::new(
            "cold `bcs context --json`",
            "100k",
            Ms,
            local("cold/100k"),
            Figure::None,
        )
        .target(Target::AtMost(5.0)),
    );
    owner_cases(&mut c);
    huge_cases(&mut c);
    c
}

/// The 1M-entry session (issue 19 §1: resume cost follows the context).
fn huge_cases(c: &mut Vec<Case>) {
    use Unit::{Factor, MiB, Ms};
    c.push(
        Case::new(
            "resume (open + context)",
            "1m",
            Ms,
            local("resume/1m"),
            Figure::None,
        )
        .target(Target::AtMost(5.0)),
    );
    c.push(Case::new(
        "peak RSS of resume (fresh process)",
        "1m",
        MiB,
        local("rss/1m"),
        Figure::None,
    ));
    for size in ["1k", "100k", "1m"] {
        c.push(Case::new(
            "bytes read by resume (open + context, every file; MiB)",
            size,
            MiB,
            local(&format!("resume-bytes/{size}")),
            Figure::None,
        ));
    }
    c.push(
        Case::new(
            "bytes read by resume, 1m beyond 1k, in units of 64 KiB",
            "1m − 1k",
            Factor,
            local("resume-bytes-excess/1m"),
            Figure::None,
        )
        .target(Target::AtMost(1.0)),
    );
    c.push(Case::new(
        "cold `bcs context --json`",
        "1m",
        Ms,
        local("cold/1m"),
        Figure::None,
    ));
    c.push(Case::new(
        "cold `bcs --version` (process start: the floor of the cold rows)",
        "—",
        Ms,
        local("cold/start"),
        Figure::None,
    ));
    c.push(
        Case::new(
            "cold `bcs context --json` scaling (1m / 1k)",
            "1m/1k",
            Factor,
            Figure::Scaling("cold/1m".into(), "cold/1k".into()),
            Figure::None,
        )
        .target(Target::AtMost(1.2)),
    );
}

/// Through the owner (issue 17 §6): the reference column is our own baseline.
fn owner_cases(c: &mut Vec<Case>) {
    use Unit::{MiB, Ms, PerSec, Us};
    c.push(
        Case::new(
            "owner: durable appendMessage round trip (reference column: in-process durable append, interleaved)",
            "1 client",
            Us,
            local("owner/append-durable"),
            local("owner/append-durable-base"),
        )
        .target(Target::WithinOf(1.2)),
    );
    c.push(
        Case::new(
            "owner: buffered appendMessage round trip",
            "1 client",
            Us,
            local("owner/append-buffered"),
            Figure::None,
        )
        .target(Target::AtMost(25.0)),
    );
    for (size, key, better) in [
        ("32 clients, 1 session", "owner/rate-32c", 10.0),
        ("64 sessions, 1 client each", "owner/rate-64s", 5.0),
    ] {
        c.push(
            Case::new(
                "owner: durable appends/s (reference column: one client)",
                size,
                PerSec,
                local(key),
                local("owner/rate-1c"),
            )
            .target(Target::Better(better)),
        );
    }
    for (size, key) in [
        ("1 client", "owner/cpu-1c"),
        ("32 clients, 1 session", "owner/cpu-32c"),
        ("64 sessions, 1 client each", "owner/cpu-64s"),
    ] {
        c.push(Case::new(
            "owner: its CPU time (user + system) per acknowledged durable append",
            size,
            Us,
            local(key),
            Figure::None,
        ));
    }
    c.push(
        Case::new(
            "owner: buildSessionContext round trip (reference column: in-process rebuild + moving its bytes through a socket)",
            "100k",
            Ms,
            local("owner/context-100k"),
            local("owner/context-100k-base"),
        )
        .target(Target::WithinOf(1.5)),
    );
    c.push(
        Case::new(
            "owner: peak RSS holding 1,000 open sessions of 1k entries",
            "1,000 × 1k",
            MiB,
            local("owner/rss-1000"),
            Figure::None,
        )
        .target(Target::AtMost(256.0)),
    );
}

/// The table's rows: each case with its figures. A scaling row whose inputs are
/// missing (e.g. `--reps 0`) is left out rather than shown empty.
pub(crate) fn rows(cases: &[Case], local: &Samples, node: &Samples) -> Vec<Row> {
    cases
        .iter()
        .filter_map(|c| {
            let ours = c.ours.value(local, node);
            if ours.is_none() && matches!(c.ours, Figure::Scaling(..)) {
                return None;
            }
            Some(Row {
                op: c.op.to_owned(),
                size: c.size.clone(),
                unit: c.unit,
                ours,
                reference: c.reference.value(local, node),
                target: c.target.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distinct samples under every key a case reads, both sides.
    fn fixed_samples() -> (Samples, Samples) {
        let s = |x: f64| vec![x, x * 2.0, x * 3.0];
        let (mut local, mut node) = (Samples::default(), Samples::default());
        for (i, size) in SIZES.iter().enumerate() {
            let k = (i + 1) as f64;
            let (open, ctx) = (s(k), s(0.5 * k));
            let total = open.iter().zip(&ctx).map(|(a, b)| a + b).collect();
            local.put(format!("resume/{size}"), total);
            local.put(format!("rss/{size}"), vec![10.0 * k]);
            local.put(format!("tree/{size}"), s(0.1 * k));
            node.put(format!("resume/{size}"), s(100.0 * k));
            node.put(format!("open/{size}"), s(90.0 * k));
            node.put(format!("tree/{size}"), s(5.0 * k));
            node.put(format!("rss/{size}"), vec![100.0 * k]);
        }
        for (key, x) in [
            ("append/durable", 900.0),
            ("append/bare-sync", 800.0),
            ("append/bare-write", 0.7),
            ("append/buffered-cpu", 1.1),
            ("append/buffered-100k", 2.2),
            ("append/buffered", 1.5),
            ("append/floor", 1.2),
            ("append/batch", 12.0),
            ("tree-resident/100k", 33.0),
            ("list/2000", 4.0),
            ("list/10000", 20.0),
            ("cold-list/2000", 6.0),
            ("cold-list/10000", 25.0),
            ("cold-list-cpu/2000", 3.0),
            ("cold-list-cpu/10000", 12.0),
            ("cold-list/100000", 300.0),
            ("cold-list-rss/100000", 90.0),
            ("import/100k", 700.0),
            ("cold/1k", 3.0),
            ("cold/100k", 9.0),
            ("cold-reference/1k", 150.0),
            ("owner/append-durable", 1000.0),
            ("owner/append-durable-base", 900.0),
            ("owner/append-buffered", 10.0),
            ("owner/rate-1c", 500.0),
            ("owner/rate-32c", 6000.0),
            ("owner/rate-64s", 2000.0),
            ("owner/cpu-1c", 20.0),
            ("owner/cpu-32c", 15.0),
            ("owner/cpu-64s", 30.0),
            ("owner/context-100k", 10.0),
            ("owner/context-100k-base", 8.0),
            ("owner/rss-1000", 100.0),
            ("resume/1m", 4.0),
            ("rss/1m", 40.0),
            ("resume-bytes/1k", 0.5),
            ("resume-bytes/100k", 9.0),
            ("resume-bytes/1m", 0.75),
            ("resume-bytes-excess/1m", 4.0),
            ("cold/1m", 3.5),
            ("cold/start", 1.2),
        ] {
            local.put(key, s(x));
        }
        local.put("import/bytes", vec![224_000_000.0]);
        node.put("list/2000", s(300.0));
        node.put("list/10000", s(1500.0));
        node.put("append/persisted", s(20.0));
        node.put("append/persisted-cpu", s(15.0));
        (local, node)
    }

    /// The table the harness printed before it was table-driven, from the same
    /// samples: every row, figure, ratio and target in the same place.
    #[test]
    fn the_whole_table_from_fixed_samples() {
        let (local, node) = fixed_samples();
        let table = super::super::report::render_table(&rows(&cases(), &local, &node));
        let want = "\
| operation | size | ours (median) | reference (median) | ratio | target | met? |
|---|---|---:|---:|---:|---|---|
| resume (open + context) | 1k | 3.00 ms | 200 ms | 67× | — |  |
| resume (open + context) | 10k | 6.00 ms | 400 ms | 67× | — |  |
| resume (open + context) | 100k | 9.00 ms | 600 ms | 67× | ≥ 200× better | **no** |
| resume scaling (100k / 1k) | 100k/1k | 3.00× | — | — | ≤ 2.00× | **no** |
| peak RSS of resume (fresh process) | 1k | 10.0 MiB | 100 MiB | 10× | — |  |
| peak RSS of resume (fresh process) | 10k | 20.0 MiB | 200 MiB | 10× | — |  |
| peak RSS of resume (fresh process) | 100k | 30.0 MiB | 300 MiB | 10× | ≤ 64.0 MiB | yes |
| list_all | 2,000 sessions | 8.00 ms | 600 ms | 75× | ≥ 30× better | yes |
| list_all | 10,000 sessions | 40.0 ms | 3000 ms | 75× | ≤ 150 ms | yes |
| bcs list --all --json, whole process (reference: listAll in-process) | 2,000 sessions | 12.0 ms | 600 ms | 50× | ≥ 40× better | yes |
| bcs list --all --json, whole process (reference: listAll in-process) | 10,000 sessions | 50.0 ms | 3000 ms | 60× | ≤ 60.0 ms | yes |
| bcs list --all --json, whole process, CPU time (user + system) | 2,000 sessions | 6.00 ms | — | — | — |  |
| bcs list --all --json, whole process, CPU time (user + system) | 10,000 sessions | 24.0 ms | — | — | — |  |
| bcs list --all --json, whole process (small sessions of about 1 KB) | 100,000 sessions | 600 ms | — | — | ≤ 500 ms | **no** |
| bcs list --all --json, whole process, peak RSS | 100,000 sessions | 180 MiB | — | — | ≤ 128 MiB | **no** |
| tree (index, getTree order + labels) | 1k | 0.200 ms | 10.0 ms | 50× | — |  |
| tree (index, getTree order + labels) | 10k | 0.400 ms | 20.0 ms | 50× | — |  |
| tree (index, getTree order + labels) | 100k | 0.600 ms | 30.0 ms | 50× | ≥ 3× better | yes |
| tree (ResidentSession::get_tree, nodes borrow the entries) | 100k | 66.0 ms | 30.0 ms | 0.45× | — |  |
| append, buffered (per entry) | ×2000 | 3.00 µs | 40.0 µs | 13× | ≥ 6× better | yes |
| append, buffered, on-CPU time per entry (reference: process CPU) | ×2000 | 2.20 µs | 30.0 µs | 14× | ≥ 6× better | yes |
| append, buffered, to the 100k session (per entry; journal synced every 1,024, index saved every 1/8 of the session) | ×16384 | 4.40 µs | 40.0 µs | 9.09× | — |  |
| bare write of the same framed bytes, no sync (floor of a buffered append) | ×2000 | 1.40 µs | 40.0 µs | 29× | — |  |
| append, buffered vs its floor: each frame's keyed checks + one pwrite of its bytes, same frames, interleaved (reference column = floor) | ×2000 | 3.00 µs | 2.40 µs | 0.80× | ≤ 1.5× baseline | yes |
| append, durable (per entry) | ×200 | 1800 µs | 40.0 µs | 0.02× | — |  |
| append, durable vs bare write+fdatasync (reference column = bare) | ×200 | 1800 µs | 1600 µs | 0.89× | ≤ 1.2× baseline | yes |
| append, batch of 100, durable (journal level, per entry) | ×2000 | 24.0 µs | 40.0 µs | 1.67× | — |  |
| import throughput (reference: open) | 100k (224 MB) | 160 MB/s | 415 MB/s | 0.39× | ≥ 150 MB/s | yes |
| import vs reference open | 100k | 1400 ms | 540 ms | 0.39× | ≥ 4× better | **no** |
| cold `bcs context --json` (reference: `node context.mjs --no-tree`) | 1k | 6.00 ms | 300 ms | 50× | ≤ 5.00 ms | **no** |
| cold `bcs context --json` | 100k | 18.0 ms | — | — | ≤ 5.00 ms | **no** |
| owner: durable appendMessage round trip (reference column: in-process durable append, interleaved) | 1 client | 2000 µs | 1800 µs | 0.90× | ≤ 1.2× baseline | yes |
| owner: buffered appendMessage round trip | 1 client | 20.0 µs | — | — | ≤ 25.0 µs | yes |
| owner: durable appends/s (reference column: one client) | 32 clients, 1 session | 12000 /s | 1000 /s | 12× | ≥ 10× better | yes |
| owner: durable appends/s (reference column: one client) | 64 sessions, 1 client each | 4000 /s | 1000 /s | 4.00× | ≥ 5× better | **no** |
| owner: its CPU time (user + system) per acknowledged durable append | 1 client | 40.0 µs | — | — | — |  |
| owner: its CPU time (user + system) per acknowledged durable append | 32 clients, 1 session | 30.0 µs | — | — | — |  |
| owner: its CPU time (user + system) per acknowledged durable append | 64 sessions, 1 client each | 60.0 µs | — | — | — |  |
| owner: buildSessionContext round trip (reference column: in-process rebuild + moving its bytes through a socket) | 100k | 20.0 ms | 16.0 ms | 0.80× | ≤ 1.5× baseline | yes |
| owner: peak RSS holding 1,000 open sessions of 1k entries | 1,000 × 1k | 200 MiB | — | — | ≤ 256 MiB | yes |
| resume (open + context) | 1m | 8.00 ms | — | — | ≤ 5.00 ms | **no** |
| peak RSS of resume (fresh process) | 1m | 80.0 MiB | — | — | — |  |
| bytes read by resume (open + context, every file; MiB) | 1k | 1.00 MiB | — | — | — |  |
| bytes read by resume (open + context, every file; MiB) | 100k | 18.0 MiB | — | — | — |  |
| bytes read by resume (open + context, every file; MiB) | 1m | 1.50 MiB | — | — | — |  |
| bytes read by resume, 1m beyond 1k, in units of 64 KiB | 1m − 1k | 8.00× | — | — | ≤ 1.00× | **no** |
| cold `bcs context --json` | 1m | 7.00 ms | — | — | — |  |
| cold `bcs --version` (process start: the floor of the cold rows) | — | 2.40 ms | — | — | — |  |
| cold `bcs context --json` scaling (1m / 1k) | 1m/1k | 1.17× | — | — | ≤ 1.20× | yes |
";
        assert_eq!(table, want);
    }

    #[test]
    fn a_scaling_row_without_its_inputs_is_left_out() {
        let (mut local, node) = fixed_samples();
        local.put("resume/1k", Vec::new());
        let rows = rows(&cases(), &local, &node);
        assert!(rows.iter().all(|r| r.size != "100k/1k"));
        assert_eq!(rows.len(), cases().len() - 1);
    }
}
