//! The two views of a context: the entries it is made from and the messages for the model.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Number, Value};
use session_types::{
    AgentMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, Entry, EntryId,
    EntryType, Extra, Usage,
};

use crate::error::{ContextError, ContextWarning};
use crate::kind::{ContextKind, MessageRole};
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

/// The model a context runs with: `{provider, modelId}`, each as the reference reads
/// it from the entry (`None` where JavaScript has `undefined`, which leaves the key
/// out of JSON: an assistant message without `provider` and `model` gives `{}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    /// Provider, e.g. `"anthropic"` (any JSON value in an odd entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// Model id, e.g. `"claude-sonnet-4-5"` (any JSON value in an odd entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<Value>,
}

impl ModelRef {
    /// A model from two strings.
    pub fn new(provider: impl Into<String>, model_id: impl Into<String>) -> Self {
        Self {
            provider: Some(Value::String(provider.into())),
            model_id: Some(Value::String(model_id.into())),
        }
    }

    /// The provider, if it is a string.
    pub fn provider_str(&self) -> Option<&str> {
        self.provider.as_ref().and_then(Value::as_str)
    }

    /// The model id, if it is a string.
    pub fn model_id_str(&self) -> Option<&str> {
        self.model_id.as_ref().and_then(Value::as_str)
    }
}

/// The settings in force at a leaf, taken from the whole path (compacted part included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The latest `thinking_level_change`'s `thinkingLevel` as the reference reads it,
    /// else `"off"`. `None` when that entry has no `thinkingLevel` (JavaScript's
    /// `undefined`: the reference JSON then has no `thinkingLevel` key); any JSON
    /// value in an odd entry.
    pub thinking_level: Option<Value>,
    /// The latest `model_change` or assistant message, else `None`.
    pub model: Option<ModelRef>,
    /// The latest `service_tier_change` with a string `serviceTier`, else `None`.
    pub service_tier: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            thinking_level: Some(Value::String("off".to_owned())),
            model: None,
            service_tier: None,
        }
    }
}

impl Settings {
    /// The thinking level, if it is a string (`"off"` by default).
    pub fn thinking_level_str(&self) -> Option<&str> {
        self.thinking_level.as_ref().and_then(Value::as_str)
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

/// Serializes as [`SessionContext::to_reference_json`]: the reference's
/// `buildSessionContext()` shape, so a context can be sent or stored as the reference
/// would give it. Written straight from the messages, without building the
/// [`Value`] tree first (a 640 KB context is a tree of thousands of small
/// allocations): the keys and values are those of `to_reference_json`, in the same
/// order, and no message serializes a key twice (a typed message's `extra` never
/// holds one of its modelled keys: reading moves those into their fields, and
/// `Entry::read` keeps a message whose typed form would not print as stored whole,
/// as a map), so the bytes are the same.
impl serde::Serialize for SessionContext<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = serializer.serialize_map(Some(
            2 + usize::from(self.settings.thinking_level.is_some()),
        ))?;
        m.serialize_entry("messages", &self.messages)?;
        if let Some(level) = &self.settings.thinking_level {
            m.serialize_entry("thinkingLevel", level)?;
        }
        m.serialize_entry("model", &self.settings.model)?;
        m.end()
    }
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
        if let Some(level) = &self.settings.thinking_level {
            m.insert("thinkingLevel".to_owned(), level.clone());
        }
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
    prefetch(source, &plan);
    let settings = settings(source, &plan)?;
    let mut entries = Vec::new();
    each_entry(source, &mut plan, |e, _| entries.push(e))?;
    Ok(ContextEntries {
        entries,
        settings,
        leaf: plan.leaf.take(),
        warnings: std::mem::take(&mut plan.warnings),
    })
}

/// Tells the source which entries [`settings`] and [`each_entry`] load, in that order.
fn prefetch<S: ContextSource>(source: &S, plan: &ContextPlan<'_, S::Handle>) {
    let settings = [plan.thinking, plan.model, plan.service_tier];
    let window = plan.window().filter_map(|i| {
        let p = &plan.path[i];
        p.kind.may_emit().then_some(p.handle)
    });
    let handles: Vec<S::Handle> = settings
        .iter()
        .flatten()
        .map(|p| p.handle)
        .chain(window)
        .collect();
    if !handles.is_empty() {
        source.prefetch(&handles);
    }
}

/// Calls `f` with each entry of the context, in context order: the compaction, then
/// the window's entries that produce a message.
fn each_entry<'s, S: ContextSource>(
    source: &'s S,
    plan: &mut ContextPlan<'s, S::Handle>,
    mut f: impl FnMut(Cow<'s, Entry>, Option<Option<i64>>),
) -> Result<(), ContextError<S::Error>> {
    if let Some(c) = plan.compaction_entry.take() {
        let time = plan
            .compaction
            .and_then(|k| plan.path.get(k))
            .and_then(|p| source.time_ms(p.handle));
        f(c, time);
    }
    let plan = &*plan;
    for i in plan.window() {
        let p = &plan.path[i];
        if !p.kind.may_emit() {
            continue;
        }
        let entry = load(source, p.handle, p.kind)?;
        if p.kind == ContextKind::BranchSummary
            && !branch_summary_counts(&entry)
            && !source
                .raw_field(p.handle, "summary")
                .is_some_and(|summary| session_types::js::raw_truthy(Some(&summary)))
        {
            continue;
        }
        f(entry, source.time_ms(p.handle));
    }
    Ok(())
}

