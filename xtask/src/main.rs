//! Workspace automation: `cargo xtask <command>`.
//!
//! Commands:
//! - `layers` — checks that our crates depend on each other only downward.
//! - `tidy` — checks that no crate but `session-types` spells an entry type as a
//!   string literal.
//! - `fixtures [--check]` — regenerates (or checks) the golden corpus.
//! - `difffuzz` — the differential fuzzer against the reference (see `difffuzz/mod.rs`).
//! - `protocol [--check]` — regenerates (or checks) the owner protocol's JSON Schema and
//!   TypeScript definitions from the Rust types.
//!
//! Commands that drive the reference implementation need node and the npm package
//! `@mariozechner/pi-coding-agent@0.73.1`; see `tests/fixtures/README.md`.

use anyhow::{Result, bail};

// Command modules. Each exposes `pub(crate) fn run(args: &[String]) -> Result<()>`.
mod bench;
mod conformance_context;
mod conformance_import;
mod conformance_index;
mod difffuzz;
mod fixtures;
mod layers;
mod protocol;
mod tidy;
// <command modules: add `mod name;` lines above this marker>

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        print_help();
        return Ok(());
    };
    match command.as_str() {
        "layers" => layers::run(rest),
        "tidy" => tidy::run(rest),
        "fixtures" => fixtures::run(rest),
        "conformance-context" => conformance_context::run(rest),
        "conformance-index" => conformance_index::run(rest),
        "conformance-import" => conformance_import::run(rest),
        "bench" => bench::run(rest),
        "difffuzz" => difffuzz::run(rest),
        "protocol" => protocol::run(rest),
        // <command dispatch: add `"name" => name::run(rest),` lines above this marker>
        "help" | "--help" | "-h" => {
            print_help();
            Ok(())
        }
        other => bail!("unknown command `{other}`; run `cargo xtask help`"),
    }
}

/// The workspace root (the parent of `xtask/`).
pub(crate) fn workspace_root() -> std::path::PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map_or_else(|| here.to_path_buf(), std::path::Path::to_path_buf)
}

fn print_help() {
    println!(
        "cargo xtask <command>\n\n\
         layers             check the crate layering (reads `cargo metadata`)\n\
         tidy               no entry-type string literal outside session-types\n\
         fixtures [--check] regenerate the golden corpus (or check it is up to date)\n\
         conformance-context  session-context vs the reference on generated sessions (node)\n\
         conformance-index    trees and listings vs the reference on generated data (node)\n\
         conformance-import   import, export, and the reference's view of the export (node)\n\
         bench [--quick]      medians of our operations vs the reference on generated data (release; node)\n\
         difffuzz [run|summary|record|known|gen]  random legacy sessions vs the reference (node)\n\
         protocol [--check]   regenerate the protocol's JSON Schema and TypeScript (or check them)\n"
    );
}
