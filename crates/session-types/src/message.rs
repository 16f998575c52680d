//! Agent messages (`role` tag) and token usage.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::content::{ContentBlock, Extra, UserContent};
use crate::ids::EntryId;

/// A message in the conversation, as stored in a `message` entry (`role` tag).
///
/// A role this version does not know (for example the legacy `hookMessage`) is kept
/// whole in [`AgentMessage::Unknown`] and serialized back unchanged. So is a message
/// of a known role whose fields do not match the model (the reference stores and
/// replays messages verbatim, so we do not reject them either): check
/// [`AgentMessage::role`] rather than the variant when the role matters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "role")]
#[non_exhaustive]
// Variants are plain data read once and matched on; boxing them would only add
// allocations and indirection to every consumer.
#[allow(clippy::large_enum_variant)]
pub enum AgentMessage {
    /// A user prompt.
    #[serde(rename = "user")]
    User(UserMessage),
    /// A model response.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    /// The result of a tool call.
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    /// A shell command the user ran.
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    /// An extension-injected message.
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    /// A summary of an abandoned branch (synthesized by context building).
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    /// A compaction summary (synthesized by context building).
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
    /// A message with a role this version does not model, or a known role in a
    /// shape it does not model; kept whole, with its `role` key.
    #[serde(untagged)]
    Unknown(Extra),
    /// A stored `message` that is not a JSON object (a string, number, boolean, array
    /// or `null`): the reference puts `entry.message` into the context as it is, so
    /// context building does too. Never read from JSON (an entry holding such a
    /// message reads as [`Entry::Unknown`](crate::Entry::Unknown)); serialized as the
    /// value itself.
    #[serde(untagged, skip_deserializing)]
    NotAnObject(Value),
}

/// [`AgentMessage`]'s modelled roles alone, for [`Entry::parse`](crate::Entry::parse)'s
/// first attempt at a `message` record: without the untagged fallbacks, serde reads
/// the role's fields from the buffered message it owns instead of a borrowed copy
/// (one copy of every string fewer). Where this fails, the record is read as before.
#[derive(Deserialize)]
#[serde(tag = "role")]
// As `AgentMessage`: read once and converted, boxing would only add allocations.
#[allow(clippy::large_enum_variant)]
pub(crate) enum TypedAgentMessage {
    #[serde(rename = "user")]
    User(UserMessage),
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
}

impl From<TypedAgentMessage> for AgentMessage {
    fn from(t: TypedAgentMessage) -> AgentMessage {
        match t {
            TypedAgentMessage::User(m) => AgentMessage::User(m),
            TypedAgentMessage::Assistant(m) => AgentMessage::Assistant(m),
            TypedAgentMessage::ToolResult(m) => AgentMessage::ToolResult(m),
            TypedAgentMessage::BashExecution(m) => AgentMessage::BashExecution(m),
            TypedAgentMessage::Custom(m) => AgentMessage::Custom(m),
            TypedAgentMessage::BranchSummary(m) => AgentMessage::BranchSummary(m),
            TypedAgentMessage::CompactionSummary(m) => AgentMessage::CompactionSummary(m),
        }
    }
}

impl AgentMessage {
    /// Reads a message from JSON text: what `serde_json::from_str::<AgentMessage>`
    /// answers, its errors included, without serde's buffered copy of the message
    /// where the text allows. A message of a role the direct reading covers, its
    /// `role` first, is read field by field; one of another modelled role is read
    /// as that role alone (no untagged fallback, so no buffered copy); anything else
    /// (an unknown role, a field of another JSON type, a repeated key) is left to
    /// the derived reading. For a reader of one message at a time (the owner's
    /// `appendMessage`), as [`Entry::parse`](crate::Entry::parse) is for records.
    pub fn parse_json(text: &str) -> Result<AgentMessage, serde_json::Error> {
        if let Some(m) = crate::decode::message(text) {
            return Ok(m);
        }
        if let Ok(typed) = crate::json::from_str::<TypedAgentMessage>(text) {
            return Ok(typed.into());
        }
        crate::json::from_str(text)
    }

    /// The `role` string of this message (`None` if an unknown message has no string role).
    pub fn role(&self) -> Option<&str> {
        Some(match self {
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResult(_) => "toolResult",
            Self::BashExecution(_) => "bashExecution",
            Self::Custom(_) => "custom",
            Self::BranchSummary(_) => "branchSummary",
            Self::CompactionSummary(_) => "compactionSummary",
            Self::Unknown(map) => return map.get("role").and_then(Value::as_str),
            Self::NotAnObject(_) => return None,
        })
    }
}

