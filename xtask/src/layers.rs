//! `cargo xtask layers`: our crates depend on each other only downward.
//!
//! Reads `cargo metadata` and checks every dependency edge between workspace
//! crates against the layer table of ARCHITECTURE.md. Also refuses `anyhow` as a
//! normal dependency of a library crate (errors there are typed, with `thiserror`).

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The layered crates, bottom to top. `xtask` and `session-tests` sit outside the
/// stack: they may depend on anything and nothing may depend on them.
pub(crate) const LAYERS: [&str; 7] = [
    "session-types",
    "session-journal",
    "session-index",
    "session-context",
    "session-import",
    "session-manager",
    "session-cli",
];

/// Crates outside the stack.
const TOOLING: [&str; 2] = ["xtask", "session-tests"];

/// Crates allowed to use `anyhow` as a normal dependency (binaries and tooling).
const ANYHOW_OK: [&str; 3] = ["session-cli", "xtask", "session-tests"];

pub(crate) fn run(args: &[String]) -> Result<()> {
    if !args.is_empty() {
        bail!("`cargo xtask layers` takes no arguments");
    }
    let metadata = cargo_metadata()?;
    let violations = check(&metadata)?;
    if violations.is_empty() {
        println!(
            "layers: ok ({} workspace crates checked)",
            workspace_packages(&metadata)?.len()
        );
        return Ok(());
    }
    for v in &violations {
        eprintln!("layers: {v}");
    }
    bail!("{} layering violation(s)", violations.len())
}

/// Runs `cargo metadata --no-deps` for this workspace.
pub(crate) fn cargo_metadata() -> Result<Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(crate::workspace_root())
        .output()
        .context("running `cargo metadata`")?;
    if !out.status.success() {
        bail!(
            "`cargo metadata` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("parsing `cargo metadata` output")
}

fn workspace_packages(metadata: &Value) -> Result<Vec<&Value>> {
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .context("metadata has no `workspace_members`")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    Ok(metadata["packages"]
        .as_array()
        .context("metadata has no `packages`")?
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| members.contains(&id)))
        .collect())
}

/// Every layering violation in `metadata` (the JSON of `cargo metadata`).
pub(crate) fn check(metadata: &Value) -> Result<Vec<String>> {
    let packages = workspace_packages(metadata)?;
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let layer_of: BTreeMap<&str, usize> = LAYERS.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut violations = Vec::new();
    for name in &names {
        if !layer_of.contains_key(name) && !TOOLING.contains(name) {
            violations.push(format!(
                "crate `{name}` has no layer: add it to the table in xtask/src/layers.rs and ARCHITECTURE.md"
            ));
        }
    }
    for p in packages {
        let name = p["name"].as_str().unwrap_or("?");
        for dep in p["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or("?");
            let kind = dep["kind"].as_str().unwrap_or("normal");
            if dep_name == "anyhow" && kind == "normal" && !ANYHOW_OK.contains(&name) {
                violations.push(format!(
                    "library crate `{name}` depends on `anyhow`; use typed errors (thiserror) in libraries"
                ));
            }
            if !names.contains(&dep_name) {
                continue;
            }
            if TOOLING.contains(&dep_name) {
                violations.push(format!("`{name}` depends on tooling crate `{dep_name}`"));
                continue;
            }
            let (Some(&from), Some(&to)) = (layer_of.get(name), layer_of.get(dep_name)) else {
                continue; // tooling may depend on anything
            };
            if to >= from {
                let how = if to == from { "sideways" } else { "upward" };
                violations.push(format!(
                    "`{name}` (layer {from}) depends {how} on `{dep_name}` (layer {to}) [{kind} dependency]"
                ));
            }
        }
    }
    Ok(violations)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Value {
        json!({
            "name": name,
            "id": format!("path+file:///ws/{name}#0.1.0"),
            "dependencies": deps.iter().map(|(d, kind)| json!({"name": d, "kind": kind})).collect::<Vec<_>>(),
        })
    }

    fn metadata(packages: Vec<Value>) -> Value {
        let members: Vec<Value> = packages.iter().map(|p| p["id"].clone()).collect();
        json!({"packages": packages, "workspace_members": members})
    }

    #[test]
    fn a_downward_graph_passes() {
        let m = metadata(vec![
            package("session-types", &[("serde", None)]),
            package("session-journal", &[("blake3", None)]),
            package(
                "session-index",
                &[("session-types", None), ("session-journal", None)],
            ),
            package("session-cli", &[("session-index", None), ("anyhow", None)]),
            package("xtask", &[("session-cli", None), ("anyhow", None)]),
        ]);
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn an_upward_edge_fails() {
        let m = metadata(vec![
            package("session-types", &[]),
            package("session-journal", &[("session-index", None)]),
            package("session-index", &[("session-journal", None)]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains(
                "`session-journal` (layer 1) depends upward on `session-index` (layer 2)"
            )
        );
    }

    #[test]
    fn sideways_dev_edges_fail_too() {
        let m = metadata(vec![
            package("session-context", &[("session-context", Some("dev"))]),
            package("session-import", &[("session-manager", Some("dev"))]),
            package("session-manager", &[]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("sideways"));
        assert!(v[1].contains("upward") && v[1].contains("[dev dependency]"));
    }

    #[test]
    fn anyhow_in_a_library_fails_but_not_as_dev_dependency() {
        let m = metadata(vec![
            package("session-index", &[("anyhow", None)]),
            package("session-journal", &[("anyhow", Some("dev"))]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(
            v,
            vec![
                "library crate `session-index` depends on `anyhow`; use typed errors (thiserror) in libraries"
            ]
        );
    }

    #[test]
    fn unknown_crates_and_tooling_dependencies_fail() {
        let m = metadata(vec![
            package("session-extra", &[]),
            package("session-types", &[("session-tests", Some("dev"))]),
            package("session-tests", &[]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn the_real_workspace_is_layered() {
        let m = cargo_metadata().unwrap();
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());
    }
}
