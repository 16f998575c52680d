//! Constructors that build entries exactly as the reference's append methods do:
//! same fields, same key order, so an appended entry reads like the reference's.
//!
//! Ids and timestamps are parameters: this crate has no clock and no randomness.

use serde_json::{Number, Value};

use crate::content::{Extra, UserContent};
use crate::entry::*;
use crate::ids::EntryId;
use crate::message::{AgentMessage, Usage};

impl Entry {
    /// `appendMessage(message)`
    pub fn message(base: EntryBase, message: AgentMessage) -> Self {
        Entry::Message(MessageEntry {
            base,
            message,
            extra: Extra::new(),
        })
    }

    /// `appendThinkingLevelChange(level)`
    pub fn thinking_level_change(base: EntryBase, thinking_level: impl Into<String>) -> Self {
        Entry::ThinkingLevelChange(ThinkingLevelChangeEntry {
            base,
            thinking_level: thinking_level.into(),
            extra: Extra::new(),
        })
    }

    /// `appendModelChange(provider, modelId)`
    pub fn model_change(
        base: EntryBase,
        provider: impl Into<String>,
        model_id: impl Into<String>,
    ) -> Self {
        Entry::ModelChange(ModelChangeEntry {
            base,
            provider: provider.into(),
            model_id: model_id.into(),
            extra: Extra::new(),
        })
    }

    /// `appendServiceTierChange(tier)`
    pub fn service_tier_change(base: EntryBase, service_tier: impl Into<String>) -> Self {
        Entry::ServiceTierChange(ServiceTierChangeEntry {
            base,
            service_tier: service_tier.into(),
            extra: Extra::new(),
        })
    }

    /// `appendCompaction(summary, firstKeptEntryId, tokensBefore, details?, fromHook?)`
    pub fn compaction(
        base: EntryBase,
        summary: impl Into<String>,
        first_kept_entry_id: EntryId,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Self {
        Entry::Compaction(CompactionEntry {
            base,
            summary: summary.into(),
            first_kept_entry_id: Some(first_kept_entry_id),
            tokens_before: Number::from(tokens_before),
            details,
            from_hook,
            extra: Extra::new(),
        })
    }

    /// `branchWithSummary(fromId | null, summary, details?, fromHook?)`: `from` is the
    /// entry branched from, `None` for a new root (`fromId: "root"`).
    pub fn branch_summary(
        base: EntryBase,
        from: Option<&EntryId>,
        summary: impl Into<String>,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Self {
        Entry::BranchSummary(BranchSummaryEntry {
            base,
            from_id: from.map_or_else(|| "root".to_owned(), |id| id.0.clone()),
            summary: summary.into(),
            details,
            from_hook,
            extra: Extra::new(),
        })
    }

    /// `appendCustomEntry(customType, data?)`
    pub fn custom(base: EntryBase, custom_type: impl Into<String>, data: Option<Value>) -> Self {
        Entry::Custom(CustomEntry {
            custom_type: custom_type.into(),
            data,
            base,
            extra: Extra::new(),
        })
    }

    /// `appendChildUsageAttribution(targetId, childUsage, aggregateUsage)`
    pub fn child_usage_attributed(
        base: EntryBase,
        target_id: EntryId,
        child_usage: Usage,
        aggregate_usage: Usage,
    ) -> Self {
        Entry::ChildUsageAttributed(ChildUsageAttributedEntry {
            base,
            target_id,
            child_usage,
            aggregate_usage,
            extra: Extra::new(),
        })
    }

    /// `appendCustomMessageEntry(customType, content, display, details?)`
    pub fn custom_message(
        base: EntryBase,
        custom_type: impl Into<String>,
        content: UserContent,
        display: bool,
        details: Option<Value>,
    ) -> Self {
        Entry::CustomMessage(CustomMessageEntry {
            custom_type: custom_type.into(),
            content,
            display,
            details,
            base,
            extra: Extra::new(),
        })
    }

    /// `appendLabelChange(targetId, label | undefined)`: an empty label is written
    /// without the `label` key, as the reference does for a clear.
    pub fn label(base: EntryBase, target_id: EntryId, label: Option<String>) -> Self {
        Entry::Label(LabelEntry {
            base,
            target_id,
            label: label.filter(|l| !l.is_empty()),
            extra: Extra::new(),
        })
    }

    /// `appendSessionInfo(name)`: the name is trimmed as the reference's JavaScript
    /// trims it ([`crate::js::trim`]: a BOM and every Unicode space, not only
    /// Rust's whitespace).
    pub fn session_info(base: EntryBase, name: &str) -> Self {
        Entry::SessionInfo(SessionInfoEntry {
            base,
            name: Some(crate::js::trim(name).to_owned()),
            extra: Extra::new(),
        })
    }

    /// `appendSessionState(state)`
    pub fn session_state(base: EntryBase, state: SessionState) -> Self {
        Entry::SessionState(SessionStateEntry {
            base,
            state,
            extra: Extra::new(),
        })
    }

    /// `appendAgentStatus(status)`
    pub fn agent_status(base: EntryBase, status: AgentStatus) -> Self {
        Entry::AgentStatus(AgentStatusEntry {
            base,
            status,
            extra: Extra::new(),
        })
    }

    /// `appendGitState(git)`
    pub fn git_state(base: EntryBase, git: GitState) -> Self {
        Entry::GitState(GitStateEntry {
            base,
            git,
            extra: Extra::new(),
        })
    }
}
