// The seed's `SessionManager` over the session owner (docs/rpc.md): the statics under
// `store/*`, the instance methods under `session/*`. Appends, reads, the context rebuild
// and everything that opens a session return Promises; the header and metadata getters
// are synchronous, answered from what this handle last learnt from the owner.

import { rmSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join, resolve } from "node:path";

import { EntryNotFoundError, ErrorCode, SessionError } from "./errors.js";
import {
  followSession,
  followStore,
  type Following,
  type SessionFollowHandlers,
  type SessionFollowing,
  type StoreFollowHandlers,
} from "./follow.js";
import { resolveLocation, sessionsDir, type OwnerOptions } from "./owner.js";
import { Store } from "./store.js";
import { nestTree, type SessionTreeNode } from "./tree.js";
import type {
  AgentMessage,
  AgentStatus,
  Deleted,
  Durability,
  Entry,
  Exported,
  GitState,
  Imported,
  Json,
  Metadata,
  Method,
  ParamsOf,
  ReadLimits,
  SessionContext,
  SessionHeader,
  ListedSession,
  SessionOpened,
  SessionState,
  Tree,
  Usage,
  UserContent,
} from "./wire.js";

/** A session as `list`/`listAll` describe it (the reference's `SessionInfo`). */
export interface SessionInfo {
  path: string;
  id: string;
  cwd: string;
  name: string | undefined;
  parentSessionPath: string | undefined;
  created: Date;
  modified: Date;
  messageCount: number;
  firstMessage: string;
  /** The reference's full text of the user and assistant messages. The owner's listing
   *  is answered from its catalog, which does not index message text: always absent
   *  here (the protocol's `ListedSession` has no such field). */
  allMessagesText?: string;
}

/** `list`/`listAll` callbacks. A bare function is taken as `onProgress`, as the reference's. */
export type ListCallbacks =
  | {
      /** Called as the owner reports progress: `loaded` of `total` sessions. */
      onProgress?: (loaded: number, total: number) => void;
      /** Called once per session, in the listing's order, before the promise resolves. */
      onSession?: (session: SessionInfo) => void;
    }
  | ((loaded: number, total: number) => void);

/** `newSession` options. */
export interface NewSessionOptions {
  /** A caller-chosen id (a safe file name). */
  id?: string;
  /** The session this one continues (the header's `parentSession`). */
  parentSession?: string;
}

/** A limit argument: `{maxSourceEntries, maxSourceBytes}` or, as the seed's single-entry
 *  reads take it, a number of source bytes. */
export type Limits = ReadLimits | number;

function limitsParam(limits: Limits | undefined): { limits?: ReadLimits } {
  if (limits === undefined) return {};
  if (typeof limits === "number") return { limits: { maxSourceBytes: limits } };
  return { limits };
}

/** `Date.prototype.toJSON`'s text back into a Date: `null` was an Invalid Date. */
function date(iso: string | null | undefined): Date {
  return typeof iso === "string" ? new Date(iso) : new Date(Number.NaN);
}

/** A listed session (`session-protocol`'s `ListedSession`) as the seed's SessionInfo. */
function toSessionInfo(w: ListedSession): SessionInfo {
  return {
    path: w.path,
    // The header's id as stored: a string in every session this store writes.
    id: w.id as string,
    cwd: w.cwd,
    name: w.name ?? undefined,
    parentSessionPath: (w.parentSessionPath ?? undefined) as string | undefined,
    created: date(w.created),
    modified: date(w.modified),
    messageCount: w.messageCount,
    firstMessage: w.firstMessage,
  };
}

function callbacksOf(c: ListCallbacks | undefined) {
  if (typeof c === "function") return { onProgress: c, onSession: undefined };
  return { onProgress: c?.onProgress, onSession: c?.onSession };
}

let defaults: OwnerOptions = {};
const stores = new Map<string, Store>();
const temporaries = new Set<Store>();

/** The store a `sessionDir` argument names: the default one (the socket owner of the
 *  home), or, for another sessions directory, a private owner serving that directory. */
function storeFor(sessionDir?: string): Store {
  const base = resolveLocation(defaults);
  const wanted = sessionDir === undefined ? sessionsDir(base) : resolve(sessionDir);
  const isDefault = wanted === sessionsDir(base);
  const options: OwnerOptions = isDefault ? defaults : { ...defaults, sessionDir: wanted, transport: "stdio" };
  const key = JSON.stringify([base.home, wanted, options.transport ?? "socket", base.bcs]);
  let store = stores.get(key);
  if (!store) {
    store = new Store(options);
    stores.set(key, store);
  }
  return store;
}

