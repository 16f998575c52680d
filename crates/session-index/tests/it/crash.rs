//! Under simulated power loss, no index ever claims bytes the journal lost.
//! `SESSION_INDEX_CRASH_SEEDS=N` runs N seeds (default 40).

use std::path::Path;

use session_index::{IndexStatus, RebuildReason, kinds, sidecar_path};
use session_journal::vfs::Vfs;
use session_journal::{Durability, OpenOptions, Writer};

use crate::support::{fingerprint, open, sim, synthetic, write, writer};

#[test]
fn no_index_claims_bytes_the_journal_lost() {
    let seeds: u64 = std::env::var("SESSION_INDEX_CRASH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let more = synthetic(200);
    let lines: Vec<&str> = more.lines().skip(1).collect();
    for seed in 0..seeds {
        let fs = sim();
        let path = Path::new("/s/a.jsonl");
        write(fs.clone(), path, &synthetic(20));
        let mut w = writer(fs.clone(), path);
        let mut rng = session_testkit::sim::SimRng::new(seed);
        for (i, l) in lines.iter().enumerate().skip(20).take(60) {
            let d = if rng.one_in(4) {
                Durability::Durable
            } else {
                Durability::Buffered
            };
            w.append(kinds::ENTRY, l.as_bytes(), d).unwrap();
            if rng.one_in(6) {
                // A reader indexes (and saves) while the writer is mid-stream.
                let (_, _) = open(fs.clone(), path);
            }
            if i % 17 == 0 && rng.one_in(2) {
                w.sync().unwrap();
            }
            if i % 23 == 0 && rng.one_in(3) {
                // A clean close in the middle: the journal's seal, appended after.
                w.seal().unwrap();
            }
        }
        let (_, _) = open(fs.clone(), path);
        for (i, l) in lines.iter().enumerate().skip(80).take(10) {
            let _ = i;
            w.append(kinds::ENTRY, l.as_bytes(), Durability::Buffered)
                .unwrap();
        }
        if rng.one_in(2) {
            w.close().unwrap();
        } else {
            drop(w);
        }
        fs.crash(seed);
        // Recover the journal as the owner would, then open the index.
        let recovered = Writer::open(
            path,
            OpenOptions {
                vfs: fs.clone(),
                ..OpenOptions::default()
            },
        );
        let Ok((w, _)) = recovered else { continue };
        drop(w);
        let (ix, report) = open(fs.clone(), path);
        if let IndexStatus::Rebuilt { reason } = &report.status {
            assert!(
                !matches!(
                    reason,
                    RebuildReason::JournalShorter { .. } | RebuildReason::WitnessMismatch { .. }
                ),
                "seed {seed}: the index claimed lost bytes: {reason}"
            );
        }
        fs.remove_file(&sidecar_path(path)).ok();
        let (fresh, _) = open(fs.clone(), path);
        assert_eq!(fingerprint(&ix), fingerprint(&fresh), "seed {seed}");
    }
}
