// The package's own behaviour beyond the seed's API: finding and starting the owner
// (BASE_CONTEXT_HOME, BASE_CONTEXT_SESSION_DIR, BASE_CONTEXT_BCS, long homes, several
// clients starting at once), the owner's death and the next call's new owner, the typed
// errors, the stdio transport, in-memory sessions and buffered appends.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, afterEach, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import {
  ErrorCode,
  OwnerGoneError,
  OwnerUnavailableError,
  SessionManager,
  UnsupportedProtocolError,
  connectOwner,
  fromErrorObject,
  resolveLocation,
  socketPath,
} from "../src/index.js";
import * as errors from "../src/errors.js";
import { assistant, stopOwners, user } from "./harness.js";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

/** Waits until a process is gone (signal 0 fails). Bounded: 10 s. */
async function waitGone(pid: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`process ${pid} did not exit`);
}

describe("the owner on demand", () => {
  let scratch = "";
  const saved = { home: process.env.BASE_CONTEXT_HOME, dir: process.env.BASE_CONTEXT_SESSION_DIR };
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "bcs-ts-sdk-"));
  });
  afterEach(async () => {
    await stopOwners();
    process.env.BASE_CONTEXT_HOME = saved.home;
    process.env.BASE_CONTEXT_SESSION_DIR = saved.dir;
    if (saved.home === undefined) delete process.env.BASE_CONTEXT_HOME;
    if (saved.dir === undefined) delete process.env.BASE_CONTEXT_SESSION_DIR;
    SessionManager.configure({});
  });
  after(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it("honours BASE_CONTEXT_HOME and BASE_CONTEXT_SESSION_DIR, and starts bcs serve from BASE_CONTEXT_BCS", async () => {
    const home = join(scratch, "env-home");
    const dir = join(scratch, "env-sessions");
    process.env.BASE_CONTEXT_HOME = home;
    process.env.BASE_CONTEXT_SESSION_DIR = dir;
    SessionManager.configure({});
    assert.equal(existsSync(socketPath(home)), false);
    const sm = await SessionManager.create("/w");
    assert.equal(SessionManager.startedOwners().length, 1, "no owner answered: one was started");
    assert.ok(existsSync(socketPath(home)));
    assert.equal(sm.getSessionDir(), dir);
    assert.equal(dirname(sm.getSessionFile()!), dir);
    assert.ok(existsSync(sm.getSessionFile()!), "durable at creation");
    await sm.close();
  });

  it("a home whose socket path is longer than a socket address holds", async () => {
    const home = join(scratch, "h".repeat(60), "o".repeat(60));
    SessionManager.configure({ home });
    assert.ok(Buffer.byteLength(socketPath(home)) > 107);
    const sm = await SessionManager.create("/w");
    await sm.appendMessage(user("q"));
    assert.equal((await SessionManager.listAll()).length, 1);
    await sm.close();
  });

  it("several processes starting at once end up served, each session once", async () => {
    const home = join(scratch, "race-home");
    const script = join(here, "..", "..", "test", "fixtures", "create-one.mjs");
    const outs = await Promise.all(
      [0, 1, 2].map((i) =>
        run(process.execPath, [script, `/race-${i}`], { env: { ...process.env, BASE_CONTEXT_HOME: home } }),
      ),
    );
    const results = outs.map((o) => JSON.parse(o.stdout));
    SessionManager.configure({ home });
    const listed = await SessionManager.listAll();
    assert.deepEqual(listed.map((s) => s.id).sort(), results.map((r) => r.id).sort());
    // Stop whichever owner serves this home (the children let it live on).
    const pids = new Set(results.flatMap((r) => r.started as number[]));
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // the loser of the bind already exited
      }
    }
  });

  it("a killed owner: the pending call fails with OwnerGoneError; the next call starts a new owner and finds every entry", async () => {
    const home = join(scratch, "kill-home");
    SessionManager.configure({ home });
    const sm = await SessionManager.create("/w");
    const ids = [await sm.appendMessage(user("q")), await sm.appendMessage(assistant("r"))];
    const [pid] = SessionManager.startedOwners();
    assert.ok(pid);
    // The call is in flight when the owner dies: it fails with the typed error.
    const inFlight = sm.appendMessage(user("in flight"));
    process.kill(pid, "SIGKILL");
    await assert.rejects(inFlight, (e: unknown) => e instanceof OwnerGoneError && e.code === ErrorCode.OWNER_GONE);
    await waitGone(pid);
    // The next call reconnects: a new owner, the session reopened, the journal recovered
    // with every acknowledged entry (the unacknowledged one may or may not have landed).
    const third = await sm.appendMessage(user("after"));
    const [pid2] = SessionManager.startedOwners();
    assert.notEqual(pid2, pid);
    const entries = await sm.readEntries();
    assert.deepEqual(entries.slice(0, 2).map((e) => e.id), ids);
    assert.equal(entries.at(-1)!.id, third);
    assert.ok(entries.length === 3 || (entries.length === 4 && (entries[2]!.message as { content?: unknown }).content === "in flight"));
    await sm.close();
  });

  it("no bcs to start: OwnerUnavailableError naming the remedy", async () => {
    SessionManager.configure({ home: join(scratch, "no-bcs"), bcs: join(scratch, "no-such-bcs") });
    await assert.rejects(SessionManager.create("/w"), (e: unknown) => e instanceof OwnerUnavailableError && /BASE_CONTEXT_BCS/.test(e.message));
  });

  it("the stdio transport: a private owner for this client alone, ended with the connection", async () => {
    SessionManager.configure({ home: join(scratch, "stdio-home"), transport: "stdio" });
    const sm = await SessionManager.create("/w");
    await sm.appendMessage(user("q"));
    assert.deepEqual(SessionManager.startedOwners(), []);
    assert.equal(existsSync(socketPath(join(scratch, "stdio-home"))), false);
    assert.equal((await sm.readEntries()).length, 1);
    await sm.close();
  });

  it("inMemory: no session file, the native rules, the temporary store removed at close", async () => {
    SessionManager.configure({ home: join(scratch, "mem-home") });
    const sm = await SessionManager.inMemory("/w");
    assert.equal(sm.getSessionFile(), undefined);
    assert.equal(sm.isPersisted(), false);
    const a = await sm.appendMessage(user("q"));
    await sm.appendLabelChange(a, "x");
    assert.equal(await sm.readLabel(a), "x");
    const dir = sm.getSessionDir();
    assert.ok(existsSync(dir));
    await sm.close();
    assert.equal(existsSync(dir), false);
  });

  it("appendCompaction takes the seed's customInstructions and does not store it", async () => {
    SessionManager.configure({ home: join(scratch, "compaction-home") });
    const sm = await SessionManager.create("/w");
    const kept = await sm.appendMessage(user("q"));
    const c = await sm.appendCompaction("S", kept, 10, { why: "d" }, false, "be brief");
    const entry = (await sm.readEntry(c)) as Record<string, unknown>;
    assert.equal(entry.type, "compaction");
    assert.equal(entry.summary, "S");
    assert.equal("customInstructions" in entry, false);
    await sm.close();
  });

  it("buffered appends: answered before a sync, durable after sync()", async () => {
    SessionManager.configure({ home: join(scratch, "buffered-home") });
    const sm = await SessionManager.create("/w");
    sm.setDurability("buffered");
    const ids = await Promise.all([sm.appendMessage(user("1")), sm.appendMessage(user("2")), sm.appendMessage(user("3"))]);
    await sm.sync();
    assert.deepEqual((await sm.readBranch()).map((e) => e.id), ids, "pipelined appends keep their order");
    await sm.close();
  });

  it("getSessionArtifactDir and readEntryRetention", async () => {
    SessionManager.configure({ home: join(scratch, "art-home") });
    const sm = await SessionManager.create("/w");
    const a = await sm.appendMessage(user("q"));
    const dir = await sm.getSessionArtifactDir();
    assert.ok(dir.includes(sm.getSessionId()));
    assert.ok(existsSync(dir));
    assert.equal(await sm.readEntryRetention(a), undefined, "a native append has no source");
    assert.equal(sm.supportsCapturedHistoryReads(), true);
    await sm.close();
    assert.deepEqual((await SessionManager.delete(sm.getSessionId())).removed.includes(sm.getSessionFile()!), true);
  });
});

