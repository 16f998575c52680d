//! Tree queries over the index, without decoding entries: children, path to root, and
//! the full tree in the reference's `getTree()` order. Iterative; every entry is
//! visited at most once; cycles are reported, never followed forever.

use std::collections::HashSet;

use session_types::js::sort::sort_by_number_key;

use crate::derived::{Derived, EntryIndex};
use crate::kinds::ENTRY_KIND;
use crate::state::{Key, REC_UNPARSABLE, State};

/// The most nodes [`Tree::preorder`] repeats shared subtrees into (the reference's
/// `getTree()` visits a node once per attachment; duplicate ids can make that
/// exponential). Above it, and when a cycle is reachable (the reference loops
/// forever), each node is shown once.
pub const REPEAT_LIMIT: u64 = 1_000_000;

/// The result of [`Derived::path_to_root`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathToRoot {
    /// Entries from the root (or the first entry of a cycle) to the one asked for.
    pub path: Vec<EntryIndex>,
    /// Set when the walk met an entry twice: the cycle's entries, from the first one
    /// met again, in walk order (child to parent).
    pub cycle: Option<Vec<EntryIndex>>,
}

/// One node of the pre-order rendering of a [`Tree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TreeNode {
    /// The entry.
    pub entry: EntryIndex,
    /// Depth (roots: 0).
    pub depth: u32,
    /// Number of children attached to it (as the reference counts them).
    pub children: u32,
}

/// What [`Derived::tree`] found besides the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TreeReport {
    /// Parent cycles (each: its entries in parent order). The reference drops their
    /// members (and everything below them) from the tree; so do we, and say so.
    pub cycles: Vec<Vec<EntryIndex>>,
    /// Entries that are neither reachable from a root nor on a cycle (below a cycle).
    pub below_cycles: u64,
    /// Attachments of a node already placed elsewhere (duplicate ids: the reference
    /// attaches the last entry with an id once per entry carrying it). Counted once
    /// per attachment met in a walk that visits each node once.
    pub repeated: u64,
    /// Whether [`Tree::preorder`] shows each node once: a cycle is reachable from a
    /// root (the reference's `getTree()` loops forever) or the repeated walk would
    /// exceed [`REPEAT_LIMIT`] nodes. Otherwise it repeats a node at every
    /// attachment, as the reference does.
    pub shown_once: bool,
}

/// The session tree in the reference's `getTree()` order.
#[derive(Debug, Clone)]
pub struct Tree {
    /// Root nodes in append order.
    pub roots: Vec<EntryIndex>,
    child_start: Vec<u32>,
    child_list: Vec<u32>,
    /// Anomalies.
    pub report: TreeReport,
}

impl Tree {
    /// The children of a node, in `getTree()` order (V8's sort by timestamp).
    pub fn children(&self, i: EntryIndex) -> &[u32] {
        let a = self.child_start.get(i.0 as usize).copied().unwrap_or(0) as usize;
        let b = self.child_start.get(i.0 as usize + 1).copied().unwrap_or(0) as usize;
        self.child_list.get(a..b).unwrap_or(&[])
    }

    /// The pre-order walk (roots in order, children in order), as the reference's
    /// `getTree()` result reads: a node attached more than once (duplicate ids) is
    /// shown, with its subtree, at each attachment; unless
    /// [`TreeReport::shown_once`], when each node is shown at most once.
    pub fn preorder(&self) -> Vec<TreeNode> {
        let n = self.child_start.len().saturating_sub(1);
        let once = self.report.shown_once;
        let mut seen = vec![false; n];
        let mut out = Vec::new();
        let mut stack: Vec<(u32, u32)> = self.roots.iter().rev().map(|r| (r.0, 0)).collect();
        while let Some((i, depth)) = stack.pop() {
            if std::mem::replace(&mut seen[i as usize], true) && once {
                continue;
            }
            let kids = self.children(EntryIndex(i));
            out.push(TreeNode {
                entry: EntryIndex(i),
                depth,
                children: kids.len() as u32,
            });
            for k in kids.iter().rev() {
                stack.push((*k, depth + 1));
            }
        }
        out
    }
}

