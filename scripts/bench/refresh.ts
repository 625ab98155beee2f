/**
 * The refresh section of `npm run bench` (`--only refresh`), in a process of its own (run with --expose-gc) so its
 * RSS is the refresh's alone:
 *
 * 1. Candle to answer: a server built as src/server.ts builds it (live unlock data + refresh loop, app listening on
 *    127.0.0.1) starts on the shipped snapshot held back one day; a Binance stand-in (test/helpers/market-standin.ts:
 *    the real candles of the shipped data in Binance's klines format) serves up to that day. The stand-in then
 *    publishes the held-back candle; the time until GET /v1/tokens answers with it is measured, with the loop running
 *    at a short period (REFRESH_PERIOD_MS) — in production the wait is at most one REFRESH_INTERVAL_SECONDS plus the
 *    refresh's own duration, which is reported apart (fetch + validate + write + build + swap).
 * 2. RSS over 100 swaps: the unlock data swapped 100 times (alternating the two snapshots, each swap building a full
 *    store and event index while a request holds the previous generation), RSS and heap after a GC at swaps 1, 10, 50
 *    and 100.
 *
 *   node --expose-gc --import tsx scripts/bench/refresh.ts [--swaps 100] [--json out.json]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { asIfEarlier, binanceStandIn, downUrl } from "../../test/helpers/market-standin.js";
import { testConfig } from "../../test/helpers/app.js";
import { fakeGateway } from "../../test/helpers/fake-gateway.js";
import { buildApp } from "../../src/app.js";
import { createBenchmarkService } from "../../src/benchmark/service.js";
import { liveUnlockData, loadServedSnapshot, servedReports } from "../../src/refresh/boot.js";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { dataPath } from "../../src/files/paths.js";
import { buildUnlockStore, readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";

const { values: args } = parseArgs({
  options: {
    swaps: { type: "string", default: "100" },
    json: { type: "string" },
    period: { type: "string", default: "1000" },
  },
});
const SWAPS = Math.min(Math.max(Number(args.swaps) || 100, 2), 500);
const REFRESH_PERIOD_MS = Math.min(Math.max(Number(args.period) || 1000, 100), 60_000);
const log = (line: string) => process.stdout.write(`${line}\n`);
const mb = (n: number) => Math.round(n / 1024 / 1024);
const gc = () => (globalThis as { gc?: () => void }).gc?.();

async function main() {
  const full = readUnlockSnapshot(dataPath("unlocks.snapshot.json"));
  const lastShipped = full.tokens.find((t) => t.symbol === "ARB")?.market.as_of as string;
  const dayBefore = formatDay(parseDay(lastShipped) - 1);
  const earlier = asIfEarlier(full, 1);
  const tmp = mkdtempSync(join(tmpdir(), "p402-bench-refresh-"));
  const earlierFile = join(tmp, "earlier.json");
  writeFileSync(earlierFile, JSON.stringify(earlier));
  const binance = await binanceStandIn(full, dayBefore);
  const down = await downUrl();
  // Noon UTC of the day after the last closed candle the stand-in serves: its next candle is still open.
  const noonAfter = (day: string) => new Date(`${formatDay(parseDay(day) + 1)}T12:00:00Z`);
  let now = noonAfter(dayBefore);
  const clock = () => now;
  const config = testConfig({
    UNLOCKS_SNAPSHOT: earlierFile,
    DATA_DIR: join(tmp, "data"),
    REFRESH_INTERVAL_SECONDS: "3600",
    BINANCE_FUTURES_BASE_URL: binance.url,
    BYBIT_BASE_URL: down,
    COINGECKO_BASE_URL: down,
    DEFILLAMA_BASE_URL: down,
  });
  const loaded = loadServedSnapshot(config);
  const data = liveUnlockData(config, buildUnlockStore(loaded.snapshot, servedReports(config)), { clock });
  const refresher = data.refresh?.refresher;
  if (!refresher) throw new Error("refresh is off");
  const ledger = openLedger(":memory:");
  const app = await buildApp({
    config,
    unlocks: data.service,
    liveUnlocks: data.live,
    ...(data.refresh ? { freshness: data.refresh.freshness } : {}),
    benchmark: createBenchmarkService(loadCatalog(), { clock }),
    ledger,
    gateway: fakeGateway(),
    payTo: "0x00000000000000000000000000000000000000aa",
    facilitatorLabel: "bench",
    clock,
    logger: false,
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  const arbAsOf = async () => {
    const body = (await (await fetch(`${url}/v1/tokens`)).json()) as {
      tokens: { symbol: string; market: { price_as_of: string } }[];
    };
    return body.tokens.find((t) => t.symbol === "ARB")?.market.price_as_of;
  };
  try {
    // 1. candle → answer, with the loop running at REFRESH_PERIOD_MS.
    refresher.start(REFRESH_PERIOD_MS);
    await refresher.runOnce([]); // the first tick: nothing new at the source yet
    const startAsOf = await arbAsOf();
    if (startAsOf !== dayBefore) throw new Error(`did not start a day behind: ${startAsOf} (${dayBefore})`);
    const published = performance.now();
    now = noonAfter(lastShipped);
    binance.through = lastShipped;
    let seen = 0;
    while ((await arbAsOf()) !== lastShipped) {
      seen++;
      await new Promise((r) => setTimeout(r, 20));
      if (performance.now() - published > REFRESH_PERIOD_MS * 3 + 30_000)
        throw new Error("no refresh within 3 periods");
    }
    const candleToAnswerMs = performance.now() - published;
    await refresher.stop();
    // The refresh itself (fetch + validate + write + build + swap), one more day behind and triggered directly.
    const again = liveUnlockData(config, buildUnlockStore(earlier, servedReports(config)), { clock });
    binance.through = lastShipped;
    const t0 = performance.now();
    const run = await again.refresh?.refresher.runOnce(["binance"]);
    const refreshMs = performance.now() - t0;
    if (!run?.swapped) throw new Error("the timed refresh did not swap");
    log(
      `refresh: new candle at the source → answer ${Math.round(candleToAnswerMs)} ms with a ${REFRESH_PERIOD_MS} ms period (${seen} polls); one refresh (155 tokens + benchmark over HTTP, validate, write, build, swap) ${Math.round(refreshMs)} ms`,
    );

    // 2. RSS over SWAPS swaps, a request holding the previous generation across each one.
    const samples: { swap: number; rssMb: number; heapUsedMb: number }[] = [];
    gc();
    const before = process.memoryUsage();
    log(`before swaps: RSS ${mb(before.rss)} MB, heap ${mb(before.heapUsed)} MB`);
    for (let i = 1; i <= SWAPS; i++) {
      const held = data.live.current();
      await data.live.swap(i % 2 ? full : earlier);
      held.service.hasToken("ARB"); // the in-flight request's generation is alive across the swap
      await (await fetch(`${url}/v1/tokens`)).text(); // over HTTP, as buyers call: driven by inject, the heap grew by each response (not so over HTTP)
      if (i === 1 || i === 10 || i === 50 || i === SWAPS) {
        gc();
        const m = process.memoryUsage();
        samples.push({ swap: i, rssMb: mb(m.rss), heapUsedMb: mb(m.heapUsed) });
        log(`after swap ${i}: RSS ${mb(m.rss)} MB, heap ${mb(m.heapUsed)} MB`);
      }
    }
    const result = {
      candleToAnswerMs,
      refreshPeriodMs: REFRESH_PERIOD_MS,
      refreshMs,
      beforeRssMb: mb(before.rss),
      samples,
    };
    if (args.json) writeFileSync(args.json, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`REFRESH_BENCH ${JSON.stringify(result)}\n`);
  } finally {
    await refresher.stop();
    await app.close();
    await ledger.close();
    await binance.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `refresh bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
