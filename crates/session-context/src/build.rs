//! The two views of a context: the entries it is made from and the messages for the model.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Number, Value};
use session_types::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, Entry, EntryId,
    Extra, Usage,
};

use crate::error::{ContextError, ContextWarning};
use crate::kind::{EntryKind, MessageRole};
use crate::source::ContextSource;
use crate::walk::{ContextPlan, Leaf, load, plan};

/// Knobs of context building.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextOptions {
    /// Give each assistant message the latest `aggregateUsage` recorded for it by
    /// `child_usage_attributed` entries (default `true`, as the seed asks). The
    /// reference knows no such entries; [`ContextOptions::reference`] turns this off.
    pub attribute_child_usage: bool,
}

impl Default for ContextOptions {
    fn default() -> Self {
        Self {
            attribute_child_usage: true,
        }
    }
}

impl ContextOptions {
    /// Exactly what reference 0.73.1 computes: no child-usage attribution.
    pub fn reference() -> Self {
        Self {
            attribute_child_usage: false,
        }
    }
}

/// The model a context runs with: `{provider, modelId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    /// Provider, e.g. `anthropic`.
    pub provider: String,
    /// Model id, e.g. `claude-sonnet-4-5`.
    pub model_id: String,
}

/// The settings in force at a leaf, taken from the whole path (compacted part included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The latest `thinking_level_change`, else `"off"`.
    pub thinking_level: String,
    /// The latest `model_change` or assistant message, else `None`.
    pub model: Option<ModelRef>,
    /// The latest `service_tier_change`, else `None`.
    pub service_tier: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            thinking_level: "off".to_owned(),
            model: None,
            service_tier: None,
        }
    }
}

/// The entries view: the entries the context's messages are made from, one entry per
/// message and in the same order (the latest compaction first, then the kept window,
/// then the tail). Entries are as stored; child usage is applied only in the messages.
#[derive(Debug, Clone)]
pub struct ContextEntries<'s> {
    /// The entries, `entries[i]` giving message `i` of the messages view.
    pub entries: Vec<Cow<'s, Entry>>,
    /// The settings at the leaf.
    pub settings: Settings,
    /// The leaf the path ends at (`None` for the empty context).
    pub leaf: Option<EntryId>,
    /// What was noticed on the way.
    pub warnings: Vec<ContextWarning>,
}

/// One message of a context: borrowed from the source when it is stored as is in an
/// entry the source holds in memory, owned otherwise (synthesized, decoded on load, or
/// carrying attributed usage). Dereferences to the [`AgentMessage`]; serializes as it.
///
/// Borrowing keeps a resident context free of copies: a message is 520 bytes before its
/// content, and a context can hold tens of thousands.
#[derive(Debug, Clone, PartialEq)]
pub enum ContextMessage<'s> {
    /// A stored message, as stored.
    Stored(&'s AgentMessage),
    /// A message made or decoded for this context.
    Owned(Box<AgentMessage>),
}

impl std::ops::Deref for ContextMessage<'_> {
    type Target = AgentMessage;
    fn deref(&self) -> &AgentMessage {
        match self {
            ContextMessage::Stored(m) => m,
            ContextMessage::Owned(m) => m,
        }
    }
}

impl ContextMessage<'_> {
    /// The message, owned.
    pub fn into_owned(self) -> AgentMessage {
        match self {
            ContextMessage::Stored(m) => m.clone(),
            ContextMessage::Owned(m) => *m,
        }
    }
}

impl Serialize for ContextMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// The messages view: what the model is sent, with the settings at the leaf.
///
/// [`SessionContext::to_reference_json`] is the reference's `buildSessionContext()`
/// value `{messages, thinkingLevel, model}`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext<'s> {
    /// The messages, stored ones as stored and synthesized ones in the reference's shapes.
    pub messages: Vec<ContextMessage<'s>>,
    /// The settings at the leaf.
    pub settings: Settings,
    /// The leaf the path ends at (`None` for the empty context).
    pub leaf: Option<EntryId>,
    /// What was noticed on the way.
    pub warnings: Vec<ContextWarning>,
}

impl SessionContext<'_> {
    /// `{"messages":[…],"thinkingLevel":…,"model":{…}|null}`, keys in the reference's
    /// order; equal to the reference's output for every input it terminates on.
    pub fn to_reference_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "messages".to_owned(),
            serde_json::to_value(&self.messages).unwrap_or(Value::Null),
        );
        m.insert(
            "thinkingLevel".to_owned(),
            Value::String(self.settings.thinking_level.clone()),
        );
        m.insert(
            "model".to_owned(),
            serde_json::to_value(&self.settings.model).unwrap_or(Value::Null),
        );
        Value::Object(m)
    }

    /// [`SessionContext::to_reference_json`] plus `"serviceTier"` (last) when the path
    /// sets a service tier. Without one the two are identical.
    pub fn to_json(&self) -> Value {
        let mut v = self.to_reference_json();
        if let (Value::Object(m), Some(tier)) = (&mut v, &self.settings.service_tier) {
            m.insert("serviceTier".to_owned(), Value::String(tier.clone()));
        }
        v
    }
}

