// Following a session and the store against a real `bcs serve` (docs/rpc.md
// `session/follow`, `store/follow`): entries appended by another client and by this one
// arrive in journal order after `lastEntryId`; closing stops them; store changes arrive
// for sessions created and renamed; the owner's death ends a follow with `onEnd`.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";

import { PassThrough } from "node:stream";

import { followSession, followStore } from "../src/follow.js";
import { Connection, OwnerGoneError, SessionManager, connectOwner, type Entry, type SessionError, type StoreChangedParams } from "../src/index.js";
import { assistant, stopOwners, user } from "./harness.js";

/** Values pushed by a callback, awaited one by one (no sleeps: each waits for a push). */
class Inbox<T> {
  readonly seen: T[] = [];
  private taken = 0;
  private waiter: (() => void) | undefined;
  push = (v: T): void => {
    this.seen.push(v);
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  };
  async next(): Promise<T> {
    while (this.taken >= this.seen.length) await new Promise<void>((r) => (this.waiter = r));
    return this.seen[this.taken++]!;
  }
}

/** A connection over in-process streams: the test reads its requests and writes the
 *  owner's lines (a lagged notice cannot be provoked deterministically from a real owner). */
function scripted(): { connection: Connection; requests: Inbox<{ id: number; method: string }>; send: (m: unknown) => void } {
  const toOwner = new PassThrough();
  const fromOwner = new PassThrough();
  const requests = new Inbox<{ id: number; method: string }>();
  let buf = "";
  toOwner.on("data", (d: Buffer) => {
    buf += d.toString("utf8");
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      requests.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
    }
  });
  const connection = new Connection({ input: fromOwner, output: toOwner, handles: [], end: () => fromOwner.end(), describe: "scripted" });
  return { connection, requests, send: (m) => fromOwner.write(JSON.stringify(m) + "\n") };
}

describe("follow notifications", () => {
  it("lagged notices reach onLagged; another session's entries are not this follow's", async () => {
    const { connection, requests, send } = scripted();
    const entries = new Inbox<Entry>();
    const lagged = new Inbox<string>();
    const following = followSession(connection, "s1", { onEntry: entries.push, onLagged: () => lagged.push("session") });
    const follow = await requests.next();
    assert.equal(follow.method, "session/follow");
    send({ jsonrpc: "2.0", id: follow.id, result: { lastEntryId: null } });
    const f = await following;
    assert.equal(f.lastEntryId, null);
    const entry = (id: string) => ({ type: "message", id, parentId: null, timestamp: "2025-01-01T00:00:00.000Z", message: { role: "user", content: "x", timestamp: 1 } });
    send({ jsonrpc: "2.0", method: "session/appended", params: { sessionId: "other", entry: entry("00000000") } });
    send({ jsonrpc: "2.0", method: "session/lagged", params: { sessionId: "other" } });
    send({ jsonrpc: "2.0", method: "session/lagged", params: { sessionId: "s1" } });
    send({ jsonrpc: "2.0", method: "session/appended", params: { sessionId: "s1", entry: entry("11111111") } });
    assert.equal(await lagged.next(), "session");
    assert.equal((await entries.next()).id, "11111111");
    assert.equal(entries.seen.length, 1);
    assert.equal(lagged.seen.length, 1);

    const store = new Inbox<string>();
    const storeFollowing = followStore(connection, { onChange: (c) => store.push(c.change.kind), onLagged: () => store.push("lagged") });
    const sf = await requests.next();
    assert.equal(sf.method, "store/follow");
    send({ jsonrpc: "2.0", id: sf.id, result: {} });
    const s = await storeFollowing;
    send({ jsonrpc: "2.0", method: "store/lagged", params: {} });
    send({ jsonrpc: "2.0", method: "store/changed", params: { sessionId: "s2", sessionFile: "/s2.jsonl", change: { kind: "deleted" } } });
    assert.deepEqual([await store.next(), await store.next()], ["lagged", "deleted"]);

    const closing = f.close();
    const unfollow = await requests.next();
    assert.deepEqual([unfollow.method, (unfollow as { params?: unknown }).params], ["session/unfollow", { sessionId: "s1" }]);
    send({ jsonrpc: "2.0", id: unfollow.id, result: {} });
    await closing;
    const closingStore = s.close();
    const storeUnfollow = await requests.next();
    assert.equal(storeUnfollow.method, "store/unfollow");
    send({ jsonrpc: "2.0", id: storeUnfollow.id, result: {} });
    await closingStore;
    connection.close();
  });
});

describe("follow", () => {
  let scratch = "";
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "bcs-ts-follow-"));
  });
  afterEach(async () => {
    await stopOwners();
    SessionManager.configure({});
  });
  after(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it("a session's appends by any client arrive in order after lastEntryId, until close", async () => {
    const home = join(scratch, "session");
    SessionManager.configure({ home });
    const sm = await SessionManager.create("/w");
    const first = await sm.appendMessage(user("before"));

    const entries = new Inbox<Entry>();
    const following = await sm.follow({ onEntry: entries.push });
    assert.equal(following.lastEntryId, first);

    // Another client (its own connection to the same owner) appends; so does this one.
    const { connection: other } = await connectOwner({ home });
    try {
      const opened = await other.call("store/open", { sessionId: sm.getSessionId() });
      const b = await other.call("session/appendMessage", { sessionId: opened.sessionId, message: user("from another client") });
      const c = await sm.appendMessage(assistant("from this one"));
      const e1 = await entries.next();
      const e2 = await entries.next();
      assert.deepEqual(
        [e1.id, e2.id],
        [b.entryId, c],
      );
      assert.equal(e1.parentId, first);
      assert.equal(e1.type, "message");

      // A second follow of the same session on the same connection: closing the first
      // does not stop the second.
      const again = new Inbox<Entry>();
      const second = await sm.follow({ onEntry: again.push });
      assert.equal(second.lastEntryId, c);
      await following.close();
      await following.close(); // harmless twice
      const d = await other.call("session/appendMessage", { sessionId: opened.sessionId, message: user("after the first closed") });
      assert.equal((await again.next()).id, d.entryId);
      await second.close();
      assert.equal(entries.seen.length, 2, "the closed follow got nothing more");
    } finally {
      other.close();
    }
  });

  it("the store's changes arrive: a session created and renamed", async () => {
    const home = join(scratch, "store");
    SessionManager.configure({ home });
    const changes = new Inbox<StoreChangedParams>();
    const following = await SessionManager.followStore({ onChange: changes.push });
    try {
      const sm = await SessionManager.create("/w2");
      const created = await changes.next();
      assert.equal(created.sessionId, sm.getSessionId());
      assert.equal(created.sessionFile, sm.getSessionFile());
      assert.deepEqual(created.change, { kind: "created", cwd: "/w2" });
      await sm.appendSessionInfo("named");
      const renamed = await changes.next();
      assert.equal(renamed.sessionId, sm.getSessionId());
      assert.deepEqual(renamed.change, { kind: "renamed", name: "named" });
    } finally {
      await following.close();
    }
  });

  it("the owner's death ends a follow with onEnd", async () => {
    const home = join(scratch, "death");
    SessionManager.configure({ home });
    const sm = await SessionManager.create("/w3");
    const ended = new Inbox<SessionError>();
    await sm.follow({ onEntry: () => {}, onEnd: ended.push });
    const [pid] = SessionManager.startedOwners();
    assert.ok(pid !== undefined, "this test started the owner");
    process.kill(pid, "SIGKILL");
    const e = await ended.next();
    assert.ok(e instanceof OwnerGoneError, String(e));
  });
});
