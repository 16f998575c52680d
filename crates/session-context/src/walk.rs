//! The path walk from a leaf to its root, and the plan of what the context holds.

use std::borrow::Cow;
use std::collections::HashSet;

use session_types::{Entry, EntryId};

use crate::error::{ContextError, ContextWarning};
use crate::kind::ContextKind;
use crate::source::{ContextSource, Parent};

/// Which leaf to build the context for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf<'a> {
    /// The reference's default leaf: the entry appended last (not the newest tip of the
    /// tree).
    Default,
    /// No leaf, i.e. the position before the first entry: the empty context.
    None,
    /// This entry. An unknown or empty id falls back to the default leaf, as in the
    /// reference, with a [`ContextWarning::UnknownLeaf`].
    Id(&'a str),
}

/// One entry of the path: its handle in the source and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathEntry<H> {
    /// The entry's handle.
    pub handle: H,
    /// Its kind.
    pub kind: ContextKind,
}

/// What a context is made of, known after walking the path and reading only the
/// latest compaction: the path, where the settings come from and the window of entries
/// whose messages the context holds.
#[derive(Debug, Clone)]
pub struct ContextPlan<'s, H> {
    pub(crate) path: Vec<PathEntry<H>>,
    pub(crate) leaf: Option<EntryId>,
    pub(crate) compaction: Option<usize>,
    pub(crate) compaction_entry: Option<Cow<'s, Entry>>,
    pub(crate) first_kept: Option<usize>,
    pub(crate) thinking: Option<usize>,
    pub(crate) model: Option<usize>,
    pub(crate) service_tier: Option<usize>,
    pub(crate) warnings: Vec<ContextWarning>,
}

impl<H> Default for ContextPlan<'_, H> {
    fn default() -> Self {
        Self {
            path: Vec::new(),
            leaf: None,
            compaction: None,
            compaction_entry: None,
            first_kept: None,
            thinking: None,
            model: None,
            service_tier: None,
            warnings: Vec::new(),
        }
    }
}

impl<'s, H> ContextPlan<'s, H> {
    /// The path, root first, leaf last (empty for no leaf).
    pub fn path(&self) -> &[PathEntry<H>] {
        &self.path
    }

    /// The id of the leaf the path ends at.
    pub fn leaf(&self) -> Option<&str> {
        self.leaf.as_ref().map(EntryId::as_str)
    }

    /// The path index of the latest compaction on the path.
    pub fn compaction(&self) -> Option<usize> {
        self.compaction
    }

    /// The path index of the compaction's `firstKeptEntryId`, when it lies on the path
    /// before the compaction (otherwise nothing before the compaction is kept).
    pub fn first_kept(&self) -> Option<usize> {
        self.first_kept
    }

    /// The path indices of the latest `thinking_level_change`, model source
    /// (`model_change` or assistant message) and `service_tier_change`.
    pub fn settings_sources(&self) -> (Option<usize>, Option<usize>, Option<usize>) {
        (self.thinking, self.model, self.service_tier)
    }

    /// The path indices whose entries the context is made from, in context order:
    /// the kept window before the compaction and everything after it, or the whole path.
    /// The compaction itself (which comes first in the context) is not included.
    pub fn window(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        let (kept, tail) = match self.compaction {
            Some(k) => (
                self.first_kept.map_or(0..0, |f| f..k),
                k + 1..self.path.len(),
            ),
            None => (0..0, 0..self.path.len()),
        };
        Window { kept, tail }
    }

    /// What was noticed on the way (unknown leaf, missing parent).
    pub fn warnings(&self) -> &[ContextWarning] {
        &self.warnings
    }
}

/// The window's path indices: the kept range, then the tail.
struct Window {
    kept: std::ops::Range<usize>,
    tail: std::ops::Range<usize>,
}

