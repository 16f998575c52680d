//! The reliability campaign's cross-crate tests (`docs/reliability.md`): the bit-flip
//! sweep over a real imported journal and the malformed-input corpus run through every
//! `bcs` subcommand. Under `cargo test` each runs a small seeded sample in seconds;
//! the full campaigns run behind environment variables documented in each module.
// Helpers outside `#[test]` functions are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bitflip;
mod malformed;

/// The workspace root.
pub(crate) fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("workspace root")
}

/// An environment knob: `var` parsed, or `default`.
pub(crate) fn knob(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
