//! The path walk from a leaf to its root, and the plan of what the context holds.

use std::borrow::Cow;
use std::collections::HashSet;

use session_types::{Entry, EntryId};

use crate::error::{ContextError, ContextWarning};
use crate::kind::ContextKind;
use crate::source::{ContextSource, Parent, PathMarks};

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
    pub(crate) thinking: Option<PathEntry<H>>,
    pub(crate) model: Option<PathEntry<H>>,
    pub(crate) service_tier: Option<PathEntry<H>>,
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

impl<'s, H: Copy> ContextPlan<'s, H> {
    /// The path, root first, leaf last (empty for no leaf): the whole path to the
    /// root, or — when the source keeps path marks ([`ContextSource::path_marks`])
    /// and the path has a compaction — only its part from the first entry the
    /// context needs (the kept window's first entry) to the leaf.
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

    /// The latest `thinking_level_change`, model source (`model_change` or assistant
    /// message) and `service_tier_change` on the path (which may lie above the part
    /// [`ContextPlan::path`] holds).
    pub fn settings_sources(&self) -> (Option<H>, Option<H>, Option<H>) {
        let h = |p: &Option<PathEntry<H>>| p.map(|p| p.handle);
        (h(&self.thinking), h(&self.model), h(&self.service_tier))
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
    let mut w = Walker::new(source, start);
    let mut marks = None;
    let mut compaction = None;
    if w.until(&mut plan.warnings, |p| p.kind == ContextKind::Compaction)? {
        // The latest compaction: the context needs the path from its kept window on.
        let c = w.path.len() - 1;
        let entry = load(source, w.path[c].handle, ContextKind::Compaction)?;
        let first = first_kept(source, w.path[c].handle, &entry);
        match &first {
            // Ids on a path are distinct (each is the last entry with its id), so
            // the nearest match is the only one.
            FirstKept::Id(first) if !first.is_empty() => {
                w.until(&mut plan.warnings, |p| {
                    source.id(p.handle) == first.as_str()
                })?;
            }
            // Compared with entries without a string id, of which a path may hold
            // several: the root-most counts, so the whole path is read.
            FirstKept::Id(_) | FirstKept::Value(_) | FirstKept::Key(_) => {
                w.until(&mut plan.warnings, |_| false)?;
            }
            FirstKept::Nothing => {}
        }
        compaction = Some((c, entry, first));
        marks = settings_above(source, &mut w, &mut plan.warnings)?;
    }
    if marks.is_none() {
        w.until(&mut plan.warnings, |_| false)?;
    }
    let walked = w.path.len();
    plan.path = w.into_path();
    scan(&mut plan);
    if let Some(m) = marks {
        let at = |h: Option<S::Handle>, kind| h.map(|handle| PathEntry { handle, kind });
        if plan.thinking.is_none() {
            plan.thinking = at(m.thinking_level_change, ContextKind::ThinkingLevelChange);
        }
        if plan.service_tier.is_none() {
            plan.service_tier = at(m.service_tier_change, ContextKind::ServiceTierChange);
        }
        if plan.model.is_none() {
            plan.model = m.model_source.map(|handle| PathEntry {
                handle,
                kind: source.node(handle).kind,
            });
        }
    }
    if let Some((c, entry, first)) = compaction {
        // The path is root first now.
        let k = walked - 1 - c;
        debug_assert_eq!(plan.compaction, Some(k));
        plan.compaction = Some(k);
        plan.first_kept = kept_start(source, &plan.path[..k], &first);
        plan.compaction_entry = Some(entry);
    }
    Ok(plan)
}

/// After the part of the path the context needs: the settings above it. The walk
/// goes on for up to an eighth of the session's entries (reading a node costs about
/// what computing a record's path marks does, so a one-off resume of a session
/// whose path is shorter than that never computes them; not at all when the source's
/// marks are ready, [`ContextSource::path_marks_ready`]); beyond that, the source's
/// path marks of the last entry walked ([`ContextSource::path_marks`]) answer, and
/// the path's top from them (its missing-parent warning, as the walk would give
/// it). `None`: the walk read the top, or the source keeps no marks, or its top
/// leads on (a self-parent, which only the whole walk reports): the caller walks on.
fn settings_above<S: ContextSource>(
    source: &S,
    w: &mut Walker<'_, S>,
    warnings: &mut Vec<ContextWarning>,
) -> Result<Option<PathMarks<S::Handle>>, ContextError<S::Error>> {
    let mut budget = if source.path_marks_ready() {
        0
    } else {
        source.entry_count() / 8
    };
    if budget > 0 {
        w.until(warnings, |_| {
            budget -= 1;
            budget == 0
        })?;
    }
    let Some(last) = w.path.last().map(|p| p.handle).filter(|_| w.next.is_some()) else {
        return Ok(None);
    };
    let Some(marks) = source.path_marks(last) else {
        return Ok(None);
    };
    match source.node(marks.top).parent {
        Parent::Root => {}
        Parent::Missing(parent) => warnings.push(ContextWarning::MissingParent {
            id: EntryId::new(source.id(marks.top)),
            parent: EntryId::new(parent),
        }),
        Parent::Node(_) => return Ok(None),
    }
    Ok(Some(marks))
}

/// A compaction's `firstKeptEntryId` as the reference compares it with ids (`===`).
enum FirstKept {
    /// A string: the entry with that id.
    Id(String),
    /// A number or a boolean: an entry whose id is that value.
    Value(serde_json::Value),
    /// A number beyond a double's range (`±Infinity`), which the loaded entry reads
    /// as `null`, or a string holding a lone surrogate, which it reads with U+FFFD,
    /// as the source's key text: an entry whose id has that key.
    Key(String),
    /// What no id on a path equals (`null`, absent, an object or array).
    Nothing,
}

/// The compaction's `firstKeptEntryId` (the compaction `handle`, loaded as `entry`):
/// from the loaded entry, or from the source where the entry reads `null` (D11).
fn first_kept<S: ContextSource>(source: &S, handle: S::Handle, entry: &Entry) -> FirstKept {
    match first_kept_id(entry) {
        // A U+FFFD may stand for a lone surrogate of the record's text (D6), which
        // equals only an id of the same code units: the source's key of it.
        Some(serde_json::Value::String(s)) if s.contains('\u{fffd}') => source
            .raw_field(handle, "firstKeptEntryId")
            .and_then(|raw| session_types::json::lone_surrogate_key(raw.get()))
            .map_or(FirstKept::Id(s), FirstKept::Key),
        Some(serde_json::Value::String(s)) => FirstKept::Id(s),
        Some(v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_))) => {
            FirstKept::Value(v)
        }
        // `null`, or absent where a `null` loads as absent (a compaction read as
        // one): the source may know better.
        Some(serde_json::Value::Null) | None => source
            .raw_field(handle, "firstKeptEntryId")
            .and_then(|raw| session_types::js::raw_key(&raw))
            .filter(|key| key != "null")
            .map_or(FirstKept::Nothing, FirstKept::Key),
        Some(_) => FirstKept::Nothing,
    }
}