/// `{"role":"user","content":…,"timestamp":ms}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UserMessage {
    /// A string or text/image blocks.
    pub content: UserContent,
    /// Unix milliseconds.
    pub timestamp: Number,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A model response with its usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks.
    pub content: Vec<ContentBlock>,
    /// Provider API family, e.g. `anthropic-messages`.
    pub api: String,
    /// Provider, e.g. `anthropic`.
    pub provider: String,
    /// Model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// Provider response id, when the provider gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
    /// Token usage and cost.
    pub usage: Usage,
    /// `stop`, `length`, `toolUse`, `error` or `aborted` (other strings are kept).
    pub stop_reason: String,
    /// Present when the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Unix milliseconds.
    pub timestamp: Number,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The `ToolCall::id` this answers.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific metadata (`null` is kept as `Some(Value::Null)`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub details: Option<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// Unix milliseconds.
    pub timestamp: Number,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A shell command run by the user (`!cmd`), with its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// Captured output.
    pub output: String,
    /// Exit code; absent when unknown, `null` kept as `Some(Value::Null)`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub exit_code: Option<Value>,
    /// Whether the user cancelled it.
    pub cancelled: bool,
    /// Whether the output was truncated.
    pub truncated: bool,
    /// Where the full output was saved, when truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Unix milliseconds.
    pub timestamp: Number,
    /// `true` for `!!` commands, which stay out of the model's context
    /// (the reference writes it after `timestamp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An extension-injected message that takes part in the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// Extension identifier.
    pub custom_type: String,
    /// A string or text/image blocks.
    pub content: UserContent,
    /// Whether the interface shows it.
    pub display: bool,
    /// Extension metadata (not sent to the model).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub details: Option<Value>,
    /// Unix milliseconds (`null` when synthesized from an invalid entry timestamp).
    pub timestamp: Option<Number>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A summary of the branch the conversation came back from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// The entry the branch was left from (or `"root"`).
    pub from_id: String,
    /// Unix milliseconds, `null` for an invalid entry timestamp.
    pub timestamp: Option<Number>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A summary of the compacted history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// Context size before compaction.
    pub tokens_before: Number,
    /// Unix milliseconds, `null` for an invalid entry timestamp.
    pub timestamp: Option<Number>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Token counts (integers) and cost (floats) of one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Tokens read from the prompt cache.
    pub cache_read: u64,
    /// Tokens written to the prompt cache.
    pub cache_write: u64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Cost in dollars.
    pub cost: Cost,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Cost of one model call, per category. Kept as JSON numbers so `0` stays `0`
/// and `0.30000000000000004` stays exact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Input cost.
    pub input: Number,
    /// Output cost.
    pub output: Number,
    /// Cache-read cost.
    pub cache_read: Number,
    /// Cache-write cost.
    pub cache_write: Number,
    /// Total cost.
    pub total: Number,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Usage {
    /// Usage with every count and cost zero.
    pub fn zero() -> Self {
        let z = || Number::from(0u64);
        Self {
            input: 0,
            output: 0,
            cache_read: 0,
            cache_write: 0,
            total_tokens: 0,
            cost: Cost {
                input: z(),
                output: z(),
                cache_read: z(),
                cache_write: z(),
                total: z(),
                extra: Extra::new(),
            },
            extra: Extra::new(),
        }
    }

    /// `self - other`, field by field: token counts saturate at zero, costs are
    /// subtracted as floats and written the way JavaScript prints numbers.
    pub fn minus(&self, other: &Usage) -> Usage {
        self.zip_with(other, u64::saturating_sub, |a, b| a - b)
    }

    /// `self + other`, field by field: token counts saturate, costs are added as
    /// floats and written the way JavaScript prints numbers.
    pub fn plus(&self, other: &Usage) -> Usage {
        self.zip_with(other, u64::saturating_add, |a, b| a + b)
    }

    /// Combines two usages field by field; unmodelled fields come from `self`.
    fn zip_with(
        &self,
        other: &Usage,
        tokens: fn(u64, u64) -> u64,
        cost: fn(f64, f64) -> f64,
    ) -> Usage {
        let f = |a: &Number, b: &Number| {
            crate::json::js_number(cost(a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0)))
        };
        Usage {
            input: tokens(self.input, other.input),
            output: tokens(self.output, other.output),
            cache_read: tokens(self.cache_read, other.cache_read),
            cache_write: tokens(self.cache_write, other.cache_write),
            total_tokens: tokens(self.total_tokens, other.total_tokens),
            cost: Cost {
                input: f(&self.cost.input, &other.cost.input),
                output: f(&self.cost.output, &other.cost.output),
                cache_read: f(&self.cost.cache_read, &other.cost.cache_read),
                cache_write: f(&self.cost.cache_write, &other.cost.cache_write),
                total: f(&self.cost.total, &other.cost.total),
                extra: self.cost.extra.clone(),
            },
            extra: self.extra.clone(),
        }
    }
}

/// Deserializes an optional field so that an explicit `null` is kept as
/// `Some(Value::Null)` rather than collapsing into "absent".
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Where a branch was left from, as a typed id (`"root"` for a new root).
pub fn from_id_is_root(from_id: &str) -> bool {
    from_id == "root"
}

impl BranchSummaryMessage {
    /// The entry id the branch was left from, `None` for `"root"`.
    pub fn from_entry(&self) -> Option<EntryId> {
        (!from_id_is_root(&self.from_id)).then(|| EntryId::new(self.from_id.clone()))
    }
}
