//! Replays the `index_sidecar` fuzz harness (`fuzz/harness/index_sidecar.rs`, run by
//! `cargo fuzz run index_sidecar`) over every committed finding in
//! `tests/regressions/index_sidecar/` and over one input per harness mode, so the
//! harness's invariants hold in ordinary `cargo test` runs.

#[path = "../../../../fuzz/harness/index_sidecar.rs"]
#[allow(unreachable_pub, dead_code, clippy::expect_used)]
mod harness;

use std::path::Path;

#[test]
fn committed_findings_replay_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions/index_sidecar");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        harness::exercise(&std::fs::read(&path).unwrap());
        n += 1;
    }
    assert!(n > 0, "no findings in {}", dir.display());
}

#[test]
fn every_harness_mode_holds_on_simple_inputs() {
    // Mode byte, then a patch: [at_lo, at_hi, cut, xor...].
    for mode in 0u8..12 {
        harness::exercise(&[mode]);
        harness::exercise(&[mode, 0, 0, 0]);
        harness::exercise(&[mode, 9, 0, 0, 0xff]);
        harness::exercise(&[mode, 0x30, 0, 7, 1, 2, 3]);
    }
}

/// The first finding: a sidecar with a valid trailer whose aggregates name a leaf
/// past the records; `Index::parent(leaf)` indexed out of bounds.
#[test]
fn a_crafted_sidecar_naming_a_record_past_the_end_is_rebuilt() {
    harness::exercise(&[0x63, 0x0d, 0xa7, 0x00, 0x08]);
}
