// Finding the session owner: the store's home and sessions directory (as `bcs` resolves
// them: BASE_CONTEXT_HOME, BASE_CONTEXT_SESSION_DIR), the owner's Unix socket
// `<home>/owner/owner.sock` (docs/owner.md), starting `bcs serve` when no owner answers,
// and `bcs serve --stdio` children for a private owner.

import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { connect as netConnect, type Socket } from "node:net";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { Connection } from "./connection.js";
import { ErrorCode, OwnerGoneError, OwnerUnavailableError, StoreError } from "./errors.js";
import { PROTOCOL_VERSION, type InitializeResult } from "./wire.js";

/** How to reach an owner. Every field is optional. */
export interface OwnerOptions {
  /** The store's home (default `BASE_CONTEXT_HOME`, else `~/.base-context`). */
  home?: string;
  /** The sessions directory (default `BASE_CONTEXT_SESSION_DIR`, else `<home>/sessions`). */
  sessionDir?: string;
  /** The `bcs` program (default `BASE_CONTEXT_BCS`, else `bcs` on `PATH`). */
  bcs?: string;
  /**
   * `socket` (default): the store's shared owner, started on demand (`bcs serve`).
   * `stdio`: a private owner for this connection alone (`bcs serve --stdio`), which ends
   * with the connection; it holds the locks of the sessions it opens.
   */
  transport?: "socket" | "stdio";
  /** Starting an owner and connecting to it: at most this many attempts (default 40). */
  connectAttempts?: number;
  /** Extra environment for an owner this package starts. */
  env?: NodeJS.ProcessEnv;
  /** Who this client is (sent in `initialize`). */
  clientInfo?: { name: string; version: string };
  /**
   * How long each call (the `initialize` handshake included) waits for the owner's
   * answer, in milliseconds, before failing with `CallTimeoutError` naming the method
   * and the time. Default: no bound. `Connection.callTimeoutMs` changes it on an open
   * connection, and a call's own `{ timeoutMs }` overrides it for that call.
   */
  callTimeoutMs?: number;
}

/** The resolved location of a store. */
export interface StoreLocation {
  home: string;
  /** Set when chosen explicitly (option or environment); else `<home>/sessions`. */
  sessionDir: string | undefined;
  bcs: string;
}

const CLIENT_INFO = { name: "@base-context/sessions", version: "0.1.0" };

/** Resolves home, sessions directory and `bcs` as `bcs` itself would: options win over
 *  `BASE_CONTEXT_HOME` / `BASE_CONTEXT_SESSION_DIR` (empty values are unset); relative
 *  option values are taken from the current directory, relative environment values are
 *  refused (`StoreError`), as the manager refuses them. */
export function resolveLocation(options: OwnerOptions = {}, env: NodeJS.ProcessEnv = process.env): StoreLocation {
  const fromEnv = (name: string): string | undefined => {
    const value = env[name];
    if (!value) return undefined;
    if (!isAbsolute(value)) {
      throw new StoreError(ErrorCode.STORE, `${name} must be an absolute path, not ${JSON.stringify(value)}`, { kind: "store" });
    }
    return value;
  };
  const home = options.home ?? fromEnv("BASE_CONTEXT_HOME") ?? join(homedir(), ".base-context");
  const sessionDir = options.sessionDir ?? fromEnv("BASE_CONTEXT_SESSION_DIR");
  return {
    home: resolve(home),
    sessionDir: sessionDir === undefined ? undefined : resolve(sessionDir),
    bcs: options.bcs ?? (env.BASE_CONTEXT_BCS ? env.BASE_CONTEXT_BCS : "bcs"),
  };
}

/** The sessions directory of a location. */
export function sessionsDir(location: StoreLocation): string {
  return location.sessionDir ?? join(location.home, "sessions");
}

/** The owner's socket in a home. */
export function socketPath(home: string): string {
  return join(home, "owner", "owner.sock");
}

/** Connects (and says `initialize`) to the owner the options name, starting one if needed. */
export async function connectOwner(options: OwnerOptions = {}): Promise<{ connection: Connection; started?: ChildProcess }> {
  const location = resolveLocation(options);
  const clientInfo = options.clientInfo ?? CLIENT_INFO;
  if (options.transport === "stdio") {
    const connection = spawnStdio(location, options.env);
    connection.callTimeoutMs = options.callTimeoutMs;
    try {
      await initialize(connection, clientInfo);
    } catch (e) {
      if (e instanceof OwnerGoneError && connection.spawnFailed) {
        throw new OwnerUnavailableError(ErrorCode.OWNER_UNAVAILABLE, `could not start a private owner: ${connection.spawnFailed}`, {
          kind: "ownerUnavailable",
        });
      }
      throw e;
    }
    return { connection };
  }
  const attempts = Math.max(1, options.connectAttempts ?? 40);
  let started: ChildProcess | undefined;
  let lastError = "";
  let delay = 10;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const socket = await trySocket(socketPath(location.home));
    if (socket.ok) {
      const connection = socketConnection(socket.socket, location);
      connection.callTimeoutMs = options.callTimeoutMs;
      await initialize(connection, clientInfo);
      return started ? { connection, started } : { connection };
    }
    lastError = socket.error;
    if (!started || started.exitCode !== null) {
      // No owner answers: start one. A second starter loses the bind and exits; the
      // next attempt connects to the winner.
      const outcome = await startOwner(location, options.env);
      if (outcome.kind === "missing") {
        throw new OwnerUnavailableError(
          ErrorCode.OWNER_UNAVAILABLE,
          `no session owner answers at ${socketPath(location.home)} and ${JSON.stringify(location.bcs)} could not be started (${outcome.detail}); set BASE_CONTEXT_BCS or put bcs on PATH`,
          { kind: "ownerUnavailable" },
        );
      }
      if (outcome.kind === "ready") {
        started = outcome.child;
        continue;
      }
      lastError = outcome.detail;
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 250);
  }
  throw new OwnerUnavailableError(
    ErrorCode.OWNER_UNAVAILABLE,
    `no session owner answers at ${socketPath(location.home)} after ${attempts} attempts: ${lastError}`,
    { kind: "ownerUnavailable" },
  );
}

