//! An agent loop on the awaited API: continue the newest session of a directory (or
//! create one), append a user turn and an assistant reply, rebuild the context.
//!
//! `cargo run -p session-manager --features tokio --example async_agent -- /tmp/store`

use session_manager::aio::AsyncStore;
use session_manager::{Layout, Store};
use session_types::AgentMessage;

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("bcs-async-agent"));
    let root = std::path::absolute(root)?;
    let store = AsyncStore::new(Store::new(Layout::with_root(root)?));
    let session = store.continue_recent("/projects/demo").await?;
    let user: AgentMessage = serde_json::from_value(serde_json::json!(
        {"role": "user", "content": "What changed?", "timestamp": 1_767_225_600_000u64}
    ))?;
    session.append_message(user).await?;
    let reply: AgentMessage = serde_json::from_value(serde_json::json!({
        "role": "assistant",
        "content": [{"type": "text", "text": "Two files."}],
        "api": "messages", "provider": "anthropic", "model": "claude",
        "usage": {"input": 10, "output": 3, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 13,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop", "timestamp": 1_767_225_601_000u64
    }))?;
    session.append_message(reply).await?;
    let context = session.build_session_context().await?;
    println!(
        "{} messages in the context of {}",
        context.messages.len(),
        session.session_id().await
    );
    session.close().await?;
    Ok(())
}
