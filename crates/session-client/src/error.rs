//! What a call can fail with.

use std::path::PathBuf;
use std::time::Duration;

/// A failed call: the owner's typed answer, or the connection's fate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The owner answered with an error: its stable code is [`Self::code`], its fields
    /// are the variant's (`session_protocol::Error`, e.g. `LimitExceeded`,
    /// `NotFound`, `Locked`); a code this version does not know is
    /// `session_protocol::Error::Unknown` with the raw object.
    #[error(transparent)]
    Owner(#[from] session_protocol::Error),
    /// The connection to the owner ended (the owner exited or was killed, or its
    /// output could not be read) before this call was answered. Nothing says whether
    /// the owner performed it: an append may be in the journal (read it back after
    /// reconnecting). Every call in flight gets this; none waits forever.
    #[error("the owner is gone: {detail}")]
    OwnerGone {
        /// What ended the connection.
        detail: String,
    },
    /// No owner answers on the socket (none runs, or a dead one left its socket).
    #[error("{}: no owner answers: {source}", .path.display())]
    Connect {
        /// The socket.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `bcs serve` could not be started.
    #[error("cannot start the owner with {}: {source}", .program.display())]
    Start {
        /// The program run.
        program: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An owner was started but none answered within the retries.
    #[error("{}: no owner answered after {attempts} attempts (last: {last})", .path.display())]
    NotStarted {
        /// The socket.
        path: PathBuf,
        /// Connection attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: String,
    },
    /// The owner did not answer within the call timeout
    /// ([`ClientOptions::call_timeout`](crate::ClientOptions::call_timeout)). The
    /// connection goes on (a late answer is dropped); nothing says whether the owner
    /// performed the call: an append may be in the journal.
    #[error("{method}: the owner did not answer within {after:?}")]
    Timeout {
        /// The method called (`initialize` while connecting).
        method: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// The owner's answer does not read as the method's result type (an owner of
    /// another version, or a fault).
    #[error("{method}: the owner's answer does not fit: {detail}")]
    BadAnswer {
        /// The method called.
        method: &'static str,
        /// The decoder's message.
        detail: String,
    },
}

impl ClientError {
    /// The owner's stable error code, for an [`ClientError::Owner`] error.
    pub fn code(&self) -> Option<i64> {
        match self {
            ClientError::Owner(e) => Some(e.code()),
            _ => None,
        }
    }

    /// Whether this is [`ClientError::OwnerGone`].
    pub fn is_owner_gone(&self) -> bool {
        matches!(self, ClientError::OwnerGone { .. })
    }

    /// Whether the call may simply be retried (the owner was overloaded and did not
    /// perform it).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ClientError::Owner(session_protocol::Error::Overloaded { .. })
        )
    }
}
