//! An async client of the Base Context session owner (`bcs serve`, `docs/owner.md`)
//! on tokio: typed, pipelined JSON-RPC calls over the owner's Unix socket or a `bcs
//! serve --stdio` child.
//!
//! It stands on `session-protocol` (and the logical model, `session-types`, through
//! it) and never links the engine: `cargo xtask layers` holds it to that.
//!
//! Tour:
//! - [`Client::connect`] (the socket of a store's home, `socket`'s path rules, long
//!   homes included), [`Client::connect_or_start`] (starts `bcs serve` when no owner
//!   answers; `$BASE_CONTEXT_BCS` or `bcs` on `PATH`), [`Client::spawn_stdio`] (one
//!   owner for this client alone), [`Client::over`] (any stream pair). Each runs the
//!   `initialize` handshake: an owner of another major version is refused, naming
//!   both.
//! - [`Client::call`]`::<session_protocol::call::M>(params)` for every method of the
//!   protocol's table, and shorthands for the common ones ([`Client::create`],
//!   [`Client::append_message`], [`Client::read_branch`], …). Calls from clones of a
//!   client on any tasks share one connection and are in flight together.
//! - [`Client::notifications`]: the owner's notifications ([`Notice`]), on a bounded
//!   channel that never stalls answers.
//! - [`ClientError`]: the owner's typed error (`session_protocol::Error`, with its
//!   stable [`ClientError::code`]), or [`ClientError::OwnerGone`] for every call in
//!   flight when the connection ends.
//!
//! ```no_run
//! use session_client::Client;
//! use session_types::AgentMessage;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::connect_or_start(std::path::Path::new("/home/u/.base-context")).await?;
//! let session = client.create("/work/project").await?;
//! let message: AgentMessage =
//!     serde_json::from_str(r#"{"role":"user","content":"hello","timestamp":1}"#)?;
//! let id = client.append_message(&session.session_id, message, None).await?;
//! let branch = client.read_branch(&session.session_id).await?;
//! assert_eq!(branch.last().and_then(|e| e.id()), Some(id.as_str()));
//! # Ok(()) }
//! ```

mod calls;
mod client;
mod conn;
mod error;
pub mod socket;

pub use client::{BCS_VAR, Client, ClientOptions};
pub use conn::Notice;
pub use error::ClientError;
pub use session_protocol;

#[cfg(test)]
mod tests {
    /// A client is shared across tasks and threads.
    #[test]
    fn clients_and_their_errors_are_send_and_sync() {
        fn shared<T: Send + Sync + 'static>() {}
        shared::<crate::Client>();
        shared::<crate::ClientError>();
    }
}
