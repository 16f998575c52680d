//! The smallest agent loop, depending on `session-manager` alone: resume the newest
//! session of a directory (or create one), append a user turn and an assistant reply,
//! rebuild the context the model gets.
//!
//! `cargo run -p session-manager --example agent_loop -- /tmp/store`

use session_manager::{AgentMessage, Layout, Store, Usage};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/agent-loop".into());
    let store = Store::new(Layout::with_root(std::path::absolute(root)?)?);
    let mut session = store.continue_recent("/projects/demo")?;

    let now = 1_767_225_600_000;
    session.append_message(AgentMessage::user("What changed?", now))?;
    session.append_message(AgentMessage::assistant_text(
        "Two files.",
        "anthropic-messages",
        "anthropic",
        "claude-sonnet",
        Usage::tokens(12, 3),
        now + 1_000,
    ))?;

    let context = session.build_session_context()?;
    println!(
        "session {}: {} messages in the context",
        session.session_id(),
        context.messages.len()
    );
    session.close()?;
    Ok(())
}
