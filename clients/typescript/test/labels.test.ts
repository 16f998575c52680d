// Labels and names: the reference's labels.test.ts scenarios (legacy-pi-behaviour.md §4),
// and session names as 0.73.1 has them (§3.1: latest session_info in file order wins,
// an empty name clears).

import assert from "node:assert/strict";
import { it } from "node:test";

import { assistant, bothImplementations, rejectsUnknownEntry, user } from "./harness.js";

type Node = { entry: { id: string }; children: Node[]; label?: string; labelTimestamp?: string };
function findNode(nodes: Node[], id: string): Node | undefined {
  const stack = [...nodes];
  while (stack.length) {
    const n = stack.pop()!;
    if (n.entry.id === id) return n;
    stack.push(...n.children);
  }
  return undefined;
}

bothImplementations("labels", (get) => {
  it("sets and reads a label; the label entry is a tree entry and becomes the leaf", async () => {
    const sm = await get().create("/w");
    const a = await sm.appendMessage(user("1"));
    const b = await sm.appendMessage(assistant("2"));
    const l = await sm.appendLabelChange(a, "start");
    assert.equal(await sm.readLabel(a), "start");
    assert.equal(sm.getLeafId(), l);
    const entry = await sm.readEntry(l);
    assert.equal(entry.type, "label");
    assert.equal(entry.parentId, b);
    assert.equal(entry.targetId, a);
    assert.equal(entry.label, "start");
    await sm.close();
  });

  it("undefined clears a label; the last label wins", async () => {
    const sm = await get().create("/w");
    const a = await sm.appendMessage(user("1"));
    await sm.appendLabelChange(a, "one");
    await sm.appendLabelChange(a, "two");
    assert.equal(await sm.readLabel(a), "two");
    const clear = await sm.appendLabelChange(a, undefined);
    assert.equal(await sm.readLabel(a), undefined);
    assert.equal((await sm.readEntry(clear)).label, undefined);
    await sm.appendLabelChange(a, "three");
    await sm.appendLabelChange(a, "");
    assert.equal(await sm.readLabel(a), undefined, "an empty label clears too");
    await sm.close();
  });

  it("tree nodes carry the label and the timestamp of the entry that set it", async () => {
    const sm = await get().create("/w");
    const a = await sm.appendMessage(user("1"));
    const b = await sm.appendMessage(assistant("2"));
    const l = await sm.appendLabelChange(b, "answer");
    const tree = await sm.readTree();
    const node = findNode(tree, b)!;
    assert.equal(node.label, "answer");
    assert.equal(node.labelTimestamp, (await sm.readEntry(l)).timestamp);
    assert.equal(findNode(tree, a)!.label, undefined);
    await sm.close();
  });

  it("labels never enter the context", async () => {
    const sm = await get().create("/w");
    const a = await sm.appendMessage(user("1"));
    await sm.appendLabelChange(a, "x");
    await sm.appendMessage(assistant("2"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [user("1"), assistant("2")]);
    await sm.close();
  });

  it("labelling an unknown entry is refused", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    await sm.appendMessage(user("1"));
    await rejectsUnknownEntry(impl, sm.appendLabelChange("non-existent", "x"), "non-existent");
    await sm.close();
  });

  it("createBranchedSession keeps the labels on the path (re-created, with their timestamps) and drops the others", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    const a = await sm.appendMessage(user("1"));
    const b = await sm.appendMessage(assistant("2"));
    await sm.branchTo(a);
    const c = await sm.appendMessage(assistant("2'"));
    const la = await sm.appendLabelChange(a, "first");
    const lb = await sm.appendLabelChange(b, "second");
    const lc = await sm.appendLabelChange(c, "other branch");
    const stamps = new Map([
      [a, (await sm.readEntry(la)).timestamp],
      [b, (await sm.readEntry(lb)).timestamp],
    ]);
    assert.ok(lc);
    await sm.createBranchedSession(b);
    const entries = await sm.readEntries();
    assert.deepEqual(entries.slice(0, 2).map((e) => e.id), [a, b]);
    const labels = entries.slice(2);
    assert.deepEqual(
      labels.map((e) => [e.type, e.targetId, e.label, e.timestamp]),
      [
        ["label", a, "first", stamps.get(a)],
        ["label", b, "second", stamps.get(b)],
      ],
    );
    assert.equal(labels[0].parentId, b);
    assert.equal(labels[1].parentId, labels[0].id);
    assert.equal(sm.getLeafId(), labels[1].id);
    assert.equal(await sm.readLabel(a), "first");
    assert.equal(await sm.readLabel(b), "second");
    await sm.close();
  });
});

bothImplementations("names", (get) => {
  it("appendSessionInfo trims; the latest in file order wins, even off the current path; empty clears", async () => {
    const sm = await get().create("/w");
    assert.equal(sm.getSessionName(), undefined);
    const a = await sm.appendMessage(user("1"));
    await sm.appendMessage(assistant("2"));
    const n = await sm.appendSessionInfo("  refactor the parser  ");
    assert.equal(sm.getSessionName(), "refactor the parser");
    assert.equal((await sm.readEntry(n)).name, "refactor the parser");
    await sm.branchTo(a);
    assert.equal(sm.getSessionName(), "refactor the parser", "the name is the session's, not the path's");
    await sm.appendSessionInfo("second");
    assert.equal(sm.getSessionName(), "second");
    await sm.appendSessionInfo("   ");
    assert.equal(sm.getSessionName(), undefined);
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [user("1")]);
    await sm.close();
  });
});
