// One JSON-RPC 2.0 connection to a session owner: newline-delimited JSON over a Unix
// socket or a child's stdin/stdout (docs/rpc.md "Messages"). Requests are matched to
// answers by id; `store/listProgress` notifications go to the request that asked, every
// other notification to the listeners (`listen`: the follow wrappers). While no request
// is pending and no listener registered, the connection does not keep node's event loop
// alive, so a program that is done exits without closing it.

import type { ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";

import { CallTimeoutError, ErrorCode, OwnerGoneError, fromErrorObject, type SessionError } from "./errors.js";
import type { ErrorObject, ListProgressParams, Method, ParamsOf, ResultOf } from "./wire.js";

/** An answer line may be large (a complete read of 64 MiB of source data, escaped). */
const MAX_ANSWER_BYTES = 1024 * 1024 * 1024;

type Pending = {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: SessionError) => void;
  onProgress?: (loaded: number, total: number) => void;
  timer?: ReturnType<typeof setTimeout>;
};

/** Per-call options. */
export interface CallOptions {
  /** This call's timeout in milliseconds, instead of the connection's `callTimeoutMs`;
   *  `null` waits without a bound. */
  timeoutMs?: number | null;
}

/** Receives the owner's notifications (other than `store/listProgress`) on one
 *  connection: `session/appended`, `session/lagged`, `store/changed`, `store/lagged`. */
export interface NotificationListener {
  onNotification(method: string, params: unknown): void;
  /** The connection ended: no more notifications. */
  onClose?(error: SessionError): void;
}

/** Something whose handle can stop holding the event loop open. */
type Refable = { ref?: () => unknown; unref?: () => unknown };

export interface ConnectionParts {
  input: Readable;
  output: Writable;
  /** Handles to ref while requests are pending (socket, pipes, child). */
  handles: Refable[];
  /** Ends the transport. */
  end: () => void;
  /** Text describing the transport, for errors. */
  describe: string;
  /** The child owner of a stdio transport. */
  child?: ChildProcess;
  /** The tail of a stdio owner's stderr, for the "owner gone" message. */
  stderrTail?: () => string;
}

export class Connection {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<NotificationListener>();
  private chunks: Buffer[] = [];
  private buffered = 0;
  private closedError: SessionError | undefined;
  private refd = true;
  readonly describe: string;
  readonly child: ChildProcess | undefined;
  /** Why a private owner could not be started, if it could not. */
  spawnFailed: string | undefined;
  /** How long a call waits for its answer before failing with `CallTimeoutError`, in
   *  milliseconds; `undefined` (the default) waits without a bound. A call's own
   *  `timeoutMs` overrides it. */
  callTimeoutMs: number | undefined;

  constructor(private readonly parts: ConnectionParts) {
    this.describe = parts.describe;
    this.child = parts.child;
    parts.input.on("data", (chunk: Buffer) => this.onData(chunk));
    parts.input.on("end", () => this.onClose("the owner closed the connection"));
    parts.input.on("close", () => this.onClose("the owner closed the connection"));
    parts.input.on("error", (e: Error) => this.onClose(e.message));
    parts.output.on("error", (e: Error) => this.onClose(e.message));
    this.setRef(false);
  }

  /** Whether the connection has ended. */
  get closed(): boolean {
    return this.closedError !== undefined;
  }

  /** Calls `method` and resolves with its result, or rejects with its typed error
   *  (`CallTimeoutError` when no answer comes within the call's timeout). */
  call<M extends Method>(
    method: M,
    params: ParamsOf<M>,
    onProgress?: (loaded: number, total: number) => void,
    options?: CallOptions,
  ): Promise<ResultOf<M>> {
    if (this.closedError) {
      return Promise.reject(this.gone(method, this.closedError.message));
    }
    const timeoutMs = options?.timeoutMs !== undefined ? options.timeoutMs : this.callTimeoutMs;
    const id = this.nextId++;
    const line = JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n";
    return new Promise<ResultOf<M>>((resolve, reject) => {
      const pending: Pending = { method, resolve: resolve as (v: unknown) => void, reject };
      if (onProgress) pending.onProgress = onProgress;
      if (timeoutMs !== undefined && timeoutMs !== null) {
        pending.timer = setTimeout(() => this.timedOut(id, timeoutMs), timeoutMs);
      }
      this.pending.set(id, pending);
      this.setRef(true);
      this.parts.output.write(line);
    });
  }