/// Builds the entries view for `leaf`: loads the settings entries that win, the
/// compaction and the entries of the window that can produce a message.
pub fn context_entries<'s, S: ContextSource>(
    source: &'s S,
    leaf: Leaf<'_>,
) -> Result<ContextEntries<'s>, ContextError<S::Error>> {
    let mut plan = plan(source, leaf)?;
    let settings = settings(source, &plan)?;
    let mut entries = Vec::new();
    each_entry(source, &mut plan, |e| entries.push(e))?;
    Ok(ContextEntries {
        entries,
        settings,
        leaf: plan.leaf.take(),
        warnings: std::mem::take(&mut plan.warnings),
    })
}

/// Calls `f` with each entry of the context, in context order: the compaction, then
/// the window's entries that produce a message.
fn each_entry<'s, S: ContextSource>(
    source: &'s S,
    plan: &mut ContextPlan<'s, S::Handle>,
    mut f: impl FnMut(Cow<'s, Entry>),
) -> Result<(), ContextError<S::Error>> {
    if let Some(c) = plan.compaction_entry.take() {
        f(c);
    }
    let plan = &*plan;
    for i in plan.window() {
        let p = &plan.path[i];
        if !p.kind.may_emit() {
            continue;
        }
        let entry = load(source, p.handle, p.kind)?;
        if let Entry::BranchSummary(b) = &*entry
            && b.summary.is_empty()
        {
            continue;
        }
        f(entry);
    }
    Ok(())
}

/// Builds the messages view for `leaf`.
///
/// ```
/// use session_context::{build_context, ContextOptions, Leaf, ResidentSource};
/// use session_types::Record;
/// let entries: Vec<_> = [
///     r#"{"type":"message","id":"1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
///     r#"{"type":"thinking_level_change","id":"2","parentId":"1","timestamp":"2025-01-01T00:00:00.000Z","thinkingLevel":"high"}"#,
/// ]
/// .iter()
/// .map(|l| match Record::parse(l).unwrap() { Record::Entry(e) => e, Record::Header(_) => unreachable!() })
/// .collect();
/// let source = ResidentSource::new(&entries);
/// let ctx = build_context(&source, Leaf::Default, &ContextOptions::default()).unwrap();
/// assert_eq!(
///     ctx.to_reference_json().to_string(),
///     r#"{"messages":[{"role":"user","content":"hi","timestamp":1}],"thinkingLevel":"high","model":null}"#
/// );
/// ```
pub fn build_context<'s, S: ContextSource>(
    source: &'s S,
    leaf: Leaf<'_>,
    options: &ContextOptions,
) -> Result<SessionContext<'s>, ContextError<S::Error>> {
    let mut plan = plan(source, leaf)?;
    let settings = settings(source, &plan)?;
    // Messages are made as entries are loaded: no intermediate list of entries.
    let mut messages = Vec::with_capacity(plan.window().len() + 1);
    each_entry(source, &mut plan, |e| {
        messages.extend(message_of(e, source, options));
    })?;
    Ok(SessionContext {
        messages,
        settings,
        leaf: plan.leaf.take(),
        warnings: std::mem::take(&mut plan.warnings),
    })
}

impl<'s> ContextEntries<'s> {
    /// The messages view of these entries.
    pub fn into_context<S: ContextSource>(
        self,
        source: &S,
        options: &ContextOptions,
    ) -> SessionContext<'s> {
        let messages = self
            .entries
            .into_iter()
            .filter_map(|e| message_of(e, source, options))
            .collect();
        SessionContext {
            messages,
            settings: self.settings,
            leaf: self.leaf,
            warnings: self.warnings,
        }
    }
}

