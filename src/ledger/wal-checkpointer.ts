import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Checkpoints an SQLite WAL from a worker thread, so the event loop never copies the WAL into the database file.
 *
 * SQLite's automatic checkpoint runs inside whichever commit crosses its threshold, on the caller's thread: copying the
 * WAL and fsyncing both files there stalls every request for several ms. Here a second connection in a worker runs
 * `wal_checkpoint(PASSIVE)`, which never waits for (nor blocks) the writer; the writer's own automatic checkpoint is
 * left far out as a backstop (see sqlite.ts), so the WAL stays bounded if the worker lags or fails.
 *
 * The worker is a CommonJS string (`eval`) given the driver's absolute path, so it loads the same way from the
 * TypeScript sources (tsx, ESM), the tsc build and `npm start`'s CommonJS bundle, where there is no worker file
 * beside the code to point at.
 */
export interface CheckpointResult {
  /** 1 when the checkpoint could not run to completion (a reader or writer was in the way). */
  busy: number;
  /** Frames in the WAL. */
  log: number;
  /** Frames copied into the database file, this time or before. */
  checkpointed: number;
}

export interface WalCheckpointer {
  /** Counts one commit; asks for a checkpoint once enough have accumulated. */
  wrote(): void;
  /** Runs a checkpoint now, or joins the one in flight. Never rejects: `undefined` when the worker is gone. */
  checkpoint(): Promise<CheckpointResult | undefined>;
  /** Stops the trigger, lets a running checkpoint finish, closes the worker's connection and ends the worker. */
  close(): Promise<void>;
}

export interface WalCheckpointerOptions {
  /** Calls `tick` periodically and returns how to stop; the default is an unref'd interval. Tests drive it by hand. */
  every?: (tick: () => void) => () => void;
  /** Commits after which a checkpoint is asked for without waiting for the next tick. */
  maxCommits?: number;
  /** Each completed checkpoint's result (observability, tests). */
  onCheckpoint?: (result: CheckpointResult) => void;
  /** The worker failed (it is then gone for good; the caller falls back to SQLite's automatic checkpoint). */
  onError?: (err: Error) => void;
}

export const CHECKPOINT_INTERVAL_MS = 500;
export const CHECKPOINT_MAX_COMMITS = 200;

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
parentPort.on("message", (msg) => {
  if (msg === "close") {
    db.close();
    parentPort.postMessage({ closed: true });
    return;
  }
  parentPort.postMessage({ result: db.pragma("wal_checkpoint(PASSIVE)")[0] });
});
`;

const unrefInterval =
  (ms: number) =>
  (tick: () => void): (() => void) => {
    const timer = setInterval(tick, ms);
    timer.unref();
    return () => clearInterval(timer);
  };

type Reply = { result: CheckpointResult } | { closed: true };

export function walCheckpointer(dbPath: string, options: WalCheckpointerOptions = {}): WalCheckpointer {
  const maxCommits = options.maxCommits ?? CHECKPOINT_MAX_COMMITS;
  const onError = options.onError ?? (() => undefined);
  let worker: Worker | undefined;
  let failed = false;
  let closed = false;
  let commits = 0;
  let inFlight: Promise<CheckpointResult | undefined> | undefined;
  // Replies come back in the order requests were posted; `undefined` settles a waiter whose worker died.
  const waiting: ((reply: Reply | undefined) => void)[] = [];

  const fail = (err: Error) => {
    if (failed) return;
    failed = true;
    stopTimer();
    for (const settle of waiting.splice(0)) settle(undefined);
    const w = worker;
    worker = undefined;
    void w?.terminate().catch(() => undefined);
    onError(err);
  };

  const spawn = (): Worker => {
    // Resolved here, where module resolution works in every runtime (the bundle defines import.meta.url).
    const driver = createRequire(import.meta.url).resolve("better-sqlite3");
    const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { path: dbPath, driver } });
    // Never what keeps the process alive: an unclosed ledger must not hold a test run or a shutdown open.
    w.unref();
    w.on("message", (reply: Reply) => waiting.shift()?.(reply));
    w.on("error", fail);
    w.on("exit", (code) => {
      if (!closed) fail(new Error(`WAL checkpoint worker exited (code ${code})`));
      // Dying while closing is not reported, but close() must not wait for an answer that will never come.
      for (const settle of waiting.splice(0)) settle(undefined);
    });
    return w;
  };

  const ask = (msg: "checkpoint" | "close"): Promise<Reply | undefined> =>
    new Promise((resolve) => {
      if (failed) return resolve(undefined);
      try {
        worker ??= spawn();
      } catch (err) {
        fail(err instanceof Error ? err : new Error(String(err)));
        return resolve(undefined);
      }
      waiting.push(resolve);
      worker.postMessage(msg);
    });

  const checkpoint = (): Promise<CheckpointResult | undefined> => {
    if (inFlight) return inFlight;
    if (failed || closed) return Promise.resolve(undefined);
    commits = 0;
    const p = ask("checkpoint").then((reply) => {
      if (!reply || !("result" in reply)) return undefined;
      options.onCheckpoint?.(reply.result);
      return reply.result;
    });
    inFlight = p;
    void p.finally(() => {
      if (inFlight === p) inFlight = undefined;
    });
    return p;
  };

  const stopTimer = (options.every ?? unrefInterval(CHECKPOINT_INTERVAL_MS))(() => {
    if (commits > 0) void checkpoint();
  });

  return {
    wrote() {
      commits++;
      if (commits >= maxCommits && !inFlight) void checkpoint();
    },
    checkpoint,
    async close() {
      if (closed) return;
      closed = true;
      stopTimer();
      await inFlight;
      const w = worker;
      if (!w || failed) return;
      // Held open until its connection is closed, even if nothing else keeps the process alive.
      w.ref();
      await ask("close");
      worker = undefined;
      await w.terminate();
    },
  };
}

/** For `:memory:` databases: no file, nothing to checkpoint. */
export const noCheckpointer: WalCheckpointer = {
  wrote: () => undefined,
  checkpoint: async () => undefined,
  close: async () => undefined,
};
