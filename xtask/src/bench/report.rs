//! The results table (markdown, `docs/benchmarks.md`'s format) and the machine's
//! description that heads it.

use std::fmt::Write as _;
use std::fs;
use std::process::Command;

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
    /// Operations per second (higher is better).
    PerSec,
}

impl Unit {
    fn higher_is_better(self) -> bool {
        matches!(self, Unit::MBps | Unit::PerSec)
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
        Unit::PerSec => " /s",
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

// ----- machine -----

/// The 1/5/15-minute load averages.
pub(crate) fn loadavg() -> String {
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

/// The machine's description: date, CPUs, RAM, kernel, toolchains, load.
pub(crate) fn machine(load: &str) -> String {
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

    fn row(op: &str, size: &str, unit: Unit, ours: f64, reference: Option<f64>) -> Row {
        Row {
            op: op.to_owned(),
            size: size.to_owned(),
            unit,
            ours: Some(ours),
            reference,
            target: Target::None,
        }
    }

    #[test]
    fn table_shows_ratio_target_and_verdict() {
        let rows = vec![
            Row {
                target: Target::Better(200.0),
                ..row("resume", "100k", Unit::Ms, 2.0, Some(5000.0))
            },
            Row {
                target: Target::AtMost(64.0),
                ..row("peak RSS", "100k", Unit::MiB, 80.0, Some(1600.0))
            },
            Row {
                target: Target::AtLeast(150.0),
                ..row("import", "100k", Unit::MBps, 300.0, Some(36.0))
            },
            Row {
                target: Target::WithinOf(1.2),
                ..row("durable", "×200", Unit::Us, 1100.0, Some(1000.0))
            },
            row("cold", "1k", Unit::Ms, 3.5, None),
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