/// The message an entry contributes (`None` only for kinds the entries view never holds).
fn message_of<'s, S: ContextSource>(
    entry: Cow<'s, Entry>,
    source: &S,
    options: &ContextOptions,
) -> Option<ContextMessage<'s>> {
    // Only synthesized messages need the entry time (`Date.parse`, NaN → null).
    let ts = |e: &Entry| e.timestamp_ms().map(Number::from);
    let owned = |m: AgentMessage| Some(ContextMessage::Owned(Box::new(m)));
    match entry {
        Cow::Borrowed(Entry::Message(m)) => Some(
            match attribution(&m.message, m.base.id.as_ref(), source, options) {
                None => ContextMessage::Stored(&m.message),
                Some(usage) => {
                    ContextMessage::Owned(Box::new(with_usage(m.message.clone(), usage)))
                }
            },
        ),
        Cow::Owned(Entry::Message(m)) => {
            let usage = attribution(&m.message, m.base.id.as_ref(), source, options);
            owned(match usage {
                None => m.message,
                Some(usage) => with_usage(m.message, usage),
            })
        }
        e => match &*e {
            Entry::CustomMessage(c) => owned(AgentMessage::Custom(CustomMessage {
                custom_type: c.custom_type.clone(),
                content: c.content.clone(),
                display: c.display,
                details: c.details.clone(),
                timestamp: ts(&e),
                extra: Extra::new(),
            })),
            Entry::BranchSummary(b) => owned(AgentMessage::BranchSummary(BranchSummaryMessage {
                summary: b.summary.clone(),
                from_id: b.from_id.clone(),
                timestamp: ts(&e),
                extra: Extra::new(),
            })),
            Entry::Compaction(c) => {
                owned(AgentMessage::CompactionSummary(CompactionSummaryMessage {
                    summary: c.summary.clone(),
                    tokens_before: c.tokens_before.clone(),
                    timestamp: ts(&e),
                    extra: Extra::new(),
                }))
            }
            _ => None,
        },
    }
}

/// The aggregate usage to give an assistant message, when attribution applies.
fn attribution<S: ContextSource>(
    message: &AgentMessage,
    id: Option<&EntryId>,
    source: &S,
    options: &ContextOptions,
) -> Option<Usage> {
    if !options.attribute_child_usage || MessageRole::of(message.role()) != MessageRole::Assistant {
        return None;
    }
    id.and_then(|id| source.usage_attribution(id.as_str()))
        .map(|a| a.aggregate)
}

fn with_usage(mut message: AgentMessage, usage: Usage) -> AgentMessage {
    match &mut message {
        AgentMessage::Assistant(m) => m.usage = usage,
        AgentMessage::Unknown(map) => {
            map.insert(
                "usage".to_owned(),
                serde_json::to_value(&usage).unwrap_or(Value::Null),
            );
        }
        _ => {}
    }
    message
}

fn settings<S: ContextSource>(
    source: &S,
    plan: &ContextPlan<'_, S::Handle>,
) -> Result<Settings, ContextError<S::Error>> {
    let mut s = Settings::default();
    let (thinking, model, tier) = plan.settings_sources();
    if let Some(i) = thinking {
        let p = &plan.path[i];
        if let Entry::ThinkingLevelChange(t) = &*load(source, p.handle, p.kind)? {
            s.thinking_level = t.thinking_level.clone();
        }
    }
    if let Some(i) = model {
        let p = &plan.path[i];
        s.model = model_of(&*load(source, p.handle, p.kind)?);
    }
    if let Some(i) = tier {
        let p = &plan.path[i];
        if let Entry::ServiceTierChange(t) = &*load(source, p.handle, p.kind)? {
            s.service_tier = Some(t.service_tier.clone());
        }
    }
    Ok(s)
}

fn model_of(entry: &Entry) -> Option<ModelRef> {
    match entry {
        Entry::ModelChange(m) => Some(ModelRef {
            provider: m.provider.clone(),
            model_id: m.model_id.clone(),
        }),
        Entry::Message(m) => match &m.message {
            AgentMessage::Assistant(a) => Some(ModelRef {
                provider: a.provider.clone(),
                model_id: a.model.clone(),
            }),
            // An assistant message in a shape the typed model does not hold: read the
            // two fields the reference reads (non-strings read as empty).
            AgentMessage::Unknown(map) => {
                let s = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                Some(ModelRef {
                    provider: s("provider"),
                    model_id: s("model"),
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// A message's own usage: its attributed aggregate minus the sum of its children's
/// usage, or its stored usage when no child usage is attributed to it. `None` when the
/// entry is not an assistant message (or has no typed usage).
pub fn own_usage<S: ContextSource>(
    source: &S,
    id: &str,
) -> Result<Option<Usage>, ContextError<S::Error>> {
    let Some(handle) = source.find(id) else {
        return Ok(None);
    };
    let kind = source.node(handle).kind;
    if kind != EntryKind::Message(MessageRole::Assistant) {
        return Ok(None);
    }
    if let Some(a) = source.usage_attribution(id) {
        return Ok(Some(a.own()));
    }
    let entry = load(source, handle, kind)?;
    Ok(match &*entry {
        Entry::Message(m) => match &m.message {
            AgentMessage::Assistant(a) => Some(a.usage.clone()),
            _ => None,
        },
        _ => None,
    })
}
