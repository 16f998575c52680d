//! Path marks: for every entry, where the settings changes above it and the top of
//! its path are, so that a walk from a leaf can stop where the context stops and
//! still know the settings in force (`docs/context.md`, "Walking only what the
//! context needs").
//!
//! The settings a path carries are its rare settings changes
//! ([`EntryType::ThinkingLevelChange`], [`EntryType::ServiceTierChange`]) and its
//! model. Every entry record points to its nearest setting change of each kind, its nearest model source (a `model_change`
//! or an assistant message) and the top of its path ([`MarkInfo`], 16 bytes a
//! record). The sidecar stores them in each record (`docs/format.md` §3), so a
//! loaded index answers from the record's page; the records indexed since (and
//! every record of an index built in memory) have them computed from the records'
//! resolved parents in one pass on first use, then kept as each record is indexed.
//!
//! They are exact while the parents are ([`State::parents_exact`](crate::state::State)):
//! a later duplicate id re-parents earlier entries, and the marks are then not used
//! until the next load recomputes them.

use session_types::{EntryType, EntryTypeMap};

use crate::state::NO_POS;

/// A settings change a mark records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    Thinking,
    ServiceTier,
}

/// Which entry types are settings changes that a mark records. (The model's source,
/// also an assistant message, is pointed to by every record instead.)
const SETTING: EntryTypeMap<Option<Setting>> = EntryTypeMap {
    message: None,
    thinking_level_change: Some(Setting::Thinking),
    model_change: None,
    service_tier_change: Some(Setting::ServiceTier),
    compaction: None,
    branch_summary: None,
    custom: None,
    child_usage_attributed: None,
    custom_message: None,
    label: None,
    session_info: None,
    session_state: None,
    agent_status: None,
    git_state: None,
};

/// The setting an entry of type `name` changes, if any.
pub(crate) fn setting_of(name: &str) -> Option<Setting> {
    EntryType::from_name(name).and_then(|t| *SETTING.get(t))
}

/// Whether an entry of type `name` is a `model_change` (with assistant messages,
/// the model's sources).
pub(crate) fn model_change(name: &str) -> bool {
    EntryType::from_name(name) == Some(EntryType::ModelChange)
}

/// What the index knows of the path from the root to an entry: the nearest settings
/// changes and model source on it (the entry itself included) and the path's top.
/// [`MarkInfo::NONE`] for records that are no tree entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MarkInfo {
    /// The nearest `thinking_level_change` (itself included), or [`NO_POS`].
    pub(crate) thinking: u32,
    /// The nearest `service_tier_change` (itself included), or [`NO_POS`].
    pub(crate) service_tier: u32,
    /// The first entry of the path (the one without a resolved parent); [`NO_POS`]:
    /// the record is no tree entry.
    pub(crate) top: u32,
    /// The nearest model source (itself included), or [`NO_POS`].
    pub(crate) model: u32,
}

impl MarkInfo {
    /// The marks of a record that is no tree entry.
    pub(crate) const NONE: MarkInfo = MarkInfo {
        thinking: NO_POS,
        service_tier: NO_POS,
        top: NO_POS,
        model: NO_POS,
    };

    /// The marks of record `i`: `entry` says whether it is a tree entry, `parent` is
    /// its resolved parent's marks (`None`: it has none, its path starts here),
    /// `setting` the setting it changes, `model` whether it is a model source.
    pub(crate) fn of_record(
        i: u32,
        entry: bool,
        parent: Option<MarkInfo>,
        setting: Option<Setting>,
        model: bool,
    ) -> MarkInfo {
        if !entry {
            return MarkInfo::NONE;
        }
        let mut m = match parent {
            // Below a record that is no tree entry (which cannot be a parent while
            // parents are exact).
            Some(p) if p.top == NO_POS => return MarkInfo::NONE,
            Some(p) => p,
            None => MarkInfo {
                top: i,
                ..MarkInfo::NONE
            },
        };
        if model {
            m.model = i;
        }
        match setting {
            Some(Setting::Thinking) => m.thinking = i,
            Some(Setting::ServiceTier) => m.service_tier = i,
            None => {}
        }
        m
    }
}

/// The marks of the records from `start` on (the records before it are a loaded
/// sidecar's, which stores each record's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    start: u32,
    infos: Vec<MarkInfo>,
}

impl Marks {
    /// Marks of records `start..`, with room for `n` records.
    pub(crate) fn with_capacity(start: u32, n: usize) -> Self {
        Self {
            start,
            infos: Vec::with_capacity(n),
        }
    }

    /// One past the last record marked.
    pub(crate) fn end(&self) -> usize {
        self.start as usize + self.infos.len()
    }

    /// Marks the next record (number `self.end()`).
    pub(crate) fn push(&mut self, m: MarkInfo) {
        self.infos.push(m);
    }

    /// The marks of record `i` (`None`: before `start` or not marked yet).
    pub(crate) fn get(&self, i: u32) -> Option<MarkInfo> {
        self.infos.get(i.checked_sub(self.start)? as usize).copied()
    }
}
