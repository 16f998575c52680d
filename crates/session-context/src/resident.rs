//! A [`ContextSource`] over entries held in memory.

use std::borrow::Cow;
use std::collections::HashMap;

use session_types::Entry;

use crate::kind::ContextKind;
use crate::source::{ContextSource, Node, Parent, UsageAttribution};

/// Entries in file (append) order, indexed by id the way the reference's `byId` map is:
/// when an id repeats, the entry that comes last wins. The default leaf is the last
/// element of the slice. Handles are positions in the slice.
///
/// Construction is one pass to index ids (gathering child-usage attributions on the
/// way) and one to resolve every parent link to a position, so walking a path never
/// hashes an id.
#[derive(Debug, Clone)]
pub struct ResidentSource<'a> {
    entries: &'a [Entry],
    by_id: HashMap<&'a str, usize>,
    parents: Vec<Link>,
    kinds: Vec<ContextKind>,
    attributions: HashMap<&'a str, UsageAttribution>,
}

/// A resolved parent link.
#[derive(Debug, Clone, Copy)]
enum Link {
    Root,
    Node(usize),
    Missing,
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
        let parents = entries
            .iter()
            .map(|e| match e.parent_id().filter(|p| !p.is_empty()) {
                None => Link::Root,
                Some(p) => by_id.get(p).map_or(Link::Missing, |&i| Link::Node(i)),
            })
            .collect();
        let kinds = entries.iter().map(ContextKind::of).collect();
        Self {
            entries,
            by_id,
            parents,
            kinds,
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

/// A resident source has no entry at the requested position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no entry at position {position}")]
pub struct EntryNotFound {
    /// The position asked for.
    pub position: usize,
}

impl ContextSource for ResidentSource<'_> {
    type Handle = usize;
    type Error = EntryNotFound;

    fn last_entry(&self) -> Option<usize> {
        self.entries.len().checked_sub(1)
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    fn node(&self, entry: usize) -> Node<'_, usize> {
        Node {
            parent: match self.parents[entry] {
                Link::Root => Parent::Root,
                Link::Node(i) => Parent::Node(i),
                Link::Missing => {
                    Parent::Missing(Cow::Borrowed(self.entries[entry].parent_id().unwrap_or("")))
                }
            },
            kind: self.kinds[entry],
        }
    }

    fn id(&self, entry: usize) -> Cow<'_, str> {
        Cow::Borrowed(self.entries[entry].id().unwrap_or(""))
    }

    fn load(&self, entry: usize) -> Result<Cow<'_, Entry>, EntryNotFound> {
        self.entries
            .get(entry)
            .map(Cow::Borrowed)
            .ok_or(EntryNotFound { position: entry })
    }

    fn entry_count(&self) -> usize {
        self.entries.len()
    }

    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        self.attributions.get(target).cloned()
    }
}
