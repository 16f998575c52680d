// The wire types of `session-protocol` 1.0 (docs/rpc.md) that this package uses.
//
// Stand-in: these mirror the Rust types by hand until the generated definitions
// (`src/generated/`, from `cargo xtask protocol`) land; then this file only re-exports
// them. Keep every name as the Rust type's.

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** `{major, minor}` of the protocol. */
export interface ProtocolVersion {
  major: number;
  minor: number;
}

/** The version this package speaks. */
export const PROTOCOL_VERSION: ProtocolVersion = { major: 1, minor: 0 };

/** Who is on the other end. */
export interface PeerInfo {
  name: string;
  version: string;
}

/** How an append travels: `durable` (answered once synced) or `buffered`. */
export type Durability = "durable" | "buffered";

/** The bounds of one complete read (absent: the seed's 16,384 entries, 64 MiB). */
export interface ReadLimits {
  maxSourceEntries?: number;
  maxSourceBytes?: number;
}

/** The session header record. */
export interface SessionHeader {
  type?: "session";
  version?: number;
  id: string;
  timestamp: string;
  cwd?: string;
  parentSession?: string;
  [key: string]: unknown;
}

/** A message as stored (any role; stored verbatim). */
export interface AgentMessage {
  role: string;
  timestamp?: number;
  [key: string]: unknown;
}

/** Text or content blocks. */
export type UserContent = string | Array<{ type: string; [key: string]: unknown }>;

/** Token usage with cost. */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
  cost: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  [key: string]: unknown;
}

/** Session lifecycle state. */
export type SessionState = "active" | "archived" | (string & {});

/** The agents-view status. */
export interface AgentStatus {
  summary: string;
  taskState?: string;
  sourceMessageCount?: number;
  [key: string]: unknown;
}

/** A repository snapshot. */
export interface GitState {
  [key: string]: unknown;
}

/** Fields every entry has. */
export interface EntryBase {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
  [key: string]: unknown;
}

/** A session entry (the tree's node payload). Unknown types travel as they are. */
export type Entry = EntryBase;

/** `store/create` and every call that opens a session. */
export interface SessionOpened {
  sessionId: string;
  sessionFile: string;
  header: SessionHeader;
  leafId: string | null;
}

export interface Appended {
  entryId: string;
}

export type Empty = Record<string, never>;

export interface Entries {
  entries: Entry[];
}
export interface OneEntry {
  entry: Entry;
}
export interface MaybeEntry {
  entry: Entry | null;
}
export interface Label {
  label: string | null;
}
export interface Branches {
  branches: Entry[][];
}
export interface TreeNode {
  entry: Entry;
  label: string | null;
  labelTimestamp: string | null;
  depth: number;
  children: number[];
}
export interface Tree {
  nodes: TreeNode[];
  roots: number[];
}
export interface SessionContext {
  messages: AgentMessage[];
  thinkingLevel?: Json;
  model: { provider: string; modelId: string } | null;
  serviceTier?: string;
}
export interface RetentionResult {
  retention: Json | null;
}
export interface HeaderResult {
  header: SessionHeader;
}
export interface Metadata {
  sessionId: string;
  sessionFile: string;
  sessionDir: string;
  cwd: string;
  sessionName: string | null;
  leafId: string | null;
}
export interface PathResult {
  path: string;
}
/** One session of a listing, as the reference renders its `SessionInfo` in JSON. */
export interface SessionInfoWire {
  path: string;
  id: string;
  cwd: string;
  name?: string | null;
  parentSessionPath?: string | null;
  created: string;
  modified: string;
  messageCount: number;
  firstMessage: string;
  allMessagesText?: string;
  [key: string]: unknown;
}
export interface Listing {
  sessions: SessionInfoWire[];
}
export interface Deleted {
  removed: string[];
}
export interface Imported {
  sessionId: string;
  sessionFile: string;
  alreadyImported: boolean;
  entries: number;
  issues: number;
}
export interface Exported {
  path: string;
  records: number;
  bytes: number;
}
export interface InitializeResult {
  protocolVersion: ProtocolVersion;
  serverInfo: PeerInfo;
}
export interface ListProgressParams {
  requestId: number | string;
  loaded: number;
  total: number;
}

