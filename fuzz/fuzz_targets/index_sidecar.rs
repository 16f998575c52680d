//! cargo-fuzz target; the harness and its invariants: `fuzz/harness/index_sidecar.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../harness/index_sidecar.rs"]
mod harness;

fuzz_target!(|data: &[u8]| {
    harness::exercise(data);
});
