//! The seed's append methods, one per entry type, shared by owned sessions and
//! resident views; and entry id generation.

use serde_json::Value;
use session_types::{Entry, EntryBase, EntryId, SessionHeader, Timestamp};

use crate::clock::Sources;
use crate::error::AppendError;

/// How many 8-hex candidates are tried before falling back to a longer id (as the
/// reference does).
pub(crate) const ID_ATTEMPTS: usize = 100;

/// A fresh entry id that `taken` does not know: 8 lowercase hex characters, or after
/// [`ID_ATTEMPTS`] collisions a 32-hex-character id.
pub(crate) fn fresh_id(sources: &Sources, taken: impl Fn(&str) -> bool) -> EntryId {
    for _ in 0..ID_ATTEMPTS {
        let id = sources.ids.entry_id();
        if !taken(id.as_str()) {
            return id;
        }
    }
    loop {
        let long: String = (0..4).map(|_| sources.ids.entry_id().0).collect();
        if !taken(&long) {
            return EntryId::new(long);
        }
    }
}

/// Fills `id`, `parentId` and `timestamp` of a caller-built entry when absent
/// (`append_entry`). Returns the entry's id.
pub(crate) fn complete_entry(
    entry: &mut Entry,
    id: impl FnOnce() -> EntryId,
    parent: Option<EntryId>,
    now: Timestamp,
) -> Result<EntryId, AppendError> {
    if let Some(base) = entry.base_mut() {
        if base.id.is_none() {
            base.id = Some(id());
            base.parent_id = parent;
        }
        if base.timestamp.is_none() {
            base.timestamp = Some(now);
        }
        return base.id.clone().ok_or_else(|| AppendError::InvalidEntry {
            reason: "entry without id".into(),
        });
    }
    let Entry::Unknown(map) = entry else {
        return Err(AppendError::InvalidEntry {
            reason: "entry without base fields".into(),
        });
    };
    // An unknown-shaped entry of a *known* type (a `message` without `message`) would
    // be kept, and the branch through it could never build a context again: what we
    // write must fit its type's model (the strict reading).
    if let Err(source) = Entry::parse(&Value::Object(map.clone()).to_string()) {
        return Err(AppendError::WrongShape { source });
    }
    match map.get("type") {
        Some(Value::String(t)) if t != SessionHeader::TYPE => {}
        Some(Value::String(_)) => {
            return Err(AppendError::InvalidEntry {
                reason: "a session header is not an entry".into(),
            });
        }
        _ => {
            return Err(AppendError::InvalidEntry {
                reason: "entry without a string `type`".into(),
            });
        }
    }
    let id = match map.get("id") {
        Some(Value::String(s)) if !s.is_empty() => EntryId::new(s.clone()),
        Some(_) => {
            return Err(AppendError::InvalidEntry {
                reason: "`id` is not a non-empty string".into(),
            });
        }
        None => {
            let id = id();
            map.insert("id".into(), Value::String(id.0.clone()));
            if !map.contains_key("parentId") {
                map.insert(
                    "parentId".into(),
                    parent.map_or(Value::Null, |p| Value::String(p.0)),
                );
            }
            id
        }
    };
    if !map.contains_key("timestamp") {
        map.insert("timestamp".into(), Value::String(now.0));
    }
    Ok(id)
}

/// The label entry `createBranchedSession` re-creates for `target` in the new session:
/// a fresh base (id, parent) but, as in 0.73.1, the timestamp of the label entry that
/// set the label in the old one (`None`: that entry had none, so neither has this).
pub(crate) fn recreated_label(
    mut base: EntryBase,
    target: &str,
    label: &str,
    time: Option<String>,
) -> Entry {
    base.timestamp = time.map(Timestamp::new);
    Entry::label(base, EntryId::new(target), Some(label.to_owned()))
}

/// A base for a new entry.
pub(crate) fn base(id: EntryId, parent: Option<EntryId>, now: Timestamp) -> EntryBase {
    EntryBase::new(id, parent, now)
}

