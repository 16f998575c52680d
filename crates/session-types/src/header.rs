//! The session header: the first record of a legacy file, the identity of a session.

use serde::{Deserialize, Serialize};

use crate::content::Extra;
use crate::ids::{SessionId, Timestamp};

/// The newest logical header version this crate models.
pub const CURRENT_VERSION: u32 = 3;

/// `{"type":"session","version":3,"id":…,"timestamp":…,"cwd":…,"parentSession"?:…}`
///
/// `version` absent means logical version 1. v1 headers may carry legacy keys
/// (`branchedFrom`, `provider`, `modelId`, `thinkingLevel`, `systemPrompt`, `model`);
/// they are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Logical version (1–3); `None` when the key is absent (v1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The session id.
    pub id: SessionId,
    /// Creation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
    /// Working directory of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Path of the session this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SessionHeader {
    /// A current-version header, as the reference's `newSession` writes it.
    pub fn new(id: SessionId, timestamp: Timestamp, cwd: impl Into<String>) -> Self {
        Self {
            version: Some(CURRENT_VERSION),
            id,
            timestamp: Some(timestamp),
            cwd: Some(cwd.into()),
            parent_session: None,
            extra: Extra::new(),
        }
    }

    /// The logical version: `version`, or 1 when absent.
    pub fn logical_version(&self) -> u32 {
        self.version.unwrap_or(1)
    }
}

impl SessionHeader {
    /// The header record's `type` string. It names no entry type: a header is the
    /// first record of a session, not a node of its tree.
    pub const TYPE: &'static str = "session";
}
