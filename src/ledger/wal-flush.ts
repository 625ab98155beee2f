import { closeSync, fdatasync, openSync } from "node:fs";

/**
 * Group commit for an SQLite database in WAL mode at `synchronous = NORMAL`.
 *
 * At NORMAL a commit writes its WAL frames to the OS without an fsync: it survives the process dying (kill -9), not a
 * power loss. `flush()` makes every commit made before the call durable with one `fdatasync` of the WAL file, run on
 * libuv's thread pool so the event loop keeps serving. Calls that arrive while a flush is running share the next one,
 * so N concurrent paid requests cost one disk sync, not N (better-sqlite3 is synchronous and SQLite has no
 * asynchronous commit, hence this small piece of our own).
 *
 * Why syncing the WAL file is enough: SQLite at NORMAL syncs the WAL before each checkpoint and the database file after
 * it, and recovery after a crash replays the WAL. SQLite deletes the WAL only when the last connection closes, and the
 * ledger's connection stays open for the life of the process, so the descriptor always names the live WAL.
 */
export interface WalFlusher {
  flush(): Promise<void>;
  close(): void;
}

type SyncFile = (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;

/** `sync` is `fs.fdatasync`; tests pass one they complete by hand. */
export function walFlusher(walPath: string, sync: SyncFile = fdatasync): WalFlusher {
  let fd: number | undefined;
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;

  const syncOnce = () =>
    new Promise<void>((resolve, reject) => {
      fd ??= openSync(walPath, "r");
      sync(fd, (err) => (err ? reject(err) : resolve()));
    });

  const start = (): Promise<void> => {
    const p = syncOnce().finally(() => {
      if (running === p) running = undefined;
    });
    running = p;
    return p;
  };

  const ignore = () => undefined;
  return {
    flush() {
      if (!running) return start();
      // The running sync may have started before this caller's commit reached the WAL: wait for the next one.
      queued ??= running.then(ignore, ignore).then(() => {
        queued = undefined;
        return start();
      });
      return queued;
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** For `:memory:` databases: nothing to make durable. */
export const noFlush: WalFlusher = { flush: async () => undefined, close: () => undefined };
