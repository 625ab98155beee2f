import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { walFlusher } from "../../src/ledger/wal-flush.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const walFile = () => {
  const dir = mkdtempSync(join(tmpdir(), "wal-flush-"));
  dirs.push(dir);
  const path = join(dir, "ledger.sqlite-wal");
  writeFileSync(path, "frames");
  return path;
};

/** A hand-driven fdatasync: each call waits until the test completes it. */
function manualSync() {
  const pending: ((err: NodeJS.ErrnoException | null) => void)[] = [];
  return {
    sync: (_fd: number, done: (err: NodeJS.ErrnoException | null) => void) => {
      pending.push(done);
    },
    get started() {
      return pending.length;
    },
    complete(err: NodeJS.ErrnoException | null = null) {
      const next = pending.shift();
      if (!next) throw new Error("no sync is running");
      next(err);
    },
  };
}
const settledFlag = (p: Promise<unknown>) => {
  const state = { done: false, error: undefined as unknown };
  p.then(
    () => {
      state.done = true;
    },
    (e: unknown) => {
      state.error = e;
    },
  );
  return state;
};
const tick = () => new Promise((r) => setImmediate(r));

describe("walFlusher (group commit)", () => {
  it("callers that arrive while a sync runs share the next one, which starts only after it", async () => {
    const disk = manualSync();
    const wal = walFlusher(walFile(), disk.sync);
    const first = settledFlag(wal.flush());
    await tick();
    expect(disk.started).toBe(1);
    // These commits may have reached the WAL after the running sync began: the running one does not cover them.
    const later = [settledFlag(wal.flush()), settledFlag(wal.flush()), settledFlag(wal.flush())];
    await tick();
    expect(disk.started).toBe(1);
    disk.complete();
    await tick();
    expect(first.done).toBe(true);
    expect(later.some((s) => s.done)).toBe(false);
    expect(disk.started).toBe(1); // the shared second sync, started once
    disk.complete();
    await tick();
    expect(later.every((s) => s.done)).toBe(true);
    wal.close();
  });

  it("a failed sync fails its callers (a real fault), and the next flush syncs again", async () => {
    const disk = manualSync();
    const wal = walFlusher(walFile(), disk.sync);
    const failed = settledFlag(wal.flush());
    await tick();
    disk.complete(Object.assign(new Error("EIO"), { code: "EIO" }));
    await tick();
    expect(failed.done).toBe(false);
    expect(String(failed.error)).toContain("EIO");
    const again = settledFlag(wal.flush());
    await tick();
    disk.complete();
    await tick();
    expect(again.done).toBe(true);
    wal.close();
  });

  it("syncs a real file with fs.fdatasync", async () => {
    const wal = walFlusher(walFile());
    await expect(Promise.all([wal.flush(), wal.flush(), wal.flush()])).resolves.toHaveLength(3);
    wal.close();
  });
});
