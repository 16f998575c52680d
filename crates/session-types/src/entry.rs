//! Session entries (`type` tag): the nodes of the session tree.

use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::content::{Extra, UserContent};
use crate::ids::{EntryId, Timestamp};
use crate::message::{AgentMessage, TypedAgentMessage, Usage};

/// The fields every entry shares: its id, its parent and when it was written.
///
/// Legacy v1 entries have no `id` and no `parentId`; an entry written by some
/// writers lacks `timestamp`. Those are `None` here and stay absent on output
/// (a missing `parentId` is written back as `null`, which the tree reads the same way).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EntryBase {
    /// The entry's id. Absent is `None`; a `null` one does not fit the typed model
    /// (the reference's leaf is then `null`, the empty context, where an absent one
    /// falls back to the last entry), and the entry is read as [`Entry::Unknown`].
    #[serde(default, deserialize_with = "string_id")]
    #[cfg_attr(feature = "schema", schemars(with = "EntryId"))]
    pub id: Option<EntryId>,
    /// The parent entry, `None` for a root.
    #[serde(default)]
    pub parent_id: Option<EntryId>,
    /// ISO-8601 time of writing. Absent is `None`; any other JSON type (`null`
    /// included, which JavaScript dates read as 0) does not fit the typed model, and the
    /// entry is read as [`Entry::Unknown`].
    #[serde(default, deserialize_with = "string_timestamp")]
    #[cfg_attr(feature = "schema", schemars(with = "Timestamp"))]
    pub timestamp: Option<Timestamp>,
}

impl Serialize for EntryBase {
    /// `id` and `timestamp` are written when present. `parentId` is written (as
    /// `null` for a root) whenever the entry has an id; an id-less legacy v1 entry
    /// gets no `parentId` key, as in its source.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(id) = &self.id {
            m.serialize_entry("id", id)?;
        }
        if self.id.is_some() || self.parent_id.is_some() {
            m.serialize_entry("parentId", &self.parent_id)?;
        }
        if let Some(ts) = &self.timestamp {
            m.serialize_entry("timestamp", ts)?;
        }
        m.end()
    }
}

impl EntryBase {
    /// A base with every field set, as the append methods produce it.
    pub fn new(id: EntryId, parent_id: Option<EntryId>, timestamp: Timestamp) -> Self {
        Self {
            id: Some(id),
            parent_id,
            timestamp: Some(timestamp),
        }
    }
}

