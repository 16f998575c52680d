//! Benchmarks of session-manager (see docs/benchmarks.md).
fn main() {}
