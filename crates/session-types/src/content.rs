//! Content blocks inside messages: text, image, thinking, tool calls.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields this version does not model, kept in their original order and written back.
pub type Extra = Map<String, Value>;

/// One typed block of message content (`type` tag).
///
/// A block whose `type` this version does not know, or a known block in a shape
/// this version does not model, is kept whole in [`ContentBlock::Unknown`] and
/// serialized back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type")]
#[non_exhaustive]
// Variants are plain data read once and matched on; boxing them would only add
// allocations and indirection to every consumer.
#[allow(clippy::large_enum_variant)]
pub enum ContentBlock {
    /// `{"type":"text","text":…}`
    #[serde(rename = "text")]
    Text(TextContent),
    /// `{"type":"image","data":…,"mimeType":…}`
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `{"type":"thinking","thinking":…}`
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    /// `{"type":"toolCall","id":…,"name":…,"arguments":{…}}`
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
    /// A block of a kind this version does not model, with its `type` key.
    #[serde(untagged)]
    Unknown(Extra),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            extra: Extra::new(),
        })
    }

    /// The text of a text block, `None` for every other kind.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Plain text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Unmodelled fields (e.g. `textSignature`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A base64-encoded image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64 image bytes.
    pub data: String,
    /// e.g. `image/png`.
    pub mime_type: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Model reasoning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ThinkingContent {
    /// The reasoning text.
    pub thinking: String,
    /// Unmodelled fields (e.g. `thinkingSignature`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool invocation requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCall {
    /// Provider-assigned call id, answered by a `toolResult` message.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool arguments (a JSON object in practice, kept as any value).
    pub arguments: Value,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// User-style content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum UserContent {
    /// `"content": "hello"`
    Text(String),
    /// `"content": [{"type":"text",…}, {"type":"image",…}]`
    Blocks(Vec<ContentBlock>),
}

impl UserContent {
    /// The text as the reference's listing extracts it: the string itself, or
    /// the text blocks joined with a single space.
    pub fn joined_text(&self) -> String {
        match self {
            Self::Text(s) => s.clone(),
            Self::Blocks(blocks) => blocks
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

impl From<&str> for UserContent {
    fn from(s: &str) -> Self {
        Self::Text(s.to_owned())
    }
}
