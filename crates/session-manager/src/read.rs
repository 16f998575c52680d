//! Read limits, their accounting, and the shapes reads return.

use std::cell::Cell;

use session_index::{Derived, EntryIndex};
use session_types::{Entry, EntryId};

use crate::error::{Limit, ReadError};

/// Default `max_source_entries` of a complete read (the seed's 16,384).
pub const DEFAULT_MAX_SOURCE_ENTRIES: u64 = 16_384;
/// Default `max_source_bytes` of a complete read (the seed's 64 MiB).
pub const DEFAULT_MAX_SOURCE_BYTES: u64 = 64 << 20;

/// Bounds of one complete read of an owned session. A read returns its complete result
/// or [`ReadError::LimitExceeded`] naming the limit and the need.
///
/// *Source* entries and bytes are the journal frames the read decodes and their
/// payload bytes (not the size of the result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// At most this many source entries (default 16,384).
    pub max_source_entries: u64,
    /// At most this many source payload bytes (default 64 MiB).
    pub max_source_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_source_entries: DEFAULT_MAX_SOURCE_ENTRIES,
            max_source_bytes: DEFAULT_MAX_SOURCE_BYTES,
        }
    }
}

impl ReadLimits {
    /// Default entry limit, this byte limit (the seed's `maxSourceBytes?` argument).
    pub fn bytes(max_source_bytes: u64) -> Self {
        Self {
            max_source_bytes,
            ..Self::default()
        }
    }
}

/// The running count of one read (shared by every path of a `read_branches`).
#[derive(Debug)]
pub(crate) struct Accounting {
    limits: ReadLimits,
    /// The session, as a limit error names it.
    session: String,
    entries: Cell<u64>,
    bytes: Cell<u64>,
}

impl Accounting {
    pub(crate) fn new(limits: ReadLimits, session: String) -> Self {
        Self {
            limits,
            session,
            entries: Cell::new(0),
            bytes: Cell::new(0),
        }
    }

    /// Checks, before reading anything, that a read needing exactly `entries` and
    /// `bytes` more fits.
    pub(crate) fn reserve(&self, entries: u64, bytes: u64) -> Result<(), ReadError> {
        let e = self.entries.get().saturating_add(entries);
        let b = self.bytes.get().saturating_add(bytes);
        self.check(e, b, true)?;
        self.entries.set(e);
        self.bytes.set(b);
        Ok(())
    }

    /// How many more entries and bytes the limits allow.
    pub(crate) fn headroom(&self) -> (u64, u64) {
        (
            self.limits
                .max_source_entries
                .saturating_sub(self.entries.get()),
            self.limits
                .max_source_bytes
                .saturating_sub(self.bytes.get()),
        )
    }

    /// Counts one frame read as it happens.
    pub(crate) fn charge(&self, bytes: u64) -> Result<(), ReadError> {
        self.reserve_inexact(1, bytes)
    }

    fn reserve_inexact(&self, entries: u64, bytes: u64) -> Result<(), ReadError> {
        let e = self.entries.get().saturating_add(entries);
        let b = self.bytes.get().saturating_add(bytes);
        self.check(e, b, false)?;
        self.entries.set(e);
        self.bytes.set(b);
        Ok(())
    }

    fn check(&self, e: u64, b: u64, exact: bool) -> Result<(), ReadError> {
        if e > self.limits.max_source_entries {
            return Err(ReadError::LimitExceeded {
                session: self.session.clone(),
                limit: Limit::SourceEntries,
                limit_value: self.limits.max_source_entries,
                needed: e,
                exact,
            });
        }
        if b > self.limits.max_source_bytes {
            return Err(ReadError::LimitExceeded {
                session: self.session.clone(),
                limit: Limit::SourceBytes,
                limit_value: self.limits.max_source_bytes,
                needed: b,
                exact,
            });
        }
        Ok(())
    }
}

/// The entry of a [`SessionTreeNode`]: borrowed from a
/// [`ResidentSession`](crate::ResidentSession) (like the reference's nodes, which
/// reference its entries), or owned when read from a journal. Dereferences to the
/// [`Entry`]. (Not a `Cow`: that would make every node as large as an entry.)
#[derive(Debug, Clone)]
pub enum NodeEntry<'a> {
    /// The session's own entry.
    Borrowed(&'a Entry),
    /// An entry read from the journal.
    Owned(Box<Entry>),
}

impl std::ops::Deref for NodeEntry<'_> {
    type Target = Entry;

    fn deref(&self) -> &Entry {
        match self {
            NodeEntry::Borrowed(e) => e,
            NodeEntry::Owned(e) => e,
        }
    }
}

