//! `cargo xtask layers`: our crates depend on each other only downward.
//!
//! Reads `cargo metadata` and checks every dependency edge between workspace
//! crates against the layer table of ARCHITECTURE.md. Also refuses `anyhow` as a
//! normal dependency of a library crate (errors there are typed, with `thiserror`),
//! and keeps test support out of the libraries: the test kit may depend on every
//! library crate, a library crate on it only as a dev-dependency, and only the test
//! kit and dev-dependencies turn on a library's `testing` feature.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The layered crates, bottom to top. `xtask` and `session-tests` sit outside the
/// stack: they may depend on anything and nothing may depend on them. The test kit
/// (`TEST_SUPPORT`) sits outside it too, beside the layers it supports.
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

/// Test-support crates: outside the stack, they may depend on any library crate;
/// library crates may use them only as dev-dependencies, tooling in any way.
const TEST_SUPPORT: [&str; 1] = ["session-testkit"];

/// The feature of a library crate that exposes internals to test support.
const TESTING_FEATURE: &str = "testing";

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
        if !layer_of.contains_key(name) && !TOOLING.contains(name) && !TEST_SUPPORT.contains(name) {
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
            let library = layer_of.contains_key(name);
            if library && kind != "dev" && TEST_SUPPORT.contains(&dep_name) {
                violations.push(format!(
                    "library crate `{name}` depends on test-support crate `{dep_name}` [{kind} dependency]; only a dev-dependency may"
                ));
                continue;
            }
            let testing = dep["features"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f.as_str() == Some(TESTING_FEATURE)));
            if library && kind != "dev" && testing {
                violations.push(format!(
                    "library crate `{name}` enables the `{TESTING_FEATURE}` feature of `{dep_name}` [{kind} dependency]; only the test kit and dev-dependencies may"
                ));
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

    fn package_with_features(name: &str, deps: &[(&str, Option<&str>, &[&str])]) -> Value {
        json!({
            "name": name,
            "id": format!("path+file:///ws/{name}#0.1.0"),
            "dependencies": deps
                .iter()
                .map(|(d, kind, features)| json!({"name": d, "kind": kind, "features": features}))
                .collect::<Vec<_>>(),
        })
    }

    #[test]
    fn the_test_kit_is_a_dev_dependency_of_libraries_only() {
        let m = metadata(vec![
            package("session-journal", &[("session-testkit", Some("dev"))]),
            package("session-index", &[("session-testkit", None)]),
            package("session-cli", &[("session-testkit", Some("build"))]),
            package(
                "session-testkit",
                &[("session-journal", None), ("session-cli", None)],
            ),
            package("xtask", &[("session-testkit", None)]),
            package("session-tests", &[("session-testkit", Some("dev"))]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(
            v,
            vec![
                "library crate `session-index` depends on test-support crate `session-testkit` [normal dependency]; only a dev-dependency may",
                "library crate `session-cli` depends on test-support crate `session-testkit` [build dependency]; only a dev-dependency may",
            ]
        );
    }

    #[test]
    fn the_test_kit_depends_on_no_tooling() {
        let m = metadata(vec![
            package("session-testkit", &[("xtask", None)]),
            package("xtask", &[]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(
            v,
            vec!["`session-testkit` depends on tooling crate `xtask`"]
        );
    }

    #[test]
    fn the_testing_feature_is_for_the_test_kit_and_dev_dependencies() {
        let m = metadata(vec![
            package_with_features("session-journal", &[]),
            package_with_features("session-index", &[("session-journal", None, &["testing"])]),
            package_with_features(
                "session-context",
                &[("session-journal", Some("dev"), &["testing"])],
            ),
            package_with_features(
                "session-testkit",
                &[("session-journal", None, &["testing"])],
            ),
            package_with_features("xtask", &[("session-journal", None, &["testing"])]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(
            v,
            vec![
                "library crate `session-index` enables the `testing` feature of `session-journal` [normal dependency]; only the test kit and dev-dependencies may"
            ]
        );
    }

    #[test]
    fn the_real_workspace_is_layered() {
        let m = cargo_metadata().unwrap();
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());
    }
}