/// An entry with a string id (what [`Derived::children`] reads).
fn is_tree_entry(s: &State, i: u32) -> bool {
    let r = s.recs.at(i);
    r.kind == ENTRY_KIND && r.flags & REC_UNPARSABLE == 0 && s.id_of(i).is_some()
}

impl Derived {
    /// The children of an entry in append order (`getChildren`), by one pass over the
    /// records (no entry is decoded).
    pub fn children(&self, parent: EntryIndex) -> Vec<EntryIndex> {
        let s = &self.state;
        s.recs.read_whole();
        let Some(pid) = s.id_of(parent.0) else {
            return Vec::new();
        };
        if s.find_id_bulk(pid) != Some(parent.0) {
            return Vec::new();
        }
        (0..s.recs.len() as u32)
            .filter(|i| {
                is_tree_entry(s, *i) && s.find_id_bulk(s.id_of(*i).unwrap_or("")) == Some(*i)
            })
            .filter(|i| s.parent_id_of(*i) == Some(pid) && s.id_of(*i) != Some(pid))
            .map(EntryIndex)
            .collect()
    }

    /// The path from the root to `leaf` (`getBranch`): follows any truthy `parentId`
    /// (a number too) through the id map until a root or a missing parent; O(depth). A cycle ends the walk and is
    /// reported.
    pub fn path_to_root(&self, leaf: EntryIndex) -> PathToRoot {
        let s = &self.state;
        let mut path = Vec::new();
        let mut seen: HashSet<u32> = HashSet::new();
        let mut cur = Some(leaf.0).filter(|i| (*i as usize) < s.recs.len());
        let mut cycle = None;
        while let Some(i) = cur {
            if !seen.insert(i) {
                let from = path.iter().position(|p: &EntryIndex| p.0 == i).unwrap_or(0);
                cycle = Some(path[from..].to_vec());
                break;
            }
            path.push(EntryIndex(i));
            // §2.1's walk: any truthy `parentId`, looked up as the reference's `Map`
            // keys it (a number id is not its string).
            cur = s
                .parent_key_of(i)
                .filter(|k| k.truthy())
                .and_then(|p| s.find_key_bulk(p));
        }
        path.reverse();
        PathToRoot { path, cycle }
    }