impl Iterator for Window {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        self.kept.next().or_else(|| self.tail.next())
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.kept.len() + self.tail.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Window {}

/// Walks the path to `leaf` and plans the context. Reads nodes for the whole path and
/// loads one entry: the latest compaction, for its `firstKeptEntryId`.
///
/// Costs O(depth) node lookups by handle; no visited set is kept unless the path grows
/// longer than [`ContextSource::entry_count`], which only a cycle can make it do.
pub fn plan<'s, S: ContextSource>(
    source: &'s S,
    leaf: Leaf<'_>,
) -> Result<ContextPlan<'s, S::Handle>, ContextError<S::Error>> {
    let mut plan = ContextPlan::default();
    let start = match leaf {
        Leaf::None => return Ok(plan),
        Leaf::Id(id) => match source.find(id).filter(|_| !id.is_empty()) {
            Some(h) => Some(h),
            None => {
                plan.warnings.push(ContextWarning::UnknownLeaf {
                    requested: EntryId::new(id),
                });
                source.last_entry()
            }
        },
        // The reference's leaf is the last entry's `id` value: `null` is "before the
        // first entry", the empty context (an absent `id` is `undefined` and falls
        // back to the last entry). Only an entry without a string id is loaded to
        // tell.
        Leaf::Default => match source.last_entry() {
            Some(h) if source.id(h).is_empty() && source.id_is_null(h) => return Ok(plan),
            other => other,
        },
    };
    let Some(start) = start else {
        return Ok(plan);
    };
    plan.leaf = Some(EntryId::new(source.id(start)));
    plan.path = walk(source, start, &mut plan.warnings)?;
    scan(&mut plan);
    if let Some(k) = plan.compaction {
        let entry = load(source, plan.path[k].handle, ContextKind::Compaction)?;
        // As the reference: the kept window starts at the first path entry before the
        // compaction whose id is `firstKeptEntryId` (compared on the path, so no id
        // lookup is needed and a duplicate id off the path cannot hide it).
        // A compaction read whole (odd fields) compares its `firstKeptEntryId` the same
        // way (`===`): a number or boolean equals an id of that value (a number id
        // beyond 2^53 as JavaScript rounds it); `null` and the rest equal no id here.
        let first = match &*entry {
            Entry::Compaction(c) => c
                .first_kept_entry_id
                .as_ref()
                .map(|f| serde_json::Value::String(f.as_str().to_owned())),
            other => other.js_property("firstKeptEntryId"),
        };
        match first {
            Some(serde_json::Value::String(first)) => {
                plan.first_kept = plan.path[..k]
                    .iter()
                    .position(|p| source.id(p.handle) == first.as_str());
            }
            Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
                plan.first_kept = plan.path[..k].iter().position(|p| {
                    source.id(p.handle).is_empty()
                        && source
                            .id_value(p.handle)
                            .is_some_and(|id| js_strictly_equal(&id, &v))
                });
            }
            _ => {}
        }
        plan.compaction_entry = Some(entry);
    }
    Ok(plan)
}

/// JavaScript's `===` on two JSON numbers or booleans (numbers as doubles).
fn js_strictly_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a, b) {
        (serde_json::Value::Number(x), serde_json::Value::Number(y)) => x.as_f64() == y.as_f64(),
        (serde_json::Value::Bool(x), serde_json::Value::Bool(y)) => x == y,
        _ => false,
    }
}

fn walk<S: ContextSource>(
    source: &S,
    start: S::Handle,
    warnings: &mut Vec<ContextWarning>,
) -> Result<Vec<PathEntry<S::Handle>>, ContextError<S::Error>> {
    let bound = source.entry_count();
    let mut path: Vec<PathEntry<S::Handle>> = Vec::new();
    let mut seen: Option<HashSet<S::Handle>> = None;
    let mut handle = start;
    loop {
        let node = source.node(handle);
        path.push(PathEntry {
            handle,
            kind: node.kind,
        });
        let parent = match node.parent {
            Parent::Root => break,
            Parent::Missing(parent) => {
                warnings.push(ContextWarning::MissingParent {
                    id: EntryId::new(source.id(handle)),
                    parent: EntryId::new(parent),
                });
                break;
            }
            Parent::Node(p) => p,
        };
        let cycle = |at: S::Handle, path: &[PathEntry<S::Handle>]| ContextError::Cycle {
            at: EntryId::new(source.id(at)),
            leaf: EntryId::new(source.id(path[0].handle)),
            path_len: path.len(),
        };
        if parent == handle {
            return Err(cycle(parent, &path));
        }
        if seen.is_none() && path.len() >= bound {
            // Longer than any acyclic path could be: from now on, keep a visited set.
            let mut set = HashSet::with_capacity(path.len() * 2);
            for p in &path {
                if !set.insert(p.handle) {
                    return Err(cycle(p.handle, &path));
                }
            }
            seen = Some(set);
        }
        if let Some(set) = &mut seen
            && !set.insert(parent)
        {
            return Err(cycle(parent, &path));
        }
        handle = parent;
    }
    path.reverse();
    Ok(path)
}

/// Finds the latest settings sources and compaction, scanning from the leaf back and
/// stopping once all four are found.
fn scan<H>(plan: &mut ContextPlan<'_, H>) {
    for (i, p) in plan.path.iter().enumerate().rev() {
        let slot = match p.kind {
            ContextKind::ThinkingLevelChange => &mut plan.thinking,
            ContextKind::ServiceTierChange => &mut plan.service_tier,
            ContextKind::Compaction => &mut plan.compaction,
            k if k.is_model_source() => &mut plan.model,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(i);
        }
        if plan.thinking.is_some()
            && plan.model.is_some()
            && plan.service_tier.is_some()
            && plan.compaction.is_some()
        {
            break;
        }
    }
}

/// Loads an entry and checks it is of the kind the source's node said.
pub(crate) fn load<S: ContextSource>(
    source: &S,
    handle: S::Handle,
    expected: ContextKind,
) -> Result<Cow<'_, Entry>, ContextError<S::Error>> {
    let entry = source.load(handle).map_err(|e| ContextError::Load {
        id: EntryId::new(source.id(handle)),
        source: e,
    })?;
    let found = ContextKind::of(&entry);
    if found != expected {
        return Err(ContextError::KindMismatch {
            id: EntryId::new(source.id(handle)),
            expected,
            found,
        });
    }
    Ok(entry)
}
