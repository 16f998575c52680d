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
  initialize: { params: { protocolVersion: ProtocolVersion; clientInfo?: PeerInfo }; result: InitializeResult };
  "store/create": { params: { cwd: string; sessionId?: string; parentSession?: string }; result: SessionOpened };
  "store/open": { params: { path?: string; sessionId?: string }; result: SessionOpened };
  "store/continueRecent": { params: { cwd: string }; result: SessionOpened };
  "store/forkFrom": { params: { source: string; targetCwd: string }; result: SessionOpened };
  "store/list": { params: { cwd: string; progress?: boolean }; result: Listing };
  "store/listAll": { params: { progress?: boolean }; result: Listing };
  "store/delete": { params: { sessionId: string }; result: Deleted };
  "store/import": { params: { path: string }; result: Imported };
  "store/export": { params: { sessionId: string; path: string }; result: Exported };
  "session/close": { params: S; result: Empty };
  "session/sync": { params: S; result: Empty };
  "session/newSession": { params: S & { newSessionId?: string; parentSession?: string }; result: SessionOpened };
  "session/setSessionFile": { params: S & { path: string }; result: SessionOpened };
  "session/createBranchedSession": { params: S & { leafId: string }; result: SessionOpened };
  "session/appendMessage": { params: S & D & { message: AgentMessage }; result: Appended };
  "session/appendThinkingLevelChange": { params: S & D & { thinkingLevel: string }; result: Appended };
  "session/appendServiceTierChange": { params: S & D & { serviceTier: string }; result: Appended };
  "session/appendModelChange": { params: S & D & { provider: string; modelId: string }; result: Appended };
  "session/appendCompaction": { params: S & D & { summary: string; firstKeptEntryId: string; tokensBefore: number; details?: unknown; fromHook?: boolean }; result: Appended };
  "session/appendCustomEntry": { params: S & D & { customType: string; data?: unknown }; result: Appended };
  "session/appendChildUsageAttribution": { params: S & D & { targetId: string; childUsage: Usage; aggregateUsage: Usage }; result: Appended };
  "session/appendSessionInfo": { params: S & D & { name: string }; result: Appended };
  "session/appendSessionState": { params: S & D & { state: SessionState }; result: Appended };
  "session/appendAgentStatus": { params: S & D & { status: AgentStatus }; result: Appended };
  "session/appendGitState": { params: S & D & { git: GitState }; result: Appended };
  "session/appendCustomMessageEntry": { params: S & D & { customType: string; content: UserContent; display: boolean; details?: unknown }; result: Appended };
  "session/appendLabelChange": { params: S & D & { targetId: string; label?: string }; result: Appended };
  "session/appendEntry": { params: S & D & { entry: Partial<Entry> & { type: string } }; result: Appended };
  "session/branch": { params: S & { entryId: string | null }; result: Empty };
  "session/branchWithSummary": { params: S & D & { fromId: string | null; summary: string; details?: unknown; fromHook?: boolean }; result: Appended };
  "session/readLeafEntry": { params: S & L; result: MaybeEntry };
  "session/readEntry": { params: S & L & { entryId: string }; result: OneEntry };
  "session/readLabel": { params: S & L & { entryId: string }; result: Label };
  "session/readBranch": { params: S & L & { fromId?: string }; result: Entries };
  "session/readBranches": { params: S & L & { leafIds: string[] }; result: Branches };
  "session/readEntries": { params: S & L; result: Entries };
  "session/readTree": { params: S & L; result: Tree };
  "session/readEntryRetention": { params: S & { entryId: string }; result: RetentionResult };
  "session/buildSessionContext": { params: S & L; result: SessionContext };
  "session/getHeader": { params: S; result: HeaderResult };
  "session/getMetadata": { params: S; result: Metadata };
  "session/getArtifactDir": { params: S; result: PathResult };
}

export type Method = keyof Methods;
export type ParamsOf<M extends Method> = Methods[M]["params"];
export type ResultOf<M extends Method> = Methods[M]["result"];