describe("the seed's API surface (issue 18)", () => {
  it("has every static and instance method the issue lists", () => {
    const statics = ["create", "open", "continueRecent", "inMemory", "forkFrom", "list", "listAll", "importLegacy", "exportLegacy", "delete"];
    const methods = [
      "newSession", "setSessionFile", "createBranchedSession",
      "appendMessage", "appendThinkingLevelChange", "appendServiceTierChange", "appendModelChange", "appendCompaction",
      "appendCustomEntry", "appendChildUsageAttribution", "appendSessionInfo", "appendSessionState", "appendAgentStatus",
      "appendGitState", "appendCustomMessageEntry", "appendLabelChange",
      "getLeafId", "readLeafEntry", "readEntry", "readBranch", "readBranches", "readTree", "readLabel", "branchTo",
      "branchWithSummary", "readEntries", "readEntryRetention", "supportsCapturedHistoryReads",
      "getHeader", "getSessionName", "getCwd", "getSessionDir", "getSessionId", "getSessionFile",
      "getSessionArtifactDir", "buildSessionContext",
    ];
    for (const s of statics) assert.equal(typeof (SessionManager as unknown as Record<string, unknown>)[s], "function", s);
    for (const m of methods) assert.equal(typeof (SessionManager.prototype as unknown as Record<string, unknown>)[m], "function", m);
  });
});