/// The compaction's `firstKeptEntryId` as the reference reads it.
fn first_kept_id(entry: &Entry) -> Option<serde_json::Value> {
    match entry {
        Entry::Compaction(c) => c
            .first_kept_entry_id
            .as_ref()
            .map(|f| serde_json::Value::String(f.as_str().to_owned())),
        other => other.js_property("firstKeptEntryId"),
    }
}

/// Where the kept window starts in `before` (the path before the compaction, root
/// first): as the reference, at the first entry whose id is `firstKeptEntryId`
/// (compared on the path, so no id lookup is needed and a duplicate id off the path
/// cannot hide it). A compaction read whole (odd fields) compares its
/// `firstKeptEntryId` the same way (`===`): a number or boolean equals an id of that
/// value (a number id beyond 2^53 as JavaScript rounds it), and `Infinity` (a
/// `1e400`, which the loaded entry reads as `null`) an id of that key when the source
/// knows both; `null` and the rest equal no id here.
fn kept_start<S: ContextSource>(
    source: &S,
    before: &[PathEntry<S::Handle>],
    first: &FirstKept,
) -> Option<usize> {
    match first {
        FirstKept::Id(first) if !first.is_empty() => before
            .iter()
            .position(|p| source.id(p.handle) == first.as_str()),
        // `""` is the id of an entry whose id is that string only (`id` answers `""`
        // for an entry without a string id too: a number `1` is not `""` to `===`).
        FirstKept::Id(_) => before.iter().position(|p| {
            source.id(p.handle).is_empty()
                && source.id_value(p.handle) == Some(serde_json::Value::String(String::new()))
        }),
        FirstKept::Value(v) => before.iter().position(|p| {
            source.id(p.handle).is_empty()
                && source
                    .id_value(p.handle)
                    .is_some_and(|id| js_strictly_equal(&id, v))
        }),
        FirstKept::Key(key) => before.iter().position(|p| {
            source.id(p.handle).is_empty()
                && source.id_key(p.handle).is_some_and(|id| id == key.as_str())
        }),
        FirstKept::Nothing => None,
    }
}

