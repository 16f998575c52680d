// examples/agent-loop.ts, as a new user runs it: twice in one directory, the second run
// continues the first run's session and its context holds both turns.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { OwnedError, SessionManager, connectOwner } from "../src/index.js";

const run = promisify(execFile);
const example = join(dirname(fileURLToPath(import.meta.url)), "..", "examples", "agent-loop.js");

it("the agent loop example creates, then continues, a session", async () => {
  const scratch = await mkdtemp(join(tmpdir(), "bcs-ts-example-"));
  const home = join(scratch, "home");
  const cwd = join(scratch, "project");
  await mkdir(cwd);
  const env = { ...process.env, BASE_CONTEXT_HOME: home };
  try {
    const first = await run(process.execPath, [example, "first question"], { cwd, env });
    assert.match(first.stdout, /\(echo\) first question, with 1 message\(s\) of context/);
    const [id, count] = first.stdout.trim().split("\n")[1]!.split(": ");
    assert.equal(count, "2 messages");
    const second = await run(process.execPath, [example, "second question"], { cwd, env });
    assert.match(second.stdout, /with 3 message\(s\) of context/);
    assert.equal(second.stdout.trim().split("\n")[1], `${id}: 4 messages`);
    SessionManager.configure({ home, transport: "stdio" });
    const listed = await SessionManager.list(cwd);
    assert.deepEqual(listed.map((s) => [s.id, s.messageCount, s.firstMessage]), [[id, 4, "first question"]]);
  } finally {
    // The example's owner lives on (socket transport). Find its pid as the holder of a
    // session it holds open for us, seen from a private owner, and stop it.
    await SessionManager.shutdown();
    const holder = await connectOwner({ home, connectAttempts: 1 });
    const { connection } = await connectOwner({ home, transport: "stdio" });
    const listed = await holder.connection.call("store/listAll", {});
    for (const s of listed.sessions.slice(0, 1)) {
      await holder.connection.call("store/open", { path: s.path });
      try {
        await connection.call("store/open", { path: s.path });
      } catch (e) {
        if (e instanceof OwnedError && e.holderPid) process.kill(e.holderPid, "SIGTERM");
      }
    }
    connection.close();
    holder.connection.close();
    SessionManager.configure({});
    await rm(scratch, { recursive: true, force: true });
  }
});