impl PartialEq for NodeEntry<'_> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// One node of a [`SessionTree`] (the reference's `SessionTreeNode`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTreeNode<'a> {
    /// The entry.
    pub entry: NodeEntry<'a>,
    /// Its current label, if any.
    pub label: Option<String>,
    /// The timestamp of the label entry that set that label, as written (reference
    /// 0.73.1 `labelTimestamp`; `None` when unlabelled or the label entry has none).
    pub label_timestamp: Option<String>,
    /// Depth from its root (0 for a root).
    pub depth: u32,
    /// Positions (in [`SessionTree::nodes`]) of its children, in the reference's order
    /// (timestamp ascending, stable).
    pub children: Vec<usize>,
}

/// The session tree in the reference's `getTree()` order, flattened: `nodes` in
/// pre-order (each node followed by its subtree), `roots` the positions of the roots.
///
/// Flat rather than nested so that neither building nor dropping it recurses on the
/// session's depth.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionTree<'a> {
    /// Every node, in pre-order.
    pub nodes: Vec<SessionTreeNode<'a>>,
    /// Positions of the roots in `nodes`, in file order.
    pub roots: Vec<usize>,
}

impl<'a> SessionTree<'a> {
    /// The entry ids in pre-order with their depth (handy for assertions and dumps).
    pub fn outline(&self) -> Vec<(u32, EntryId)> {
        self.nodes
            .iter()
            .map(|n| (n.depth, EntryId::new(n.entry.id().unwrap_or_default())))
            .collect()
    }

    /// Writes the tree as the reference's `getTree()` returns it, nested and in its
    /// key order: `[{"entry":…,"children":[…],"label":…,"labelTimestamp":…}, …]`
    /// (`label` and `labelTimestamp` only when set, as `JSON.stringify` drops
    /// `undefined`), entries as the typed model prints them. Iterative, with an explicit
    /// stack: a session 100,000 entries deep is written without recursing on its depth
    /// (which a derived `Serialize` of a nested tree would do).
    pub fn write_nested_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        // Each frame: the node whose children are being written (`None` for the
        // roots), the sibling positions left, and whether one was written already.
        let mut stack: Vec<(Option<usize>, std::slice::Iter<'_, usize>, bool)> =
            vec![(None, self.roots.iter(), false)];
        out.write_all(b"[")?;
        while let Some((owner, siblings, written)) = stack.last_mut() {
            let Some(&pos) = siblings.next() else {
                let owner = *owner;
                stack.pop();
                out.write_all(b"]")?;
                // Close the node whose children these were: its label keys come after
                // `children`, as the reference's object literal orders them.
                if let Some(node) = owner.and_then(|o| self.nodes.get(o)) {
                    if let Some(label) = &node.label {
                        out.write_all(b",\"label\":")?;
                        serde_json::to_writer(&mut *out, label)?;
                    }
                    if let Some(ts) = &node.label_timestamp {
                        out.write_all(b",\"labelTimestamp\":")?;
                        serde_json::to_writer(&mut *out, ts)?;
                    }
                    out.write_all(b"}")?;
                }
                continue;
            };
            let Some(node) = self.nodes.get(pos) else {
                continue;
            };
            if *written {
                out.write_all(b",")?;
            }
            *written = true;
            out.write_all(b"{\"entry\":")?;
            serde_json::to_writer(&mut *out, &*node.entry)?;
            out.write_all(b",\"children\":[")?;
            stack.push((Some(pos), node.children.iter(), false));
        }
        Ok(())
    }