/// Expands to the seed's append methods on a type that has
/// `fn append_with(&mut self, build: impl FnOnce(EntryBase) -> Entry) -> Result<EntryId, AppendError>`,
/// `fn append_message_cow(&mut self, message: Cow<'_, AgentMessage>) -> Result<EntryId, AppendError>`
/// and `fn has_entry(&self, id: &str) -> bool`.
macro_rules! append_methods {
    () => {
        /// `appendMessage(message)`: stores the message verbatim; returns the new id.
        ///
        /// Takes the message, or a reference to it: a caller that keeps its message
        /// (as the seed's callers keep theirs) passes `&message`, and nothing is
        /// cloned.
        pub fn append_message<'m>(
            &mut self,
            message: impl Into<std::borrow::Cow<'m, session_types::AgentMessage>>,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_message_cow(message.into())
        }

        /// `appendThinkingLevelChange(level)` (not validated, as in the reference).
        pub fn append_thinking_level_change(
            &mut self,
            level: &str,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::thinking_level_change(b, level))
        }

        /// `appendServiceTierChange(tier)`
        pub fn append_service_tier_change(
            &mut self,
            tier: &str,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::service_tier_change(b, tier))
        }

        /// `appendModelChange(provider, modelId)`
        pub fn append_model_change(
            &mut self,
            provider: &str,
            model_id: &str,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::model_change(b, provider, model_id))
        }

        /// `appendCompaction(summary, firstKeptEntryId, tokensBefore, details?, fromHook?)`.
        /// `first_kept_entry_id` is not validated (as in the reference). The seed's
        /// `customInstructions?` argument shapes the summary request, not the entry:
        /// it is not stored (see `docs/api-mapping.md`).
        pub fn append_compaction(
            &mut self,
            summary: &str,
            first_kept_entry_id: impl AsRef<str>,
            tokens_before: u64,
            details: Option<serde_json::Value>,
            from_hook: Option<bool>,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            let first = session_types::EntryId::new(first_kept_entry_id.as_ref());
            self.append_with(|b| {
                session_types::Entry::compaction(
                    b,
                    summary,
                    first,
                    tokens_before,
                    details,
                    from_hook,
                )
            })
        }

        /// [`append_compaction`](Self::append_compaction) with its optional arguments
        /// in an options struct.
        pub fn append_compaction_with(
            &mut self,
            summary: &str,
            first_kept_entry_id: impl AsRef<str>,
            tokens_before: u64,
            options: crate::CompactionOptions,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_compaction(
                summary,
                first_kept_entry_id,
                tokens_before,
                options.details,
                options.from_hook,
            )
        }

        /// `appendCustomEntry(customType, data?)`: extension state, never in the context.
        pub fn append_custom_entry(
            &mut self,
            custom_type: &str,
            data: Option<serde_json::Value>,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::custom(b, custom_type, data))
        }

        /// `appendChildUsageAttribution(targetId, childUsage, aggregateUsage)`: the
        /// target's context message then carries `aggregate_usage`. The target is not
        /// validated (the seed validates nothing here).
        pub fn append_child_usage_attribution(
            &mut self,
            target_id: impl AsRef<str>,
            child_usage: session_types::Usage,
            aggregate_usage: session_types::Usage,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            let target = session_types::EntryId::new(target_id.as_ref());
            self.append_with(|b| {
                session_types::Entry::child_usage_attributed(
                    b,
                    target,
                    child_usage,
                    aggregate_usage,
                )
            })
        }

        /// `appendSessionInfo(name)`: the name is trimmed; an empty name clears it.
        pub fn append_session_info(
            &mut self,
            name: &str,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::session_info(b, name))
        }

        /// `appendSessionState(state)`
        pub fn append_session_state(
            &mut self,
            state: session_types::SessionState,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::session_state(b, state))
        }

        /// `appendAgentStatus(status)`
        pub fn append_agent_status(
            &mut self,
            status: session_types::AgentStatus,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::agent_status(b, status))
        }

        /// `appendGitState(git)`
        pub fn append_git_state(
            &mut self,
            git: session_types::GitState,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| session_types::Entry::git_state(b, git))
        }

        /// `appendCustomMessageEntry(customType, content, display, details?)`: an
        /// extension message that enters the context as role `custom`.
        pub fn append_custom_message_entry(
            &mut self,
            custom_type: &str,
            content: session_types::UserContent,
            display: bool,
            details: Option<serde_json::Value>,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            self.append_with(|b| {
                session_types::Entry::custom_message(b, custom_type, content, display, details)
            })
        }

        /// `appendLabelChange(targetId, label)`: `None` or `""` clears the label. The
        /// label entry joins the tree and becomes the leaf. An unknown target fails
        /// with `entry <id> not found`.
        pub fn append_label_change(
            &mut self,
            target_id: impl AsRef<str>,
            label: Option<&str>,
        ) -> Result<session_types::EntryId, crate::error::AppendError> {
            let target_id = target_id.as_ref();
            if !self.has_entry(target_id) {
                return Err(crate::error::AppendError::EntryNotFound {
                    session: self.error_name(),
                    id: target_id.to_owned(),
                });
            }
            let target = session_types::EntryId::new(target_id);
            let label = label.map(str::to_owned);
            self.append_with(|b| session_types::Entry::label(b, target, label))
        }
    };
}

pub(crate) use append_methods;
