// The call timeout (`callTimeoutMs`, a call's own `{ timeoutMs }`): an owner that accepts
// a connection and never answers fails the call with `CallTimeoutError` naming the method
// and the time, instead of leaving it waiting forever (as the Rust client's
// `ClientOptions::call_timeout`, crates/session-client/tests/it/timeout.rs).

import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";

import { CallTimeoutError, ErrorCode, PROTOCOL_VERSION, SessionError, SessionManager, connectOwner, socketPath } from "../src/index.js";

type Request = { id: number; method: string; params: unknown };

/** A socket at the home's owner path. `mute`: accepts and never reads or writes (an
 *  owner wedged after accept). Otherwise it answers `initialize` and hands every other
 *  request to the test, which answers (or not) through `answer`. */
class FakeOwner {
  readonly requests: Request[] = [];
  private readonly sockets: Socket[] = [];
  private waiting: ((r: Request) => void) | undefined;
  private constructor(
    readonly server: Server,
    private readonly mute: boolean,
  ) {
    server.on("connection", (s) => this.accept(s));
  }

  static async start(home: string, mute: boolean): Promise<FakeOwner> {
    const path = socketPath(home);
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const server = createServer();
    const fake = new FakeOwner(server, mute);
    await new Promise<void>((done) => server.listen(path, done));
    return fake;
  }

  private accept(s: Socket): void {
    this.sockets.push(s);
    if (this.mute) return;
    let buf = "";
    s.on("data", (d) => {
      buf += d.toString("utf8");
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const r = JSON.parse(buf.slice(0, nl)) as Request;
        buf = buf.slice(nl + 1);
        if (r.method === "initialize") {
          this.answer(r.id, { protocolVersion: PROTOCOL_VERSION, serverInfo: { name: "fake", version: "0" } });
        } else {
          this.requests.push(r);
          const w = this.waiting;
          this.waiting = undefined;
          w?.(r);
        }
      }
    });
  }

  /** The next request after those seen (bounded by the test runner's timeout). */
  next(seen: number): Promise<Request> {
    const r = this.requests[seen];
    if (r) return Promise.resolve(r);
    return new Promise((done) => (this.waiting = done));
  }

  answer(id: number, result: unknown): void {
    for (const s of this.sockets) s.write(JSON.stringify({ jsonrpc: "2.0", id, result }) + "\n");
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((done) => this.server.close(done));
  }
}

describe("call timeout", () => {
  let scratch = "";
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "bcs-ts-timeout-"));
  });
  after(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it("an owner that accepts and never answers times the handshake out, naming initialize and the time", async () => {
    const home = join(scratch, "mute");
    const fake = await FakeOwner.start(home, true);
    try {
      // No bcs to start: the mute owner is found, not hidden by starting another.
      const options = { home, bcs: join(scratch, "no-bcs"), callTimeoutMs: 200 };
      await assert.rejects(connectOwner(options), (e: unknown) => {
        assert.ok(e instanceof CallTimeoutError, String(e));
        assert.ok(e instanceof SessionError);
        assert.equal(e.code, ErrorCode.CALL_TIMEOUT);
        assert.equal(e.method, "initialize");
        assert.equal(e.timeoutMs, 200);
        assert.equal(e.retryable, false);
        assert.match(e.message, /^initialize: the owner did not answer within 200 ms/);
        return true;
      });

      // The same through the SessionManager statics.
      SessionManager.configure(options);
      await assert.rejects(SessionManager.listAll(), (e: unknown) => e instanceof CallTimeoutError && e.method === "initialize");
    } finally {
      await SessionManager.shutdown();
      SessionManager.configure({});
      await fake.stop();
    }
  });

  it("a call left unanswered times out, its late answer is dropped and the connection goes on", async () => {
    const home = join(scratch, "slow");
    const fake = await FakeOwner.start(home, false);
    const { connection } = await connectOwner({ home, bcs: join(scratch, "no-bcs"), callTimeoutMs: 100 });
    try {
      assert.equal(connection.callTimeoutMs, 100);
      const read = (options?: { timeoutMs?: number | null }) =>
        connection.call("session/readTree", { sessionId: "s1" }, undefined, options);

      await assert.rejects(read(), (e: unknown) => {
        assert.ok(e instanceof CallTimeoutError, String(e));
        assert.equal(e.method, "session/readTree");
        assert.equal(e.timeoutMs, 100);
        assert.match(e.message, /session\/readTree.*100 ms/);
        return true;
      });
      const late = await fake.next(0);
      assert.equal(late.method, "session/readTree");
      // Its late answer is dropped; the next call is answered as usual.
      fake.answer(late.id, { nodes: [{ late: true }], roots: [] });
      const answered = read();
      const req = await fake.next(1);
      assert.notEqual(req.id, late.id);
      fake.answer(req.id, { nodes: [], roots: [] });
      assert.deepEqual(await answered, { nodes: [], roots: [] });

      // A call's own timeout overrides the connection's: this one waits without a bound
      // (`null`) and is answered after the connection's 100 ms would have passed.
      const patient = read({ timeoutMs: null });
      const slow = await fake.next(2);
      await assert.rejects(read({ timeoutMs: 10 }), (e: unknown) => e instanceof CallTimeoutError && e.timeoutMs === 10);
      await assert.rejects(read(), (e: unknown) => e instanceof CallTimeoutError && e.timeoutMs === 100);
      fake.answer(slow.id, { nodes: [], roots: [] });
      assert.deepEqual(await patient, { nodes: [], roots: [] });
    } finally {
      connection.close();
      await fake.stop();
    }
  });

  it("calls wait without a bound by default", async () => {
    const home = join(scratch, "default");
    const fake = await FakeOwner.start(home, false);
    const { connection } = await connectOwner({ home, bcs: join(scratch, "no-bcs") });
    try {
      assert.equal(connection.callTimeoutMs, undefined);
    } finally {
      connection.close();
      await fake.stop();
    }
  });
});
