// buildSessionContext and compactions: the reference's build-context.test.ts and
// compaction.test.ts scenarios (legacy-pi-behaviour.md §4), driven through the manager.
// Synthesized messages carry `Date.parse` of their entry's timestamp: each side's is read
// back from its own entry, so the comparison is exact.

import assert from "node:assert/strict";
import { it } from "node:test";

import { assistant, bothImplementations, rejectsUnknownEntry, user, type Manager } from "./harness.js";

async function compactionSummary(sm: Manager, id: string) {
  const e = await sm.readEntry(id);
  return { role: "compactionSummary", summary: e.summary, tokensBefore: e.tokensBefore, timestamp: Date.parse(e.timestamp) };
}

async function branchSummary(sm: Manager, id: string) {
  const e = await sm.readEntry(id);
  return { role: "branchSummary", summary: e.summary, fromId: e.fromId, timestamp: Date.parse(e.timestamp) };
}

bothImplementations("buildSessionContext", (get) => {
  // build-context.test.ts scenario 13 ("an unknown leafId falls back to the last entry")
  // exercises the pure function buildSessionContext(entries, leafId), which the seed's
  // SessionManager API does not expose: through the manager no unknown leaf can be set.
  // What both sides do instead: the unknown branch point is refused, the leaf stays, and
  // the context is the one at the last entry.
  it("scenario 13 through the manager: an unknown leaf is refused and the context stays at the last entry", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1"));
    const before = await sm.buildSessionContext();
    await rejectsUnknownEntry(impl, sm.branchTo("unknown-leaf"), "unknown-leaf");
    assert.deepEqual(await sm.buildSessionContext(), before);
    assert.equal(before.messages.length, 2);
    await sm.close();
  });

  it("an empty session: no messages, thinking off, no model", async () => {
    const sm = await get().create("/w");
    assert.deepEqual(await sm.buildSessionContext(), { messages: [], thinkingLevel: "off", model: null });
    await sm.close();
  });

  it("a message holding a lone surrogate (an emoji cut in half) is stored, read back with U+FFFD by the SDK (D6)", async () => {
    const sm = await get().create("/w");
    const cut = `cut ${"\u{1F680}".slice(0, 1)} here, kept \u{1F680}`;
    await sm.appendMessage(user(cut));
    const m = ((await sm.buildSessionContext()).messages as { content: string }[])[0]!;
    // The reference keeps the lone code unit; the owner reads it as a UTF-8 encoder
    // writes it. Equal once made well-formed.
    const wellFormed = m.content.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
    assert.equal(wellFormed, "cut \uFFFD here, kept \u{1F680}");
    await sm.close();
  });

  it("one user message; a four-message chain keeps its roles in order", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q1"));
    assert.deepEqual((await sm.buildSessionContext()).messages, [user("q1")]);
    await sm.appendMessage(assistant("r1"));
    await sm.appendMessage(user("q2"));
    await sm.appendMessage(assistant("r2"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(
      ctx.messages.map((m: { role: string }) => m.role),
      ["user", "assistant", "user", "assistant"],
    );
    await sm.close();
  });

  it("thinking level and model: the last setting on the path wins, an assistant message sets the model", async () => {
    const sm = await get().create("/w");
    await sm.appendModelChange("openai", "gpt");
    await sm.appendThinkingLevelChange("high");
    await sm.appendMessage(user("q"));
    let ctx = await sm.buildSessionContext();
    assert.equal(ctx.thinkingLevel, "high");
    assert.deepEqual(ctx.model, { provider: "openai", modelId: "gpt" });
    assert.equal(ctx.messages.length, 1);
    // V3: an assistant after a model_change overrides it …
    await sm.appendMessage(assistant("r", 1_735_689_600_000, "anthropic", "claude"));
    ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.model, { provider: "anthropic", modelId: "claude" });
    // … and V2: a model_change after an assistant overrides that.
    await sm.appendModelChange("openai", "gpt-5");
    ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.model, { provider: "openai", modelId: "gpt-5" });
    assert.equal(ctx.messages.length, 2);
    await sm.close();
  });

  it("a compaction: its summary first, then the kept window, then what follows", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1"));
    const kept = await sm.appendMessage(user("q2"));
    await sm.appendMessage(assistant("r2"));
    const c = await sm.appendCompaction("S", kept, 100);
    await sm.appendMessage(user("q3"));
    await sm.appendMessage(assistant("r3"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [await compactionSummary(sm, c), user("q2"), assistant("r2"), user("q3"), assistant("r3")]);
    await sm.close();
  });

  it("a compaction keeping from the first message keeps everything before it", async () => {
    const sm = await get().create("/w");
    const first = await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1"));
    await sm.appendMessage(user("q2"));
    const c = await sm.appendCompaction("S", first, 50);
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [await compactionSummary(sm, c), user("q1"), assistant("r1"), user("q2")]);
    await sm.close();
  });

  it("several compactions: the latest on the path wins, earlier summaries in its window vanish (V8)", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q1"));
    const r1 = await sm.appendMessage(assistant("r1"));
    await sm.appendCompaction("First", r1, 10);
    await sm.appendMessage(user("q2"));
    await sm.appendMessage(assistant("r2"));
    const c2 = await sm.appendCompaction("Second", r1, 20);
    await sm.appendMessage(user("q3"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [await compactionSummary(sm, c2), assistant("r1"), user("q2"), assistant("r2"), user("q3")]);
    assert.equal(ctx.messages[0].summary, "Second");
    await sm.close();
  });

  it("a compaction on another branch is ignored (V14); an unknown kept id keeps nothing (V6)", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q1"));
    const r1 = await sm.appendMessage(assistant("r1"));
    await sm.appendCompaction("S", r1, 10);
    await sm.branchTo(r1);
    await sm.appendMessage(user("alt"));
    assert.deepEqual((await sm.buildSessionContext()).messages, [user("q1"), assistant("r1"), user("alt")]);
    const c = await sm.appendCompaction("T", "zzz", 10);
    await sm.appendMessage(user("q2"));
    assert.deepEqual((await sm.buildSessionContext()).messages, [await compactionSummary(sm, c), user("q2")]);
    await sm.close();
  });

  it("settings come from the whole path, before the compaction too (V16)", async () => {
    const sm = await get().create("/w");
    await sm.appendThinkingLevelChange("low");
    await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1", 1_735_689_600_000, "p1", "m1"));
    const q2 = await sm.appendMessage(user("q2"));
    const c = await sm.appendCompaction("S", q2, 5);
    await sm.appendMessage(user("q3"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [await compactionSummary(sm, c), user("q2"), user("q3")]);
    assert.equal(ctx.thinkingLevel, "low");
    assert.deepEqual(ctx.model, { provider: "p1", modelId: "m1" });
    await sm.close();
  });

  it("branch summaries are emitted in position; an empty one is skipped (V9)", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q1"));
    const r1 = await sm.appendMessage(assistant("r1"));
    await sm.branchWithSummary(r1, "");
    const s = await sm.branchWithSummary(sm.getLeafId(), "went elsewhere");
    await sm.appendMessage(user("q2"));
    const ctx = await sm.buildSessionContext();
    assert.deepEqual(ctx.messages, [user("q1"), assistant("r1"), await branchSummary(sm, s), user("q2")]);
    await sm.close();
  });

  it("custom messages enter as role custom; custom, label and session_info entries do not (V10)", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q"));
    const cm1 = await sm.appendCustomMessageEntry("ext", "injected", false);
    const cm2 = await sm.appendCustomMessageEntry("ext", [{ type: "text", text: "t" }], true, { k: 1 });
    await sm.appendCustomEntry("state", { n: 1 });
    await sm.appendLabelChange(cm1, "l");
    await sm.appendSessionInfo("name");
    await sm.appendMessage(assistant("a"));
    const ctx = await sm.buildSessionContext();
    const ts1 = Date.parse((await sm.readEntry(cm1)).timestamp);
    const ts2 = Date.parse((await sm.readEntry(cm2)).timestamp);
    const strip = (m: object) => JSON.parse(JSON.stringify(m)); // undefined `details` as the wire has it
    assert.deepEqual(strip(ctx.messages), [
      user("q"),
      { role: "custom", customType: "ext", content: "injected", display: false, timestamp: ts1 },
      { role: "custom", customType: "ext", content: [{ type: "text", text: "t" }], display: true, details: { k: 1 }, timestamp: ts2 },
      assistant("a"),
    ]);
    await sm.close();
  });

  it("a complex tree: the main path applies its compaction, the side path ends with its branch summary", async () => {
    const sm = await get().create("/w");
    await sm.appendMessage(user("q1"));
    const r1 = await sm.appendMessage(assistant("r1"));
    const q2 = await sm.appendMessage(user("q2"));
    await sm.appendMessage(assistant("r2"));
    const c = await sm.appendCompaction("main summary", q2, 99);
    await sm.appendMessage(user("q3"));
    const mainLeaf = await sm.appendMessage(assistant("r3"));
    const s = await sm.branchWithSummary(r1, "side trip");
    await sm.appendMessage(user("side q"));
    const side = await sm.buildSessionContext();
    assert.deepEqual(side.messages, [user("q1"), assistant("r1"), await branchSummary(sm, s), user("side q")]);
    await sm.branchTo(mainLeaf);
    const main = await sm.buildSessionContext();
    assert.deepEqual(main.messages, [await compactionSummary(sm, c), user("q2"), assistant("r2"), user("q3"), assistant("r3")]);
    await sm.close();
  });

  it("a null leaf gives the empty context even when the entries set things (V11)", async () => {
    const sm = await get().create("/w");
    await sm.appendThinkingLevelChange("high");
    await sm.appendMessage(user("q"));
    await sm.branchTo(null);
    assert.deepEqual(await sm.buildSessionContext(), { messages: [], thinkingLevel: "off", model: null });
    await sm.close();
  });
});