/// Whether a branch summary adds a message: its `summary` is truthy (an empty or
/// absent summary, or `0`, adds nothing; the reference tests `entry.summary`).
fn branch_summary_counts(entry: &Entry) -> bool {
    match entry {
        Entry::BranchSummary(b) => !b.summary.is_empty(),
        Entry::Unknown(m) => session_types::js::truthy(m.get("summary")),
        _ => true,
    }
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
    prefetch(source, &plan);
    let settings = settings(source, &plan)?;
    // Messages are made as entries are loaded: no intermediate list of entries.
    let mut messages = Vec::with_capacity(plan.window().len() + 1);
    each_entry(source, &mut plan, |e, time| {
        messages.extend(message_of(e, time, source, options));
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
            .filter_map(|e| message_of(e, None, source, options))
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
    time: Option<Option<i64>>,
    source: &S,
    options: &ContextOptions,
) -> Option<ContextMessage<'s>> {
    // Only synthesized messages need the entry time (`Date.parse`, NaN → null), read
    // from the source when it knows better than the loaded entry (`time`).
    let ts = |e: &Entry| time.unwrap_or_else(|| e.timestamp_ms()).map(Number::from);
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
            Entry::Unknown(m) => {
                js_message_of(m, ts(&e)).map(|m| ContextMessage::Owned(Box::new(m)))
            }
            _ => None,
        },
    }
}

/// The message of an entry read whole (a known type whose fields do not fit the typed
/// model), built as the reference builds it: the same keys in the same order, each
/// the entry's value whatever its JSON type, a key left out where the entry has none
/// (JavaScript's `undefined` vanishes from JSON). A stored `message` that is not an
/// object is pushed as it is, as the reference does (`(1).role` is `undefined`); a
/// `null` one too (the reference throws reading `null.role`, and reads `1e400`, our
/// `null`, as `Infinity`, which prints `null`). An absent one adds nothing (the
/// reference throws).
fn js_message_of(m: &Extra, timestamp: Option<Number>) -> Option<AgentMessage> {
    let role = |r: &str| (String::from("role"), Value::String(r.to_owned()));
    let mut out = Extra::new();
    let copy = |out: &mut Extra, key: &str| {
        if let Some(v) = m.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    };
    let ts = Value::from(timestamp);
    match m
        .get("type")
        .and_then(Value::as_str)
        .and_then(EntryType::from_name)?
    {
        EntryType::Message => {
            return m.get("message").map(|msg| match msg {
                Value::Object(msg) => AgentMessage::Unknown(msg.clone()),
                other => AgentMessage::NotAnObject(other.clone()),
            });
        }
        EntryType::CustomMessage => {
            // tidy: not an entry type (the message role `custom`)
            out.extend([role("custom")]);
            for k in ["customType", "content", "display", "details"] {
                copy(&mut out, k);
            }
        }
        EntryType::BranchSummary => {
            out.extend([role("branchSummary")]);
            copy(&mut out, "summary");
            copy(&mut out, "fromId");
        }
        EntryType::Compaction => {
            out.extend([role("compactionSummary")]);
            copy(&mut out, "summary");
            copy(&mut out, "tokensBefore");
        }
        _ => return None,
    }
    out.insert("timestamp".to_owned(), ts);
    Some(AgentMessage::Unknown(out))
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
    if let Some(p) = plan.thinking {
        s.thinking_level = match &*load(source, p.handle, p.kind)? {
            Entry::ThinkingLevelChange(t) => Some(Value::String(t.thinking_level.clone())),
            other => other.js_property("thinkingLevel"),
        };
    }
    if let Some(p) = plan.model {
        s.model = model_of(&*load(source, p.handle, p.kind)?);
    }
    if let Some(p) = plan.service_tier {
        s.service_tier = match &*load(source, p.handle, p.kind)? {
            Entry::ServiceTierChange(t) => Some(t.service_tier.clone()),
            other => other
                .js_property("serviceTier")
                .and_then(|v| v.as_str().map(str::to_owned)),
        };
    }
    Ok(s)
}

/// `{provider, modelId}` of a model source, read as the reference reads it.
fn model_of(entry: &Entry) -> Option<ModelRef> {
    // `{provider: x.provider, modelId: x.model}` of an object read by property access.
    let of_map = |m: &Extra, model_key: &str| ModelRef {
        provider: m.get("provider").cloned(),
        model_id: m.get(model_key).cloned(),
    };
    match entry {
        Entry::ModelChange(m) => Some(ModelRef::new(m.provider.clone(), m.model_id.clone())),
        Entry::Message(m) => match &m.message {
            AgentMessage::Assistant(a) => Some(ModelRef::new(a.provider.clone(), a.model.clone())),
            // An assistant message in a shape the typed model does not hold.
            AgentMessage::Unknown(map) => Some(of_map(map, "model")),
            _ => None,
        },
        Entry::Unknown(m) => match m
            .get("type")
            .and_then(Value::as_str)
            .and_then(EntryType::from_name)
        {
            Some(EntryType::ModelChange) => Some(of_map(m, "modelId")),
            Some(EntryType::Message) => Some(match m.get("message") {
                Some(Value::Object(msg)) => of_map(msg, "model"),
                // A string's (or number's) `.provider` is `undefined`.
                _ => ModelRef {
                    provider: None,
                    model_id: None,
                },
            }),
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
    if kind != ContextKind::Message(MessageRole::Assistant) {
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
