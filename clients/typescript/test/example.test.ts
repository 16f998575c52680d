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
const examples = join(dirname(fileURLToPath(import.meta.url)), "..", "examples");
const example = join(examples, "agent-loop.js");

/** Stops the socket owner of `home` that a child process started (it lives on): its
 *  pid is the holder a private owner meets when it opens a session the socket owner
 *  holds open for us. */
async function stopSocketOwner(home: string): Promise<void> {
  await SessionManager.shutdown();
  SessionManager.configure({});
  const holder = await connectOwner({ home, connectAttempts: 1 });
  const { connection } = await connectOwner({ home, transport: "stdio" });
  try {
    const listed = await holder.connection.call("store/listAll", {});
    for (const s of listed.sessions.slice(0, 1) as Array<{ path: string }>) {
      await holder.connection.call("store/open", { path: s.path });
      try {
        await connection.call("store/open", { path: s.path });
      } catch (e) {
        if (e instanceof OwnedError && e.holderPid) process.kill(e.holderPid, "SIGTERM");
      }
    }
  } finally {
    connection.close();
    holder.connection.close();
  }
}

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
    await stopSocketOwner(home);
    await rm(scratch, { recursive: true, force: true });
  }
});

it("the import example moves a reference agent's sessions into the store and resumes the newest", async () => {
  const scratch = await mkdtemp(join(tmpdir(), "bcs-ts-example-"));
  const home = join(scratch, "home");
  // The reference writes two sessions under <HOME>/.pi/agent/sessions/<cwd>/.
  process.env.PI_CODING_AGENT_DIR = join(scratch, ".pi", "agent");
  const entry = import.meta.resolve("@mariozechner/pi-coding-agent");
  const { SessionManager: Ref } = (await import(new URL("./core/session-manager.js", entry).href)) as { SessionManager: any };
  for (const [i, cwd] of ["/p/one", "/p/two"].entries()) {
    const sm = Ref.create(cwd);
    sm.appendMessage({ role: "user", content: `q${i}`, timestamp: 1_000 + i });
    sm.appendMessage({ role: "assistant", content: [{ type: "text", text: `r${i}` }], provider: "p", model: "m", timestamp: 2_000 + i });
    sm.appendSessionInfo(`session ${i}`);
  }
  const env = { ...process.env, HOME: scratch, BASE_CONTEXT_HOME: home };
  try {
    const first = await run(process.execPath, [join(examples, "import-pi-sessions.js")], { env });
    assert.match(first.stdout, /2 imported, 0 failed/);
    assert.match(first.stdout, /newest: session 1, 2 messages of context/);
    const second = await run(process.execPath, [join(examples, "import-pi-sessions.js")], { env });
    assert.equal(second.stdout.match(/already imported/g)?.length, 2);
  } finally {
    await stopSocketOwner(home);
    await rm(scratch, { recursive: true, force: true });
  }
});
