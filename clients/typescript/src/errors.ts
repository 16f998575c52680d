// Typed errors: one class per stable code of `session-protocol` (crates/session-protocol/src/error.rs,
// docs/rpc.md "Errors"), plus the client's own (`OwnerGoneError`, `OwnerUnavailableError`).
// Every error carries the owner's `code`, its `data.kind` and the library's fields in `data`.

import type { ErrorObject } from "./wire.js";

/** The stable codes (never change meaning; new errors get new codes). */
export const ErrorCode = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  OVERLOADED: -32001,
  NOT_INITIALIZED: -32002,
  ALREADY_INITIALIZED: -32003,
  UNSUPPORTED_PROTOCOL: -32004,
  LINE_TOO_LONG: -32005,
  TOO_DEEP: -32006,
  LOCKED: 1001,
  NOT_FOUND: 1002,
  SESSION_NOT_OPEN: 1003,
  ENTRY_NOT_FOUND: 1004,
  LIMIT_EXCEEDED: 1005,
  CORRUPT: 1006,
  UNSUPPORTED_VERSION: 1007,
  INVALID_ENTRY: 1008,
  EXISTS: 1009,
  LEGACY_JSONL: 1010,
  IO: 1011,
  STORE: 1099,
  /** Client side: the owner's connection ended with the request unanswered. */
  OWNER_GONE: -1,
  /** Client side: no owner answered and none could be started. */
  OWNER_UNAVAILABLE: -2,
} as const;

type Data = { kind?: string; [key: string]: unknown };

/** Every error of this package. `code` is the owner's (or a negative client code). */
export class SessionError extends Error {
  readonly code: number;
  readonly kind: string;
  readonly data: Data;
  /** The method whose call failed, when there was one. */
  method?: string;

  constructor(code: number, message: string, data?: Data | null) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data ?? {};
    this.kind = typeof this.data.kind === "string" ? this.data.kind : "unknown";
  }

  /** Whether the same request may succeed if sent again later (only `overloaded`). */
  get retryable(): boolean {
    return this.code === ErrorCode.OVERLOADED;
  }
}

/** A fault in the protocol itself (parse, invalid request/params, unknown method, …). */
export class ProtocolError extends SessionError {}
/** `-32001`: a queue is full; retry later. */
export class OverloadedError extends SessionError {}
/** `-32004`: the owner speaks another major version (the message names both). */
export class UnsupportedProtocolError extends SessionError {}
/** `1001`: another process owns the session (`holderPid`, `holderHost`). */
export class OwnedError extends SessionError {
  get path(): string {
    return String(this.data.path ?? "");
  }
  get holderPid(): number | undefined {
    return typeof this.data.holderPid === "number" ? this.data.holderPid : undefined;
  }
  get holderHost(): string | undefined {
    return typeof this.data.holderHost === "string" ? this.data.holderHost : undefined;
  }
}
/** `1002`: no such session. */
export class NotFoundError extends SessionError {}
/** `1003`: the session is not open on this connection. */
export class SessionNotOpenError extends SessionError {}
/** `1004`: no such entry (`entryId`). */
export class EntryNotFoundError extends SessionError {
  get entryId(): string {
    return String(this.data.entryId ?? "");
  }
}
/** `1005`: a read needs more than its limits; nothing was returned. */
export class LimitError extends SessionError {
  /** `sourceEntries` or `sourceBytes`. */
  get limit(): string {
    return String(this.data.limit ?? "");
  }
  get limitValue(): number {
    return Number(this.data.limitValue);
  }
  /** What the read needs (exactly when `exact`, else at least). */
  get needed(): number {
    return Number(this.data.needed);
  }
  get exact(): boolean {
    return this.data.exact === true;
  }
}
/** `1006`: the journal is corrupt at `offset`. */
export class CorruptError extends SessionError {}
/** `1007`: the journal's format version is not supported. */
export class UnsupportedVersionError extends SessionError {}
/** `1008`: the entry to append is not valid. */
export class InvalidEntryError extends SessionError {}
/** `1009`: a session with this id exists already. */
export class ExistsError extends SessionError {}
/** `1010`: a legacy JSONL file: import it (`SessionManager.importLegacy`). */
export class LegacyJsonlError extends SessionError {}
/** `1011`: a file-system operation failed (`path`, `op`, `detail`). */
export class IoError extends SessionError {}
/** `1099`: another library error; the message says what and where. */
export class StoreError extends SessionError {}
/** The owner's connection ended before the answer: the owner died or was stopped. */
export class OwnerGoneError extends SessionError {}
/** No owner answered and none could be started. */
export class OwnerUnavailableError extends SessionError {}

const byCode = new Map<number, new (code: number, message: string, data?: Data | null) => SessionError>([
  [ErrorCode.PARSE_ERROR, ProtocolError],
  [ErrorCode.INVALID_REQUEST, ProtocolError],
  [ErrorCode.METHOD_NOT_FOUND, ProtocolError],
  [ErrorCode.INVALID_PARAMS, ProtocolError],
  [ErrorCode.INTERNAL_ERROR, ProtocolError],
  [ErrorCode.NOT_INITIALIZED, ProtocolError],
  [ErrorCode.ALREADY_INITIALIZED, ProtocolError],
  [ErrorCode.LINE_TOO_LONG, ProtocolError],
  [ErrorCode.TOO_DEEP, ProtocolError],
  [ErrorCode.OVERLOADED, OverloadedError],
  [ErrorCode.UNSUPPORTED_PROTOCOL, UnsupportedProtocolError],
  [ErrorCode.LOCKED, OwnedError],
  [ErrorCode.NOT_FOUND, NotFoundError],
  [ErrorCode.SESSION_NOT_OPEN, SessionNotOpenError],
  [ErrorCode.ENTRY_NOT_FOUND, EntryNotFoundError],
  [ErrorCode.LIMIT_EXCEEDED, LimitError],
  [ErrorCode.CORRUPT, CorruptError],
  [ErrorCode.UNSUPPORTED_VERSION, UnsupportedVersionError],
  [ErrorCode.INVALID_ENTRY, InvalidEntryError],
  [ErrorCode.EXISTS, ExistsError],
  [ErrorCode.LEGACY_JSONL, LegacyJsonlError],
  [ErrorCode.IO, IoError],
  [ErrorCode.STORE, StoreError],
]);

/** The typed error of a JSON-RPC error object; an unknown code gives a plain `SessionError`. */
export function fromErrorObject(object: ErrorObject, method?: string): SessionError {
  const data = object.data && typeof object.data === "object" ? object.data : null;
  const Class = byCode.get(object.code) ?? SessionError;
  const error = new Class(object.code, String(object.message), data);
  if (method !== undefined) error.method = method;
  return error;
}
