//! `cargo xtask layers`: our crates depend on each other only downward.
//!
//! Reads `cargo metadata` and checks every dependency edge between workspace
//! crates against the layer table of ARCHITECTURE.md. Also refuses `anyhow` as a
//! normal dependency of a library crate (errors there are typed, with `thiserror`),
//! and keeps test support out of the libraries: the test kit may depend on every
//! library crate, a library crate on it only as a dev-dependency, and only the test
//! kit and dev-dependencies turn on a library's `testing` feature.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The layered crates, bottom to top, each with the crates it builds on directly; a
/// crate may depend on those and, transitively, on what they build on. The engine
/// stack (types → journal → index → context → import → manager) is a line; the
/// owner's wire protocol stands beside it on `session-types` alone (a client links
/// the protocol, never the engine), the owner joins the two, and the client
/// (`session-client`) stands on the protocol alone. `xtask` and
/// `session-tests` sit outside the stack: they may depend on anything and nothing may
/// depend on them. The test kit (`TEST_SUPPORT`) sits outside it too, beside the
/// layers it supports.
pub(crate) const LAYERS: [(&str, &[&str]); 10] = [
    ("session-types", &[]),
    ("session-journal", &["session-types"]),
    ("session-index", &["session-journal"]),
    ("session-context", &["session-index"]),
    ("session-import", &["session-context"]),
    ("session-manager", &["session-import"]),
    ("session-protocol", &["session-types"]),
    ("session-owner", &["session-manager", "session-protocol"]),
    ("session-client", &["session-protocol"]),
    ("session-cli", &["session-owner", "session-client"]),
];

/// Every crate's layer (the longest chain of crates under it) and the set of crates
/// it may depend on (the transitive closure of `LAYERS`).
fn layer_table() -> BTreeMap<&'static str, (usize, BTreeSet<&'static str>)> {
    let mut table: BTreeMap<&'static str, (usize, BTreeSet<&'static str>)> = BTreeMap::new();
    // `LAYERS` lists each crate after what it builds on, so one pass closes it.
    for (name, builds_on) in LAYERS {
        let mut layer = 0;
        let mut below = BTreeSet::new();
        for dep in builds_on {
            if let Some((l, b)) = table.get(dep) {
                layer = layer.max(l + 1);
                below.extend(b.iter().copied());
            }
            below.insert(*dep);
        }
        table.insert(name, (layer, below));
    }
    table
}

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
    let layer_of = layer_table();
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
            // A crate's own tests may turn on its features (a dev-dependency on
            // itself): no other crate comes in.
            if dep_name == name && kind == "dev" {
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
            let (Some((from, allowed)), Some((to, _))) =
                (layer_of.get(name), layer_of.get(dep_name))
            else {
                continue; // tooling may depend on anything
            };
            if !allowed.contains(dep_name) {
                let how = if to == from {
                    "sideways on"
                } else if to > from {
                    "upward on"
                } else {
                    "on a crate it does not build on,"
                };
                violations.push(format!(
                    "`{name}` (layer {from}) depends {how} `{dep_name}` (layer {to}) [{kind} dependency]"
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
            package("session-protocol", &[("session-journal", Some("dev"))]),
            package("session-journal", &[]),
            package("session-import", &[("session-manager", Some("dev"))]),
            package("session-manager", &[]),
        ]);
        let v = check(&m).unwrap();
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("sideways"));
        assert!(v[1].contains("upward") && v[1].contains("[dev dependency]"));
    }

    /// A crate's tests turning on its own features (`session-manager`'s `internals`)
    /// bring in no other crate.
    #[test]
    fn a_dev_dependency_on_itself_is_allowed() {
        let m = metadata(vec![package(
            "session-manager",
            &[("session-manager", Some("dev"))],
        )]);
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());
        let m = metadata(vec![package(
            "session-manager",
            &[("session-manager", None)],
        )]);
        assert_eq!(check(&m).unwrap().len(), 1);
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
    fn the_protocol_stands_on_types_alone_and_the_owner_joins_it_to_the_manager() {
        let m = metadata(vec![
            package(
                "session-protocol",
                &[("session-types", None), ("serde", None)],
            ),
            package(
                "session-owner",
                &[
                    ("session-manager", None),
                    ("session-protocol", None),
                    ("session-journal", None),
                ],
            ),
            package(
                "session-cli",
                &[("session-owner", None), ("session-protocol", None)],
            ),
            package("session-manager", &[]),
        ]);
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());

        let m = metadata(vec![
            package("session-protocol", &[("session-journal", None)]),
            package("session-index", &[("session-protocol", None)]),
            package("session-manager", &[("session-owner", Some("dev"))]),
            package("session-owner", &[]),
            package("session-journal", &[]),
        ]);
        assert_eq!(
            check(&m).unwrap(),
            vec![
                "`session-protocol` (layer 1) depends sideways on `session-journal` (layer 1) [normal dependency]",
                "`session-index` (layer 2) depends on a crate it does not build on, `session-protocol` (layer 1) [normal dependency]",
                "`session-manager` (layer 5) depends upward on `session-owner` (layer 6) [dev dependency]",
            ]
        );
    }

    #[test]
    fn the_client_stands_on_the_protocol_and_never_links_the_engine() {
        let m = metadata(vec![
            package(
                "session-client",
                &[("session-protocol", None), ("session-types", None)],
            ),
            package("session-cli", &[("session-client", None)]),
            package("session-protocol", &[]),
            package("session-types", &[]),
        ]);
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());

        let m = metadata(vec![
            package("session-client", &[("session-manager", None)]),
            package("session-owner", &[("session-client", Some("dev"))]),
            package("session-manager", &[]),
        ]);
        assert_eq!(
            check(&m).unwrap(),
            vec![
                "`session-client` (layer 2) depends upward on `session-manager` (layer 5) [normal dependency]",
                "`session-owner` (layer 6) depends on a crate it does not build on, `session-client` (layer 2) [dev dependency]",
            ]
        );
    }

    #[test]
    fn the_layer_table_is_in_order() {
        // Each crate comes after every crate it builds on, and the engine keeps its
        // numbering: types 0 … manager 5; the protocol beside the journal.
        let t = layer_table();
        let layer = |n: &str| t[n].0;
        assert_eq!(
            [
                "session-types",
                "session-journal",
                "session-index",
                "session-context",
                "session-import",
                "session-manager"
            ]
            .map(layer),
            [0, 1, 2, 3, 4, 5]
        );
        assert_eq!(layer("session-protocol"), 1);
        assert_eq!(layer("session-owner"), 6);
        assert_eq!(layer("session-cli"), 7);
        assert_eq!(layer("session-client"), 2);
        assert!(t["session-cli"].1.contains("session-types"));
        assert!(t["session-cli"].1.contains("session-client"));
        assert!(!t["session-client"].1.contains("session-manager"));
        assert!(!t["session-protocol"].1.contains("session-journal"));
    }

    #[test]
    fn the_real_workspace_is_layered() {
        let m = cargo_metadata().unwrap();
        assert_eq!(check(&m).unwrap(), Vec::<String>::new());
    }
}
