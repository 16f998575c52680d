// @base-context/sessions: the seed's SessionManager API over the Base Context session
// owner (`bcs serve`, docs/rpc.md). See README.md.

export { SessionManager } from "./session-manager.js";
export type { SessionInfo, ListCallbacks, NewSessionOptions, Limits } from "./session-manager.js";
export type { SessionTreeNode } from "./tree.js";
export type { Following, SessionFollowHandlers, SessionFollowing, StoreFollowHandlers } from "./follow.js";
export { Connection, type CallOptions, type NotificationListener } from "./connection.js";
export { connectOwner, resolveLocation, socketPath, type OwnerOptions, type StoreLocation } from "./owner.js";
export * from "./errors.js";
export * from "./wire.js";
// The error codes as values (the generated `ErrorCode` is their type).
export { ErrorCode } from "./errors.js";
