// Typed errors: one class per stable code of `session-protocol` (crates/session-protocol/src/error.rs,
// docs/rpc.md "Errors"), plus the client's own (`OwnerGoneError`, `OwnerUnavailableError`).
// Every error carries the owner's `code`, its `data.kind` and the library's fields in `data`.

import { ERROR_KINDS, type ErrorKind, type ErrorObject } from "./wire.js";

/** The stable codes (never change meaning; new errors get new codes), from the
 *  generated `ERROR_KINDS`, and the client's own negative ones. */
export const ErrorCode = {
  PARSE_ERROR: ERROR_KINDS.parse.code,
  INVALID_REQUEST: ERROR_KINDS.invalidRequest.code,
  METHOD_NOT_FOUND: ERROR_KINDS.methodNotFound.code,
  INVALID_PARAMS: ERROR_KINDS.invalidParams.code,
  INTERNAL_ERROR: ERROR_KINDS.internal.code,
  OVERLOADED: ERROR_KINDS.overloaded.code,
  NOT_INITIALIZED: ERROR_KINDS.notInitialized.code,
  ALREADY_INITIALIZED: ERROR_KINDS.alreadyInitialized.code,
  UNSUPPORTED_PROTOCOL: ERROR_KINDS.unsupportedProtocol.code,
  LINE_TOO_LONG: ERROR_KINDS.lineTooLong.code,
  TOO_DEEP: ERROR_KINDS.tooDeep.code,
  LOCKED: ERROR_KINDS.locked.code,
  NOT_FOUND: ERROR_KINDS.notFound.code,
  SESSION_NOT_OPEN: ERROR_KINDS.sessionNotOpen.code,
  ENTRY_NOT_FOUND: ERROR_KINDS.entryNotFound.code,
  LIMIT_EXCEEDED: ERROR_KINDS.limitExceeded.code,
  CORRUPT: ERROR_KINDS.corrupt.code,
  UNSUPPORTED_VERSION: ERROR_KINDS.unsupportedVersion.code,
  INVALID_ENTRY: ERROR_KINDS.invalidEntry.code,
  EXISTS: ERROR_KINDS.exists.code,
  LEGACY_JSONL: ERROR_KINDS.legacyJsonl.code,
  IO: ERROR_KINDS.io.code,
  NOT_A_JOURNAL: ERROR_KINDS.notAJournal.code,
  STORE: ERROR_KINDS.store.code,
  /** Client side: the owner's connection ended with the request unanswered. */
  OWNER_GONE: -1,
  /** Client side: no owner answered and none could be started. */
  OWNER_UNAVAILABLE: -2,
  /** Client side: the owner did not answer a call within its timeout. */
  CALL_TIMEOUT: -3,
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

  /** Whether the same request may succeed if sent again later (`overloaded`). */
  get retryable(): boolean {
    const known = (ERROR_KINDS as Record<string, { code: number; retryable: boolean }>)[this.kind];
    return known !== undefined && known.code === this.code && known.retryable;
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
/** `1012`: the file is not a session journal (empty, or not the journal signature);
 *  `path`, and `detail` saying what was found. */
export class NotAJournalError extends SessionError {
  get path(): string {
    return String(this.data.path ?? "");
  }
}
/** `1099`: another library error; the message says what and where. */
export class StoreError extends SessionError {}
/** The owner's connection ended before the answer: the owner died or was stopped. */
export class OwnerGoneError extends SessionError {}
/** No owner answered and none could be started. */
export class OwnerUnavailableError extends SessionError {}
/** The owner did not answer a call within its timeout (`callTimeoutMs`); `method` names
 *  the call (`initialize` while connecting) and `timeoutMs` the time. The connection goes
 *  on (a late answer is dropped); nothing says whether the owner performed the call: an
 *  append may be in the journal. */
export class CallTimeoutError extends SessionError {
  get timeoutMs(): number {
    return Number(this.data.timeoutMs);
  }
}

type ErrorClass = new (code: number, message: string, data?: Data | null) => SessionError;

/** The class of each error kind the protocol defines (every kind of `ERROR_KINDS`). */
const byKind: Record<ErrorKind, ErrorClass> = {
  parse: ProtocolError,
  invalidRequest: ProtocolError,
  methodNotFound: ProtocolError,
  invalidParams: ProtocolError,
  internal: ProtocolError,
  notInitialized: ProtocolError,
  alreadyInitialized: ProtocolError,
  lineTooLong: ProtocolError,
  tooDeep: ProtocolError,
  overloaded: OverloadedError,
  unsupportedProtocol: UnsupportedProtocolError,
  locked: OwnedError,
  notFound: NotFoundError,
  sessionNotOpen: SessionNotOpenError,
  entryNotFound: EntryNotFoundError,
  limitExceeded: LimitError,
  corrupt: CorruptError,
  unsupportedVersion: UnsupportedVersionError,
  invalidEntry: InvalidEntryError,
  exists: ExistsError,
  legacyJsonl: LegacyJsonlError,
  io: IoError,
  notAJournal: NotAJournalError,
  store: StoreError,
};

const byCode = new Map<number, ErrorClass>(
  (Object.keys(ERROR_KINDS) as ErrorKind[]).map((kind) => [ERROR_KINDS[kind].code, byKind[kind]]),
);

/** The typed error of a JSON-RPC error object; an unknown code gives a plain `SessionError`. */
export function fromErrorObject(object: ErrorObject, method?: string): SessionError {
  const data = object.data && typeof object.data === "object" && !Array.isArray(object.data) ? (object.data as Data) : null;
  const Class = byCode.get(object.code) ?? SessionError;
  const error = new Class(object.code, String(object.message), data);
  if (method !== undefined) error.method = method;
  return error;
}
