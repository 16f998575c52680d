//! The golden corpus, checked across crates.