process.once("exit", () => {
  for (const s of temporaries) {
    const home = s.options.home;
    if (home) rmSync(home, { recursive: true, force: true });
  }
});

export class SessionManager {
  private opened: SessionOpened;
  private meta: Metadata;
  private durability: Durability = "durable";
  private closed = false;
  private generation: number;

  private constructor(
    private readonly store: Store,
    opened: SessionOpened,
    meta: Metadata,
    private readonly persisted: boolean,
  ) {
    this.opened = opened;
    this.meta = meta;
    this.generation = store.generation;
  }

  // ---- configuration -------------------------------------------------------------

  /** Sets how the statics reach the owner (home, sessions directory, `bcs`, transport).
   *  Connections already open keep their settings; `shutdown()` closes them. */
  static configure(options: OwnerOptions): void {
    defaults = { ...options };
  }

  /** The pids of the socket owners this package started (they outlive their clients). */
  static startedOwners(): number[] {
    return [...stores.values()].flatMap((s) => (s.startedOwner?.pid !== undefined ? [s.startedOwner.pid] : []));
  }

  /** Closes every connection this package opened (each owner closes the sessions no
   *  other client uses; private owners exit). Returns the pids of socket owners this
   *  package started, which live on (they exit when idle, or when stopped). */
  static async shutdown(): Promise<number[]> {
    const all = [...stores.values(), ...temporaries];
    stores.clear();
    temporaries.clear();
    const pids: number[] = [];
    for (const s of all) {
      if (s.startedOwner?.pid !== undefined) pids.push(s.startedOwner.pid);
      await s.close();
    }
    return pids;
  }

  private static async opening(store: Store, call: (c: Awaited<ReturnType<Store["conn"]>>) => Promise<SessionOpened>, persisted = true) {
    const c = await store.conn();
    const opened = await call(c);
    const meta = await c.call("session/getMetadata", { sessionId: opened.sessionId });
    return new SessionManager(store, opened, meta, persisted);
  }

  // ---- statics ---------------------------------------------------------------------

  /** A new session, durable when the promise resolves. */
  static create(cwd: string, sessionDir?: string): Promise<SessionManager> {
    return SessionManager.opening(storeFor(sessionDir), (c) => c.call("store/create", { cwd }));
  }

  /** Opens a native journal by path. A legacy JSONL file is refused (`LegacyJsonlError`):
   *  import it first (`importLegacy`). */
  static open(path: string, sessionDir?: string): Promise<SessionManager> {
    return SessionManager.opening(storeFor(sessionDir), (c) => c.call("store/open", { path: resolve(path) }));
  }

  /** Opens a session of the store by id. */
  static openById(sessionId: string, sessionDir?: string): Promise<SessionManager> {
    return SessionManager.opening(storeFor(sessionDir), (c) => c.call("store/open", { sessionId }));
  }

  /** The newest session of `cwd`, or a new one. */
  static continueRecent(cwd: string, sessionDir?: string): Promise<SessionManager> {
    return SessionManager.opening(storeFor(sessionDir), (c) => c.call("store/continueRecent", { cwd }));
  }

  /** A session persisted nowhere the caller sees: a private owner on a temporary store,
   *  removed when the manager is closed (or the process exits). `getSessionFile()` is
   *  `undefined`. Every read and the context rebuild are the native ones. */
  static async inMemory(cwd: string = process.cwd()): Promise<SessionManager> {
    const store = await Store.temporary(defaults);
    temporaries.add(store);
    try {
      return await SessionManager.opening(store, (c) => c.call("store/create", { cwd }), false);
    } catch (e) {
      temporaries.delete(store);
      await store.close();
      throw e;
    }
  }

  /** A new session of `targetCwd` holding the entries of the journal at `sourcePath`. */
  static forkFrom(sourcePath: string, targetCwd: string, sessionDir?: string): Promise<SessionManager> {
    return SessionManager.opening(storeFor(sessionDir), (c) =>
      c.call("store/forkFrom", { source: resolve(sourcePath), targetCwd }),
    );
  }

