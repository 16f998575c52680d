// Tree traversal: the reference's tree-traversal.test.ts scenarios (legacy-pi-behaviour.md §4),
// plus the extra roots of branchTo(null) and branchWithSummary(null) (§3.4, B24).

import assert from "node:assert/strict";
import { it } from "node:test";

import { assistant, bothImplementations, rejectsUnknownEntry, user } from "./harness.js";

type Node = { entry: { id: string }; children: Node[] };
/** `[id, [children…]]` of a tree (test data is small: recursion is fine here). */
const shape = (nodes: Node[]): unknown[] => nodes.map((n) => [n.entry.id, shape(n.children)]);

bothImplementations("tree traversal", (get) => {
  it("appends chain each entry to the previous one, and the leaf follows", async () => {
    const sm = await get().create("/w");
    assert.equal(sm.getLeafId(), null);
    const a = await sm.appendMessage(user("one"));
    assert.equal(sm.getLeafId(), a);
    const b = await sm.appendMessage(assistant("two"));
    assert.equal(sm.getLeafId(), b);
    const c = await sm.appendMessage(user("three"));
    assert.equal(sm.getLeafId(), c);
    const entries = await sm.readEntries();
    assert.deepEqual(
      entries.map((e) => [e.id, e.parentId]),
      [
        [a, null],
        [b, a],
        [c, b],
      ],
    );
    await sm.close();
  });

  it("thinking, model, compaction and custom entries join the tree", async () => {
    const sm = await get().create("/w");
    const m = await sm.appendMessage(user("hi"));
    const t = await sm.appendThinkingLevelChange("high");
    const mc = await sm.appendModelChange("openai", "gpt");
    const comp = await sm.appendCompaction("summary", m, 1000);
    const cu = await sm.appendCustomEntry("ext", { k: 1 });
    const entries = await sm.readEntries();
    assert.deepEqual(
      entries.map((e) => [e.type, e.id, e.parentId]),
      [
        ["message", m, null],
        ["thinking_level_change", t, m],
        ["model_change", mc, t],
        ["compaction", comp, mc],
        ["custom", cu, comp],
      ],
    );
    const compaction = entries[3];
    assert.equal(compaction.summary, "summary");
    assert.equal(compaction.firstKeptEntryId, m);
    assert.equal(compaction.tokensBefore, 1000);
    assert.deepEqual(entries[4].data, { k: 1 });
    await sm.close();
  });

  it("readBranch: empty, one entry, the whole path, and from a given id", async () => {
    const sm = await get().create("/w");
    assert.deepEqual(await sm.readBranch(), []);
    const a = await sm.appendMessage(user("1"));
    assert.deepEqual((await sm.readBranch()).map((e) => e.id), [a]);
    const b = await sm.appendMessage(assistant("2"));
    const c = await sm.appendMessage(user("3"));
    assert.deepEqual((await sm.readBranch()).map((e) => e.id), [a, b, c]);
    assert.deepEqual((await sm.readBranch(b)).map((e) => e.id), [a, b]);
    await sm.close();
  });

  it("readTree: empty, a linear chain nests, siblings, three branches and deep branching", async () => {
    const sm = await get().create("/w");
    assert.deepEqual(await sm.readTree(), []);
    const a = await sm.appendMessage(user("1"));
    const b = await sm.appendMessage(assistant("2"));
    const c = await sm.appendMessage(user("3"));
    assert.deepEqual(shape(await sm.readTree()), [[a, [[b, [[c, []]]]]]]);
    // A second child of b: two siblings under b, in append (= timestamp) order.
    await sm.branchTo(b);
    const d = await sm.appendMessage(user("3'"));
    assert.deepEqual(shape(await sm.readTree()), [[a, [[b, [[c, []], [d, []]]]]]]);
    // A third branch at b, and a deeper branch under d.
    await sm.branchTo(b);
    const e = await sm.appendMessage(user("3''"));
    await sm.branchTo(d);
    const f = await sm.appendMessage(assistant("4"));
    await sm.branchTo(d);
    const g = await sm.appendMessage(assistant("4'"));
    const h = await sm.appendMessage(user("5"));
    assert.deepEqual(shape(await sm.readTree()), [
      [
        a,
        [
          [
            b,
            [
              [c, []],
              [d, [[f, []], [g, [[h, []]]]]],
              [e, []],
            ],
          ],
        ],
      ],
    ]);
    await sm.close();
  });

  it("branchTo moves the leaf, the next append is a child of the branch point, an unknown id is refused", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    const a = await sm.appendMessage(user("1"));
    const b = await sm.appendMessage(assistant("2"));
    await sm.appendMessage(user("3"));
    await sm.branchTo(a);
    assert.equal(sm.getLeafId(), a);
    const d = await sm.appendMessage(user("alt"));
    assert.equal((await sm.readEntry(d)).parentId, a);
    assert.deepEqual((await sm.readBranch()).map((e) => e.id), [a, d]);
    await rejectsUnknownEntry(impl, sm.branchTo("nonexistent"), "nonexistent");
    assert.equal(sm.getLeafId(), d, "a refused branch leaves the leaf");
    assert.ok(b);
    await sm.close();
  });

  it("branchWithSummary: the summary is a child of the branch point and becomes the leaf", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    const a = await sm.appendMessage(user("1"));
    await sm.appendMessage(assistant("2"));
    const s = await sm.branchWithSummary(a, "tried B; abandoned", { why: "x" }, true);
    assert.equal(sm.getLeafId(), s);
    const entry = await sm.readEntry(s);
    assert.equal(entry.type, "branch_summary");
    assert.equal(entry.parentId, a);
    assert.equal(entry.fromId, a);
    assert.equal(entry.summary, "tried B; abandoned");
    assert.deepEqual(entry.details, { why: "x" });
    assert.equal(entry.fromHook, true);
    await rejectsUnknownEntry(impl, sm.branchWithSummary("missing", "s"), "missing");
    await sm.close();
  });

  it("branchWithSummary(null) and branchTo(null) start extra roots", async () => {
    const sm = await get().create("/w");
    const a = await sm.appendMessage(user("1"));
    const s = await sm.branchWithSummary(null, "from the top");
    const summary = await sm.readEntry(s);
    assert.equal(summary.parentId, null);
    assert.equal(summary.fromId, "root");
    await sm.branchTo(null);
    assert.equal(sm.getLeafId(), null);
    assert.deepEqual(await sm.readBranch(), []);
    const r = await sm.appendMessage(user("again"));
    assert.equal((await sm.readEntry(r)).parentId, null);
    assert.deepEqual(shape(await sm.readTree()), [
      [a, []],
      [s, []],
      [r, []],
    ]);
    await sm.close();
  });

  it("readLeafEntry and readEntry", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    assert.equal(await sm.readLeafEntry(), undefined);
    const a = await sm.appendMessage(user("1"));
    const b = await sm.appendMessage(assistant("2"));
    assert.equal((await sm.readLeafEntry()).id, b);
    const entry = await sm.readEntry(a);
    assert.equal(entry.type, "message");
    assert.deepEqual(entry.message, user("1"));
    // An unknown id: the reference's getEntry answers undefined; the seed's readEntry is a
    // complete read that answers the entry or a typed error (EntryNotFoundError).
    if (impl.name === "reference") assert.equal(await sm.readEntry("nope"), undefined);
    else await rejectsUnknownEntry(impl, sm.readEntry("nope"), "nope");
    await sm.close();
  });

  it("buildSessionContext follows the leaf across branches", async () => {
    const sm = await get().create("/w");
    const a = await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1"));
    await sm.appendMessage(user("q2"));
    await sm.branchTo(a);
    await sm.appendMessage(assistant("other"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [user("q1"), assistant("other")]);
    assert.equal(ctx.thinkingLevel, "off");
    assert.deepEqual(ctx.model, { provider: "anthropic", modelId: "claude" });
    await sm.close();
  });
});
