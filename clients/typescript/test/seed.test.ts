// The seed's API beyond the reference's: bookkeeping appends (service tier, child usage,
// lifecycle state, agent status, git state; the child usage folded into its target's
// usage, docs/context.md D4), caller-built entries, readBranches,
// setSessionFile, list callbacks, and export back to JSONL that the reference opens.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { SessionManager, type SessionInfo } from "../src/index.js";
import { assistant, stopOwners, user } from "./harness.js";

const usage = {
  input: 10,
  output: 5,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 15,
  cost: { input: 0.001, output: 0.002, cacheRead: 0, cacheWrite: 0, total: 0.003 },
};

describe("the seed's API beyond the reference", () => {
  let scratch = "";
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "bcs-ts-seed-"));
    SessionManager.configure({ home: join(scratch, "home") });
  });
  after(async () => {
    await stopOwners();
    SessionManager.configure({});
    await rm(scratch, { recursive: true, force: true });
  });

  it("bookkeeping entries join the tree and stay out of the context; the service tier is reported", async () => {
    const sm = await SessionManager.create("/w");
    const q = await sm.appendMessage(user("q"));
    const r = await sm.appendMessage(assistant("r"));
    await sm.appendServiceTierChange("flex");
    await sm.appendChildUsageAttribution(r, usage, usage);
    await sm.appendSessionState("archived");
    await sm.appendAgentStatus({ summary: "running tests", taskState: "working" });
    await sm.appendGitState({ branch: "main", head: "4f2a9c1" });
    const custom = await sm.appendEntry({ type: "my_future_type", note: "kept verbatim" });
    const entries = await sm.readEntries();
    assert.deepEqual(
      entries.map((e) => e.parentId),
      [null, ...entries.slice(0, -1).map((e) => e.id)],
      "one chain",
    );
    assert.equal(entries.length, 8);
    const future = await sm.readEntry(custom);
    assert.equal(future.type, "my_future_type");
    assert.equal(future.note, "kept verbatim");
    const ctx = await sm.buildSessionContext();
    // docs/context.md D4: the target assistant message carries the latest aggregate usage.
    assert.deepEqual(ctx.messages, [user("q"), { ...assistant("r"), usage }]);
    assert.equal(ctx.serviceTier, "flex");
    assert.ok(q);
    await sm.close();
  });

  it("readBranches answers several paths through one capture", async () => {
    const sm = await SessionManager.create("/w");
    const a = await sm.appendMessage(user("a"));
    const b = await sm.appendMessage(assistant("b"));
    await sm.branchTo(a);
    const c = await sm.appendMessage(assistant("c"));
    const [one, two] = await sm.readBranches([b, c]);
    assert.deepEqual(one!.map((e) => e.id), [a, b]);
    assert.deepEqual(two!.map((e) => e.id), [a, c]);
    assert.deepEqual(one, await sm.readBranch(b));
    await sm.close();
  });

  it("setSessionFile moves the handle to another journal", async () => {
    const first = await SessionManager.create("/w");
    await first.appendMessage(user("first"));
    const firstPath = first.getSessionFile()!;
    const firstId = first.getSessionId();
    await first.close();
    const sm = await SessionManager.create("/w");
    await sm.setSessionFile(firstPath);
    assert.equal(sm.getSessionId(), firstId);
    assert.equal(sm.getSessionFile(), firstPath);
    assert.deepEqual((await sm.buildSessionContext()).messages, [user("first")]);
    await sm.close();
  });

  it("list reports each session to onSession in the listing's order", async () => {
    const seen: SessionInfo[] = [];
    const progress: number[] = [];
    const listed = await SessionManager.list("/w", undefined, {
      onSession: (s) => seen.push(s),
      onProgress: (loaded) => progress.push(loaded),
    });
    assert.ok(listed.length >= 3);
    assert.deepEqual(seen, listed);
    assert.equal(progress.at(-1), listed.length);
  });

  it("exportLegacy writes v3 JSONL whose context the reference rebuilds as the owner does", async () => {
    const sm = await SessionManager.create("/w");
    await sm.appendModelChange("openai", "gpt");
    const q = await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1"));
    await sm.appendLabelChange(q, "start");
    await sm.appendCompaction("S", q, 42);
    await sm.appendMessage(user("q2"));
    const ours = await sm.buildSessionContext();
    const id = sm.getSessionId();
    await sm.close();
    const out = join(scratch, "exported.jsonl");
    const exported = await SessionManager.exportLegacy(id, out);
    assert.equal(exported.path, out);
    assert.equal(exported.records, 7);
    process.env.PI_CODING_AGENT_DIR = join(scratch, "pi-agent");
    const entry = import.meta.resolve("@mariozechner/pi-coding-agent");
    const { SessionManager: Ref } = (await import(new URL("./core/session-manager.js", entry).href)) as { SessionManager: any };
    const theirs = Ref.open(out);
    assert.deepEqual(ours, JSON.parse(JSON.stringify(theirs.buildSessionContext())));
    assert.equal(theirs.getLabel(q), "start");
  });
});
