// Where the seed's contract differs from the reference, each side's documented behaviour:
//  - legacy files: the reference opens plain JSONL in place (migrating it, §1.7–1.8); the
//    seed refuses to open one (`LegacyJsonlError`) and imports it explicitly, after which
//    context and tree are the reference's (the V vectors of §2.4 through files);
//  - bounded reads: the seed's reads answer completely or raise `LimitError`; the
//    reference's are unbounded (B16, B27);
//  - ownership: a session is written by one owner; a second process opening it gets
//    `OwnedError` naming the holder; the reference has no guard (B11);
//  - durability at creation: the seed's session exists when `create` resolves; the
//    reference's file appears with the first assistant message (B21).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { it } from "node:test";

import { LegacyJsonlError, LimitError, NotAJournalError, OwnedError, SessionManager, connectOwner } from "../src/index.js";
import { assistant, bothImplementations, user } from "./harness.js";

const T = "2025-01-01T00:00:00.000Z";
const header = (id: string) => ({ type: "session", version: 3, id, timestamp: T, cwd: "/legacy" });
const msg = (id: string, parentId: string | null, message: object) => ({ type: "message", id, parentId, timestamp: T, message });
const U = (text: string) => ({ role: "user", content: text, timestamp: 1_735_689_600_000 });
const A = (text: string) => ({ ...assistant(text), provider: "anthropic", model: "claude" });

/** §2.4 vectors whose leaf is the file's last entry, as files. */
const vectors: Record<string, object[]> = {
  V1: [msg("1", null, U("hi")), msg("2", "1", A("yo"))],
  V5: [
    msg("1", null, U("q1")),
    msg("2", "1", A("r1")),
    msg("3", "2", U("q2")),
    msg("4", "3", A("r2")),
    { type: "compaction", id: "5", parentId: "4", timestamp: T, summary: "S", firstKeptEntryId: "3", tokensBefore: 100 },
    msg("6", "5", U("q3")),
  ],
  V9: [
    msg("1", null, U("q")),
    msg("2", "1", A("r")),
    { type: "branch_summary", id: "3", parentId: "2", timestamp: T, fromId: "2", summary: "" },
    { type: "branch_summary", id: "4", parentId: "3", timestamp: T, fromId: "9", summary: "went elsewhere" },
    msg("5", "4", U("q2")),
  ],
  V13: [msg("1", null, U("q")), msg("2", "MISSING", A("r")), msg("3", "2", U("q2"))],
  V19: [
    msg("1", null, U("q1")),
    { type: "compaction", id: "2", parentId: "1", timestamp: T, summary: "S", firstKeptEntryId: "3", tokensBefore: 7 },
    msg("3", "2", U("q2")),
  ],
  V20: [
    msg("1", null, U("q1")),
    { type: "compaction", id: "2", parentId: "1", timestamp: "garbage", summary: "S", firstKeptEntryId: "1", tokensBefore: 7 },
  ],
};

type Node = { entry: { id: string }; children: Node[] };
const shape = (nodes: Node[]): unknown[] => nodes.map((n) => [n.entry.id, shape(n.children)]);