  /** The sessions of `cwd`, newest activity first. */
  static async list(cwd: string, sessionDir?: string, callbacks?: ListCallbacks): Promise<SessionInfo[]> {
    const { onProgress, onSession } = callbacksOf(callbacks);
    const c = await storeFor(sessionDir).conn();
    const listing = await c.call("store/list", onProgress ? { cwd, progress: true } : { cwd }, onProgress);
    const sessions = listing.sessions.map(toSessionInfo);
    if (onSession) for (const s of sessions) onSession(s);
    return sessions;
  }

  /** Every session of the store, newest activity first. */
  static async listAll(callbacks?: ListCallbacks, sessionDir?: string): Promise<SessionInfo[]> {
    const { onProgress, onSession } = callbacksOf(callbacks);
    const c = await storeFor(sessionDir).conn();
    const listing = await c.call("store/listAll", onProgress ? { progress: true } : {}, onProgress);
    const sessions = listing.sessions.map(toSessionInfo);
    if (onSession) for (const s of sessions) onSession(s);
    return sessions;
  }

  /** Follows the store (the agents view): `onChange` for every session created,
   *  renamed, deleted, or whose lifecycle state or agent status changes through the
   *  owner, from now on (read the current state with `listAll` after this resolves).
   *  While a follow runs, the process stays alive; `close()` the follow to end it. */
  static async followStore(handlers: StoreFollowHandlers, sessionDir?: string): Promise<Following> {
    const c = await storeFor(sessionDir).conn();
    return followStore(c, handlers);
  }

  /** Imports one legacy JSONL file (never modified); importing it again is a no-op
   *  (`alreadyImported`). */
  static async importLegacy(path: string, sessionDir?: string): Promise<Imported> {
    const c = await storeFor(sessionDir).conn();
    return c.call("store/import", { path: resolve(path) });
  }

  /** Imports every `*.jsonl` file under `root` (e.g. `~/.pi/agent/sessions`), one at a
   *  time, in path order. A file that fails is reported in `failed`, not thrown. */
  static async importLegacyTree(
    root: string,
    options: { sessionDir?: string; onFile?: (path: string, result: Imported | SessionError) => void } = {},
  ): Promise<{ imported: Imported[]; failed: Array<{ path: string; error: SessionError }> }> {
    const files: string[] = [];
    const pending = [resolve(root)];
    while (pending.length > 0) {
      const dir = pending.pop()!;
      for (const d of await readdir(dir, { withFileTypes: true })) {
        const p = join(dir, d.name);
        if (d.isDirectory()) pending.push(p);
        else if (d.isFile() && d.name.endsWith(".jsonl")) files.push(p);
      }
    }
    files.sort();
    const imported: Imported[] = [];
    const failed: Array<{ path: string; error: SessionError }> = [];
    for (const path of files) {
      try {
        const r = await SessionManager.importLegacy(path, options.sessionDir);
        imported.push(r);
        options.onFile?.(path, r);
      } catch (e) {
        if (!(e instanceof SessionError)) throw e;
        failed.push({ path, error: e });
        options.onFile?.(path, e);
      }
    }
    return { imported, failed };
  }

  /** Writes a session of the store as v3 JSONL that the reference opens. */
  static async exportLegacy(sessionId: string, path: string, sessionDir?: string): Promise<Exported> {
    const c = await storeFor(sessionDir).conn();
    return c.call("store/export", { sessionId, path: resolve(path) });
  }

  /** Removes a session's journal, derived files and artifacts; refused while open. */
  static async delete(sessionId: string, sessionDir?: string): Promise<Deleted> {
    const c = await storeFor(sessionDir).conn();
    return c.call("store/delete", { sessionId });
  }

  // ---- plumbing --------------------------------------------------------------------

  private get id(): string {
    return this.opened.sessionId;
  }

  private async conn() {
    if (this.closed) {
      throw new SessionError(ErrorCode.SESSION_NOT_OPEN, `session ${this.id} was closed by this client`, {
        kind: "sessionNotOpen",
        sessionId: this.id,
      });
    }
    const c = await this.store.conn();
    if (this.store.generation !== this.generation) {
      // The owner went away (the call that saw it failed with OwnerGoneError) and a new
      // connection, perhaps to a new owner, replaced it: open this session there again.
      const opened = await c.call("store/open", { path: this.meta.sessionFile });
      this.opened = opened;
      this.meta = await c.call("session/getMetadata", { sessionId: opened.sessionId });
      this.generation = this.store.generation;
    }
    return c;
  }

