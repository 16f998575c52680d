//! The protocol's version and the `initialize` rule.
//!
//! A major version changes when a message of an older major would be misread; a minor
//! version adds methods, optional fields or notifications. The server serves clients
//! of its own major whatever their minor (it answers with its own version, and a
//! client uses only what that minor offers); any other major is refused by name.

use serde::{Deserialize, Serialize};

/// A protocol version: `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProtocolVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Compatible additions.
    pub minor: u32,
}

/// The version this crate speaks.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion { major: 1, minor: 1 };

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl ProtocolVersion {
    /// Whether a server speaking `self` serves a client speaking `client`: the same
    /// major, any minor.
    pub fn serves(self, client: ProtocolVersion) -> bool {
        self.major == client.major
    }
}