/// Declares the entry types from one table: [`EntryType`] (names, `ALL`, string
/// conversions), [`EntryTypeMap`] (one field per type) and [`Entry`] (one variant per
/// type, its serde tag the type's name). Adding a row adds all three; a wildcard-free
/// `match` on `EntryType` in this crate and every `EntryTypeMap` literal in any crate
/// then fail to compile until they handle the new type (the checklist is in
/// `ARCHITECTURE.md`).
macro_rules! entry_types {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident($payload:ident) = $field:ident $tag:literal,
    )*) => {
        /// The `type` of an entry this version models, one variant per [`Entry`]
        /// variant.
        ///
        /// This is the workspace's one vocabulary of entry types: other crates name a
        /// type through it, never as a string literal (`cargo xtask tidy` checks).
        /// The enum may grow; code that must handle every type builds an
        /// [`EntryTypeMap`], which does not compile until it names a new type.
        ///
        /// ```
        /// use session_types::EntryType;
        /// assert_eq!(EntryType::from_name("label"), Some(EntryType::Label));
        /// assert_eq!(EntryType::Label.as_str(), "label");
        /// assert_eq!(EntryType::from_name("future_entry_type"), None);
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum EntryType {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl EntryType {
            /// Every type, in the seed's order.
            pub const ALL: [EntryType; [$(EntryType::$variant),*].len()] = [$(EntryType::$variant),*];

            /// The `type` string.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( EntryType::$variant => $tag, )*
                }
            }

            /// The type named `name`, `None` for a name this version does not model
            /// (the session header's [`SessionHeader::TYPE`](crate::SessionHeader::TYPE)
            /// is not an entry type).
            pub fn from_name(name: &str) -> Option<EntryType> {
                match name {
                    $( $tag => Some(EntryType::$variant), )*
                    _ => None,
                }
            }
        }

        /// One value per entry type, as a struct with a field named after each type:
        /// building one is an exhaustive mapping that any crate can write (a `match`
        /// on the `#[non_exhaustive]` [`EntryType`] needs a wildcard outside this
        /// crate), and a new entry type is a compile error at every literal.
        ///
        /// ```
        /// use session_types::{EntryType, EntryTypeMap};
        /// const IN_CONTEXT: EntryTypeMap<bool> = EntryTypeMap {
        ///     message: true, thinking_level_change: false, model_change: false,
        ///     service_tier_change: false, compaction: true, branch_summary: true,
        ///     custom: false, child_usage_attributed: false, custom_message: true,
        ///     label: false, session_info: false, session_state: false,
        ///     agent_status: false, git_state: false,
        /// };
        /// assert!(*IN_CONTEXT.get(EntryType::Compaction));
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct EntryTypeMap<T> {
            $( #[doc = concat!("The value for `", $tag, "`.")] pub $field: T, )*
        }

        impl<T> EntryTypeMap<T> {
            /// The value for `t`.
            pub const fn get(&self, t: EntryType) -> &T {
                match t {
                    $( EntryType::$variant => &self.$field, )*
                }
            }
        }

        impl EntryTypeMap<&'static str> {
            /// Each type's name, from the field names (checked at compile time to equal
            /// [`EntryType::as_str`]).
            pub const NAMES: EntryTypeMap<&'static str> = EntryTypeMap {
                $( $field: stringify!($field), )*
            };
        }

        // A field is named after its type's `type` string.
        const _: () = {
            $( assert!(str_eq(stringify!($field), $tag), "field name differs from its type name"); )*
        };

        /// One entry of a session tree (`type` tag). The session header is not an entry;
        /// see [`crate::Record`].
        ///
        /// An entry whose `type` this version does not know is kept whole in
        /// [`Entry::Unknown`] and serialized back unchanged. So is an entry of a known type
        /// whose fields are missing or of other JSON types, when read leniently
        /// ([`Entry::read`], [`crate::Record::parse`]): check [`Entry::known_type`] rather
        /// than the variant when the type matters, and read its fields as the reference
        /// does ([`crate::js`]).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(tag = "type")]
        #[non_exhaustive]
        // Variants are plain data read once and matched on; boxing them would only add
        // allocations and indirection to every consumer.
        #[allow(clippy::large_enum_variant)]
        pub enum Entry {
            $( $(#[doc = $doc])* #[serde(rename = $tag)] $variant($payload), )*
            /// An entry of a type this version does not model, or of a known type in a shape
            /// it does not model, with its `type` key.
            #[serde(untagged)]
            Unknown(Extra),
        }

        /// [`Entry`]'s modelled variants alone, for [`Entry::parse`]'s first attempt:
        /// without the untagged fallback, serde reads the variant from the buffered
        /// record it owns, where `Entry` must read it from a borrowed one (kept for
        /// the fallback) and so copy every string of the record once more. Where
        /// this fails, `Entry` reads the text as before.
        #[derive(Deserialize)]
        #[serde(tag = "type")]
        pub(crate) enum TypedEntry {
            $( #[serde(rename = $tag)] $variant($payload), )*
        }

        impl From<TypedEntry> for Entry {
            fn from(t: TypedEntry) -> Entry {
                match t {
                    $( TypedEntry::$variant(e) => Entry::$variant(e), )*
                }
            }
        }

        impl Entry {
            /// The type of a modelled variant (`None` for [`Entry::Unknown`]).
            fn variant_type(&self) -> Option<EntryType> {
                match self {
                    $( Entry::$variant(_) => Some(EntryType::$variant), )*
                    Entry::Unknown(_) => None,
                }
            }

            /// The shared base fields, `None` for an unknown entry.
            pub fn base(&self) -> Option<&EntryBase> {
                match self {
                    $( Entry::$variant(e) => Some(&e.base), )*
                    Entry::Unknown(_) => None,
                }
            }

            /// The shared base fields, mutable; `None` for an unknown entry.
            pub fn base_mut(&mut self) -> Option<&mut EntryBase> {
                match self {
                    $( Entry::$variant(e) => Some(&mut e.base), )*
                    Entry::Unknown(_) => None,
                }
            }
        }
    };
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

entry_types! {
    /// `message`: an [`AgentMessage`].
    Message(MessageEntry) = message "message",
    /// `thinking_level_change`
    ThinkingLevelChange(ThinkingLevelChangeEntry) = thinking_level_change "thinking_level_change",
    /// `model_change`
    ModelChange(ModelChangeEntry) = model_change "model_change",
    /// `service_tier_change`
    ServiceTierChange(ServiceTierChangeEntry) = service_tier_change "service_tier_change",
    /// `compaction`
    Compaction(CompactionEntry) = compaction "compaction",
    /// `branch_summary`
    BranchSummary(BranchSummaryEntry) = branch_summary "branch_summary",
    /// `custom`: extension state, never in the context.
    Custom(CustomEntry) = custom "custom",
    /// `child_usage_attributed`: usage of a child run folded into an assistant message.
    ChildUsageAttributed(ChildUsageAttributedEntry) = child_usage_attributed "child_usage_attributed",
    /// `custom_message`: an extension message that is in the context.
    CustomMessage(CustomMessageEntry) = custom_message "custom_message",
    /// `label`: a bookmark on another entry.
    Label(LabelEntry) = label "label",
    /// `session_info`: the display name.
    SessionInfo(SessionInfoEntry) = session_info "session_info",
    /// `session_state`: daemon lifecycle state.
    SessionState(SessionStateEntry) = session_state "session_state",
    /// `agent_status`: the agents-view status line.
    AgentStatus(AgentStatusEntry) = agent_status "agent_status",
    /// `git_state`: a repository snapshot.
    GitState(GitStateEntry) = git_state "git_state",
}

impl std::fmt::Display for EntryType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `type` string that names no [`EntryType`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown entry type `{0}`")]
pub struct UnknownEntryType(pub String);

impl std::str::FromStr for EntryType {
    type Err = UnknownEntryType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EntryType::from_name(s).ok_or_else(|| UnknownEntryType(s.to_owned()))
    }
}

impl Entry {
    /// The `type` string (`None` only for an unknown entry without a string `type`).
    pub fn entry_type(&self) -> Option<&str> {
        match self {
            Entry::Unknown(m) => unknown_str(m, "type"),
            known => known.variant_type().map(EntryType::as_str),
        }
    }

    /// The entry's type when this version models it: the variant's, or for an
    /// [`Entry::Unknown`] the type its `type` string names (a known type read whole
    /// because its fields do not fit the typed model). `None` for other types.
    pub fn known_type(&self) -> Option<EntryType> {
        match self {
            Entry::Unknown(m) => unknown_str(m, "type").and_then(EntryType::from_name),
            known => known.variant_type(),
        }
    }

    /// The entry's id (`None` for legacy v1 entries and id-less unknown entries).
    pub fn id(&self) -> Option<&str> {
        match self {
            Entry::Unknown(m) => unknown_str(m, "id"),
            known => known
                .base()
                .and_then(|b| b.id.as_ref())
                .map(EntryId::as_str),
        }
    }

    /// The parent's id (`None` for a root, and for `null`, absent or non-string values).
    pub fn parent_id(&self) -> Option<&str> {
        match self {
            Entry::Unknown(m) => unknown_str(m, "parentId"),
            known => known
                .base()
                .and_then(|b| b.parent_id.as_ref())
                .map(EntryId::as_str),
        }
    }

    /// The entry timestamp as written.
    pub fn timestamp(&self) -> Option<&str> {
        match self {
            Entry::Unknown(m) => unknown_str(m, "timestamp"),
            known => known
                .base()
                .and_then(|b| b.timestamp.as_ref())
                .map(Timestamp::as_str),
        }
    }

    /// The entry timestamp as `new Date(entry.timestamp).getTime()` reads it, whatever
    /// its JSON type ([`crate::js::date_of`]); `None` where it gives `NaN`.
    pub fn timestamp_ms(&self) -> Option<i64> {
        match self {
            Entry::Unknown(m) => crate::js::date_of(m.get("timestamp")),
            _ => self.timestamp().and_then(crate::ids::parse_js_date),
        }
    }

    /// A property of the entry as the reference's JavaScript reads it
    /// (`entry[key]`; `None` is `undefined`). Typed entries are serialized to read it,
    /// so use this for entries read as [`Entry::Unknown`] and rare paths only.
    pub fn js_property(&self, key: &str) -> Option<Value> {
        match self {
            Entry::Unknown(m) => m.get(key).cloned(),
            other => match serde_json::to_value(other) {
                Ok(Value::Object(mut m)) => m.remove(key),
                _ => None,
            },
        }
    }

    /// The message of a `message` entry.
    pub fn as_message(&self) -> Option<&AgentMessage> {
        match self {
            Entry::Message(m) => Some(&m.message),
            _ => None,
        }
    }
}

fn unknown_str<'a>(m: &'a Extra, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

/// `message`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MessageEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The stored message.
    pub message: AgentMessage,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `message` record read as [`MessageEntry`] with a [`TypedAgentMessage`]: what
/// [`Entry::parse`] tries first on a record that starts as messages do.
#[derive(Deserialize)]
#[serde(tag = "type")]
pub(crate) enum TypedMessageRecord {
    #[serde(rename = "message")]
    Message(TypedMessageEntry),
}

/// [`MessageEntry`]'s fields, the message of a modelled role.
#[derive(Deserialize)]
pub(crate) struct TypedMessageEntry {
    #[serde(flatten)]
    base: EntryBase,
    message: TypedAgentMessage,
    #[serde(flatten)]
    extra: Extra,
}

impl From<TypedMessageRecord> for Entry {
    fn from(TypedMessageRecord::Message(m): TypedMessageRecord) -> Entry {
        Entry::Message(MessageEntry {
            base: m.base,
            message: m.message.into(),
            extra: m.extra,
        })
    }
}

/// `thinking_level_change`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelChangeEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// `off`, `minimal`, `low`, `medium`, `high`, `xhigh` (not validated, as in the reference).
    pub thinking_level: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `model_change`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ModelChangeEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Provider, e.g. `openai`.
    pub provider: String,
    /// Model id, e.g. `gpt-4o`.
    pub model_id: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `service_tier_change`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ServiceTierChangeEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Provider service tier, e.g. `priority`.
    pub service_tier: String,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `compaction`: a summary standing in for the history before `firstKeptEntryId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The summary.
    pub summary: String,
    /// First entry kept verbatim after the summary (absent after some v1 migrations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<EntryId>,
    /// Context size before compaction.
    pub tokens_before: Number,
    /// Implementation data, e.g. `{readFiles, modifiedFiles}`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub details: Option<Value>,
    /// Whether an extension produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `branch_summary`: what happened on the branch the user left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The entry branched from, or `"root"`.
    pub from_id: String,
    /// The summary (an empty one adds nothing to the context).
    pub summary: String,
    /// File tracking or extension data.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub details: Option<Value>,
    /// Whether an extension produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `custom`: extension state. The reference writes its payload before the base fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CustomEntry {
    /// Extension identifier.
    pub custom_type: String,
    /// Extension data (absent, `null` or any value).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub data: Option<Value>,
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `child_usage_attributed`: a child run's usage folded into an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChildUsageAttributedEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The assistant message entry the usage is attributed to.
    pub target_id: EntryId,
    /// The usage one child added.
    pub child_usage: Usage,
    /// The target's usage after adding it.
    pub aggregate_usage: Usage,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `custom_message`: an extension message in the context. The reference writes its
/// payload before the base fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageEntry {
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
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `label`: sets or (without `label`) clears the label of `targetId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LabelEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The labelled entry.
    pub target_id: EntryId,
    /// The label; absent or empty clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `session_info`: the session's display name (empty clears it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionInfoEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The name (trimmed on write by the append method).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Daemon-managed lifecycle state of a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SessionState {
    /// Running or resumable.
    Active,
    /// Put away (legacy `sleep` reads as this).
    Archived,
    /// Legacy: the owner crashed.
    Crash,
    /// A state this version does not know, kept as written.
    Other(String),
}

impl SessionState {
    /// The JSON string written for this state.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Active => "active",
            Self::Archived => "archived",
            Self::Crash => "crash",
            Self::Other(s) => s,
        }
    }
}

