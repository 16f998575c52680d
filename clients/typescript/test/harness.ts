// One scenario suite, two implementations: every scenario is written once against the
// seed's API (awaited) and run against
//   - "reference": @mariozechner/pi-coding-agent 0.73.1's synchronous SessionManager,
//     through a thin adapter that awaits it and maps the seed's names onto its own
//     (readBranch → getBranch, readTree → getTree, branchTo → branch/resetLeaf, …);
//   - "sdk": this package against a real `bcs serve` (BASE_CONTEXT_BCS), started on
//     demand on the Unix socket of a temporary home.
// Where the seed's contract differs from the reference, a scenario branches on
// `impl.name` and checks each side's documented behaviour, saying why.

import { after, before, describe } from "node:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import assert from "node:assert/strict";

import { EntryNotFoundError, SessionManager } from "../src/index.js";

/** A message factory with fixed timestamps (so contexts compare exactly). */
export const user = (text: string, timestamp = 1_735_689_600_000) => ({ role: "user", content: text, timestamp });
export const assistant = (text: string, timestamp = 1_735_689_600_000, provider = "anthropic", model = "claude") => ({
  role: "assistant",
  content: [{ type: "text", text }],
  api: "anthropic-messages",
  provider,
  model,
  usage: {
    input: 1,
    output: 1,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 2,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: "stop",
  timestamp,
});

/** The seed's instance API as the scenarios use it (every call awaited). */
export interface Manager {
  appendMessage(message: object): Promise<string>;
  appendThinkingLevelChange(level: string): Promise<string>;
  appendModelChange(provider: string, modelId: string): Promise<string>;
  appendCompaction(summary: string, firstKeptEntryId: string, tokensBefore: number, details?: unknown, fromHook?: boolean): Promise<string>;
  appendCustomEntry(customType: string, data?: unknown): Promise<string>;
  appendCustomMessageEntry(customType: string, content: any, display: boolean, details?: unknown): Promise<string>;
  appendSessionInfo(name: string): Promise<string>;
  appendLabelChange(targetId: string, label: string | undefined): Promise<string>;
  getLeafId(): string | null;
  readLeafEntry(): Promise<any>;
  readEntry(id: string): Promise<any>;
  readBranch(fromId?: string): Promise<any[]>;
  readTree(): Promise<any[]>;
  readLabel(id: string): Promise<string | undefined>;
  readEntries(): Promise<any[]>;
  branchTo(id: string | null): Promise<void>;
  branchWithSummary(fromId: string | null, summary: string, details?: unknown, fromHook?: boolean): Promise<string>;
  buildSessionContext(): Promise<any>;
  createBranchedSession(leafId: string): Promise<string | undefined>;
  newSession(options?: { id?: string; parentSession?: string }): Promise<string | undefined>;
  getHeader(): any;
  getSessionName(): string | undefined;
  getSessionFile(): string | undefined;
  getSessionId(): string;
  getCwd(): string;
  close(): Promise<void>;
}

export interface Impl {
  name: "reference" | "sdk";
  create(cwd: string): Promise<Manager>;
  inMemory(cwd: string): Promise<Manager>;
  open(path: string): Promise<Manager>;
  continueRecent(cwd: string): Promise<Manager>;
  forkFrom(path: string, cwd: string): Promise<Manager>;
  list(cwd: string, onProgress?: (loaded: number, total: number) => void): Promise<any[]>;
  listAll(onProgress?: (loaded: number, total: number) => void): Promise<any[]>;
  /** A plain JSONL file as a session: the reference opens it in place; the seed imports it
   *  (`importLegacy`) and opens the native copy. */
  openLegacy(path: string): Promise<Manager>;
  /** A scratch directory of this run. */
  scratch: string;
}

type Loaded = { SessionManager: any };

async function loadReference(): Promise<Loaded> {
  // The module by file URL: the same instance the package's index exports, without
  // loading the whole agent (see ../shared/reference/legacy-pi-behaviour.md §7).
  const entry = import.meta.resolve("@mariozechner/pi-coding-agent");
  return import(new URL("./core/session-manager.js", entry).href);
}

/** The reference's synchronous manager, awaited. */
class ReferenceManager implements Manager {
  constructor(readonly sm: any) {}
  async appendMessage(m: object) { return this.sm.appendMessage(m); }
  async appendThinkingLevelChange(l: string) { return this.sm.appendThinkingLevelChange(l); }
  async appendModelChange(p: string, m: string) { return this.sm.appendModelChange(p, m); }
  async appendCompaction(s: string, f: string, t: number, d?: unknown, h?: boolean) { return this.sm.appendCompaction(s, f, t, d, h); }
  async appendCustomEntry(t: string, d?: unknown) { return this.sm.appendCustomEntry(t, d); }
  async appendCustomMessageEntry(t: string, c: any, disp: boolean, d?: unknown) { return this.sm.appendCustomMessageEntry(t, c, disp, d); }
  async appendSessionInfo(n: string) { return this.sm.appendSessionInfo(n); }
  async appendLabelChange(id: string, l: string | undefined) { return this.sm.appendLabelChange(id, l); }
  getLeafId() { return this.sm.getLeafId(); }
  async readLeafEntry() { return this.sm.getLeafEntry(); }
  async readEntry(id: string) { return this.sm.getEntry(id); }
  async readBranch(from?: string) { return this.sm.getBranch(from); }
  async readTree() { return this.sm.getTree(); }
  async readLabel(id: string) { return this.sm.getLabel(id); }
  async readEntries() { return this.sm.getEntries(); }
  async branchTo(id: string | null) { if (id === null) this.sm.resetLeaf(); else this.sm.branch(id); }
  async branchWithSummary(f: string | null, s: string, d?: unknown, h?: boolean) { return this.sm.branchWithSummary(f, s, d, h); }
  async buildSessionContext() { return this.sm.buildSessionContext(); }
  async createBranchedSession(leaf: string) { return this.sm.createBranchedSession(leaf); }
  async newSession(o?: { id?: string; parentSession?: string }) { return this.sm.newSession(o); }
  getHeader() { return this.sm.getHeader(); }
  getSessionName() { return this.sm.getSessionName(); }
  getSessionFile() { return this.sm.getSessionFile(); }
  getSessionId() { return this.sm.getSessionId(); }
  getCwd() { return this.sm.getCwd(); }
  async close() {}
}

async function referenceImpl(scratch: string): Promise<Impl> {
  const agentDir = join(scratch, "pi-agent");
  // The reference reads PI_CODING_AGENT_DIR on every call: its default session
  // directories and listAll's root are under the scratch directory.
  process.env.PI_CODING_AGENT_DIR = agentDir;
  const { SessionManager: Ref } = await loadReference();
  const wrap = (sm: any) => new ReferenceManager(sm);
  return {
    name: "reference",
    scratch,
    create: async (cwd) => wrap(Ref.create(cwd)),
    inMemory: async (cwd) => wrap(Ref.inMemory(cwd)),
    open: async (path) => wrap(Ref.open(path)),
    continueRecent: async (cwd) => wrap(Ref.continueRecent(cwd)),
    forkFrom: async (path, cwd) => wrap(Ref.forkFrom(path, cwd)),
    list: (cwd, onProgress) => Ref.list(cwd, undefined, onProgress),
    listAll: (onProgress) => Ref.listAll(onProgress),
    openLegacy: async (path) => wrap(Ref.open(path)),
  };
}

async function sdkImpl(scratch: string): Promise<Impl> {
  if (!process.env.BASE_CONTEXT_BCS) throw new Error("BASE_CONTEXT_BCS must name the bcs binary (npm test sets it)");
  SessionManager.configure({ home: join(scratch, "home") });
  return {
    name: "sdk",
    scratch,
    create: (cwd) => SessionManager.create(cwd),
    inMemory: (cwd) => SessionManager.inMemory(cwd),
    open: (path) => SessionManager.open(path),
    continueRecent: (cwd) => SessionManager.continueRecent(cwd),
    forkFrom: (path, cwd) => SessionManager.forkFrom(path, cwd),
    list: (cwd, onProgress) => SessionManager.list(cwd, undefined, onProgress ? { onProgress } : undefined),
    listAll: (onProgress) => SessionManager.listAll(onProgress ? { onProgress } : undefined),
    openLegacy: async (path) => {
      const imported = await SessionManager.importLegacy(path);
      return SessionManager.openById(imported.sessionId);
    },
  };
}

/** Stops the socket owners this process started (they would otherwise outlive the test). */
export async function stopOwners(): Promise<void> {
  const pids = await SessionManager.shutdown();
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}

/**
 * Runs `scenarios` once per implementation, each in a `describe` of its name with a
 * fresh scratch directory (and, for the SDK, a fresh store and owner).
 */
export function bothImplementations(title: string, scenarios: (get: () => Impl) => void): void {
  for (const name of ["reference", "sdk"] as const) {
    describe(`${title} [${name}]`, () => {
      let impl: Impl | undefined;
      let scratch = "";
      before(async () => {
        scratch = await mkdtemp(join(tmpdir(), `bcs-ts-${name}-`));
        impl = name === "reference" ? await referenceImpl(scratch) : await sdkImpl(scratch);
      });
      after(async () => {
        if (name === "sdk") await stopOwners();
        await rm(scratch, { recursive: true, force: true });
      });
      scenarios(() => {
        if (!impl) throw new Error("implementation not set up");
        return impl;
      });
    });
  }
}

/** Each side's documented refusal of an unknown entry id: the reference throws
 *  `Entry <id> not found`; the seed's owner answers 1004 (`EntryNotFoundError`). */
export async function rejectsUnknownEntry(impl: Impl, call: Promise<unknown>, id: string): Promise<void> {
  if (impl.name === "reference") {
    await assert.rejects(call, { message: `Entry ${id} not found` });
  } else {
    await assert.rejects(call, (e: unknown) => e instanceof EntryNotFoundError && e.code === 1004 && e.entryId === id);
  }
}

