//! The read abstraction context building runs on: a tree of kinds, entries on demand.

use std::borrow::Cow;

use session_types::{Entry, Usage};

use crate::kind::EntryKind;

/// One node of the session tree as the path walk sees it: its parent and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node<'a> {
    /// The parent id as written (`None` for a root, `null`, absent or non-string).
    pub parent: Option<Cow<'a, str>>,
    /// What the entry contributes to a context.
    pub kind: EntryKind,
}

/// Where context building reads a session from.
///
/// The walk asks only for [`ContextSource::node`]s (ids, parents and kinds); whole entries
/// are [`ContextSource::load`]ed only for what the context contains: the settings
/// entries that win, the compaction and the entries of the window. An index can therefore
/// implement this trait without decoding any payload up front.
///
/// Ids follow the reference's `byId` map: when ids repeat, the entry appended last wins.
pub trait ContextSource {
    /// Why an entry could not be loaded.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The id of the entry appended last, which is the reference's default leaf.
    fn last_entry(&self) -> Option<Cow<'_, str>>;

    /// The node with this id, `None` when there is none.
    fn node(&self, id: &str) -> Option<Node<'_>>;

    /// The whole entry with this id.
    fn load(&self, id: &str) -> Result<Cow<'_, Entry>, Self::Error>;

    /// How many entries the source holds (an upper bound on any acyclic path's length).
    ///
    /// The walk keeps no visited set while a path is shorter than this; a path that gets
    /// longer must repeat an id, and only then is the cycle located with a set.
    fn entry_count(&self) -> usize;

    /// The child-usage attribution recorded for an assistant message, if any
    /// (`child_usage_attributed` entries anywhere in the session, in append order).
    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        let _ = target;
        None
    }
}

/// The child usage folded into one assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageAttribution {
    /// The `aggregateUsage` of the last `child_usage_attributed` entry for the target.
    pub aggregate: Usage,
    /// The sum of every `childUsage` recorded for the target.
    pub children: Usage,
    /// How many `child_usage_attributed` entries name the target.
    pub count: usize,
}

impl UsageAttribution {
    /// The message's own usage: the aggregate minus the sum of child usage.
    pub fn own(&self) -> Usage {
        self.aggregate.minus(&self.children)
    }

    /// Folds one more `child_usage_attributed` record (in append order) into this one.
    pub fn record(&mut self, child: &Usage, aggregate: &Usage) {
        self.aggregate = aggregate.clone();
        self.children = crate::usage::plus(&self.children, child);
        self.count += 1;
    }

    /// The attribution made of one record.
    pub fn first(child: &Usage, aggregate: &Usage) -> Self {
        Self {
            aggregate: aggregate.clone(),
            children: child.clone(),
            count: 1,
        }
    }
}

impl<S: ContextSource + ?Sized> ContextSource for &S {
    type Error = S::Error;
    fn last_entry(&self) -> Option<Cow<'_, str>> {
        (**self).last_entry()
    }
    fn node(&self, id: &str) -> Option<Node<'_>> {
        (**self).node(id)
    }
    fn load(&self, id: &str) -> Result<Cow<'_, Entry>, Self::Error> {
        (**self).load(id)
    }
    fn entry_count(&self) -> usize {
        (**self).entry_count()
    }
    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        (**self).usage_attribution(target)
    }
}
