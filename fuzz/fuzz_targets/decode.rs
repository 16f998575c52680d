//! Fuzzes the decoder: arbitrary bytes as a whole journal file, through every read
//! path (reader open, iteration, point reads, verify, salvage, writer open with
//! recovery). None may panic, hang or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    session_testkit::fuzz::exercise_decoder(data);
});
