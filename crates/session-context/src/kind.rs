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
/// Index layers compute it from a record's envelope ([`EntryKind::of_envelope`]) without
/// decoding the payload; resident sources compute it from the typed entry
/// ([`EntryKind::of`]). Both give the same answer for the same record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
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

impl EntryKind {
    /// The kind of a typed entry.
    pub fn of(entry: &Entry) -> EntryKind {
        match entry {
            Entry::Message(m) => EntryKind::Message(MessageRole::of(m.message.role())),
            // An unknown type, or a known type read whole because its fields do not fit
            // the typed model: its `type` and `message.role` decide, as in an envelope.
            Entry::Unknown(m) => EntryKind::of_type(
                m.get("type").and_then(serde_json::Value::as_str),
                m.get("message")
                    .and_then(|msg| msg.get("role"))
                    .and_then(serde_json::Value::as_str),
            ),
            other => EntryKind::of_type(other.entry_type(), None),
        }
    }

    /// The kind of a record from its envelope (`type` and `message.role` only).
    pub fn of_envelope(envelope: &Envelope<'_>) -> EntryKind {
        EntryKind::of_type(envelope.entry_type.as_deref(), envelope.role())
    }

    /// The kind for an entry `type` string and, for messages, the `message.role` string.
    pub fn of_type(entry_type: Option<&str>, role: Option<&str>) -> EntryKind {
        match entry_type.and_then(EntryType::from_name) {
            Some(EntryType::Message) => EntryKind::Message(MessageRole::of(role)),
            Some(t) => *KIND_OF_TYPE.get(t),
            None => EntryKind::Unknown,
        }
    }

    /// Whether an entry of this kind can put a message in the context.
    pub fn may_emit(self) -> bool {
        matches!(
            self,
            EntryKind::Message(_) | EntryKind::BranchSummary | EntryKind::CustomMessage
        )
    }

    /// Whether this kind sets the model (`model_change` or an assistant message).
    pub fn is_model_source(self) -> bool {
        matches!(
            self,
            EntryKind::ModelChange | EntryKind::Message(MessageRole::Assistant)
        )
    }
}

/// The kind of every entry type (a message's role refines it). A new entry type does
/// not compile until it is given a kind here.
const KIND_OF_TYPE: EntryTypeMap<EntryKind> = EntryTypeMap {
    message: EntryKind::Message(MessageRole::Other),
    thinking_level_change: EntryKind::ThinkingLevelChange,
    model_change: EntryKind::ModelChange,
    service_tier_change: EntryKind::ServiceTierChange,
    compaction: EntryKind::Compaction,
    branch_summary: EntryKind::BranchSummary,
    custom: EntryKind::Bookkeeping,
    child_usage_attributed: EntryKind::Bookkeeping,
    custom_message: EntryKind::CustomMessage,
    label: EntryKind::Bookkeeping,
    session_info: EntryKind::Bookkeeping,
    session_state: EntryKind::Bookkeeping,
    agent_status: EntryKind::Bookkeeping,
    git_state: EntryKind::Bookkeeping,
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

impl std::fmt::Display for EntryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EntryKind::Message(MessageRole::User) => "user message",
            EntryKind::Message(MessageRole::Assistant) => "assistant message",
            EntryKind::Message(MessageRole::Other) => EntryType::Message.as_str(),
            EntryKind::ThinkingLevelChange => EntryType::ThinkingLevelChange.as_str(),
            EntryKind::ModelChange => EntryType::ModelChange.as_str(),
            EntryKind::ServiceTierChange => EntryType::ServiceTierChange.as_str(),
            EntryKind::Compaction => EntryType::Compaction.as_str(),
            EntryKind::BranchSummary => EntryType::BranchSummary.as_str(),
            EntryKind::CustomMessage => EntryType::CustomMessage.as_str(),
            EntryKind::Bookkeeping => "bookkeeping entry",
            EntryKind::Unknown => "entry of unknown type",
        })
    }
}
