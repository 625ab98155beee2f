import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteLedger } from "../../src/ledger/sqlite.js";
import { walCheckpointer } from "../../src/ledger/wal-checkpointer.js";
import { settleNew, testClaim } from "../helpers/ledger.js";

const dirs: string[] = [];
const tempPath = () => {
  const dir = mkdtempSync(join(tmpdir(), "ckpt-"));
  dirs.push(dir);
  return join(dir, "db.sqlite");
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A trigger the test fires by hand, and whether it has been stopped. */
const manualTrigger = () => {
  const t = { tick: () => {}, stopped: false };
  return {
    t,
    every: (tick: () => void) => {
      t.tick = tick;
      return () => {
        t.stopped = true;
      };
    },
  };
};

/** A WAL database the way the ledger opens it, with automatic checkpoints off so only the worker copies frames. */
const walDb = (path: string) => {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (v TEXT)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  return {
    db,
    write: (n: number) =>
      db.transaction(() => {
        for (let i = 0; i < n; i++) insert.run("x".repeat(500));
      })(),
  };
};

describe("WAL checkpointer", () => {
  it("copies the writer's WAL frames into the database file from its worker", async () => {
    const path = tempPath();
    const { db, write } = walDb(path);
    const { every } = manualTrigger();
    const ckpt = walCheckpointer(path, { every });
    write(200);
    const result = await ckpt.checkpoint();
    expect(result?.busy).toBe(0);
    expect(result?.log).toBeGreaterThan(0);
    expect(result?.checkpointed).toBe(result?.log);
    // Nothing left for the writer's own checkpoint to copy.
    const [own] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number; checkpointed: number }[];
    expect(own?.checkpointed).toBe(own?.log);
    await ckpt.close();
    db.close();
  });

  it("runs on a tick only when something was written, and after maxCommits without one", async () => {
    const path = tempPath();
    const { db } = walDb(path);
    /** How many checkpoints ran for `commits` commits and `ticks` ticks (close() waits for a running one). */
    const run = async (commits: number, ticks: number) => {
      let ran = 0;
      const { t, every } = manualTrigger();
      const ckpt = walCheckpointer(path, { every, maxCommits: 3, onCheckpoint: () => ran++ });
      for (let i = 0; i < commits; i++) ckpt.wrote();
      for (let i = 0; i < ticks; i++) t.tick();
      await ckpt.close();
      return ran;
    };
    expect(await run(0, 1)).toBe(0);
    expect(await run(1, 1)).toBe(1);
    expect(await run(2, 0)).toBe(0);
    expect(await run(3, 0)).toBe(1);
    db.close();
  });

  it("close() stops the trigger and ends the worker; later calls do nothing", async () => {
    const path = tempPath();
    const { db, write } = walDb(path);
    const { t, every } = manualTrigger();
    const ckpt = walCheckpointer(path, { every });
    write(5);
    const running = ckpt.checkpoint();
    await ckpt.close(); // waits for the running checkpoint
    expect(await running).toBeDefined();
    expect(t.stopped).toBe(true);
    expect(await ckpt.checkpoint()).toBeUndefined();
    await ckpt.close();
    db.close();
  });

  it("reports a failed worker once, stops its trigger and resolves instead of throwing", async () => {
    const errors: Error[] = [];
    const { t, every } = manualTrigger();
    const ckpt = walCheckpointer(join(tempPath(), "missing", "db.sqlite"), {
      every,
      onError: (e) => errors.push(e),
    });
    expect(await ckpt.checkpoint()).toBeUndefined();
    expect(await ckpt.checkpoint()).toBeUndefined();
    expect(errors).toHaveLength(1);
    expect(t.stopped).toBe(true);
    await ckpt.close();
  });
});

describe("sqlite ledger checkpoints", () => {
  const claimAndSettle = (ledger: ReturnType<typeof openSqliteLedger>, n: number) =>
    settleNew(ledger, testClaim(`0x${n.toString(16)}`, new Date("2026-11-22T10:00:00Z")), {
      status: "settled",
      transaction: `0xtx${n}`,
    });

  it("checkpoints after a ledger's commits through its worker: the database file takes the WAL's pages", async () => {
    const path = tempPath();
    const { t, every } = manualTrigger();
    const ledger = openSqliteLedger(path, { checkpoint: { every, maxCommits: 1_000_000 } });
    for (let i = 0; i < 20; i++) await claimAndSettle(ledger, i);
    const before = statSync(path).size;
    t.tick();
    // Watched without a connection of our own (it would checkpoint too); the loop ends as soon as the worker has run.
    while (statSync(path).size === before) await new Promise((resolve) => setImmediate(resolve));
    expect(statSync(path).size).toBeGreaterThan(before);
    await ledger.close();
    expect(t.stopped).toBe(true);
    // SQLite removes the WAL only when its last connection closes: the worker's was closed before the ledger's.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it("a :memory: ledger starts no worker and closes at once", async () => {
    let installed = false;
    const every = () => {
      installed = true;
      return () => {};
    };
    const ledger = openSqliteLedger(":memory:", { checkpoint: { every } });
    await claimAndSettle(ledger, 1);
    await ledger.close();
    // No trigger, hence no worker: there is no checkpointer for a database without a file.
    expect(installed).toBe(false);
  });
});
