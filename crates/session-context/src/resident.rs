//! A [`ContextSource`] over entries held in memory.

use std::borrow::Cow;
use std::collections::HashMap;

use session_types::Entry;

use crate::kind::EntryKind;
use crate::source::{ContextSource, Node, UsageAttribution};

/// Entries in file (append) order, indexed by id the way the reference's `byId` map is:
/// when an id repeats, the entry that comes last wins. The default leaf is the last
/// element of the slice.
///
/// Building the index is one pass over the slice; child-usage attributions are gathered
/// in the same pass.
#[derive(Debug, Clone)]
pub struct ResidentSource<'a> {
    entries: &'a [Entry],
    by_id: HashMap<&'a str, usize>,
    attributions: HashMap<&'a str, UsageAttribution>,
}

impl<'a> ResidentSource<'a> {
    /// Indexes `entries` (header excluded, file order).
    pub fn new(entries: &'a [Entry]) -> Self {
        let mut by_id = HashMap::with_capacity(entries.len());
        let mut attributions: HashMap<&'a str, UsageAttribution> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            if let Some(id) = e.id() {
                by_id.insert(id, i);
            }
            if let Entry::ChildUsageAttributed(c) = e {
                attributions
                    .entry(c.target_id.as_str())
                    .and_modify(|a| a.record(&c.child_usage, &c.aggregate_usage))
                    .or_insert_with(|| UsageAttribution::first(&c.child_usage, &c.aggregate_usage));
            }
        }
        Self {
            entries,
            by_id,
            attributions,
        }
    }

    /// The entries this source reads.
    pub fn entries(&self) -> &'a [Entry] {
        self.entries
    }

    /// The entry with this id (the last one when ids repeat).
    pub fn get(&self, id: &str) -> Option<&'a Entry> {
        self.by_id.get(id).map(|&i| &self.entries[i])
    }
}

/// A resident source has no entry under the requested id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no entry with id `{id}`")]
pub struct EntryNotFound {
    /// The id asked for.
    pub id: String,
}

impl ContextSource for ResidentSource<'_> {
    type Error = EntryNotFound;

    fn last_entry(&self) -> Option<Cow<'_, str>> {
        self.entries.last().and_then(Entry::id).map(Cow::Borrowed)
    }

    fn node(&self, id: &str) -> Option<Node<'_>> {
        let e = self.get(id)?;
        Some(Node {
            parent: e.parent_id().map(Cow::Borrowed),
            kind: EntryKind::of(e),
        })
    }

    fn load(&self, id: &str) -> Result<Cow<'_, Entry>, EntryNotFound> {
        self.get(id)
            .map(Cow::Borrowed)
            .ok_or_else(|| EntryNotFound { id: id.to_owned() })
    }

    fn entry_count(&self) -> usize {
        self.entries.len()
    }

    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        self.attributions.get(target).cloned()
    }
}
