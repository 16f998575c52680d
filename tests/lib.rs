//! Helpers shared by the cross-crate scenarios and the golden-corpus tests.