    /// [`write_nested_json`](Self::write_nested_json) into a string.
    pub fn to_nested_json(&self) -> String {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail; entries always serialize.
        let _ = self.write_nested_json(&mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// The children of the node at `pos`.
    pub fn children(&self, pos: usize) -> impl Iterator<Item = &SessionTreeNode<'a>> {
        self.nodes
            .get(pos)
            .map(|n| n.children.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|c| self.nodes.get(*c))
    }
}

/// Nests the nodes of a [`session_index::Tree`]'s pre-order (the part a read sees)
/// into a [`SessionTree`], with the labels `derived` holds: the one tree assembly
/// of owned sessions and resident views. `load` gives a record's entry (`None`:
/// the node is left out, as the reference leaves out what it cannot read).
pub(crate) fn assemble_tree<'a, E>(
    derived: &Derived,
    order: impl IntoIterator<Item = session_index::TreeNode>,
    mut load: impl FnMut(EntryIndex) -> Result<Option<NodeEntry<'a>>, E>,
) -> Result<SessionTree<'a>, E> {
    let order = order.into_iter();
    let mut tree = SessionTree {
        nodes: Vec::with_capacity(order.size_hint().0),
        roots: Vec::new(),
    };
    let mut stack: Vec<usize> = Vec::new();
    let targets = label_targets(derived);
    // A node that is not an entry (a record that is not a JSON object) is left out
    // with its subtree: its depth while skipping.
    let mut skipping: Option<u32> = None;
    for n in order {
        if skipping.is_some_and(|d| n.depth > d) {
            continue;
        }
        skipping = None;
        let Some(entry) = load(n.entry)? else {
            skipping = Some(n.depth);
            continue;
        };
        let id = match &targets {
            // Only the record the id map finds for a label's target can carry it.
            Some(t) => t
                .binary_search_by_key(&n.entry.0, |&(i, _)| i)
                .ok()
                .and_then(|k| entry.id().filter(|id| *id == t[k].1)),
            None => entry.id(),
        };
        let (label, label_timestamp) = match id.and_then(|id| derived.label(id)) {
            Some(l) => {
                let id = id.unwrap_or_default();
                (Some(l.to_owned()), label_time(derived, id, &mut load)?)
            }
            None => (None, None),
        };
        let pos = tree.nodes.len();
        while stack
            .last()
            .is_some_and(|&top| tree.nodes[top].depth >= n.depth)
        {
            stack.pop();
        }
        match stack.last() {
            Some(&parent) if n.depth > 0 => tree.nodes[parent].children.push(pos),
            _ => tree.roots.push(pos),
        }
        tree.nodes.push(SessionTreeNode {
            entry,
            label,
            label_timestamp,
            depth: n.depth,
            children: Vec::new(),
        });
        stack.push(pos);
    }
    Ok(tree)
}

/// The records that may carry a label, sorted, with their targets: where no id
/// repeats, the one entry whose id is a label's target is the record the id map
/// finds for it (a string id; ids of other JSON types are other keys), so the tree
/// looks up one id per label rather than hashing every node's id (which, in a
/// large session, reads every entry's id from memory). `None` where ids repeat:
/// every node's id is looked up, as the reference's `labelsById.get(entry.id)`.
fn label_targets(derived: &Derived) -> Option<Vec<(u32, &str)>> {
    if derived.counts().duplicate_ids != 0 {
        return None;
    }
    let mut t: Vec<(u32, &str)> = derived
        .labels()
        .filter_map(|(target, _)| derived.find(target).map(|i| (i.0, target)))
        .collect();
    t.sort_unstable_by_key(|&(i, _)| i);
    Some(t)
}

/// The timestamp of the label entry that set `target`'s current label (`None` when
/// unlabelled, or when that entry has no string timestamp).
pub(crate) fn label_time<'a, E>(
    derived: &Derived,
    target: &str,
    load: &mut impl FnMut(EntryIndex) -> Result<Option<NodeEntry<'a>>, E>,
) -> Result<Option<String>, E> {
    match derived.label_entry(target) {
        Some(i) => Ok(load(i)?.and_then(|e| e.timestamp().map(str::to_owned))),
        None => Ok(None),
    }
}

/// What `createBranchedSession(leaf)` copies, decided once for owned and resident
/// sessions: the path root → leaf without its label entries, and the current labels
/// of the path's entries in the labels' first-set order.
pub(crate) struct BranchPlan {
    /// The records to copy, root first.
    pub(crate) path: Vec<EntryIndex>,
    /// (target id, label).
    pub(crate) labels: Vec<(String, String)>,
    /// Whether the walk met a parent cycle (and stopped there).
    pub(crate) cycle: bool,
}

pub(crate) fn branch_plan(derived: &Derived, leaf: EntryIndex) -> BranchPlan {
    let p = derived.path_to_root(leaf);
    let path: Vec<EntryIndex> = p
        .path
        .into_iter()
        .filter(|x| {
            derived
                .info(*x)
                .is_some_and(|i| i.known_type() != Some(session_types::EntryType::Label))
        })
        .collect();
    let ids: std::collections::HashSet<&str> =
        path.iter().filter_map(|x| derived.id_of(*x)).collect();
    let labels = derived
        .labels()
        .filter(|(t, _)| ids.contains(t))
        .map(|(t, l)| (t.to_owned(), l.to_owned()))
        .collect();
    BranchPlan {
        path,
        labels,
        cycle: p.cycle.is_some(),
    }
}

/// A context that no longer borrows the source it was built from.
pub(crate) fn detach(
    ctx: session_context::SessionContext<'_>,
) -> session_context::SessionContext<'static> {
    session_context::SessionContext {
        messages: ctx
            .messages
            .into_iter()
            .map(|m| session_context::ContextMessage::Owned(Box::new(m.into_owned())))
            .collect(),
        settings: ctx.settings,
        leaf: ctx.leaf,
        warnings: ctx.warnings,
    }
}