    /// The whole tree in the reference's `getTree()` order: every entry is a node
    /// keyed by its `id` as the reference's `Map` keys it (any JSON value; a missing
    /// one is `undefined`, the last entry with a key owning it); roots in append order
    /// (`parentId` null, equal to the entry's own id, or naming no node); children
    /// sorted by `Date.parse(timestamp)` with V8's sort. O(n log n), iterative.
    pub fn tree(&self) -> Tree {
        let s = &self.state;
        s.recs.read_whole();
        let n = s.recs.len();
        // `nodeMap.get(entry.id)`: the last entry with the key.
        let node_of = |i: u32| -> Option<u32> { s.find_own_bulk(i) };
        // Attachments in append order: (parent node, child node).
        let mut roots = Vec::new();
        let mut edges: Vec<(u32, u32)> = Vec::with_capacity(n);
        // Each node's count of children, then (prefix sums) where its children end,
        // then (filled from the back) where they start: one array, no copy.
        let mut child_start = vec![0u32; n + 1];
        for i in 0..n as u32 {
            let Some(node) = node_of(i) else { continue };
            let parent = match s.parent_key_of(i) {
                None => None,
                Some(p) if Some(p) == s.key_of(i) && !matches!(p, Key::Unique(_)) => None,
                // A truthy parent resolves as the context walk's does (resolved once,
                // when indexed, while no later id made that stale).
                Some(p) if p.truthy() => s.parent_pos(i),
                Some(p) => s.find_key_bulk(p),
            };
            match parent {
                Some(pi) => {
                    edges.push((pi, node));
                    child_start[pi as usize] += 1;
                }
                None => roots.push(EntryIndex(node)),
            }
        }
        let mut acc = 0u32;
        for c in &mut child_start {
            acc += *c;
            *c = acc;
        }
        let mut child_list = vec![0u32; acc as usize];
        // Last attachment first, each one slot before the next: append order kept.
        for &(p, c) in edges.iter().rev() {
            child_start[p as usize] -= 1;
            child_list[child_start[p as usize] as usize] = c;
        }
        drop(edges);
        let ts = |i: u32| s.recs.at(i).ts;
        for i in 0..n {
            let (a, b) = (child_start[i] as usize, child_start[i + 1] as usize);
            if b - a > 1 {
                // The reference's `getTree()`: V8's sort by `Date.parse(timestamp)`.
                sort_by_number_key(&mut child_list[a..b], |&c| ts(c));
            }
        }
        let mut tree = Tree {
            roots,
            child_start,
            child_list,
            report: TreeReport::default(),
        };
        tree.report.shown_once = !tree.repeats_within(REPEAT_LIMIT);
        // Reachability, repeats and cycles.
        let mut seen = vec![false; n];
        let mut stack: Vec<u32> = tree.roots.iter().map(|r| r.0).collect();
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i as usize], true) {
                tree.report.repeated += 1;
                continue;
            }
            stack.extend_from_slice(tree.children(EntryIndex(i)));
        }
        // Unreached canonical nodes (none, but below a cycle): walk parents with
        // colours to find cycles.
        let unreached: Vec<u32> = (0..n as u32)
            .filter(|i| !seen[*i as usize] && node_of(*i) == Some(*i) && s.id_of(*i).is_some())
            .collect();
        // 0 new, 1 on the current walk, 2 done.
        let mut colour = vec![0u8; if unreached.is_empty() { 0 } else { n }];
        for &start in &unreached {
            if colour[start as usize] != 0 {
                continue;
            }
            let mut walk = Vec::new();
            let mut cur = Some(start);
            while let Some(i) = cur {
                match colour[i as usize] {
                    2 => break,
                    1 => {
                        let from = walk.iter().position(|w| *w == i).unwrap_or(0);
                        tree.report
                            .cycles
                            .push(walk[from..].iter().map(|w| EntryIndex(*w)).collect());
                        break;
                    }
                    _ => {}
                }
                if seen[i as usize] {
                    break;
                }
                colour[i as usize] = 1;
                walk.push(i);
                cur = s
                    .parent_id_of(i)
                    .filter(|p| Some(*p) != s.id_of(i))
                    .and_then(|p| s.find_id_bulk(p));
            }
            for w in walk {
                colour[w as usize] = 2;
            }
        }
        let on_cycles: usize = tree.report.cycles.iter().map(Vec::len).sum();
        tree.report.below_cycles = unreached.len().saturating_sub(on_cycles) as u64;
        tree
    }
}

impl Tree {
    /// Whether no cycle is reachable from a root and the walk that repeats shared
    /// subtrees visits at most `limit` nodes. Iterative; O(nodes + attachments).
    fn repeats_within(&self, limit: u64) -> bool {
        let n = self.child_start.len().saturating_sub(1);
        // Colour DFS from the roots (0 new, 1 on the stack, 2 done), recording the
        // post-order; a child met on the stack is a reachable cycle.
        let mut colour = vec![0u8; n];
        let mut post: Vec<u32> = Vec::new();
        for r in &self.roots {
            if colour[r.0 as usize] != 0 {
                continue;
            }
            colour[r.0 as usize] = 1;
            let mut stack: Vec<(u32, usize)> = vec![(r.0, 0)];
            while let Some(top) = stack.last_mut() {
                let (node, k) = *top;
                let kids = self.children(EntryIndex(node));
                if let Some(&c) = kids.get(k) {
                    top.1 += 1;
                    match colour[c as usize] {
                        1 => return false,
                        0 => {
                            colour[c as usize] = 1;
                            stack.push((c, 0));
                        }
                        _ => {}
                    }
                } else {
                    colour[node as usize] = 2;
                    post.push(node);
                    stack.pop();
                }
            }
        }
        // Subtree sizes counted with repeats, saturating past the limit.
        let mut size = vec![0u64; n];
        for &node in &post {
            let kids = self.children(EntryIndex(node));
            let s = kids
                .iter()
                .fold(1u64, |acc, c| acc.saturating_add(size[*c as usize]));
            size[node as usize] = s.min(limit + 1);
        }
        let total = self
            .roots
            .iter()
            .fold(0u64, |acc, r| acc.saturating_add(size[r.0 as usize]));
        total <= limit
    }
}