  /** Fails a call left unanswered; its answer, if it comes later, is dropped. */
  private timedOut(id: number, timeoutMs: number): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    this.updateRef();
    const e = new CallTimeoutError(
      ErrorCode.CALL_TIMEOUT,
      `${pending.method}: the owner did not answer within ${timeoutMs} ms (${this.describe})`,
      { kind: "callTimeout", method: pending.method, timeoutMs },
    );
    e.method = pending.method;
    pending.reject(e);
  }

  /** Hands the owner's notifications to `listener` until the returned function is
   *  called. While a listener is registered the connection keeps node's event loop
   *  alive (a follower waits for notifications). On a closed connection it throws
   *  `OwnerGoneError`. */
  listen(listener: NotificationListener): () => void {
    if (this.closedError) throw this.gone("listen", this.closedError.message);
    this.listeners.add(listener);
    this.updateRef();
    return () => {
      this.listeners.delete(listener);
      this.updateRef();
    };
  }

  /** Ends the connection; pending requests fail with `OwnerGoneError`. */
  close(): void {
    if (this.closedError) return;
    this.parts.end();
    this.onClose("the connection was closed by this client");
  }

  private gone(method: string, why: string): SessionError {
    const tail = this.parts.stderrTail?.().trim();
    const message = `${this.describe}: owner gone during ${method}: ${why}${tail ? ` (owner stderr: ${tail})` : ""}`;
    const e = new OwnerGoneError(ErrorCode.OWNER_GONE, message, { kind: "ownerGone" });
    e.method = method;
    return e;
  }

  private onClose(why: string): void {
    if (this.closedError) return;
    this.closedError = this.gone("close", why);
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) {
      clearTimeout(p.timer);
      p.reject(this.gone(p.method, why));
    }
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l.onClose?.(this.gone("follow", why));
    this.setRef(false);
  }

  /** Holds the event loop while a request is pending or a listener registered. */
  private updateRef(): void {
    this.setRef(!this.closedError && (this.pending.size > 0 || this.listeners.size > 0));
  }

  private setRef(on: boolean): void {
    if (this.refd === on) return;
    this.refd = on;
    for (const h of this.parts.handles) {
      if (on) h.ref?.();
      else h.unref?.();
    }
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      const line = this.chunks.length === 0 ? piece : Buffer.concat([...this.chunks, piece]);
      this.chunks = [];
      this.buffered = 0;
      this.onLine(line);
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.buffered += rest.length;
      if (this.buffered > MAX_ANSWER_BYTES) {
        // A line this long is no answer this client can hold: end the connection.
        this.chunks = [];
        this.parts.end();
        this.onClose(`an answer line exceeds ${MAX_ANSWER_BYTES} bytes`);
        return;
      }
      this.chunks.push(rest);
    }
  }

  private onLine(line: Buffer): void {
    if (line.length === 0) return;
    let message: {
      id?: number | string | null;
      method?: string;
      params?: unknown;
      result?: unknown;
      error?: ErrorObject;
    };
    try {
      message = JSON.parse(line.toString("utf8"));
    } catch {
      return; // not JSON: nothing to match it to
    }
    if (message === null || typeof message !== "object") return;
    if (typeof message.method === "string" && message.id === undefined) {
      if (message.method === "store/listProgress") {
        const p = message.params as ListProgressParams;
        const target = typeof p?.requestId === "number" ? this.pending.get(p.requestId) : undefined;
        target?.onProgress?.(p.loaded, p.total);
      } else {
        for (const l of [...this.listeners]) l.onNotification(message.method, message.params);
      }
      return;
    }
    if (typeof message.id !== "number") return;
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    clearTimeout(pending.timer);
    this.updateRef();
    if (message.error) pending.reject(fromErrorObject(message.error, pending.method));
    else pending.resolve(message.result);
  }
}
