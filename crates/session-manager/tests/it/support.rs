//! Shared helpers.

use std::path::Path;

use serde_json::json;
use session_manager::{Layout, Sources, Store};
use session_types::AgentMessage;

/// 2025-01-01T00:00:00.000Z
pub(crate) const T0: u64 = 1_735_689_600_000;

/// A store rooted in a fresh temporary directory, with deterministic sources.
pub(crate) fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let s = store_at(dir.path(), 1);
    (dir, s)
}

/// A deterministic store rooted at `root`.
pub(crate) fn store_at(root: &Path, seed: u64) -> Store {
    Store::new(Layout::with_root(root).expect("absolute root"))
        .with_sources(Sources::deterministic(T0, seed))
}

/// A user message.
pub(crate) fn user(text: &str) -> AgentMessage {
    serde_json::from_value(json!({"role":"user","content":text,"timestamp":1}))
        .expect("user message")
}

/// An assistant message from `anthropic`/`claude` (or the given provider/model).
pub(crate) fn assistant_from(text: &str, provider: &str, model: &str, ts: u64) -> AgentMessage {
    serde_json::from_value(json!({
        "role":"assistant","content":[{"type":"text","text":text}],
        "api":"messages","provider":provider,"model":model,
        "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,
                 "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
        "stopReason":"stop","timestamp":ts
    }))
    .expect("assistant message")
}

/// An assistant message from `anthropic`/`claude`.
pub(crate) fn assistant(text: &str) -> AgentMessage {
    assistant_from(text, "anthropic", "claude", 2)
}

/// The roles of a context's messages.
pub(crate) fn roles(ctx: &session_manager::SessionContext<'_>) -> Vec<String> {
    ctx.messages
        .iter()
        .map(|m| m.role().unwrap_or("?").to_owned())
        .collect()
}

/// The ids of entries.
pub(crate) fn ids(entries: &[session_types::Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e.id().unwrap_or("").to_owned())
        .collect()
}