impl Serialize for SessionState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SessionState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "active" => Self::Active,
            "archived" | "sleep" => Self::Archived,
            "crash" => Self::Crash,
            _ => Self::Other(s),
        })
    }
}

/// Any string: the known states, legacy `sleep` (read as `archived`) and states of
/// later versions (kept as written).
#[cfg(feature = "schema")]
impl schemars::JsonSchema for SessionState {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SessionState".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A session's lifecycle state: `active`, `archived` (legacy `sleep` reads as `archived`), legacy `crash`, or a later version's state, kept as written.",
            "type": "string",
        })
    }
}

/// `session_state`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionStateEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The lifecycle state.
    pub state: SessionState,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The agents-view status of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentStatus {
    /// One-line summary.
    pub summary: String,
    /// Optional task state, e.g. `working`, `blocked`, `done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_state: Option<String>,
    /// How many messages the summary was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_message_count: Option<u64>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `agent_status`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentStatusEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The status.
    pub status: AgentStatus,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A repository snapshot.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GitState {
    /// Current branch, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// HEAD commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// Whether the work tree had changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty: Option<bool>,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `git_state`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GitStateEntry {
    /// id, parentId, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The snapshot.
    pub git: GitState,
    /// Unmodelled fields.
    #[serde(flatten)]
    pub extra: Extra,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A present `timestamp` must be a string: `null` reads differently from an absent
/// one in JavaScript (`new Date(null)` is 0, `new Date(undefined)` NaN).
fn string_timestamp<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
    Timestamp::deserialize(d).map(Some)
}

fn string_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<EntryId>, D::Error> {
    EntryId::deserialize(d).map(Some)
}
