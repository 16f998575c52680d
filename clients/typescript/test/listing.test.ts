// list and listAll: the fields of SessionInfo (legacy-pi-behaviour.md §3.8) and
// session-info-modified-timestamp.test.ts. Contract differences, checked per side:
//  - durability at creation: the reference lists a session only once its file exists
//    (after the first assistant message, §3.9); the seed lists it as soon as it is created;
//  - `allMessagesText` is the reference's full-text field; the seed's listing is answered
//    from its catalog, which does not index message text (docs/api-mapping.md), so the
//    package's SessionInfo has no such field.

import assert from "node:assert/strict";
import { it } from "node:test";

import { assistant, bothImplementations, user } from "./harness.js";

bothImplementations("listing", (get) => {
  it("fields: id, path, cwd, name, parent, created, modified from the last message, counts, first message", async () => {
    const impl = get();
    const sm = await impl.create("/proj");
    await sm.appendMessage({ role: "user", content: [{ type: "image", data: "", mimeType: "image/png" }], timestamp: 1_000 });
    await sm.appendMessage({ role: "user", content: [{ type: "text", text: "hello" }, { type: "text", text: "world" }], timestamp: 2_000 });
    await sm.appendMessage(assistant("resp", 3_000));
    await sm.appendMessage({ role: "toolResult", toolCallId: "t", toolName: "x", content: [], isError: false, timestamp: 9_000 });
    await sm.appendSessionInfo(" first ");
    await sm.appendCustomMessageEntry("ext", "not a message entry", true);
    const sessions = await impl.list("/proj");
    assert.equal(sessions.length, 1);
    const info = sessions[0];
    assert.equal(info.id, sm.getSessionId());
    assert.equal(info.path, sm.getSessionFile());
    assert.equal(info.cwd, "/proj");
    assert.equal(info.name, "first");
    assert.equal(info.parentSessionPath, undefined);
    assert.ok(info.created instanceof Date);
    assert.equal(info.created.toISOString(), sm.getHeader().timestamp);
    assert.ok(info.modified instanceof Date);
    // The last user or assistant message's own timestamp; toolResult does not count.
    assert.equal(info.modified.getTime(), 3_000);
    assert.equal(info.messageCount, 4, "every message entry, any role; custom_message is not one");
    assert.equal(info.firstMessage, "hello world");
    if (impl.name === "reference") assert.equal(info.allMessagesText, "hello world resp");
    else assert.equal("allMessagesText" in info, false);
    await sm.close();
  });

  it("newest first; list is per cwd, listAll covers every cwd; progress is reported", async () => {
    const impl = get();
    const ids: string[] = [];
    for (const [cwd, t] of [
      ["/a", 10_000],
      ["/b", 30_000],
      ["/a", 20_000],
    ] as const) {
      const sm = await impl.create(cwd);
      await sm.appendMessage(user(`q ${t}`, t));
      await sm.appendMessage(assistant(`r ${t}`, t + 1));
      ids.push(sm.getSessionId());
      await sm.close();
    }
    assert.deepEqual((await impl.list("/a")).map((s) => s.id), [ids[2], ids[0]]);
    assert.deepEqual((await impl.list("/b")).map((s) => s.id), [ids[1]]);
    const progress: Array<[number, number]> = [];
    const all = await impl.listAll((loaded, total) => progress.push([loaded, total]));
    const ours = all.filter((s) => ids.includes(s.id));
    assert.deepEqual(ours.map((s) => s.id), [ids[1], ids[2], ids[0]]);
    assert.ok(progress.length > 0);
    const last = progress.at(-1)!;
    assert.equal(last[0], last[1], "the last progress report covers every session");
    assert.equal(last[1], all.length);
  });

  it("a new session without an assistant message: listed by the seed, not yet by the reference", async () => {
    const impl = get();
    const sm = await impl.create("/fresh");
    await sm.appendMessage(user("only a prompt"));
    const listed = await impl.list("/fresh");
    if (impl.name === "reference") {
      assert.deepEqual(listed, [], "§3.9, B21: nothing is written until the first assistant message");
    } else {
      assert.equal(listed.length, 1);
      assert.equal(listed[0].firstMessage, "only a prompt");
      assert.equal(listed[0].messageCount, 1);
    }
    await sm.close();
  });

  it("a session forked with a parent names it in parentSessionPath", async () => {
    const impl = get();
    const sm = await impl.create("/p");
    await sm.appendMessage(user("q"));
    await sm.appendMessage(assistant("r"));
    const parent = sm.getSessionFile()!;
    await sm.newSession({ parentSession: parent });
    await sm.appendMessage(user("child q", 50_000));
    await sm.appendMessage(assistant("child r", 50_001));
    const child = (await impl.list("/p")).find((s) => s.id === sm.getSessionId());
    assert.ok(child);
    assert.equal(child.parentSessionPath, parent);
    await sm.close();
  });
});
