// createBranchedSession, newSession, forkFrom and continueRecent: the reference's
// tree-traversal createBranchedSession cases, custom-session-id.test.ts, and §3.5–3.7 of
// legacy-pi-behaviour.md. Contract difference (durability at creation): the reference
// writes a session file only once it holds an assistant message (§3.9, B21); the seed's
// sessions are durable when the call resolves, whatever they hold.

import assert from "node:assert/strict";
import { existsSync, utimesSync } from "node:fs";
import { it } from "node:test";

import { assistant, bothImplementations, rejectsUnknownEntry, user } from "./harness.js";

bothImplementations("createBranchedSession", (get) => {
  it("an unknown leaf is refused", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    await sm.appendMessage(user("q"));
    await rejectsUnknownEntry(impl, sm.createBranchedSession("nope"), "nope");
    await sm.close();
  });

  it("a path with an assistant: a new session holding the path, ids kept, the manager moves to it", async () => {
    const sm = await get().create("/w");
    const oldFile = sm.getSessionFile();
    const oldId = sm.getSessionId();
    const a = await sm.appendMessage(user("q1"));
    const b = await sm.appendMessage(assistant("r1"));
    await sm.appendMessage(user("q2 on the old branch"));
    const oldEntries = await sm.readEntries();
    const path = await sm.createBranchedSession(b);
    assert.ok(path);
    assert.notEqual(sm.getSessionId(), oldId);
    assert.equal(sm.getSessionFile(), path);
    assert.ok(existsSync(path), "written at once: it holds an assistant message");
    const header = sm.getHeader();
    assert.equal(header.id, sm.getSessionId());
    assert.equal(header.cwd, "/w");
    assert.equal(header.parentSession, oldFile);
    const entries = await sm.readEntries();
    assert.deepEqual(entries, oldEntries.slice(0, 2), "entries copied with their ids, parents and timestamps");
    assert.deepEqual(entries.map((e) => e.id), [a, b]);
    assert.equal(sm.getLeafId(), b);
    assert.deepEqual((await sm.buildSessionContext()).messages, [user("q1"), assistant("r1")]);
    await sm.close();
  });

  it("a path without an assistant: the reference defers the file; the seed's is durable at once", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    const a = await sm.appendMessage(user("q1"));
    await sm.appendMessage(assistant("r1"));
    const path = await sm.createBranchedSession(a);
    assert.ok(path);
    if (impl.name === "reference") {
      // §3.5: returned but not written until an assistant arrives (#1672, pi-subagents #172).
      assert.equal(existsSync(path), false);
      await sm.appendMessage(assistant("now"));
      assert.ok(existsSync(path));
    } else {
      assert.ok(existsSync(path));
    }
    assert.deepEqual((await sm.readBranch()).map((e) => e.type), impl.name === "reference" ? ["message", "message"] : ["message"]);
    await sm.close();
  });

  it("in memory: the branch replaces the session and no path is returned", async () => {
    const sm = await get().inMemory("/w");
    const a = await sm.appendMessage(user("q1"));
    const b = await sm.appendMessage(assistant("r1"));
    await sm.appendMessage(user("q2"));
    assert.equal(await sm.createBranchedSession(b), undefined);
    assert.equal(sm.getSessionFile(), undefined);
    assert.deepEqual((await sm.readEntries()).map((e) => e.id), [a, b]);
    await sm.close();
  });
});

bothImplementations("newSession", (get) => {
  it("with a parent: a fresh header naming the parent, no entries, a null leaf", async () => {
    const impl = get();
    const sm = await impl.create("/w");
    await sm.appendMessage(user("q"));
    await sm.appendMessage(assistant("r"));
    const parent = sm.getSessionFile()!;
    const oldId = sm.getSessionId();
    const path = await sm.newSession({ parentSession: parent });
    assert.ok(path);
    assert.notEqual(sm.getSessionId(), oldId);
    assert.equal(sm.getSessionFile(), path);
    assert.equal(sm.getHeader().parentSession, parent);
    assert.equal(sm.getHeader().cwd, "/w");
    assert.equal(sm.getLeafId(), null);
    assert.deepEqual(await sm.readEntries(), []);
    // Durability at creation: the reference writes nothing until an assistant message.
    assert.equal(existsSync(path), impl.name === "sdk");
    await sm.close();
  });

  it("a custom id is used in the header; without one a fresh id is made", async () => {
    const sm = await get().create("/w");
    await sm.newSession({ id: "my-custom-id" });
    assert.equal(sm.getSessionId(), "my-custom-id");
    assert.equal(sm.getHeader().id, "my-custom-id");
    await sm.newSession();
    assert.ok(sm.getSessionId().length > 0);
    assert.notEqual(sm.getSessionId(), "my-custom-id");
    await sm.newSession({});
    assert.ok(sm.getSessionId().length > 0);
    await sm.close();
  });
});

bothImplementations("forkFrom and continueRecent", (get) => {
  it("forkFrom: a new session of the target cwd holding the source's entries, naming the source", async () => {
    const impl = get();
    const src = await impl.create("/w");
    await src.appendMessage(user("q"));
    await src.appendMessage(assistant("r"));
    const source = src.getSessionFile()!;
    const sourceEntries = await src.readEntries();
    await src.close();
    const fork = await impl.forkFrom(source, "/other");
    assert.notEqual(fork.getSessionId(), sourceEntries[0].id);
    assert.equal(fork.getCwd(), "/other");
    assert.equal(fork.getHeader().parentSession, source);
    assert.deepEqual(await fork.readEntries(), sourceEntries);
    assert.ok(existsSync(fork.getSessionFile()!));
    await fork.close();
  });

  it("continueRecent: the newest session of the cwd, else a new one", async () => {
    const impl = get();
    const fresh = await impl.continueRecent("/nothing-here");
    assert.deepEqual(await fresh.readEntries(), []);
    await fresh.close();
    const s1 = await impl.create("/c");
    await s1.appendMessage(user("one", 1_000));
    await s1.appendMessage(assistant("one", 2_000));
    await s1.close();
    if (impl.name === "reference") {
      // The reference picks the largest file mtime (§3.7, B17); the seed the newest
      // activity, as list() orders. Make the older session's mtime older too.
      const old = new Date(Date.now() - 60_000);
      utimesSync(s1.getSessionFile()!, old, old);
    }
    const s2 = await impl.create("/c");
    await s2.appendMessage(user("two", 3_000));
    await s2.appendMessage(assistant("two", 4_000));
    const newest = s2.getSessionId();
    await s2.close();
    const again = await impl.continueRecent("/c");
    assert.equal(again.getSessionId(), newest);
    assert.equal(again.getLeafId(), (await again.readEntries()).at(-1).id);
    await again.close();
  });
});
