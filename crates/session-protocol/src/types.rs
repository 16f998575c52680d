//! The values requests and results carry beside the logical model's own types
//! (`session_types`: entries, messages, usage, header), which travel as they are
//! stored.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use session_types::{AgentMessage, Entry, EntryId, SessionHeader};

/// How an append travels, as the library's `Durability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum Durability {
    /// Acknowledged once synced: survives power loss (the default). The owner shares
    /// one sync among the durable appends that arrive together (group commit).
    #[default]
    Durable,
    /// Acknowledged once written to the operating system: survives a crash of the
    /// owner, not power loss, until the next sync.
    Buffered,
}

/// The bounds of one complete read (the seed's `maxSourceEntries`/`maxSourceBytes`);
/// an absent field takes the seed's default (16,384 entries, 64 MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReadLimits {
    /// At most this many source entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_source_entries: Option<u64>,
    /// At most this many source payload bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_source_bytes: Option<u64>,
}

/// Who is on the other end (name and version), for logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeerInfo {
    /// The program's name.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// A session the owner holds open for this connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionOpened {
    /// The session id: what every `session/*` call names.
    pub session_id: String,
    /// The journal's path (lossy UTF-8).
    pub session_file: String,
    /// The session header record.
    pub header: SessionHeader,
    /// The current leaf.
    pub leaf_id: Option<EntryId>,
}

/// The id of an appended entry, acknowledged once it is as durable as asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Appended {
    /// The new entry's id (now the leaf).
    pub entry_id: EntryId,
}

/// The answer to `session/follow`: where its notifications start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Followed {
    /// The last entry appended before the subscription (`null` before any): every
    /// entry appended after it is notified, in journal order, until `session/lagged`.
    pub last_entry_id: Option<String>,
}

/// A result with nothing in it: `{}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Entries in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Entries {
    /// The entries.
    pub entries: Vec<Entry>,
}

/// One entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OneEntry {
    /// The entry.
    pub entry: Entry,
}

/// Perhaps an entry (`null`: none, e.g. no leaf yet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaybeEntry {
    /// The entry.
    pub entry: Option<Entry>,
}

/// A label (`null`: none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Label {
    /// The label.
    pub label: Option<String>,
}

/// Several branches read through one capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Branches {
    /// One path root → leaf per requested leaf, in request order.
    pub branches: Vec<Vec<Entry>>,
}

/// One node of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TreeNode {
    /// The entry.
    pub entry: Entry,
    /// Its current label.
    pub label: Option<String>,
    /// When that label was set (the label entry's timestamp, as written).
    pub label_timestamp: Option<String>,
    /// Depth from its root.
    pub depth: u32,
    /// Positions in [`Tree::nodes`] of its children, in the reference's order.
    pub children: Vec<u32>,
}

/// The session tree in the reference's `getTree()` order, flat (pre-order) so that no
/// reader or writer recurses on the session's depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tree {
    /// Every node in pre-order.
    pub nodes: Vec<TreeNode>,
    /// Positions of the roots.
    pub roots: Vec<u32>,
}

/// The context at the leaf: the reference's `buildSessionContext()` value
/// `{messages, thinkingLevel, model}` (as `bcs context --json` prints it), with
/// `serviceTier` when the path sets one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionContext {
    /// The messages the model is sent. A stored `message` that is not a JSON object
    /// is passed through as it is (the reference does), and reads back as
    /// [`AgentMessage::NotAnObject`].
    #[serde(deserialize_with = "context_messages")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<ContextMessage>"))]
    pub messages: Vec<AgentMessage>,
    /// The thinking level at the leaf (as stored: any JSON value), absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<Value>,
    /// `{provider, modelId}` at the leaf, or `null`.
    pub model: Value,
    /// The service tier at the leaf, absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
}

/// A context message on the wire: a message object, or a stored non-object value
/// passed through (the schema of [`SessionContext::messages`]' items).
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code, clippy::large_enum_variant)] // only its schema is used
enum ContextMessage {
    Message(AgentMessage),
    NotAnObject(Value),
}

/// Reads context messages: objects as [`AgentMessage`]s, anything else as
/// [`AgentMessage::NotAnObject`] (which `AgentMessage` never reads by itself: an entry
/// holding such a message is an unknown entry).
fn context_messages<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<AgentMessage>, D::Error> {
    Vec::<Value>::deserialize(d)?
        .into_iter()
        .map(|v| match v {
            Value::Object(_) => AgentMessage::deserialize(v).map_err(serde::de::Error::custom),
            other => Ok(AgentMessage::NotAnObject(other)),
        })
        .collect()
}

/// Where an imported entry came from (`null`: appended natively).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetentionResult {
    /// The retention record as stored (source path, hash, line, version).
    pub retention: Option<Value>,
}

/// The header record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeaderResult {
    /// The header.
    pub header: SessionHeader,
}

/// The getters of an owned session in one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// `getSessionId()`
    pub session_id: String,
    /// `getSessionFile()`
    pub session_file: String,
    /// `getSessionDir()`
    pub session_dir: String,
    /// `getCwd()`
    pub cwd: String,
    /// `getSessionName()`
    pub session_name: Option<String>,
    /// `getLeafId()`
    pub leaf_id: Option<EntryId>,
}

/// A path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PathResult {
    /// The path (lossy UTF-8).
    pub path: String,
}

/// A listing: one object per session, as the reference renders its `SessionInfo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Listing {
    /// The sessions, newest activity first.
    pub sessions: Vec<ListedSession>,
}

/// One session of a listing: the reference's `SessionInfo` as its `JSON.stringify`
/// renders it (what `bcs list --json` prints).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListedSession {
    /// The journal's path.
    pub path: String,
    /// The session id as the header record holds it (any JSON value; absent when the
    /// header has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The working directory.
    pub cwd: String,
    /// The latest name, absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The header's `parentSession` as stored, absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_path: Option<Value>,
    /// ISO 8601 text, or `null` for an invalid date (`Date.prototype.toJSON`).
    pub created: Option<String>,
    /// ISO 8601 text of the last activity, or `null` for an invalid date.
    pub modified: Option<String>,
    /// Messages in the session.
    pub message_count: u64,
    /// The first user message's text (an excerpt of at most 4,096 bytes).
    pub first_message: String,
}

/// What a delete removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deleted {
    /// Every path removed, in removal order.
    pub removed: Vec<String>,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Imported {
    /// The imported session's id.
    pub session_id: String,
    /// Its native journal.
    pub session_file: String,
    /// Whether this source had been imported before (nothing was written).
    pub already_imported: bool,
    /// Entry records written.
    pub entries: u64,
    /// Issues found (lines not taken, taken with a change, or kept with a caveat).
    pub issues: u64,
}

/// What `store/importMany` did with each source, in the order of its `paths`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportedMany {
    /// One item per source.
    pub results: Vec<ImportManyItem>,
}

/// One source of `store/importMany`: imported, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportManyItem {
    /// The source, as given.
    pub path: String,
    /// What was imported (absent when the source failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    /// Why the source did not import (absent when it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ImportManyError>,
}

/// A source's failure in `store/importMany`: the code and message it would have had
/// as a `store/import` error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportManyError {
    /// The error code (docs/rpc.md).
    pub code: i64,
    /// The message, naming the path.
    pub message: String,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Exported {
    /// The file written.
    pub path: String,
    /// Records written (the header included).
    pub records: u64,
    /// Bytes written.
    pub bytes: u64,
}
