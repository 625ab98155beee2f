import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLedger } from "../../src/ledger/embedded.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import type { liveUnlockData } from "../../src/refresh/boot.js";
import { checkListing } from "../../src/sources/bazaar/bazaar.js";
import { checkContinuity } from "../../src/sources/candles/binance.js";
import { checkTotalMove } from "../../src/sources/candles/refresh.js";
import { checkAgainstOtherSource, checkCirculating } from "../../src/sources/coingecko/circulating.js";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { PriceSeries, UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { TEST_PAY_TO, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";
import { liveApp } from "../helpers/live-app.js";
import { asIfEarlier, downUrl } from "../helpers/market-standin.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

/**
 * A hostile Binance and CoinGecko on 127.0.0.1: each attacked symbol gets one attack, every other symbol answers with
 * no new candle (so any change to a paid answer could only come from an attack getting through).
 */
const SHIPPED_LAST = "2026-03-18";
const HELD_BACK = 3;
const EARLIER_LAST = formatDay(parseDay(SHIPPED_LAST) - HELD_BACK);
const ATTACKS = {
  ARB: "compound", // each new close 15× the one before: passes the 20×-per-candle check, compounds to 3375×
  APT: "huge", // an endless body, paused after its first chunk until the test has measured /health
  STRK: "drip", // one byte every 20 ms, never done: only the time cap ends it
  TIA: "redirect", // 302 to another host
  ZK: "truncated", // Content-Length promised, connection closed mid-body
  PYTH: "html", // a CDN's HTML error page with status 200
} as const;
/**
 * The time cap runs on the test's clock: every answer's deadline is a signal the test holds, and the drip's is fired
 * once its body has started (the real timeout is set past the test's own, so only the injected deadline can end the
 * drip; without a time cap the run would never finish). The size cap is small so a run is short (default 16 MiB).
 */
const TIMEOUT_MS = 120_000;
const deadlines = new Map<string, AbortController>();
const LIMITS = {
  maxBytes: 2 * 1024 * 1024,
  timeoutMs: TIMEOUT_MS,
  deadline: (ms: number, url: string) => {
    expect(ms).toBe(TIMEOUT_MS);
    const c = new AbortController();
    deadlines.set(url, c);
    return c.signal;
  },
};
/** RSS may grow by at most this much over the hostile run (the huge body alone would be unbounded without the cap). */
const RSS_BOUND = 96 * 1024 * 1024;

const DAY = 86_400_000;
const now = new Date(`${formatDay(parseDay(EARLIER_LAST) + HELD_BACK + 1)}T12:00:00Z`);
const clock = () => now;

let full: UnlockSnapshot;
let dataDir: string;
let server: Server;
let app: FastifyInstance;
let data: ReturnType<typeof liveUnlockData>;
let ledger: ReturnType<typeof openLedger>;
const gateway = fakeGateway();
const open = new Set<ServerResponse>();
let hugeStarted!: () => void;
const hugeStartedP = new Promise<void>((r) => {
  hugeStarted = r;
});
let releaseHuge!: () => void;
const hugeReleased = new Promise<void>((r) => {
  releaseHuge = r;
});
let hugeBytesSent = 0;
let dripStarted!: () => void;
const dripStartedP = new Promise<void>((r) => {
  dripStarted = r;
});
let dripClosed!: () => void;
const dripClosedP = new Promise<void>((r) => {
  dripClosed = r;
});
const redirectsFollowed: string[] = [];

function candles(series: PriceSeries, symbol: string, limit: number): unknown[] {
  const last = parseDay(EARLIER_LAST);
  const attack = ATTACKS[symbol.replace(/USDT$/, "") as keyof typeof ATTACKS];
  const rows: unknown[] = [];
  const through = attack === "compound" ? last + HELD_BACK : last;
  let close = series.close[last + 1 - parseDay(series.start)] as number;
  for (let d = through - limit + 1; d <= through; d++) {
    const held = series.close[d + 1 - parseDay(series.start)];
    if (d <= last) close = typeof held === "number" ? held : close;
    else close *= 15;
    rows.push([d * DAY, "0", "0", "0", String(close), "0", (d + 1) * DAY - 1, "1000000", 0, "0", "0", "0"]);
  }
  return rows;
}

beforeAll(async () => {
  full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
  const earlier = asIfEarlier(full, HELD_BACK);
  const bySymbol = new Map<string, PriceSeries>();
  for (const t of earlier.tokens) if (t.prices) bySymbol.set(`${t.symbol}USDT`, t.prices);
  bySymbol.set(`${earlier.benchmark.symbol}USDT`, earlier.benchmark.prices);
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/api/v3/coins/markets") {
      // ARB at ten times its max supply of 1e10.
      res.writeHead(200, { "content-type": "application/json" }).end(
        JSON.stringify([
          {
            id: "arbitrum",
            symbol: "arb",
            current_price: 0.4,
            circulating_supply: 1e11,
            max_supply: 2e11,
            last_updated: now.toISOString(),
          },
        ]),
      );
      return;
    }
    const symbol = url.searchParams.get("symbol") ?? "";
    const series = bySymbol.get(symbol);
    if (url.pathname !== "/fapi/v1/klines" || !series) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end('{"code":-1121,"msg":"Invalid symbol."}');
      return;
    }
    const attack = ATTACKS[symbol.replace(/USDT$/, "") as keyof typeof ATTACKS];
    if (attack === "redirect") {
      redirectsFollowed.push(url.pathname);
      res.writeHead(302, { location: "https://attacker.invalid/klines.json" }).end();
      return;
    }
    if (attack === "html") {
      res.writeHead(200, { "content-type": "text/html" }).end("<!DOCTYPE html><html><body>502</body></html>");
      return;
    }
    if (attack === "huge") {
      open.add(res);
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = `${JSON.stringify(["0", "0", "0", "0", "1", "0", "0", "1", 0, "0", "0", "0"])},`.repeat(
        1000,
      );
      res.write(`[${chunk}`);
      hugeBytesSent += chunk.length + 1;
      hugeStarted();
      void hugeReleased.then(function more() {
        // Written for as long as the reader reads: the client's cap is what stops it.
        while (!res.destroyed && hugeBytesSent < 400 * 1024 * 1024) {
          hugeBytesSent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
      });
      res.on("close", () => open.delete(res));
      return;
    }
    if (attack === "drip") {
      open.add(res);
      res.writeHead(200, { "content-type": "application/json" });
      res.write("[", () => dripStarted());
      const t = setInterval(() => (res.destroyed ? clearInterval(t) : res.write(" ")), 20);
      res.on("close", () => {
        clearInterval(t);
        open.delete(res);
        dripClosed();
      });
      return;
    }
    const body = JSON.stringify(candles(series, symbol, Number(url.searchParams.get("limit") ?? 5)));
    if (attack === "truncated") {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) });
      res.write(body.slice(0, body.length >> 1));
      setImmediate(() => res.destroy());
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = mkdtempSync(join(tmpdir(), "p402-hostile-"));
  const earlierFile = join(dir, "earlier.snapshot.json");
  writeFileSync(earlierFile, JSON.stringify(earlier));
  dataDir = join(dir, "data");
  const down = await downUrl();
  const config = testConfig({
    UNLOCKS_SNAPSHOT: earlierFile,
    DATA_DIR: dataDir,
    REFRESH_INTERVAL_SECONDS: "3600",
    BINANCE_FUTURES_BASE_URL: base,
    BYBIT_BASE_URL: down,
    COINGECKO_BASE_URL: `${base}/api/v3`,
    DEFILLAMA_BASE_URL: down,
  });
  ledger = openLedger(":memory:");
  ({ app, data } = await liveApp({ config, clock, ledger, gateway, limits: LIMITS }));
}, 60_000);

