// A store: one owner connection for one (home, sessions directory), opened on first use.
// `SessionManager`'s statics pick the store their `sessionDir` argument names.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import type { Connection } from "./connection.js";
import { connectOwner, resolveLocation, sessionsDir, type OwnerOptions } from "./owner.js";
import type { ChildProcess } from "node:child_process";

export class Store {
  private connecting: Promise<Connection> | undefined;
  private connection: Connection | undefined;
  private cleanup: (() => Promise<void>) | undefined;
  /** The owner this store started (socket transport), if it had to start one. */
  startedOwner: ChildProcess | undefined;
  /** Counts the connections opened: a manager opened on an earlier one reopens its
   *  session on the current one. */
  generation = 0;

  constructor(readonly options: OwnerOptions) {}

  /** The sessions directory this store serves. */
  get sessionDir(): string {
    return sessionsDir(resolveLocation(this.options));
  }

  /** The connection, opened (and the owner started) on first use; reopened after the
   *  owner went away, so the next call after an owner's death starts a new one. */
  async conn(): Promise<Connection> {
    if (this.connection && !this.connection.closed) return this.connection;
    if (!this.connecting) {
      this.connecting = connectOwner(this.options).then(
        ({ connection, started }) => {
          this.connection = connection;
          this.generation++;
          if (started) this.startedOwner = started;
          this.connecting = undefined;
          return connection;
        },
        (e) => {
          this.connecting = undefined;
          throw e;
        },
      );
    }
    return this.connecting;
  }

  /** Closes the connection (the owner closes the sessions no one else uses). */
  async close(): Promise<void> {
    const c = this.connection ?? (this.connecting ? await this.connecting.catch(() => undefined) : undefined);
    this.connection = undefined;
    if (c) {
      const child = c.child;
      // Wait for a private owner to exit (it syncs and closes its sessions first); the
      // child is referenced again so that the wait keeps the event loop alive.
      const exited = child && child.exitCode === null ? new Promise((r) => child.once("exit", r)) : undefined;
      if (exited) child?.ref();
      c.close();
      if (exited) await exited;
    }
    if (this.cleanup) {
      const f = this.cleanup;
      this.cleanup = undefined;
      await f();
    }
  }

  /** A private owner on a temporary store, removed by `close()` (for `inMemory()`). */
  static async temporary(options: OwnerOptions): Promise<Store> {
    const home = await mkdtemp(join(tmpdir(), "bcs-mem-"));
    const store = new Store({ ...options, home, sessionDir: join(home, "sessions"), transport: "stdio" });
    store.cleanup = () => rm(home, { recursive: true, force: true });
    return store;
  }
}
