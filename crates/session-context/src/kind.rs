//! What an entry contributes to a context, known without decoding its payload.

use session_types::{Entry, EntryType, EntryTypeMap, Envelope};

/// The role class of a stored message, as far as context building cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageRole {
    /// `user`
    User,
    /// `assistant`: also a model source (its `provider`/`model` set the model).
    Assistant,
    /// Any other role (toolResult, bashExecution, custom, unknown…), passed through.
    Other,
}

/// The kind of an entry, which is all the path walk and the settings scan need.
///
/// Index layers compute it from a record's envelope ([`ContextKind::of_envelope`]) without
/// decoding the payload; resident sources compute it from the typed entry
/// ([`ContextKind::of`]). Both give the same answer for the same record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContextKind {
    /// `message`, with the class of its role.
    Message(MessageRole),
    /// `thinking_level_change`
    ThinkingLevelChange,
    /// `model_change`
    ModelChange,
    /// `service_tier_change`
    ServiceTierChange,
    /// `compaction`
    Compaction,
    /// `branch_summary` (an empty summary adds nothing, which needs the payload to know)
    BranchSummary,
    /// `custom_message`
    CustomMessage,
    /// Bookkeeping that never enters the context: `custom`, `label`, `session_info`,
    /// `session_state`, `agent_status`, `git_state`, `child_usage_attributed`.
    Bookkeeping,
    /// A type this version does not know (the reference ignores those too).
    Unknown,
}

impl ContextKind {
    /// The kind of a typed entry.
    pub fn of(entry: &Entry) -> ContextKind {
        match entry {
            Entry::Message(m) => ContextKind::Message(MessageRole::of(m.message.role())),
            // An unknown type, or a known type read whole because its fields do not fit
            // the typed model: its `type` and `message.role` decide, as in an envelope.
            Entry::Unknown(m) => ContextKind::of_type(
                m.get("type").and_then(serde_json::Value::as_str),
                m.get("message")
                    .and_then(|msg| msg.get("role"))
                    .and_then(serde_json::Value::as_str),
            ),
            other => ContextKind::of_type(other.entry_type(), None),
        }
    }

    /// The kind of a record from its envelope (`type` and `message.role` only).
    pub fn of_envelope(envelope: &Envelope<'_>) -> ContextKind {
        ContextKind::of_type(envelope.entry_type.as_deref(), envelope.role())
    }

    /// The kind for an entry `type` string and, for messages, the `message.role` string.
    pub fn of_type(entry_type: Option<&str>, role: Option<&str>) -> ContextKind {
        match entry_type.and_then(EntryType::from_name) {
            Some(EntryType::Message) => ContextKind::Message(MessageRole::of(role)),
            Some(t) => *KIND_OF_TYPE.get(t),
            None => ContextKind::Unknown,
        }
    }

    /// Whether an entry of this kind can put a message in the context.
    pub fn may_emit(self) -> bool {
        matches!(
            self,
            ContextKind::Message(_) | ContextKind::BranchSummary | ContextKind::CustomMessage
        )
    }

    /// Whether this kind sets the model (`model_change` or an assistant message).
    pub fn is_model_source(self) -> bool {
        matches!(
            self,
            ContextKind::ModelChange | ContextKind::Message(MessageRole::Assistant)
        )
    }
}

/// The kind of every entry type (a message's role refines it). A new entry type does
/// not compile until it is given a kind here.
const KIND_OF_TYPE: EntryTypeMap<ContextKind> = EntryTypeMap {
    message: ContextKind::Message(MessageRole::Other),
    thinking_level_change: ContextKind::ThinkingLevelChange,
    model_change: ContextKind::ModelChange,
    service_tier_change: ContextKind::ServiceTierChange,
    compaction: ContextKind::Compaction,
    branch_summary: ContextKind::BranchSummary,
    custom: ContextKind::Bookkeeping,
    child_usage_attributed: ContextKind::Bookkeeping,
    custom_message: ContextKind::CustomMessage,
    label: ContextKind::Bookkeeping,
    session_info: ContextKind::Bookkeeping,
    session_state: ContextKind::Bookkeeping,
    agent_status: ContextKind::Bookkeeping,
    git_state: ContextKind::Bookkeeping,
};

impl MessageRole {
    /// The class of a `role` string.
    pub fn of(role: Option<&str>) -> MessageRole {
        match role {
            Some("user") => MessageRole::User,
            Some("assistant") => MessageRole::Assistant,
            _ => MessageRole::Other,
        }
    }
}

impl std::fmt::Display for ContextKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ContextKind::Message(MessageRole::User) => "user message",
            ContextKind::Message(MessageRole::Assistant) => "assistant message",
            ContextKind::Message(MessageRole::Other) => EntryType::Message.as_str(),
            ContextKind::ThinkingLevelChange => EntryType::ThinkingLevelChange.as_str(),
            ContextKind::ModelChange => EntryType::ModelChange.as_str(),
            ContextKind::ServiceTierChange => EntryType::ServiceTierChange.as_str(),
            ContextKind::Compaction => EntryType::Compaction.as_str(),
            ContextKind::BranchSummary => EntryType::BranchSummary.as_str(),
            ContextKind::CustomMessage => EntryType::CustomMessage.as_str(),
            ContextKind::Bookkeeping => "bookkeeping entry",
            ContextKind::Unknown => "entry of unknown type",
        })
    }
}
