//! cargo-fuzz target; the harness and its invariants: `fuzz/harness/legacy_line.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../harness/legacy_line.rs"]
mod harness;

fuzz_target!(|data: &[u8]| {
    harness::exercise(data);
});
