// Following a session or the store (docs/rpc.md `session/follow`, `store/follow`): the
// owner's notifications for one subscription, handed to callbacks, as the package's
// listings hand `onProgress`/`onSession`. A follow lasts until `close()` or the end of
// its connection (`onEnd`); several follows of one session on one connection share the
// owner's subscription, which the last `close()` ends.

import type { Connection } from "./connection.js";
import type { SessionError } from "./errors.js";
import type { AppendedParams, Entry, SessionLaggedParams, StoreChangedParams } from "./wire.js";

/** The callbacks of `SessionManager.follow`. */
export interface SessionFollowHandlers {
  /** Each entry appended after `lastEntryId`, by any client, as stored, in journal
   *  order, once its append is acknowledged. */
  onEntry: (entry: Entry) => void;
  /** Notifications were dropped (this process read too slowly): re-read the entries
   *  after the last one seen (`readEntries`); notifications resume after this, so an
   *  entry may arrive both ways (skip ids already seen). */
  onLagged?: () => void;
  /** The connection ended (the owner went away or the store was shut down): no more
   *  entries. Follow again once the session is reopened. */
  onEnd?: (error: SessionError) => void;
}

/** The callbacks of `SessionManager.followStore` (the agents view). */
export interface StoreFollowHandlers {
  /** A session was created, renamed, deleted, or its lifecycle state or agent status
   *  changed, through this owner. */
  onChange: (change: StoreChangedParams) => void;
  /** Changes were dropped (this process read too slowly): re-list with `listAll`. */
  onLagged?: () => void;
  /** The connection ended: no more changes. */
  onEnd?: (error: SessionError) => void;
}

/** A running follow. */
export interface Following {
  /** Stops the callbacks (and, for the last follow of it on its connection, the owner's
   *  subscription). Harmless twice or after the connection ended. */
  close(): Promise<void>;
}

/** A running follow of a session. */
export interface SessionFollowing extends Following {
  /** The last entry appended before the follow began (`null` before any): read the
   *  history up to it, then apply `onEntry`'s entries. */
  readonly lastEntryId: string | null;
}

/** How many follows of each subscription (a session id, or "" for the store) run on a
 *  connection. */
const subscriptions = new WeakMap<Connection, Map<string, number>>();

function count(c: Connection, key: string, by: number): number {
  let m = subscriptions.get(c);
  if (!m) {
    m = new Map();
    subscriptions.set(c, m);
  }
  const n = (m.get(key) ?? 0) + by;
  if (n > 0) m.set(key, n);
  else m.delete(key);
  return n;
}

/** Registers `onNotification` on `c`, then subscribes with `subscribe`; `close`
 *  unregisters and, for the last follow of `key`, calls `unsubscribe`. */
async function follow<T>(
  c: Connection,
  key: string,
  onNotification: (method: string, params: unknown) => void,
  onEnd: ((error: SessionError) => void) | undefined,
  subscribe: () => Promise<T>,
  unsubscribe: () => Promise<unknown>,
): Promise<{ answer: T; close: () => Promise<void> }> {
  // Listen first: a notification may follow the answer at once.
  const stop = c.listen(onEnd ? { onNotification, onClose: onEnd } : { onNotification });
  count(c, key, 1);
  let open = true;
  const close = async () => {
    if (!open) return;
    open = false;
    stop();
    if (count(c, key, -1) === 0 && !c.closed) await unsubscribe();
  };
  try {
    return { answer: await subscribe(), close };
  } catch (e) {
    open = false;
    stop();
    count(c, key, -1);
    throw e;
  }
}

export async function followSession(c: Connection, sessionId: string, handlers: SessionFollowHandlers): Promise<SessionFollowing> {
  const { answer, close } = await follow(
    c,
    `session:${sessionId}`,
    (method, params) => {
      if (method === "session/appended") {
        const p = params as AppendedParams;
        if (p?.sessionId === sessionId) handlers.onEntry(p.entry);
      } else if (method === "session/lagged") {
        if ((params as SessionLaggedParams)?.sessionId === sessionId) handlers.onLagged?.();
      }
    },
    handlers.onEnd,
    () => c.call("session/follow", { sessionId }),
    () => c.call("session/unfollow", { sessionId }),
  );
  return { lastEntryId: answer.lastEntryId ?? null, close };
}

export async function followStore(c: Connection, handlers: StoreFollowHandlers): Promise<Following> {
  const { close } = await follow(
    c,
    "store",
    (method, params) => {
      if (method === "store/changed") handlers.onChange(params as StoreChangedParams);
      else if (method === "store/lagged") handlers.onLagged?.();
    },
    handlers.onEnd,
    () => c.call("store/follow", {}),
    () => c.call("store/unfollow", {}),
  );
  return { close };
}
