// The README's migration path: sessions the reference wrote under its agent directory
// (`~/.pi/agent/sessions/<cwd>/…`), imported with importLegacyTree, read back through the
// package exactly as the reference reads the originals: context, tree, labels, listing.

import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { SessionManager } from "../src/index.js";
import { assistant, stopOwners, user } from "./harness.js";

type Node = { entry: { id?: unknown }; children: Node[]; label?: string; labelTimestamp?: string };
/** The tree as comparable data: ids, labels and label times (recursion: small test data). */
const tree = (nodes: Node[]): unknown[] => nodes.map((n) => [n.entry.id, n.label ?? null, n.labelTimestamp ?? null, tree(n.children)]);

describe("importing a reference agent directory", () => {
  let scratch = "";
  let Ref: any;
  const written: any[] = [];
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "bcs-ts-import-"));
    process.env.PI_CODING_AGENT_DIR = join(scratch, "pi-agent");
    const entry = import.meta.resolve("@mariozechner/pi-coding-agent");
    ({ SessionManager: Ref } = await import(new URL("./core/session-manager.js", entry).href));
    // Three sessions in two cwds, written by the reference itself.
    for (const cwd of ["/proj/a", "/proj/b", "/proj/a"]) {
      const sm = Ref.create(cwd);
      sm.appendModelChange("anthropic", "claude");
      sm.appendThinkingLevelChange("medium");
      const q1 = sm.appendMessage(user(`q1 ${written.length}`, 1_000 + written.length));
      const r1 = sm.appendMessage(assistant("r1", 2_000 + written.length));
      sm.appendLabelChange(q1, "start");
      sm.appendMessage(user("q2"));
      sm.appendCompaction("summary", r1, 1234, { readFiles: [], modifiedFiles: [] }, false);
      sm.appendMessage(assistant("r2"));
      sm.branchWithSummary(q1, "went back");
      sm.appendMessage(user("side"));
      sm.appendSessionInfo(`session ${written.length}`);
      written.push(sm);
    }
    SessionManager.configure({ home: join(scratch, "home") });
  });
  after(async () => {
    await stopOwners();
    SessionManager.configure({});
    await rm(scratch, { recursive: true, force: true });
  });

  it("imports every file, leaves them unchanged, and reads each back as the reference does", async () => {
    const root = join(scratch, "pi-agent", "sessions");
    const before = await Promise.all(written.map((sm) => readFile(sm.getSessionFile(), "utf8")));
    const seen: string[] = [];
    const { imported, failed } = await SessionManager.importLegacyTree(root, { onFile: (p) => seen.push(p) });
    assert.deepEqual(failed, []);
    assert.equal(imported.length, 3);
    assert.equal(seen.length, 3);
    for (const [i, sm] of written.entries()) {
      assert.equal(await readFile(sm.getSessionFile(), "utf8"), before[i], "the source is never modified");
      const result = imported.find((r) => seen[imported.indexOf(r)] === sm.getSessionFile())!;
      const native = await SessionManager.openById(result.sessionId);
      assert.equal(native.getCwd(), sm.getCwd());
      assert.equal(native.getSessionName(), sm.getSessionName());
      assert.deepEqual((await native.readEntries()).map((e) => e.id), sm.getEntries().map((e: any) => e.id));
      // The reference's leaf after a load is the last entry in file order (§1.8), as here.
      assert.equal(native.getLeafId(), sm.getLeafId());
      assert.deepEqual(await native.buildSessionContext(), JSON.parse(JSON.stringify(sm.buildSessionContext())));
      assert.deepEqual(tree(await native.readTree()), tree(sm.getTree()));
      const q1 = sm.getEntries().find((e: any) => e.type === "message")!.id;
      assert.equal(await native.readLabel(q1), "start");
      await native.close();
    }
    const again = await SessionManager.importLegacyTree(root);
    assert.deepEqual(again.imported.map((r) => r.alreadyImported), [true, true, true]);
  });

  it("lists the imported sessions with the reference's fields", async () => {
    const ours = await SessionManager.list("/proj/a");
    const theirs = await Ref.list("/proj/a");
    const fields = (s: any) => [s.cwd, s.name, s.created.toISOString(), s.modified.toISOString(), s.messageCount, s.firstMessage];
    assert.deepEqual(ours.map(fields), theirs.map(fields));
    assert.equal((await SessionManager.listAll()).length, (await Ref.listAll()).length);
  });
});
