// The owner's flat tree (pre-order, children by position) as the reference's nested
// `getTree()` value, built in one loop: no recursion on the session's depth.

import type { Entry, Tree } from "./wire.js";

/** One node of the tree, as the reference's `SessionTreeNode`. */
export interface SessionTreeNode {
  entry: Entry;
  children: SessionTreeNode[];
  label: string | undefined;
  labelTimestamp: string | undefined;
}

export function nestTree(tree: Tree): SessionTreeNode[] {
  const nodes: SessionTreeNode[] = tree.nodes.map((n) => ({
    entry: n.entry,
    children: [],
    label: n.label ?? undefined,
    labelTimestamp: n.labelTimestamp ?? undefined,
  }));
  tree.nodes.forEach((n, i) => {
    const node = nodes[i]!;
    for (const c of n.children) {
      const child = nodes[c];
      if (child) node.children.push(child);
    }
  });
  return tree.roots.map((r) => nodes[r]).filter((n): n is SessionTreeNode => n !== undefined);
}