describe("where the store is", () => {
  it("options win over the environment; empty variables are unset; relative variables are refused", () => {
    const env = { BASE_CONTEXT_HOME: "/env/home", BASE_CONTEXT_SESSION_DIR: "/env/sessions", BASE_CONTEXT_BCS: "/opt/bcs" };
    assert.deepEqual(resolveLocation({}, env), { home: "/env/home", sessionDir: "/env/sessions", bcs: "/opt/bcs" });
    assert.deepEqual(resolveLocation({ home: "/o/h", sessionDir: "/o/s", bcs: "/o/bcs" }, env), {
      home: "/o/h",
      sessionDir: "/o/s",
      bcs: "/o/bcs",
    });
    const bare = resolveLocation({}, { BASE_CONTEXT_HOME: "", BASE_CONTEXT_SESSION_DIR: "" });
    assert.equal(bare.home, join(homedir(), ".base-context"));
    assert.equal(bare.sessionDir, undefined);
    assert.equal(bare.bcs, "bcs", "from PATH");
    assert.equal(resolveLocation({ home: "rel" }, {}).home, join(process.cwd(), "rel"), "an option is taken from the cwd");
    assert.throws(() => resolveLocation({}, { BASE_CONTEXT_HOME: "rel" }), (e: unknown) => e instanceof errors.StoreError && /BASE_CONTEXT_HOME/.test((e as Error).message));
    assert.throws(() => resolveLocation({}, { BASE_CONTEXT_SESSION_DIR: "rel" }), /BASE_CONTEXT_SESSION_DIR must be an absolute path/);
  });

  it("a private owner that cannot start: OwnerUnavailableError", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "bcs-ts-nobcs-"));
    try {
      await assert.rejects(
        connectOwner({ home: scratch, transport: "stdio", bcs: join(scratch, "missing-bcs") }),
        (e: unknown) => e instanceof OwnerUnavailableError && /missing-bcs/.test((e as Error).message),
      );
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});

describe("typed errors", () => {
  it("every code of the owner maps to its class, an unknown code to SessionError", () => {
    const cases: Array<[number, string, Function]> = [
      [-32700, "parse", errors.ProtocolError],
      [-32602, "invalidParams", errors.ProtocolError],
      [-32001, "overloaded", errors.OverloadedError],
      [-32004, "unsupportedProtocol", errors.UnsupportedProtocolError],
      [1001, "locked", errors.OwnedError],
      [1002, "notFound", errors.NotFoundError],
      [1003, "sessionNotOpen", errors.SessionNotOpenError],
      [1004, "entryNotFound", errors.EntryNotFoundError],
      [1005, "limitExceeded", errors.LimitError],
      [1006, "corrupt", errors.CorruptError],
      [1007, "unsupportedVersion", errors.UnsupportedVersionError],
      [1008, "invalidEntry", errors.InvalidEntryError],
      [1009, "exists", errors.ExistsError],
      [1010, "legacyJsonl", errors.LegacyJsonlError],
      [1011, "io", errors.IoError],
      [1012, "notAJournal", errors.NotAJournalError],
      [1099, "store", errors.StoreError],
    ];
    for (const [code, kind, Class] of cases) {
      const e = fromErrorObject({ code, message: "m", data: { kind } }, "session/x");
      assert.ok(e instanceof Class, `${code} → ${Class.name}`);
      assert.equal(e.code, code);
      assert.equal(e.kind, kind);
      assert.equal(e.method, "session/x");
      assert.equal(e.retryable, code === -32001);
    }
    const unknown = fromErrorObject({ code: 4242, message: "newer", data: { kind: "future" } });
    assert.equal(unknown.constructor, errors.SessionError);
    assert.equal(unknown.code, 4242);
  });

  it("an empty or foreign file is refused with NotAJournalError (1012), naming the path", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "bcs-ts-notj-"));
    try {
      SessionManager.configure({ home: scratch });
      const dir = join(scratch, "sessions");
      await mkdir(dir, { recursive: true });
      for (const [name, bytes, detail] of [
        ["empty.jsonl", "", /empty/],
        ["foreign.jsonl", "PK\u0003\u0004 zip", /expected signature/],
      ] as const) {
        const path = join(dir, name);
        await writeFile(path, bytes);
        await assert.rejects(SessionManager.open(path), (e: unknown) => {
          assert.ok(e instanceof errors.NotAJournalError, String(e));
          assert.equal(e.code, ErrorCode.NOT_A_JOURNAL);
          assert.equal(e.path, path);
          assert.match(String(e.data.detail), detail);
          return true;
        });
      }
    } finally {
      await stopOwners();
      SessionManager.configure({});
      await rm(scratch, { recursive: true, force: true });
    }
  });

  it("a newer major version is refused by the owner with both versions named", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "bcs-ts-proto-"));
    try {
      SessionManager.configure({ home: scratch });
      await SessionManager.listAll(); // starts the owner
      const line = await new Promise<string>((resolve, reject) => {
        const s = connect(socketPath(scratch));
        let buf = "";
        s.on("data", (d) => {
          buf += d.toString();
          if (buf.includes("\n")) {
            s.destroy();
            resolve(buf.split("\n")[0]!);
          }
        });
        s.on("error", reject);
        s.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: { major: 2, minor: 0 } } }) + "\n");
      });
      const e = fromErrorObject(JSON.parse(line).error);
      assert.ok(e instanceof UnsupportedProtocolError);
      assert.match(e.message, /2\.0.*1\.1/);
    } finally {
      await stopOwners();
      SessionManager.configure({});
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