async function initialize(connection: Connection, clientInfo: { name: string; version: string }): Promise<InitializeResult> {
  try {
    return await connection.call("initialize", { protocolVersion: PROTOCOL_VERSION, clientInfo });
  } catch (e) {
    connection.close();
    throw e;
  }
}

type SocketAttempt = { ok: true; socket: Socket } | { ok: false; error: string };

/** Connects to the socket; a path too long for a socket address goes through the
 *  directory's descriptor (`/proc/self/fd/<n>/owner.sock`), as the owner binds it. */
function trySocket(path: string): Promise<SocketAttempt> {
  let dirFd: number | undefined;
  let target = path;
  if (Buffer.byteLength(path) > 107) {
    try {
      dirFd = openSync(join(path, ".."), "r");
      target = `/proc/self/fd/${dirFd}/owner.sock`;
    } catch (e) {
      return Promise.resolve({ ok: false, error: (e as Error).message });
    }
  }
  return new Promise((done) => {
    const socket = netConnect(target);
    const finish = (result: SocketAttempt) => {
      if (dirFd !== undefined) closeSync(dirFd);
      dirFd = undefined;
      done(result);
    };
    socket.once("connect", () => {
      socket.removeAllListeners("error");
      finish({ ok: true, socket });
    });
    socket.once("error", (e) => {
      socket.destroy();
      finish({ ok: false, error: e.message });
    });
  });
}

function socketConnection(socket: Socket, location: StoreLocation): Connection {
  return new Connection({
    input: socket,
    output: socket,
    handles: [socket],
    end: () => socket.end(),
    describe: socketPath(location.home),
  });
}

function ownerEnv(location: StoreLocation, extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, BASE_CONTEXT_HOME: location.home };
  if (location.sessionDir !== undefined) env.BASE_CONTEXT_SESSION_DIR = location.sessionDir;
  else delete env.BASE_CONTEXT_SESSION_DIR;
  return env;
}

type Start = { kind: "ready"; child: ChildProcess } | { kind: "failed"; detail: string } | { kind: "missing"; detail: string };

/** How long a started owner may take to print its ready line. */
const READY_TIMEOUT_MS = 10_000;

/** Starts `bcs serve` detached and waits (at most READY_TIMEOUT_MS) until it prints its
 *  socket (it is bound then) or exits. */
function startOwner(location: StoreLocation, extra?: NodeJS.ProcessEnv): Promise<Start> {
  return new Promise((done) => {
    let child: ChildProcess;
    try {
      child = spawn(location.bcs, ["serve"], {
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: ownerEnv(location, extra),
      });
    } catch (e) {
      done({ kind: "missing", detail: (e as Error).message });
      return;
    }
    let out = "";
    let err = "";
    let settled = false;
    const timer = setTimeout(
      () => settle({ kind: "failed", detail: `bcs serve printed no ready line within ${READY_TIMEOUT_MS} ms` }),
      READY_TIMEOUT_MS,
    );
    const settle = (s: Start) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (s.kind !== "missing") {
        // A started owner lives on past this client (a slow one may still bind): let go
        // of its pipes and of the child.
        child.stdout?.destroy();
        child.stderr?.destroy();
        child.unref();
      }
      done(s);
    };
    child.once("error", (e: NodeJS.ErrnoException) =>
      settle(e.code === "ENOENT" || e.code === "EACCES" ? { kind: "missing", detail: e.message } : { kind: "failed", detail: e.message }),
    );
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString("utf8");
      if (out.includes("\n")) settle({ kind: "ready", child });
    });
    child.stderr?.on("data", (b: Buffer) => {
      err = (err + b.toString("utf8")).slice(-4096);
    });
    child.once("exit", (code, signal) =>
      settle({ kind: "failed", detail: `bcs serve exited (${signal ?? code}): ${err.trim()}` }),
    );
  });
}

/** A private owner on this child's stdin/stdout (`bcs serve --stdio`). */
function spawnStdio(location: StoreLocation, extra?: NodeJS.ProcessEnv): Connection {
  const child = spawn(location.bcs, ["serve", "--stdio"], {
    stdio: ["pipe", "pipe", "pipe"],
    env: ownerEnv(location, extra),
  });
  let err = "";
  child.stderr?.on("data", (b: Buffer) => {
    err = (err + b.toString("utf8")).slice(-4096);
  });
  const stdin = child.stdin!;
  const stdout = child.stdout!;
  let spawnError = "";
  child.once("error", (e) => {
    spawnError = `${location.bcs}: ${e.message}; set BASE_CONTEXT_BCS or put bcs on PATH`;
    connection.spawnFailed = spawnError;
    stdout.destroy();
  });
  const handles = [stdin, stdout, child.stderr, child].filter((h) => h !== null) as Array<{
    ref?: () => unknown;
    unref?: () => unknown;
  }>;
  const connection = new Connection({
    input: stdout,
    output: stdin,
    handles,
    end: () => stdin.end(),
    describe: `${location.bcs} serve --stdio`,
    child,
    stderrTail: () => (spawnError ? spawnError : err),
  });
  return connection;
}