  private async append<M extends `session/append${string}` & Method>(
    method: M,
    params: Omit<ParamsOf<M>, "sessionId" | "durability">,
  ): Promise<string> {
    const c = await this.conn();
    const p = { ...params, sessionId: this.id, ...(this.durability === "durable" ? {} : { durability: this.durability }) };
    const { entryId } = (await c.call(method, p as ParamsOf<M>)) as { entryId: string };
    this.meta.leafId = entryId;
    return entryId;
  }

  /** Switches this handle to `next` and lets go of the session it held. */
  private async switchTo(next: SessionOpened): Promise<void> {
    const c = await this.conn();
    const old = this.id;
    const meta = await c.call("session/getMetadata", { sessionId: next.sessionId });
    this.opened = next;
    this.meta = meta;
    if (old !== next.sessionId) await c.call("session/close", { sessionId: old });
  }

  // ---- session management ----------------------------------------------------------

  /** A new session in the same store and cwd; this handle moves to it. Resolves with its
   *  journal's path (`undefined` in memory). Durable when resolved. */
  async newSession(options: NewSessionOptions = {}): Promise<string | undefined> {
    const c = await this.conn();
    const next = await c.call("session/newSession", {
      sessionId: this.id,
      ...(options.id !== undefined ? { newSessionId: options.id } : {}),
      ...(options.parentSession !== undefined ? { parentSession: options.parentSession } : {}),
    });
    await this.switchTo(next);
    return this.getSessionFile();
  }

  /** This handle moves to the journal at `path`. */
  async setSessionFile(path: string): Promise<void> {
    const c = await this.conn();
    const next = await c.call("session/setSessionFile", { sessionId: this.id, path: resolve(path) });
    const meta = await c.call("session/getMetadata", { sessionId: next.sessionId });
    this.opened = next;
    this.meta = meta;
  }

  /** A new session holding the path root → `leafId` (and the labels on it); this handle
   *  moves to it. Resolves with its journal's path, which exists (durable) when resolved. */
  async createBranchedSession(leafId: string): Promise<string | undefined> {
    const c = await this.conn();
    const next = await c.call("session/createBranchedSession", { sessionId: this.id, leafId });
    await this.switchTo(next);
    return this.getSessionFile();
  }

  /** How appends travel from now on: `durable` (default: resolved once synced) or
   *  `buffered` (resolved once written; made durable by `sync()`, `close()` or the next
   *  durable append). */
  setDurability(durability: Durability): void {
    this.durability = durability;
  }

  /** Makes every buffered append so far durable. */
  async sync(): Promise<void> {
    const c = await this.conn();
    await c.call("session/sync", { sessionId: this.id });
  }

  /** Lets go of the session (the owner syncs and closes it when no client uses it). An
   *  in-memory session's private store is removed. */
  async close(): Promise<void> {
    if (this.closed) return;
    const c = await this.conn();
    this.closed = true;
    if (!this.persisted) {
      temporaries.delete(this.store);
      await this.store.close();
      return;
    }
    await c.call("session/close", { sessionId: this.id });
  }

  /** Follows this session: `onEntry` for every entry appended after `lastEntryId` (by
   *  any client, this one included), in journal order. Read the history up to
   *  `lastEntryId`, then apply the entries. The follow is of the session open now (not
   *  of one `newSession` switches to later); closing the session ends it, as does the
   *  end of the connection (`onEnd`). While a follow runs, the process stays alive;
   *  `close()` the follow to end it. */
  async follow(handlers: SessionFollowHandlers): Promise<SessionFollowing> {
    const c = await this.conn();
    return followSession(c, this.id, handlers);
  }

  /** Re-reads the metadata (leaf, name) from the owner: another client of the same
   *  session may have appended or moved the leaf. */
  async refresh(): Promise<void> {
    const c = await this.conn();
    this.meta = await c.call("session/getMetadata", { sessionId: this.id });
  }

  // ---- appends (each resolves with the new entry's id, now the leaf) ---------------

  appendMessage(message: AgentMessage): Promise<string> {
    return this.append("session/appendMessage", { message });
  }

  appendThinkingLevelChange(thinkingLevel: string): Promise<string> {
    return this.append("session/appendThinkingLevelChange", { thinkingLevel });
  }

