//! The reference side: one node process runs `reference.mjs` (beside this file) and
//! times everything that runs in-process; a fresh node process per size is the RSS
//! probe. The reference is `@mariozechner/pi-coding-agent` 0.73.1 installed in
//! `target/peer` ([`crate::fixtures::install_peer`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::data::Data;
use super::{Options, SIZES, Samples};

/// The reference's script, run where it lies in the source tree.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bench/reference.mjs")
}

/// The reference's samples under the script's keys, plus `rss/{size}` (MiB).
pub(crate) fn measure(root: &Path, data: &Data, opts: &Options) -> Result<Samples> {
    let peer = crate::fixtures::install_peer(&root.join("../shared/peer"), root)?;
    let script = script();
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
        .arg(opts.reference_groups())
        .current_dir(&peer)
        .stderr(Stdio::inherit())
        .output()
        .context("running node")?;
    if !out.status.success() {
        bail!("the reference benchmark failed");
    }
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let mut samples = Samples::from_json(&v);
    let resume = opts.reference_groups().split(',').any(|g| g == "resume");
    for size in SIZES.iter().filter(|_| resume) {
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
        samples.put(format!("rss/{size}"), vec![mib]);
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script is where the harness runs it from, and writes every key the
    /// table's reference columns read.
    #[test]
    fn script_has_every_key_the_cases_read() {
        let text = std::fs::read_to_string(script()).expect("reference.mjs");
        for case in super::super::cases::cases() {
            for key in case.node_keys() {
                if key.starts_with("rss/") {
                    continue; // the RSS probe, read by `measure`
                }
                let (stem, size) = key.split_once('/').expect("keys are stem/size");
                let literal = format!("\"{key}\"");
                let templated = format!("`{stem}/${{");
                assert!(
                    text.contains(&literal) || (text.contains(&templated) && !size.is_empty()),
                    "reference.mjs does not write `{key}`"
                );
            }
        }
    }
}
