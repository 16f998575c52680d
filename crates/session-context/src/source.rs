//! The read abstraction context building runs on: a tree of kinds, entries on demand.

use std::borrow::Cow;

use serde_json::value::RawValue;

use session_types::{Entry, Usage};

use crate::kind::ContextKind;

/// One node of the session tree as the path walk sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node<'a, H> {
    /// Where its parent link leads.
    pub parent: Parent<'a, H>,
    /// What the entry contributes to a context.
    pub kind: ContextKind,
}

/// Where a parent link leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent<'a, H> {
    /// No parent: `parentId` is `null`, absent, not a string or empty (the reference
    /// stops on any falsy `parentId`).
    Root,
    /// The entry with the parent id (the last one when ids repeat).
    Node(H),
    /// No entry has the parent id: an orphan, where the reference's path starts.
    Missing(Cow<'a, str>),
}

/// What a source knows of the path from the root to an entry without walking it
/// ([`ContextSource::path_marks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathMarks<H> {
    /// The nearest `thinking_level_change` on the path (the entry itself included).
    pub thinking_level_change: Option<H>,
    /// The nearest `service_tier_change` on the path (the entry itself included).
    pub service_tier_change: Option<H>,
    /// The nearest model source (`model_change` or assistant message) on the path
    /// (the entry itself included).
    pub model_source: Option<H>,
    /// The path's first entry: where a walk by [`ContextSource::node`] stops
    /// (its parent is [`Parent::Root`] or [`Parent::Missing`]).
    pub top: H,
}

/// Where context building reads a session from.
///
/// Entries are addressed by a cheap [`ContextSource::Handle`] (a position, a row
/// number): the walk follows parent handles without hashing ids, asks only for
/// [`ContextSource::node`]s (id, parent and kind), and whole entries are
/// [`ContextSource::load`]ed only for what the context contains: the settings entries
/// that win, the compaction and the entries of the window. An index can therefore
/// implement this trait without decoding any payload up front.
///
/// Ids follow the reference's `byId` map: when ids repeat, the entry appended last wins.
pub trait ContextSource {
    /// A cheap, copyable reference to one entry of this source.
    type Handle: Copy + Eq + std::hash::Hash + std::fmt::Debug;
    /// Why an entry could not be loaded.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The entry appended last, which is the reference's default leaf.
    fn last_entry(&self) -> Option<Self::Handle>;

    /// The entry with this id (the last one when ids repeat).
    fn find(&self, id: &str) -> Option<Self::Handle>;

    /// The node of an entry (what the walk reads at every step: keep it cheap).
    fn node(&self, entry: Self::Handle) -> Node<'_, Self::Handle>;

    /// The id of an entry (`""` for an entry without one).
    fn id(&self, entry: Self::Handle) -> Cow<'_, str>;

    /// The whole entry.
    fn load(&self, entry: Self::Handle) -> Result<Cow<'_, Entry>, Self::Error>;

    /// The entry's `id` as the reference holds it, any JSON value (`None` when it has
    /// none). Read only where an id that is not a string is compared (a compaction's
    /// numeric `firstKeptEntryId`); by default from the loaded entry.
    fn id_value(&self, entry: Self::Handle) -> Option<serde_json::Value> {
        self.load(entry).ok()?.js_property("id")
    }

    /// `new Date(entry.timestamp).getTime()` (`Some(None)`: NaN) when the source reads
    /// it better than the loaded entry can: a `timestamp` of `1e400` is `Infinity` to the
    /// reference (NaN as a date) but `null` (0 as a date) in the loaded entry (D11); an
    /// index that parsed the record itself knows. `None` (the default): read the
    /// loaded entry.
    fn time_ms(&self, entry: Self::Handle) -> Option<Option<i64>> {
        let _ = entry;
        None
    }

    /// The entry's field `key` as raw JSON text, as the reference reads the record's
    /// line (`JSON.parse` of its trimmed text), when the source keeps that text. Asked
    /// only where the loaded entry cannot say what the reference sees: a number
    /// beyond a double's range (`1e400`) is `Infinity` to the reference but `null` in
    /// the loaded entry (D11). The context reads it as JavaScript does
    /// (`session_types::js::raw_truthy`, `raw_key`): a branch summary's `summary`
    /// (truthy: the summary adds a message) and a compaction's `firstKeptEntryId`
    /// (compared with [`id_key`](Self::id_key)). `None` (the default): the loaded
    /// entry's reading stands.
    fn raw_field(&self, entry: Self::Handle, key: &str) -> Option<Box<RawValue>> {
        let _ = (entry, key);
        None
    }