  appendServiceTierChange(serviceTier: string): Promise<string> {
    return this.append("session/appendServiceTierChange", { serviceTier });
  }

  appendModelChange(provider: string, modelId: string): Promise<string> {
    return this.append("session/appendModelChange", { provider, modelId });
  }

  /** The seed's `appendCompaction(summary, firstKeptEntryId, tokensBefore, details?,
   *  fromHook?, customInstructions?)`. `customInstructions` shapes the request that
   *  produced the summary, not the entry: it is accepted and not stored, as in the Rust
   *  library (`docs/api-mapping.md`). */
  appendCompaction(
    summary: string,
    firstKeptEntryId: string,
    tokensBefore: number,
    details?: unknown,
    fromHook?: boolean,
    _customInstructions?: string,
  ): Promise<string> {
    return this.append("session/appendCompaction", {
      summary,
      firstKeptEntryId,
      tokensBefore,
      ...(details !== undefined ? { details: details as Json } : {}),
      ...(fromHook !== undefined ? { fromHook } : {}),
    });
  }

  appendCustomEntry(customType: string, data?: unknown): Promise<string> {
    return this.append("session/appendCustomEntry", { customType, ...(data !== undefined ? { data: data as Json } : {}) });
  }

  appendChildUsageAttribution(targetId: string, childUsage: Usage, aggregateUsage: Usage): Promise<string> {
    return this.append("session/appendChildUsageAttribution", { targetId, childUsage, aggregateUsage });
  }

  /** Sets the display name (trimmed; empty clears it). */
  async appendSessionInfo(name: string): Promise<string> {
    const id = await this.append("session/appendSessionInfo", { name });
    await this.refresh();
    return id;
  }

  appendSessionState(state: SessionState): Promise<string> {
    return this.append("session/appendSessionState", { state });
  }

  appendAgentStatus(status: AgentStatus): Promise<string> {
    return this.append("session/appendAgentStatus", { status });
  }

  appendGitState(git: GitState): Promise<string> {
    return this.append("session/appendGitState", { git });
  }

  appendCustomMessageEntry(customType: string, content: UserContent, display: boolean, details?: unknown): Promise<string> {
    return this.append("session/appendCustomMessageEntry", {
      customType,
      content,
      display,
      ...(details !== undefined ? { details: details as Json } : {}),
    });
  }

  /** Sets (or, with `undefined` or `""`, clears) the label of `targetId`; an unknown target
   *  is `EntryNotFoundError`. */
  appendLabelChange(targetId: string, label: string | undefined): Promise<string> {
    return this.append("session/appendLabelChange", { targetId, ...(label !== undefined ? { label } : {}) });
  }

  /** A caller-built entry of any type; missing `id`, `parentId`, `timestamp` are filled in. */
  appendEntry(entry: { type: string; [key: string]: unknown }): Promise<string> {
    return this.append("session/appendEntry", { entry: entry as Entry });
  }

  // ---- the tree --------------------------------------------------------------------

  /** The current leaf as this handle last saw it (`refresh()` re-reads it). */
  getLeafId(): string | null {
    return this.meta.leafId ?? null;
  }

  /** Moves the leaf (shared by every client of the session); `null`: before any entry.
   *  An unknown id is `EntryNotFoundError`. Nothing is appended. */
  async branchTo(entryId: string | null): Promise<void> {
    const c = await this.conn();
    await c.call("session/branch", { sessionId: this.id, entryId });
    this.meta.leafId = entryId;
  }

  /** Moves the leaf to `fromId` (`null`: a new root) and appends a branch summary there. */
  async branchWithSummary(fromId: string | null, summary: string, details?: unknown, fromHook?: boolean): Promise<string> {
    const c = await this.conn();
    const { entryId } = await c.call("session/branchWithSummary", {
      sessionId: this.id,
      fromId,
      summary,
      ...(details !== undefined ? { details: details as Json } : {}),
      ...(fromHook !== undefined ? { fromHook } : {}),
      ...(this.durability === "durable" ? {} : { durability: this.durability }),
    });
    this.meta.leafId = entryId;
    return entryId;
  }

  /** The entry at the leaf (`undefined` before any). */
  async readLeafEntry(limits?: Limits): Promise<Entry | undefined> {
    const c = await this.conn();
    const { entry } = await c.call("session/readLeafEntry", { sessionId: this.id, ...limitsParam(limits) });
    return entry ?? undefined;
  }

