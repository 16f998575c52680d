//! Integration tests of session-index; modules mirror `src/`.

// Test helpers outside #[test] functions unwrap freely too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod conformance;
mod crash;
mod fields;
mod format;
mod freshness;
mod fuzz_replay;
mod ids;
mod index;
mod scan;
mod support;
mod tree;
mod versions;
