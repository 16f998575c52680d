//! Duplicate ids, missing parents and parent cycles, found while streaming and after
//! the last line. Memory: one small node per entry (ids are kept as 128-bit hashes
//! plus a display string of at most [`DISPLAY_MAX`] bytes).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::outcome::{IssueKind, LineIssue};

const DISPLAY_MAX: usize = 64;

/// An id's key: the first 16 bytes of its BLAKE3, which is also its frame tag
/// (`session_index::kinds::id_tag`), so a caller that tagged the frame has it already.
pub(crate) type Key = [u8; 16];

pub(crate) fn key(id: &str) -> Key {
    session_index::kinds::id_tag(id).0
}

/// Hashes a [`Key`] by its first bytes: a key is a BLAKE3 output already, which no
/// input can steer (SipHash over it again was 1% of an import).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut b = [0u8; 8];
        let n = bytes.len().min(8);
        b[..n].copy_from_slice(&bytes[..n]);
        self.0 = self.0.rotate_left(23) ^ u64::from_le_bytes(b);
    }
}

fn display(id: &str) -> Box<str> {
    if id.len() <= DISPLAY_MAX {
        return id.into();
    }
    let mut end = DISPLAY_MAX;
    while !id.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &id[..end]).into()
}

struct Node {
    line: u64,
    id: Box<str>,
    parent: Option<(Key, Box<str>)>,
}

/// The tree facts of every entry seen so far.
#[derive(Default)]
pub(crate) struct TreeCheck {
    nodes: Vec<Node>,
    /// id → index of the latest node with that id (the reference's `byId` keeps the last).
    by_id: HashMap<Key, u32, BuildHasherDefault<KeyHasher>>,
}

impl TreeCheck {
    /// Records an entry; returns a duplicate-id issue if the id was seen before.
    pub(crate) fn add(&mut self, line: u64, id: &str, parent: Option<&str>) -> Option<IssueKind> {
        self.add_keyed(line, id, key(id), parent)
    }

    /// [`add`](Self::add) of an id whose [`key`] the caller has.
    pub(crate) fn add_keyed(
        &mut self,
        line: u64,
        id: &str,
        k: Key,
        parent: Option<&str>,
    ) -> Option<IssueKind> {
        let index = self.nodes.len() as u32;
        self.nodes.push(Node {
            line,
            id: display(id),
            parent: parent.map(|p| (key(p), display(p))),
        });
        self.by_id
            .insert(k, index)
            .map(|earlier| IssueKind::DuplicateId {
                id: display(id).into(),
                first_line: self.nodes[earlier as usize].line,
            })
    }

    /// Missing parents and cycles, in line order.
    pub(crate) fn finish(self) -> Vec<LineIssue> {
        let mut issues = Vec::new();
        let parent_of = |i: usize| -> Option<usize> {
            self.nodes[i]
                .parent
                .as_ref()
                .and_then(|(k, _)| self.by_id.get(k).map(|&j| j as usize))
        };
        for n in &self.nodes {
            if let Some((k, shown)) = &n.parent
                && !self.by_id.contains_key(k)
            {
                issues.push(LineIssue {
                    line: n.line,
                    kind: IssueKind::MissingParent {
                        id: n.id.to_string(),
                        parent_id: shown.to_string(),
                    },
                });
            }
        }
        // Iterative walk with stamps: O(nodes), no recursion.
        const UNSEEN: u32 = u32::MAX;
        const DONE: u32 = u32::MAX - 1;
        let mut stamp = vec![UNSEEN; self.nodes.len()];
        let mut path = Vec::new();
        for start in 0..self.nodes.len() {
            if stamp[start] != UNSEEN {
                continue;
            }
            path.clear();
            let mut at = Some(start);
            while let Some(i) = at {
                if stamp[i] == start as u32 {
                    // Back on this walk: the path from `i` on is a cycle.
                    let from = path.iter().position(|&p| p == i).unwrap_or(0);
                    let members: Vec<u64> = path[from..]
                        .iter()
                        .map(|&p: &usize| self.nodes[p].line)
                        .collect();
                    let first = path[from..]
                        .iter()
                        .copied()
                        .min_by_key(|&p| self.nodes[p].line)
                        .unwrap_or(i);
                    issues.push(LineIssue {
                        line: self.nodes[first].line,
                        kind: IssueKind::Cycle {
                            id: self.nodes[first].id.to_string(),
                            members,
                        },
                    });
                    break;
                }
                if stamp[i] != UNSEEN {
                    break;
                }
                stamp[i] = start as u32;
                path.push(i);
                at = parent_of(i);
            }
            for &p in &path {
                stamp[p] = DONE;
            }
        }
        issues.sort_by_key(|i| i.line);
        issues
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_key_is_its_frame_tag() {
        // `take_verbatim` passes the frame's tag as the key: they must agree.
        for id in ["a", "m1", "", "é\u{0}x", &"y".repeat(300)] {
            assert_eq!(key(id), crate::format::id_tag(id).0);
            assert_eq!(&key(id)[..], &blake3::hash(id.as_bytes()).as_bytes()[..16]);
        }
    }

    #[test]
    fn duplicates_missing_parents_and_cycles_are_found() {
        let mut t = TreeCheck::default();
        assert!(t.add(1, "a", None).is_none());
        assert!(t.add_keyed(2, "b", key("b"), Some("a")).is_none());
        assert!(matches!(
            t.add(3, "a", Some("b")),
            Some(IssueKind::DuplicateId { first_line: 1, .. })
        ));
        assert!(t.add(4, "c", Some("ghost")).is_none());
        let issues = t.finish();
        assert!(
            issues
                .iter()
                .any(|i| matches!(i.kind, IssueKind::MissingParent { .. }) && i.line == 4)
        );
        assert!(
            issues
                .iter()
                .any(|i| matches!(i.kind, IssueKind::Cycle { .. }))
        );
    }
}
