//! Integration tests of `session-import`; modules mirror `src/`.

// Helpers outside `#[test]` functions panic on broken fixtures by design.
#![allow(clippy::unwrap_used)]

mod bulk;
mod campaign;
mod export;
mod format;
mod ids;
mod import;
mod registry;
mod retention;
mod sidecar;
mod support;
mod versions;