    /// The entry's `id` as a key text when it is not a string, as the reference's
    /// `Map` keys it (`Infinity` for `1e400`, `session_types::js::raw_key`): what a
    /// compaction's [`raw_field`](Self::raw_field) `firstKeptEntryId` is compared
    /// with. `None` (the default): not known.
    fn id_key(&self, entry: Self::Handle) -> Option<Cow<'_, str>> {
        let _ = entry;
        None
    }

    /// Whether the entry's `id` is JSON `null` (as the last entry's id, the
    /// reference's leaf "before the first entry"). By default the entry is loaded and
    /// read; a `1e400` id reads as `null` there (D11) but is `Infinity` to the
    /// reference, which a source that keeps ids as keys tells apart.
    fn id_is_null(&self, entry: Self::Handle) -> bool {
        self.load(entry)
            .is_ok_and(|e| e.js_property("id") == Some(serde_json::Value::Null))
    }

    /// How many entries the source holds (an upper bound on any acyclic path's length).
    ///
    /// The walk keeps no visited set while a path is shorter than this; a path that gets
    /// longer must repeat an entry, and only then is the cycle located with a set.
    fn entry_count(&self) -> usize;

    /// The path marks of `entry`, if the source keeps them (an index does): they let
    /// the walk stop where the context stops — at the latest compaction's kept
    /// window — instead of reading the path to its root for the settings. They must agree with what a walk by
    /// [`ContextSource::node`] from `entry` finds. `None` (the default): the walk
    /// reads the whole path.
    fn path_marks(&self, entry: Self::Handle) -> Option<PathMarks<Self::Handle>> {
        let _ = entry;
        None
    }

    /// Whether [`path_marks`](ContextSource::path_marks) answers without a pass over
    /// the source (an index loaded from its sidecar stores them): the walk then stops
    /// at the kept window at once instead of reading on to spare computing them.
    /// `false` (the default): they may cost about a walk of every entry.
    fn path_marks_ready(&self) -> bool {
        false
    }

    /// The child-usage attribution recorded for an assistant message, if any
    /// (`child_usage_attributed` entries anywhere in the session, in append order).
    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        let _ = target;
        None
    }

    /// The entries context building is about to [`load`](ContextSource::load), in
    /// the order it loads them (once the path is walked: the settings entries that
    /// win, then the window's). A source that reads entries from storage may read
    /// them together here (neighbours in one read) and serve the loads that follow
    /// from what it read; it must still answer each load exactly as it would have
    /// (errors included: a failed read here is forgotten, and the load reads and
    /// fails on its own). The default does nothing.
    fn prefetch(&self, entries: &[Self::Handle]) {
        let _ = entries;
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
        self.children = self.children.plus(child);
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
    type Handle = S::Handle;
    type Error = S::Error;
    fn last_entry(&self) -> Option<S::Handle> {
        (**self).last_entry()
    }
    fn find(&self, id: &str) -> Option<S::Handle> {
        (**self).find(id)
    }
    fn node(&self, entry: S::Handle) -> Node<'_, S::Handle> {
        (**self).node(entry)
    }
    fn id(&self, entry: S::Handle) -> Cow<'_, str> {
        (**self).id(entry)
    }
    fn load(&self, entry: S::Handle) -> Result<Cow<'_, Entry>, Self::Error> {
        (**self).load(entry)
    }
    fn id_is_null(&self, entry: S::Handle) -> bool {
        (**self).id_is_null(entry)
    }
    fn id_value(&self, entry: S::Handle) -> Option<serde_json::Value> {
        (**self).id_value(entry)
    }
    fn time_ms(&self, entry: S::Handle) -> Option<Option<i64>> {
        (**self).time_ms(entry)
    }
    fn raw_field(&self, entry: S::Handle, key: &str) -> Option<Box<RawValue>> {
        (**self).raw_field(entry, key)
    }
    fn id_key(&self, entry: S::Handle) -> Option<Cow<'_, str>> {
        (**self).id_key(entry)
    }
    fn entry_count(&self) -> usize {
        (**self).entry_count()
    }
    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        (**self).usage_attribution(target)
    }
    fn path_marks(&self, entry: S::Handle) -> Option<PathMarks<S::Handle>> {
        (**self).path_marks(entry)
    }
    fn path_marks_ready(&self) -> bool {
        (**self).path_marks_ready()
    }
    fn prefetch(&self, entries: &[S::Handle]) {
        (**self).prefetch(entries);
    }
}