/** A JSON-RPC error object. */
export interface ErrorObject {
  code: number;
  message: string;
  data?: { kind?: string; [key: string]: unknown } | null;
}

type S = { sessionId: string };
type D = { durability?: Durability };
type L = { limits?: ReadLimits };

/** Every method: its params and result. */
export interface Methods {
  initialize: [{ protocolVersion: ProtocolVersion; clientInfo?: PeerInfo }, InitializeResult];
  "store/create": [{ cwd: string; sessionId?: string; parentSession?: string }, SessionOpened];
  "store/open": [{ path?: string; sessionId?: string }, SessionOpened];
  "store/continueRecent": [{ cwd: string }, SessionOpened];
  "store/forkFrom": [{ source: string; targetCwd: string }, SessionOpened];
  "store/list": [{ cwd: string; progress?: boolean }, Listing];
  "store/listAll": [{ progress?: boolean }, Listing];
  "store/delete": [{ sessionId: string }, Deleted];
  "store/import": [{ path: string }, Imported];
  "store/export": [{ sessionId: string; path: string }, Exported];
  "session/close": [S, Empty];
  "session/sync": [S, Empty];
  "session/newSession": [S & { newSessionId?: string; parentSession?: string }, SessionOpened];
  "session/setSessionFile": [S & { path: string }, SessionOpened];
  "session/createBranchedSession": [S & { leafId: string }, SessionOpened];
  "session/appendMessage": [S & D & { message: AgentMessage }, Appended];
  "session/appendThinkingLevelChange": [S & D & { thinkingLevel: string }, Appended];
  "session/appendServiceTierChange": [S & D & { serviceTier: string }, Appended];
  "session/appendModelChange": [S & D & { provider: string; modelId: string }, Appended];
  "session/appendCompaction": [
    S & D & { summary: string; firstKeptEntryId: string; tokensBefore: number; details?: unknown; fromHook?: boolean },
    Appended,
  ];
  "session/appendCustomEntry": [S & D & { customType: string; data?: unknown }, Appended];
  "session/appendChildUsageAttribution": [S & D & { targetId: string; childUsage: Usage; aggregateUsage: Usage }, Appended];
  "session/appendSessionInfo": [S & D & { name: string }, Appended];
  "session/appendSessionState": [S & D & { state: SessionState }, Appended];
  "session/appendAgentStatus": [S & D & { status: AgentStatus }, Appended];
  "session/appendGitState": [S & D & { git: GitState }, Appended];
  "session/appendCustomMessageEntry": [
    S & D & { customType: string; content: UserContent; display: boolean; details?: unknown },
    Appended,
  ];
  "session/appendLabelChange": [S & D & { targetId: string; label?: string }, Appended];
  "session/appendEntry": [S & D & { entry: Partial<Entry> & { type: string } }, Appended];
  "session/branch": [S & { entryId: string | null }, Empty];
  "session/branchWithSummary": [S & D & { fromId: string | null; summary: string; details?: unknown; fromHook?: boolean }, Appended];
  "session/readLeafEntry": [S & L, MaybeEntry];
  "session/readEntry": [S & L & { entryId: string }, OneEntry];
  "session/readLabel": [S & L & { entryId: string }, Label];
  "session/readBranch": [S & L & { fromId?: string }, Entries];
  "session/readBranches": [S & L & { leafIds: string[] }, Branches];
  "session/readEntries": [S & L, Entries];
  "session/readTree": [S & L, Tree];
  "session/readEntryRetention": [S & { entryId: string }, RetentionResult];
  "session/buildSessionContext": [S & L, SessionContext];
  "session/getHeader": [S, HeaderResult];
  "session/getMetadata": [S, Metadata];
  "session/getArtifactDir": [S, PathResult];
}

export type Method = keyof Methods;
export type ParamsOf<M extends Method> = Methods[M][0];
export type ResultOf<M extends Method> = Methods[M][1];