afterAll(async () => {
  releaseHuge();
  for (const r of open) r.destroy();
  await data?.refresh?.refresher.stop();
  await app?.close();
  await ledger?.close();
  await new Promise<void>((r) => server.close(() => r()));
});

const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
const paid = async (url: string): Promise<string> => {
  const res = await app.inject({
    method: "GET",
    url,
    headers: { "payment-signature": b64(v2Proof(requirementsV2(PRICES.upcoming, terms))) },
  });
  expect(res.statusCode).toBe(200);
  return res.body;
};

interface SourceRow {
  source: string;
  last_error: string | null;
  failure_kinds: string[];
  quarantined: number;
  failed: number;
}

describe("a hostile source cannot poison or freeze the service", () => {
  it("the per-candle check alone lets 15× a day through; the total-move bound does not", () => {
    const c = [
      { day: 1, close: 15, volume: 1 },
      { day: 2, close: 225, volume: 1 },
    ];
    expect(() => checkContinuity(1, c)).not.toThrow();
    expect(() => checkTotalMove(1, c)).toThrow(/15\.0× the last good close 1 \(bound 10×/);
  });

  it("a close the other source puts over 3× away is refused; one near it, or with no recent other figure, is not", () => {
    const cg = { name: "CoinGecko", price: 1, day: 100 };
    expect(() => checkAgainstOtherSource("close", 1.4, 101, cg, null)).not.toThrow();
    expect(() => checkAgainstOtherSource("close", 3.5, 101, cg, null)).toThrow(
      /3\.50× CoinGecko's 1 \(bound 3×/,
    );
    expect(() => checkAgainstOtherSource("close", 3.5, 110, cg, null)).not.toThrow();
    expect(() => checkAgainstOtherSource("close", 3.5, 101, null, null)).not.toThrow();
  });

  it("a reported supply must follow the schedule's movement since the last report", () => {
    const prev = {
      token: "X",
      date: "2026-01-01",
      circulating_supply: "1000",
      source: "coingecko" as const,
      coin_id: "x",
      as_of: "2026-01-01T00:00:00.000Z",
    };
    const cliff = {
      recipient: "Team",
      category: "team" as const,
      kind: "cliff" as const,
      start: "2026-01-15",
      end: null,
      amount_tokens: 2000,
      steps: null,
      step_days: null,
      source_type: "aggregator" as const,
      timing_precision: "day" as const,
      source_url: null,
    };
    const at = new Date("2026-02-01T00:00:00Z");
    const bounds = { maxSupply: 10_000, schedule: [cliff] };
    expect(() => checkCirculating("X", 3000, at, bounds, prev)).not.toThrow(); // 1000 + the 2000 cliff
    expect(() => checkCirculating("X", 4400, at, { ...bounds, schedule: [] }, prev)).toThrow(/bound ×1\.5/);
    expect(() => checkCirculating("X", 600, at, bounds, prev)).toThrow(/against 1000 reported/);
    expect(() => checkCirculating("X", 20_000, at, bounds, undefined)).toThrow(/above the max supply 10000/);
  });

  it("a Bazaar listing many times larger than the last, or with absurd prices, is refused", () => {
    const item = (amount: string) => ({ accepts: [{ amount }] });
    expect(() => checkListing([item("10000")], null)).not.toThrow();
    expect(() => checkListing(Array(60).fill(item("1")), 10)).toThrow(/60 items against 10/);
    expect(() => checkListing([item("1"), item("1e30")], null)).toThrow(/implausible prices/);
    expect(() => checkListing([item("1"), item(String(10n ** 15n))], null)).toThrow(/over 1000000000000/);
  });

  it("every attack fails with its reason; paid answers stay byte-identical; /health answers throughout; RSS bounded", async () => {
    const upcoming = "/v1/unlocks/upcoming?days=60";
    const before = await paid(upcoming);
    const rssBefore = process.memoryUsage().rss;
    const swaps = data.live.swaps();
    const run = data.refresh?.refresher.runOnce(["binance", "coingecko"]);
    // The huge body is mid-stream (its sender paused on the test's barrier until /health has answered): a /health that
    // waited on the refresh would never answer, and the test would time out instead of passing.
    await hugeStartedP;
    const health = await app.inject({ method: "GET", url: "/health" });
    expect(health.statusCode).toBe(200);
    releaseHuge();
    // And again while the rest of it streams.
    const health2 = await app.inject({ method: "GET", url: "/health" });
    expect(health2.statusCode).toBe(200);
    // The drip is mid-body; its time is up now, on the test's clock.
    await dripStartedP;
    const drip = [...deadlines].find(([url]) => url.includes("symbol=STRKUSDT"));
    expect(drip).toBeDefined();
    drip?.[1].abort(new DOMException("the answer's time is up", "TimeoutError"));
    await dripClosedP; // the reader dropped the connection rather than wait on
    const result = await run;
    const rssGrowth = process.memoryUsage().rss - rssBefore;
    expect(rssGrowth).toBeLessThan(RSS_BOUND);
    // The stream was cut at the cap: far less was sent than the sender would have sent.
    expect(hugeBytesSent).toBeLessThan(64 * 1024 * 1024);

    expect(data.live.swaps()).toBe(swaps);
    expect(await paid(upcoming)).toBe(before);

    const tokens = (await app.inject({ method: "GET", url: "/v1/tokens" })).json() as {
      sources: SourceRow[];
    };
    const bn = tokens.sources.find((s) => s.source === "binance") as SourceRow;
    // Each attack, by token, with the reason the status gives (the status text names the first five).
    const reasons = new Map(
      result?.outcomes
        .filter((o) => o.source === "binance")
        .flatMap((o) => o.failed.map((f) => [f.item, f.error])),
    );
    expect([...reasons.keys()].sort()).toEqual(Object.keys(ATTACKS).sort());
    expect(reasons.get("ARB")).toMatch(/^implausible: close [\d.]+ on \S+ is 15\.0× the last good close/);
    expect(reasons.get("APT")).toBe("answer is over the 2097152-byte cap");
    expect(reasons.get("STRK")).toBe("timed out");
    expect(reasons.get("TIA")).toBe("redirected away from the configured host: refused");
    expect(reasons.get("ZK")).toMatch(/^answer cut short/);
    expect(reasons.get("PYTH")).toBe("HTML page instead of JSON");
    expect(bn.last_error).toMatch(/^6 of 155 failed, previous data kept: /);
    expect(bn.last_error).not.toMatch(/127\.0\.0\.1|attacker\.invalid/);
    expect(bn.failure_kinds).toEqual(
      expect.arrayContaining(["implausible", "too_large", "timeout", "redirect", "cut_short"]),
    );
    expect(bn.quarantined).toBe(1);
    expect(bn.failed).toBe(6);
    expect(redirectsFollowed).toHaveLength(1);

    const cg = tokens.sources.find((s) => s.source === "coingecko") as SourceRow;
    expect(cg.last_error).toMatch(
      /ARB \(implausible: circulating 100000000000 is above the max supply 10000000000\)/,
    );
    expect(cg.failure_kinds).toContain("implausible");

    // Kept aside with its reason, never served.
    const q = JSON.parse(readFileSync(join(dataDir, "quarantine", "binance", "ARB.json"), "utf8")) as {
      reason: string;
      refused: { candles: unknown[] };
    };
    expect(q.reason).toMatch(/implausible/);
    expect(q.refused.candles.length).toBeGreaterThan(0);
    expect(existsSync(join(dataDir, "quarantine", "coingecko", "ARB.json"))).toBe(true);
    expect(existsSync(join(dataDir, "circulating-reported", "live.json"))).toBe(false);

    const ready = (await app.inject({ method: "GET", url: "/ready" })).json() as {
      data_sources: SourceRow[];
    };
    expect(ready.data_sources.find((s) => s.source === "binance")?.failure_kinds).toContain("too_large");
    const metrics = await app.observability.metrics.scrape();
    expect(metrics).toMatch(/pressure402_data_source_failure\{source="binance",kind="too_large"\} 1/);
    expect(metrics).toMatch(/pressure402_data_source_quarantined_items\{source="coingecko"\} 1/);
  }, 30_000);
});
