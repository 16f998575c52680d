//! The path walk from a leaf to its root, and the plan of what the context holds.

use std::borrow::Cow;
use std::collections::HashSet;

use session_types::{Entry, EntryId};

use crate::error::{ContextError, ContextWarning};
use crate::kind::EntryKind;
use crate::source::ContextSource;

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

/// One entry of the path: its id and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry<'s> {
    /// The entry id.
    pub id: Cow<'s, str>,
    /// Its kind.
    pub kind: EntryKind,
}

/// What a context is made of, known after walking the path and reading only the
/// latest compaction: the path, where the settings come from and the window of entries
/// whose messages the context holds.
#[derive(Debug, Clone, Default)]
pub struct ContextPlan<'s> {
    pub(crate) path: Vec<PathEntry<'s>>,
    pub(crate) compaction: Option<usize>,
    pub(crate) compaction_entry: Option<Cow<'s, Entry>>,
    pub(crate) first_kept: Option<usize>,
    pub(crate) thinking: Option<usize>,
    pub(crate) model: Option<usize>,
    pub(crate) service_tier: Option<usize>,
    pub(crate) warnings: Vec<ContextWarning>,
}

impl<'s> ContextPlan<'s> {
    /// The path, root first, leaf last (empty for no leaf).
    pub fn path(&self) -> &[PathEntry<'s>] {
        &self.path
    }

    /// The leaf the path ends at.
    pub fn leaf(&self) -> Option<&str> {
        self.path.last().map(|p| &*p.id)
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
    pub fn window(&self) -> impl Iterator<Item = usize> + '_ {
        let (kept, tail) = match self.compaction {
            Some(k) => (
                self.first_kept.map_or(0..0, |f| f..k),
                k + 1..self.path.len(),
            ),
            None => (0..0, 0..self.path.len()),
        };
        kept.chain(tail)
    }

    /// What was noticed on the way (unknown leaf, missing parent).
    pub fn warnings(&self) -> &[ContextWarning] {
        &self.warnings
    }
}

/// Walks the path to `leaf` and plans the context. Reads nodes for the whole path and
/// loads one entry: the latest compaction, for its `firstKeptEntryId`.
///
/// Costs O(depth) node lookups; no visited set is kept unless the path grows longer than
/// [`ContextSource::entry_count`], which only a cycle can make it do.
pub fn plan<'s, S: ContextSource>(
    source: &'s S,
    leaf: Leaf<'_>,
) -> Result<ContextPlan<'s>, ContextError<S::Error>> {
    let mut plan = ContextPlan::default();
    let start = match leaf {
        Leaf::None => return Ok(plan),
        Leaf::Id(id) if !id.is_empty() && source.node(id).is_some() => Some(Cow::Borrowed(id)),
        Leaf::Id(id) => {
            plan.warnings.push(ContextWarning::UnknownLeaf {
                requested: EntryId::new(id),
            });
            source.last_entry()
        }
        Leaf::Default => source.last_entry(),
    };
    let Some(start) = start else {
        return Ok(plan);
    };
    // `start` may borrow the caller's leaf string; path ids must borrow the source only.
    let start: Cow<'_, str> = Cow::Owned(start.into_owned());
    plan.path = walk(source, start, &mut plan.warnings)?;
    scan(&mut plan);
    if let Some(k) = plan.compaction {
        let id = &plan.path[k].id;
        let entry = load(source, id, EntryKind::Compaction)?;
        if let Entry::Compaction(c) = &*entry
            && let Some(first) = &c.first_kept_entry_id
        {
            plan.first_kept = plan.path[..k].iter().position(|p| p.id == first.as_str());
        }
        plan.compaction_entry = Some(entry);
    }
    Ok(plan)
}

fn walk<'s, S: ContextSource>(
    source: &'s S,
    start: Cow<'s, str>,
    warnings: &mut Vec<ContextWarning>,
) -> Result<Vec<PathEntry<'s>>, ContextError<S::Error>> {
    let bound = source.entry_count();
    let mut path: Vec<PathEntry<'s>> = Vec::new();
    let mut seen: Option<HashSet<Cow<'s, str>>> = None;
    let Some(mut node) = source.node(&start) else {
        return Ok(path);
    };
    let mut id = start;
    loop {
        let parent = node.parent.take().filter(|p| !p.is_empty());
        path.push(PathEntry {
            id: id.clone(),
            kind: node.kind,
        });
        let Some(parent) = parent else { break };
        let cycle = |at: &str, path: &[PathEntry<'_>]| ContextError::Cycle {
            at: EntryId::new(at),
            leaf: EntryId::new(&*path[0].id),
            path_len: path.len(),
        };
        if parent == id {
            return Err(cycle(&parent, &path));
        }
        if seen.is_none() && path.len() >= bound {
            // Longer than any acyclic path could be: from now on, keep a visited set.
            let mut set = HashSet::with_capacity(path.len() * 2);
            for p in &path {
                if !set.insert(p.id.clone()) {
                    return Err(cycle(&p.id, &path));
                }
            }
            seen = Some(set);
        }
        if let Some(set) = &mut seen
            && !set.insert(parent.clone())
        {
            return Err(cycle(&parent, &path));
        }
        match source.node(&parent) {
            Some(n) => {
                node = n;
                id = parent;
            }
            None => {
                warnings.push(ContextWarning::MissingParent {
                    id: EntryId::new(&*id),
                    parent: EntryId::new(&*parent),
                });
                break;
            }
        }
    }
    path.reverse();
    Ok(path)
}

/// Finds the latest settings sources and compaction, scanning from the leaf back and
/// stopping once all four are found.
fn scan(plan: &mut ContextPlan<'_>) {
    for (i, p) in plan.path.iter().enumerate().rev() {
        let slot = match p.kind {
            EntryKind::ThinkingLevelChange => &mut plan.thinking,
            EntryKind::ServiceTierChange => &mut plan.service_tier,
            EntryKind::Compaction => &mut plan.compaction,
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
pub(crate) fn load<'s, S: ContextSource>(
    source: &'s S,
    id: &str,
    expected: EntryKind,
) -> Result<Cow<'s, Entry>, ContextError<S::Error>> {
    let entry = source.load(id).map_err(|e| ContextError::Load {
        id: EntryId::new(id),
        source: e,
    })?;
    let found = EntryKind::of(&entry);
    if found != expected {
        return Err(ContextError::KindMismatch {
            id: EntryId::new(id),
            expected,
            found,
        });
    }
    Ok(entry)
}