bothImplementations("legacy files", (get) => {
  for (const [name, entries] of Object.entries(vectors)) {
    it(`${name}: the context and tree of a v3 JSONL file`, async () => {
      const impl = get();
      const dir = join(impl.scratch, "legacy");
      await mkdir(dir, { recursive: true });
      const path = join(dir, `${name}.jsonl`);
      const lines = [header(`legacy-${name}`), ...entries].map((e) => JSON.stringify(e)).join("\n") + "\n";
      await writeFile(path, lines);
      const sm = await impl.openLegacy(path);
      const ctx = JSON.parse(JSON.stringify(await sm.buildSessionContext())); // NaN → null as JSON has it
      const expected: Record<string, unknown[]> = {
        V1: [U("hi"), A("yo")],
        V5: [{ role: "compactionSummary", summary: "S", tokensBefore: 100, timestamp: 1_735_689_600_000 }, U("q2"), A("r2"), U("q3")],
        V9: [U("q"), A("r"), { role: "branchSummary", summary: "went elsewhere", fromId: "9", timestamp: 1_735_689_600_000 }, U("q2")],
        V13: [A("r"), U("q2")],
        V19: [{ role: "compactionSummary", summary: "S", tokensBefore: 7, timestamp: 1_735_689_600_000 }, U("q2")],
        V20: [{ role: "compactionSummary", summary: "S", tokensBefore: 7, timestamp: null }, U("q1")],
      };
      assert.deepEqual(ctx.messages, expected[name]);
      // The tree keeps the file's ids: an orphan is a root of its own (V13).
      const tree = shape(await sm.readTree());
      if (name === "V13") assert.deepEqual(tree, [["1", []], ["2", [["3", []]]]]);
      else assert.equal(tree.length, 1);
      assert.equal(await readFile(path, "utf8"), lines, "a v3 file is never rewritten");
      await sm.close();
    });
  }

  it("a v1 file (file-operations and migration scenarios): the reference migrates it by rewriting it; the seed imports it and leaves it alone", async () => {
    const impl = get();
    const path = join(impl.scratch, "v1.jsonl");
    const v1 = [
      { type: "session", id: "sess-v1", timestamp: T, cwd: "/tmp/x" },
      { type: "message", timestamp: T, message: U("u1") },
      { type: "message", timestamp: T, message: A("a1") },
      { type: "thinking_level_change", timestamp: T, thinkingLevel: "high" },
      { type: "compaction", timestamp: T, summary: "S", firstKeptEntryIndex: 2, tokensBefore: 10 },
      { type: "message", timestamp: T, message: U("u2") },
    ];
    const text = v1.map((e) => JSON.stringify(e)).join("\n") + "\n";
    await writeFile(path, text);
    const sm = await impl.openLegacy(path);
    const entries = await sm.readEntries();
    assert.equal(entries.length, 5);
    assert.ok(entries.every((e) => typeof e.id === "string" && e.id.length > 0), "ids assigned");
    assert.deepEqual(entries.map((e) => e.parentId), [null, ...entries.slice(0, -1).map((e) => e.id)], "a chain");
    assert.equal(entries[3].firstKeptEntryId, entries[1].id, "firstKeptEntryIndex 2 (header = 0) names the assistant");
    const ctx = JSON.parse(JSON.stringify(await sm.buildSessionContext()));
    assert.deepEqual(ctx.messages, [{ role: "compactionSummary", summary: "S", tokensBefore: 10, timestamp: 1_735_689_600_000 }, A("a1"), U("u2")]);
    assert.equal(ctx.thinkingLevel, "high");
    const after = await readFile(path, "utf8");
    if (impl.name === "reference") assert.notEqual(after, text, "§1.7: migrated in place, the whole file rewritten");
    else assert.equal(after, text, "the source of an import is never modified");
    await sm.close();
  });

  it("an empty or garbage file: the reference replaces it with a fresh header (B9); the seed refuses it and keeps it", async () => {
    const impl = get();
    for (const [name, content] of [
      ["empty.jsonl", ""],
      ["garbage.jsonl", "not json\nat all\n"],
    ] as const) {
      const path = join(impl.scratch, name);
      await writeFile(path, content);
      if (impl.name === "reference") {
        const sm = await impl.open(path);
        const lines = (await readFile(path, "utf8")).trim().split("\n");
        assert.equal(lines.length, 1);
        assert.equal(JSON.parse(lines[0]!).id, sm.getSessionId(), "destructive recovery: the content is gone");
      } else {
        // "not a session journal", naming the file (1012).
        await assert.rejects(
          impl.open(path),
          (e: unknown) => e instanceof NotAJournalError && e.code === 1012 && e.path === path && e.message.startsWith(path),
        );
        assert.equal(await readFile(path, "utf8"), content, "never modified");
      }
    }
  });

  it("opening a legacy file: the reference opens it in place; the seed refuses it and says to import it", async () => {
    const impl = get();
    const path = join(impl.scratch, "plain.jsonl");
    await writeFile(path, [header("plain"), ...vectors.V1!].map((e) => JSON.stringify(e)).join("\n") + "\n");
    if (impl.name === "reference") {
      const sm = await impl.open(path);
      assert.equal(sm.getSessionId(), "plain");
    } else {
      await assert.rejects(impl.open(path), (e: unknown) => e instanceof LegacyJsonlError && e.code === 1010 && /import/.test(e.message));
      const first = await SessionManager.importLegacy(path);
      assert.equal(first.alreadyImported, false);
      assert.equal((await SessionManager.importLegacy(path)).alreadyImported, true, "importing twice writes nothing");
    }
  });
});

bothImplementations("bounded reads, ownership and durability", (get) => {
  it("reads: the seed's answer completely or raise LimitError; the reference's are unbounded", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    for (let i = 0; i < 5; i++) await sm.appendMessage(user(`q${i}`));
    if (impl.name === "reference") {
      assert.equal((await sm.readEntries()).length, 5);
      await sm.close();
      return;
    }
    const s = sm as unknown as SessionManager;
    assert.equal((await s.readEntries({ maxSourceEntries: 5 })).length, 5);
    await assert.rejects(s.readEntries({ maxSourceEntries: 2 }), (e: unknown) => {
      assert.ok(e instanceof LimitError);
      assert.equal(e.code, 1005);
      assert.equal(e.limit, "sourceEntries");
      assert.equal(e.limitValue, 2);
      assert.ok(e.needed > 2);
      return true;
    });
    await assert.rejects(s.readBranch(undefined, { maxSourceEntries: 1 }), LimitError);
    await assert.rejects(s.buildSessionContext({ maxSourceBytes: 10 }), LimitError);
    assert.equal((await s.readBranch(undefined, { maxSourceEntries: 5 })).length, 5);
    await sm.close();
  });

  it("a second process opening the session: OwnedError naming the holder; the reference does not guard", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    await sm.appendMessage(user("q"));
    await sm.appendMessage(assistant("r"));
    const path = sm.getSessionFile()!;
    if (impl.name === "reference") {
      const other = await impl.open(path);
      await other.appendMessage(user("interleaved"));
      assert.ok(other.getSessionId() === sm.getSessionId(), "B11: two writers of one file");
      await sm.close();
      return;
    }
    // A private owner (another process) on the same store meets the socket owner's lock.
    const home = join(impl.scratch, "home");
    const { connection } = await connectOwner({ home, transport: "stdio" });
    try {
      await assert.rejects(connection.call("store/open", { path }), (e: unknown) => {
        assert.ok(e instanceof OwnedError);
        assert.equal(e.code, 1001);
        assert.equal(e.path, path);
        assert.equal(typeof e.holderPid, "number");
        assert.notEqual(e.holderPid, process.pid);
        return true;
      });
    } finally {
      connection.close();
    }
    await sm.close();
  });

  it("a created session exists at once in the seed; the reference's file waits for an assistant", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    await sm.appendMessage(user("q"));
    const path = sm.getSessionFile()!;
    assert.equal(existsSync(path), impl.name === "sdk");
    await sm.appendMessage(assistant("r"));
    assert.ok(existsSync(path));
    await sm.close();
  });
});
