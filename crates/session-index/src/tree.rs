//! Tree queries over the index, without decoding entries: children, path to root, and
//! the full tree in the reference's `getTree()` order. Iterative; every entry is
//! visited at most once; cycles are reported, never followed forever.

use std::collections::HashSet;

use session_types::js::sort::sort_by_number_key;

use crate::derived::{Derived, EntryIndex};
use crate::kinds::ENTRY_KIND;
use crate::state::{REC_UNPARSABLE, State};

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
    /// attaches the last entry with an id once per entry carrying it). The tree keeps
    /// the first placement in pre-order and counts the rest here.
    pub repeated: u64,
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

    /// The pre-order walk (roots in order, children in order), each node at most once.
    pub fn preorder(&self) -> Vec<TreeNode> {
        let n = self.child_start.len().saturating_sub(1);
        let mut seen = vec![false; n];
        let mut out = Vec::new();
        let mut stack: Vec<(u32, u32)> = self.roots.iter().rev().map(|r| (r.0, 0)).collect();
        while let Some((i, depth)) = stack.pop() {
            if std::mem::replace(&mut seen[i as usize], true) {
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

fn is_tree_entry(s: &State, i: u32) -> bool {
    let r = &s.recs[i as usize];
    r.kind == ENTRY_KIND && r.flags & REC_UNPARSABLE == 0 && !r.id.is_none()
}

impl Derived {
    /// The children of an entry in append order (`getChildren`), by one pass over the
    /// records (no entry is decoded).
    pub fn children(&self, parent: EntryIndex) -> Vec<EntryIndex> {
        let s = &self.state;
        let Some(pid) = s.id_of(parent.0) else {
            return Vec::new();
        };
        if s.find_id(pid) != Some(parent.0) {
            return Vec::new();
        }
        (0..s.recs.len() as u32)
            .filter(|i| is_tree_entry(s, *i) && s.find_id(s.id_of(*i).unwrap_or("")) == Some(*i))
            .filter(|i| s.parent_id_of(*i) == Some(pid) && s.id_of(*i) != Some(pid))
            .map(EntryIndex)
            .collect()
    }

    /// The path from the root to `leaf` (`getBranch`): follows `parentId` through the
    /// id map until a root or a missing parent; O(depth). A cycle ends the walk and is
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
            cur = s.parent_id_of(i).and_then(|p| s.find_id(p));
        }
        path.reverse();
        PathToRoot { path, cycle }
    }

    /// The whole tree in the reference's `getTree()` order: roots in append order
    /// (`parentId` null, equal to the entry's own id, or missing from the session);
    /// children sorted by `Date.parse(timestamp)`, stable. O(n log n), iterative.
    pub fn tree(&self) -> Tree {
        let s = &self.state;
        let n = s.recs.len();
        let node_of = |i: u32| -> Option<u32> {
            if !is_tree_entry(s, i) {
                return None;
            }
            s.id_of(i).and_then(|id| s.find_id(id))
        };
        // Attachments in append order: (parent node, child node).
        let mut roots = Vec::new();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let mut count = vec![0u32; n + 1];
        for i in 0..n as u32 {
            let Some(node) = node_of(i) else { continue };
            let parent = s.parent_id_of(i);
            match parent {
                None => roots.push(EntryIndex(node)),
                Some(p) if Some(p) == s.id_of(i) => roots.push(EntryIndex(node)),
                Some(p) => match s.find_id(p) {
                    Some(pi) if is_tree_entry(s, pi) => {
                        edges.push((pi, node));
                        count[pi as usize] += 1;
                    }
                    _ => roots.push(EntryIndex(node)),
                },
            }
        }
        let mut child_start = vec![0u32; n + 1];
        let mut acc = 0u32;
        for i in 0..n {
            child_start[i] = acc;
            acc += count[i];
        }
        child_start[n] = acc;
        let mut fill = child_start.clone();
        let mut child_list = vec![0u32; acc as usize];
        for (p, c) in edges {
            child_list[fill[p as usize] as usize] = c;
            fill[p as usize] += 1;
        }
        let ts = |i: u32| s.recs[i as usize].ts;
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
        // Unreached canonical nodes: walk parents with colours to find cycles.
        let mut colour = vec![0u8; n]; // 0 new, 1 on the current walk, 2 done
        for start in 0..n as u32 {
            if seen[start as usize] || colour[start as usize] != 0 || node_of(start) != Some(start)
            {
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
                    .and_then(|p| s.find_id(p));
            }
            for w in walk {
                colour[w as usize] = 2;
            }
        }
        let on_cycles: usize = tree.report.cycles.iter().map(Vec::len).sum();
        let unreached = (0..n as u32)
            .filter(|i| !seen[*i as usize] && node_of(*i) == Some(*i))
            .count();
        tree.report.below_cycles = unreached.saturating_sub(on_cycles) as u64;
        tree
    }
}
