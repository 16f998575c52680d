//! The golden corpus, checked across crates.

mod inventory;
