//! Imports one legacy file and prints the throughput: the benchmark behind
//! `docs/benchmarks.md` (run under `/usr/bin/time -v` for the peak RSS).
//!
//! `cargo run --release -p session-import --example import_file -- SOURCE DEST_DIR`

use std::path::PathBuf;
use std::time::Instant;

use session_import::{Destination, ImportOptions, import};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let (Some(source), Some(dir)) = (args.next(), args.next()) else {
        return Err("usage: import_file SOURCE DEST_DIR".into());
    };
    let source = PathBuf::from(source);
    let bytes = std::fs::metadata(&source)?.len();
    let start = Instant::now();
    let outcome = import(
        &source,
        &Destination::Dir(dir.into()),
        &ImportOptions::default(),
    )?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} entries, {} issues, {} bytes in {secs:.3} s = {:.1} MB/s (already imported: {})",
        outcome.entries,
        outcome.issues.len(),
        bytes,
        bytes as f64 / secs / 1e6,
        outcome.already_imported
    );
    Ok(())
}
