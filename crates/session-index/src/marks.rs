//! Path marks: for every entry, where the settings changes above it and the top of
//! its path are, so that a walk from a leaf can stop where the context stops and
//! still know the settings in force (`docs/context.md`, "Walking only what the
//! context needs").
//!
//! A record is a *mark* when its type is one of the rare settings changes a path
//! carries ([`EntryType::ThinkingLevelChange`], [`EntryType::ServiceTierChange`]) or
//! when its path starts there (no resolved parent). Every entry record points to its
//! nearest mark, itself included (4 bytes a record); each mark holds, in a short side
//! table in append order, the nearest mark of each setting and the top of its path.
//! The model's source (a `model_change` or an assistant message, half of all
//! entries) is kept apart: every entry record points to its nearest one (4 bytes a
//! record). All are computed from the records' resolved parents in one pass on
//! first use (about what a walk of as many entries costs: a one-off resume walks
//! instead, see `session-context`'s plan), then kept as each record is indexed, so a
//! lookup is O(log marks).
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

/// What a mark knows of the path from the root to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MarkInfo {
    /// The nearest `thinking_level_change` (itself included), or [`NO_POS`].
    pub(crate) thinking: u32,
    /// The nearest `service_tier_change` (itself included), or [`NO_POS`].
    pub(crate) service_tier: u32,
    /// The first entry of the path (the one without a resolved parent).
    pub(crate) top: u32,
    /// The nearest model source (itself included), or [`NO_POS`]; filled in by
    /// [`Marks::of`] (the side table leaves it unset).
    pub(crate) model: u32,
}

/// Every record's nearest mark and model source, and the marks' side table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Marks {
    /// Per record: its nearest mark ([`NO_POS`] for records that are not tree
    /// entries).
    nearest: Vec<u32>,
    /// Per record: its nearest model source ([`NO_POS`]: none, or not a tree entry).
    model: Vec<u32>,
    /// The marks, in record order (so binary searched).
    info: Vec<(u32, MarkInfo)>,
}

impl Marks {
    /// Marks with room for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            nearest: Vec::with_capacity(n),
            model: Vec::with_capacity(n),
            info: Vec::new(),
        }
    }

    /// How many records have been marked.
    pub(crate) fn len(&self) -> usize {
        self.nearest.len()
    }

    /// Marks the next record (number `self.len()`): `entry` says whether it is a tree
    /// entry, `parent` is its resolved parent (an earlier record) or [`NO_POS`],
    /// `setting` the setting it changes, `model` whether it is a model source.
    pub(crate) fn push(&mut self, entry: bool, parent: u32, setting: Option<Setting>, model: bool) {
        let i = self.nearest.len() as u32;
        if !entry {
            self.nearest.push(NO_POS);
            self.model.push(NO_POS);
            return;
        }
        let above = |v: &[u32]| {
            if parent == NO_POS {
                NO_POS
            } else {
                v.get(parent as usize).copied().unwrap_or(NO_POS)
            }
        };
        let m = if model { i } else { above(&self.model) };
        self.model.push(m);
        let mut info = MarkInfo {
            thinking: NO_POS,
            service_tier: NO_POS,
            top: i,
            model: NO_POS,
        };
        if parent != NO_POS {
            // The parent's mark (none below a record that is no tree entry, which
            // cannot be a parent while parents are exact): the record's own, unless
            // it changes a setting.
            let m = self.nearest.get(parent as usize).copied().unwrap_or(NO_POS);
            if m == NO_POS || setting.is_none() {
                self.nearest.push(m);
                return;
            }
            match self.info(m) {
                Some(above) => info = above,
                None => {
                    self.nearest.push(NO_POS);
                    return;
                }
            }
        }
        match setting {
            Some(Setting::Thinking) => info.thinking = i,
            Some(Setting::ServiceTier) => info.service_tier = i,
            None => {}
        }
        self.info.push((i, info));
        self.nearest.push(i);
    }

    /// What the nearest mark of record `i` knows (`None`: `i` is no tree entry).
    pub(crate) fn of(&self, i: u32) -> Option<MarkInfo> {
        let m = *self.nearest.get(i as usize)?;
        if m == NO_POS {
            return None;
        }
        let model = *self.model.get(i as usize)?;
        self.info(m).map(|info| MarkInfo { model, ..info })
    }

    fn info(&self, mark: u32) -> Option<MarkInfo> {
        let at = self.info.binary_search_by_key(&mark, |(m, _)| *m).ok()?;
        Some(self.info[at].1)
    }
}
