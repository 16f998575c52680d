//! Constructors for the messages an agent appends, with millisecond timestamps: no
//! `serde_json::Number` or `Extra` to spell out at the call site.
//!
//! ```
//! use session_types::{AgentMessage, Usage};
//!
//! let user = AgentMessage::user("What changed?", 1_767_225_600_000);
//! let reply = AgentMessage::assistant_text(
//!     "Two files.", "anthropic-messages", "anthropic", "claude-sonnet",
//!     Usage::tokens(10, 3), 1_767_225_601_000,
//! );
//! assert_eq!(user.role(), Some("user"));
//! assert_eq!(reply.role(), Some("assistant"));
//! ```

use serde_json::{Number, Value};

use crate::content::Extra;
use crate::content::{ContentBlock, UserContent};
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, CustomMessage, ToolResultMessage, Usage,
    UserMessage,
};

fn ms(timestamp_ms: i64) -> Number {
    Number::from(timestamp_ms)
}

impl Usage {
    /// Usage of `input` and `output` tokens (total their sum), no cache, zero cost.
    pub fn tokens(input: u64, output: u64) -> Self {
        let mut u = Usage::zero();
        u.input = input;
        u.output = output;
        u.total_tokens = input.saturating_add(output);
        u
    }
}

impl AgentMessage {
    /// A user prompt of plain text: `{"role":"user","content":text,"timestamp":ms}`.
    pub fn user(text: impl Into<String>, timestamp_ms: i64) -> Self {
        AgentMessage::User(UserMessage {
            content: UserContent::Text(text.into()),
            timestamp: ms(timestamp_ms),
            extra: Extra::new(),
        })
    }

    /// A user prompt of content blocks (text, images).
    pub fn user_blocks(blocks: Vec<ContentBlock>, timestamp_ms: i64) -> Self {
        AgentMessage::User(UserMessage {
            content: UserContent::Blocks(blocks),
            timestamp: ms(timestamp_ms),
            extra: Extra::new(),
        })
    }

    /// A model response of content blocks (text, thinking, tool calls), its usage and
    /// stop reason `"stop"` (`"toolUse"` when it holds a tool call).
    pub fn assistant(
        content: Vec<ContentBlock>,
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
        usage: Usage,
        timestamp_ms: i64,
    ) -> Self {
        let tool_use = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall(_)));
        AgentMessage::Assistant(AssistantMessage {
            content,
            api: api.into(),
            provider: provider.into(),
            model: model.into(),
            response_id: None,
            usage,
            stop_reason: if tool_use { "toolUse" } else { "stop" }.to_owned(),
            error_message: None,
            timestamp: ms(timestamp_ms),
            extra: Extra::new(),
        })
    }

    /// A model response of one text block (see [`assistant`](Self::assistant)).
    pub fn assistant_text(
        text: impl Into<String>,
        api: impl Into<String>,
        provider: impl Into<String>,
        model: impl Into<String>,
        usage: Usage,
        timestamp_ms: i64,
    ) -> Self {
        Self::assistant(
            vec![ContentBlock::text(text)],
            api,
            provider,
            model,
            usage,
            timestamp_ms,
        )
    }

    /// The result of the tool call `tool_call_id` of tool `tool_name`.
    pub fn tool_result(
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: Vec<ContentBlock>,
        is_error: bool,
        timestamp_ms: i64,
    ) -> Self {
        AgentMessage::ToolResult(ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content,
            details: None,
            is_error,
            timestamp: ms(timestamp_ms),
            extra: Extra::new(),
        })
    }

    /// A shell command the user ran, its output and exit code (`None`: unknown).
    pub fn bash_execution(
        command: impl Into<String>,
        output: impl Into<String>,
        exit_code: Option<i64>,
        timestamp_ms: i64,
    ) -> Self {
        AgentMessage::BashExecution(BashExecutionMessage {
            command: command.into(),
            output: output.into(),
            exit_code: exit_code.map(|c| Value::Number(c.into())),
            cancelled: false,
            truncated: false,
            full_output_path: None,
            timestamp: ms(timestamp_ms),
            exclude_from_context: None,
            extra: Extra::new(),
        })
    }

    /// An extension-injected message of type `custom_type`, shown in the interface
    /// when `display`.
    pub fn custom(
        custom_type: impl Into<String>,
        content: UserContent,
        display: bool,
        timestamp_ms: i64,
    ) -> Self {
        AgentMessage::Custom(CustomMessage {
            custom_type: custom_type.into(),
            content,
            display,
            details: None,
            timestamp: Some(ms(timestamp_ms)),
            extra: Extra::new(),
        })
    }
}