/// JavaScript's `===` on two JSON numbers or booleans (numbers as doubles).
fn js_strictly_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    match (a, b) {
        (serde_json::Value::Number(x), serde_json::Value::Number(y)) => x.as_f64() == y.as_f64(),
        (serde_json::Value::Bool(x), serde_json::Value::Bool(y)) => x == y,
        _ => false,
    }
}

/// A walk from a leaf towards its root, in steps: each [`Walker::until`] goes on from
/// where the last stopped. O(steps) node lookups by handle; no visited set is kept
/// unless the path grows longer than [`ContextSource::entry_count`], which only a
/// cycle can make it do.
struct Walker<'a, S: ContextSource> {
    source: &'a S,
    bound: usize,
    /// Leaf first.
    path: Vec<PathEntry<S::Handle>>,
    seen: Option<HashSet<S::Handle>>,
    /// The entry to read next (`None`: the path's top was read).
    next: Option<S::Handle>,
}

impl<'a, S: ContextSource> Walker<'a, S> {
    fn new(source: &'a S, start: S::Handle) -> Self {
        Self {
            source,
            bound: source.entry_count(),
            path: Vec::new(),
            seen: None,
            next: Some(start),
        }
    }

    /// Walks on until `stop` holds for an entry read (`true`) or the top is read
    /// (`false`).
    fn until(
        &mut self,
        warnings: &mut Vec<ContextWarning>,
        mut stop: impl FnMut(&PathEntry<S::Handle>) -> bool,
    ) -> Result<bool, ContextError<S::Error>> {
        let source = self.source;
        while let Some(handle) = self.next {
            let node = source.node(handle);
            let entry = PathEntry {
                handle,
                kind: node.kind,
            };
            self.path.push(entry);
            self.next = match node.parent {
                Parent::Root => None,
                Parent::Missing(parent) => {
                    warnings.push(ContextWarning::MissingParent {
                        id: EntryId::new(source.id(handle)),
                        parent: EntryId::new(parent),
                    });
                    None
                }
                Parent::Node(p) => {
                    self.check(handle, p)?;
                    Some(p)
                }
            };
            if stop(&entry) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Fails on a cycle before the walk goes on from `handle` to `parent`.
    fn check(
        &mut self,
        handle: S::Handle,
        parent: S::Handle,
    ) -> Result<(), ContextError<S::Error>> {
        let source = self.source;
        let path = &self.path;
        let cycle = |at: S::Handle| ContextError::Cycle {
            at: EntryId::new(source.id(at)),
            leaf: EntryId::new(source.id(path[0].handle)),
            path_len: path.len(),
        };
        if parent == handle {
            return Err(cycle(parent));
        }
        if self.seen.is_none() && path.len() >= self.bound {
            // Longer than any acyclic path could be: from now on, keep a visited set.
            let mut set = HashSet::with_capacity(path.len() * 2);
            for p in path {
                if !set.insert(p.handle) {
                    return Err(cycle(p.handle));
                }
            }
            self.seen = Some(set);
        }
        if let Some(set) = &mut self.seen
            && !set.insert(parent)
        {
            return Err(cycle(parent));
        }
        Ok(())
    }

    /// The path walked, root-most first.
    fn into_path(self) -> Vec<PathEntry<S::Handle>> {
        let mut path = self.path;
        path.reverse();
        path
    }
}

/// Finds the latest settings sources and compaction, scanning from the leaf back and
/// stopping once all four are found.
fn scan<H: Copy>(plan: &mut ContextPlan<'_, H>) {
    for (i, p) in plan.path.iter().enumerate().rev() {
        let found = match p.kind {
            ContextKind::ThinkingLevelChange => &mut plan.thinking,
            ContextKind::ServiceTierChange => &mut plan.service_tier,
            k if k.is_model_source() => &mut plan.model,
            ContextKind::Compaction => {
                if plan.compaction.is_none() {
                    plan.compaction = Some(i);
                }
                continue;
            }
            _ => continue,
        };
        if found.is_none() {
            *found = Some(*p);
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
