import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ingest } from "../../scripts/ingest.js";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { PriceSeries, UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { marketFromSeries } from "../../src/unlocks/market-snapshot.js";
import { type BinanceStandIn, binanceStandIn, cut, downUrl } from "../helpers/market-standin.js";

const root = new URL("../../", import.meta.url).pathname;
const SHIPPED_LAST = "2026-03-18";
const HELD_BACK = 10;

let full: UnlockSnapshot;
let dir: string;
let earlierFile: string;
let binance: BinanceStandIn;
let down: string;
const now = new Date("2026-03-19T12:00:00Z");

beforeAll(async () => {
  full = readUnlockSnapshot(join(root, "data/unlocks.snapshot.json"));
  // Two tokens and the benchmark, held back: small enough to run in-process in a moment.
  const keep = new Set(["ARB", "APT"]);
  const earlier: UnlockSnapshot = {
    ...full,
    benchmark: { ...full.benchmark, prices: cut(full.benchmark.prices, HELD_BACK) },
    tokens: full.tokens
      .filter((t) => keep.has(t.symbol))
      .map((t) => {
        const prices = cut(t.prices as PriceSeries, HELD_BACK);
        return { ...t, prices, market: marketFromSeries(prices) };
      }),
  };
  dir = mkdtempSync(join(tmpdir(), "p402-ingest-"));
  earlierFile = join(dir, "earlier.json");
  writeFileSync(earlierFile, JSON.stringify(earlier));
  binance = await binanceStandIn(full, SHIPPED_LAST);
  down = await downUrl();
}, 60_000);
afterAll(() => binance?.close());

const run = async (args: string[], env: Record<string, string>) => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await ingest(args, {
    env,
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    clock: () => now,
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
};

describe("npm run ingest: the loop's code, once", () => {
  it("offline: exits 1 naming each source, and the snapshot is byte for byte unchanged", async () => {
    const file = join(dir, "offline.json");
    writeFileSync(file, readFileSync(earlierFile));
    const before = readFileSync(file);
    const r = await run(["--base", file, "--out", file, "--data-dir", join(dir, "data")], {
      BINANCE_FUTURES_BASE_URL: down,
      BYBIT_BASE_URL: down,
      COINGECKO_BASE_URL: down,
    });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^ingest: binance: 3 of 3 not refreshed .*ARB \(unreachable \(ECONNREFUSED\)\)/m);
    expect(r.err).toMatch(/^ingest: coingecko: 2 of 2 not refreshed/m);
    expect(r.out).toMatch(/left unchanged: no new candle was fetched/);
    expect(readFileSync(file).equals(before)).toBe(true);
  });

  it("one failing source: the others' data is written, the failing one's kept, and the exit status says so", async () => {
    const file = join(dir, "partial.json");
    writeFileSync(file, readFileSync(earlierFile));
    binance.poison.set("APT", "html");
    const r = await run(
      ["--base", file, "--out", file, "--sources", "binance", "--data-dir", join(dir, "data")],
      {
        BINANCE_FUTURES_BASE_URL: binance.url,
        BYBIT_BASE_URL: down, // the cross-venue check finds Bybit down and judges Binance on its own checks
      },
    );
    binance.poison.delete("APT");
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      "ingest: binance: 1 of 3 not refreshed (kept as they were): APT (HTML page instead of JSON)",
    );
    const after = readUnlockSnapshot(file);
    expect(after.generated_at).toBe(now.toISOString());
    const arb = after.tokens.find((t) => t.symbol === "ARB");
    expect(arb?.market.as_of).toBe(SHIPPED_LAST);
    expect(arb?.market.price_usd).toBe(full.tokens.find((t) => t.symbol === "ARB")?.market.price_usd);
    const apt = after.tokens.find((t) => t.symbol === "APT");
    expect(apt?.market.as_of).toBe(formatDay(parseDay(SHIPPED_LAST) - HELD_BACK));
  });

  it("as a process offline: status 1 and the source named on stderr", () => {
    const file = join(dir, "cli.json");
    writeFileSync(file, readFileSync(earlierFile));
    const before = readFileSync(file);
    const res = spawnSync(
      process.execPath,
      ["--import", "tsx", "scripts/ingest.ts", "--base", file, "--out", file, "--sources", "binance"],
      {
        cwd: root,
        env: {
          ...process.env,
          BINANCE_FUTURES_BASE_URL: down,
          BYBIT_BASE_URL: down,
          DATA_DIR: join(dir, "data"),
        },
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/ingest: binance: 3 of 3 not refreshed/);
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});