  /** The entry `id`; an unknown id is `EntryNotFoundError`. */
  async readEntry(id: string, limits?: Limits): Promise<Entry> {
    const c = await this.conn();
    const { entry } = await c.call("session/readEntry", { sessionId: this.id, entryId: id, ...limitsParam(limits) });
    return entry;
  }

  /** The current label of `id` (`undefined`: none). */
  async readLabel(id: string, limits?: Limits): Promise<string | undefined> {
    const c = await this.conn();
    const { label } = await c.call("session/readLabel", { sessionId: this.id, entryId: id, ...limitsParam(limits) });
    return label ?? undefined;
  }

  /** The path root → `fromId` (default the leaf; `[]` before any entry). */
  async readBranch(fromId?: string, limits?: ReadLimits): Promise<Entry[]> {
    const c = await this.conn();
    const { entries } = await c.call("session/readBranch", {
      sessionId: this.id,
      ...(fromId !== undefined ? { fromId } : {}),
      ...limitsParam(limits),
    });
    return entries;
  }

  /** Several paths through one capture and one accounting of the limits. */
  async readBranches(leafIds: string[], limits?: ReadLimits): Promise<Entry[][]> {
    const c = await this.conn();
    const { branches } = await c.call("session/readBranches", { sessionId: this.id, leafIds, ...limitsParam(limits) });
    return branches;
  }

  /** The tree as the reference's `getTree()` returns it: the roots, each node
   *  `{entry, children, label, labelTimestamp}` (built without recursion). */
  async readTree(limits?: ReadLimits): Promise<SessionTreeNode[]> {
    return nestTree(await this.readTreeFlat(limits));
  }

  /** The tree as the owner sends it: nodes in pre-order, children by position. */
  async readTreeFlat(limits?: ReadLimits): Promise<Tree> {
    const c = await this.conn();
    return c.call("session/readTree", { sessionId: this.id, ...limitsParam(limits) });
  }

  /** Every entry in append order (the header excluded). */
  async readEntries(limits?: ReadLimits): Promise<Entry[]> {
    const c = await this.conn();
    const { entries } = await c.call("session/readEntries", { sessionId: this.id, ...limitsParam(limits) });
    return entries;
  }

  /** Where an imported entry came from (`undefined` for native appends). */
  async readEntryRetention(id: string): Promise<Json | undefined> {
    const c = await this.conn();
    const { retention } = await c.call("session/readEntryRetention", { sessionId: this.id, entryId: id });
    return retention ?? undefined;
  }

  /** Always true: every read of this package is a captured, bounded read. */
  supportsCapturedHistoryReads(): boolean {
    return true;
  }

  /** The context at the leaf: the reference's `{messages, thinkingLevel, model}` (with
   *  `serviceTier` when set). `thinkingLevel` is `"off"` when the path sets none. */
  async buildSessionContext(limits?: ReadLimits): Promise<SessionContext & { thinkingLevel: Json }> {
    const c = await this.conn();
    const context = await c.call("session/buildSessionContext", { sessionId: this.id, ...limitsParam(limits) });
    return { ...context, thinkingLevel: context.thinkingLevel ?? "off" };
  }

  // ---- header and metadata (synchronous) --------------------------------------------

  getHeader(): SessionHeader {
    return { type: "session", ...this.opened.header };
  }

  getSessionName(): string | undefined {
    return this.meta.sessionName ?? undefined;
  }

  getCwd(): string {
    return this.meta.cwd;
  }

  /** Where new, branched and forked sessions of this store go. */
  getSessionDir(): string {
    return this.meta.sessionDir;
  }

  getSessionId(): string {
    return this.id;
  }

  /** The journal's path (`undefined` for an in-memory session). */
  getSessionFile(): string | undefined {
    return this.persisted ? this.meta.sessionFile : undefined;
  }

  isPersisted(): boolean {
    return this.persisted;
  }

  /** The session's artifact directory, created on demand. */
  async getSessionArtifactDir(): Promise<string> {
    const c = await this.conn();
    const { path } = await c.call("session/getArtifactDir", { sessionId: this.id });
    return path;
  }

  /** Whether `e` is the error of an unknown entry (for code that handles the reference's
   *  `Entry <id> not found` and this package's typed error alike). */
  static isEntryNotFound(e: unknown): e is EntryNotFoundError {
    return e instanceof EntryNotFoundError;
  }
}
