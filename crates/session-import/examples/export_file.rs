//! Imports a legacy file into a scratch directory and exports it back as v3 JSONL.
//!
//! `cargo run -p session-import --example export_file -- SOURCE SCRATCH_DIR OUT`

use std::path::PathBuf;

use session_import::{Destination, ImportOptions, export, import};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [source, scratch, out] = args.as_slice() else {
        return Err("usage: export_file SOURCE SCRATCH_DIR OUT".into());
    };
    let outcome = import(
        source,
        &Destination::Dir(scratch.clone()),
        &ImportOptions::default(),
    )?;
    export(&outcome.journal, out)?;
    Ok(())
}
