//! Scan-and-verify throughput of a real journal (the page cache is warmed first):
//! `cargo run --release -p session-journal --example scan -- JOURNAL [REPS]`.

use std::time::Instant;

use session_journal::{VerifyOptions, verify};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(args.next().ok_or("usage: scan JOURNAL [REPS]")?);
    let reps: usize = args.next().map_or(Ok(5), |r| r.parse())?;
    let len = std::fs::metadata(&path)?.len();
    verify(&path, &VerifyOptions::default())?; // warm the page cache
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        let report = verify(&path, &VerifyOptions::default())?;
        times.push(t.elapsed().as_secs_f64());
        assert!(report.frames > 0);
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "{}: {} bytes, median {:.1} ms over {reps} runs: {:.0} MB/s ({:.2} GiB/s)",
        path.display(),
        len,
        median * 1e3,
        len as f64 / median / 1e6,
        len as f64 / median / f64::from(1u32 << 30)
    );
    Ok(())
}
