//! The protocol crate's integration tests: every message type round-trips, lines are
//! bounded before parsing, malformed input is refused with the right error.

mod docs;
mod envelope;
mod errors;
mod line;
mod roundtrip;
mod schema;
