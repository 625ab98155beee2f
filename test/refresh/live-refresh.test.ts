import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLedger } from "../../src/ledger/embedded.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import type { liveUnlockData } from "../../src/refresh/boot.js";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { TEST_PAY_TO, testConfig } from "../helpers/app.js";
import { fakeGateway } from "../helpers/fake-gateway.js";
import { liveApp } from "../helpers/live-app.js";
import { asIfEarlier, type BinanceStandIn, binanceStandIn, downUrl } from "../helpers/market-standin.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

/** The last closed candle in the shipped data (data/market-history primary files end there). */
const SHIPPED_LAST = "2026-03-18";
const HELD_BACK = 21;
const EARLIER_LAST = formatDay(parseDay(SHIPPED_LAST) - HELD_BACK); // 2026-02-25

const POISONED = { APT: "jump", STRK: "html", TIA: "empty", ZK: "truncated" } as const;

let full: UnlockSnapshot;
let binance: BinanceStandIn;
let dataDir: string;
let now = new Date(`${formatDay(parseDay(SHIPPED_LAST) + 1)}T12:00:00Z`);
const clock = () => now;
let app: FastifyInstance;
let data: ReturnType<typeof liveUnlockData>;
let ledger: ReturnType<typeof openLedger>;
const gateway = fakeGateway();

beforeAll(async () => {
  full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
  const dir = mkdtempSync(join(tmpdir(), "p402-refresh-"));
  const earlierFile = join(dir, "earlier.snapshot.json");
  writeFileSync(earlierFile, JSON.stringify(asIfEarlier(full, HELD_BACK)));
  dataDir = join(dir, "data");
  // The stand-in serves the real candles through the shipped last day; the server starts 21 days behind.
  binance = await binanceStandIn(full, SHIPPED_LAST);
  for (const [sym, p] of Object.entries(POISONED)) binance.poison.set(sym, p);
  const down = await downUrl();
  const config = testConfig({
    UNLOCKS_SNAPSHOT: earlierFile,
    DATA_DIR: dataDir,
    REFRESH_INTERVAL_SECONDS: "3600",
    BINANCE_FUTURES_BASE_URL: binance.url,
    BYBIT_BASE_URL: down,
    COINGECKO_BASE_URL: `${down}/api/v3`,
    DEFILLAMA_BASE_URL: down,
  });
  ledger = openLedger(":memory:");
  let seeded: boolean;
  ({ app, data, seeded } = await liveApp({ config, clock, ledger, gateway }));
  expect(seeded).toBe(true);
}, 120_000);

afterAll(async () => {
  await data.refresh?.refresher.stop();
  await app?.close();
  await ledger?.close();
  await binance?.close();
});

interface TokenRow {
  symbol: string;
  market: { price_as_of: string; stale_days: number };
}
interface SourceRow {
  source: string;
  last_success: string | null;
  last_attempt: string | null;
  last_error: string | null;
  failed: number;
  data_as_of: string | null;
  age_seconds: number | null;
}
const tokens = async () => {
  const res = await app.inject({ method: "GET", url: "/v1/tokens" });
  expect(res.statusCode).toBe(200);
  return res.json() as { tokens: TokenRow[]; sources: SourceRow[] };
};
const tokenRow = (body: { tokens: TokenRow[] }, sym: string) =>
  body.tokens.find((t) => t.symbol === sym) as TokenRow;
const source = (body: { sources?: SourceRow[]; data_sources?: SourceRow[] }, name: string) =>
  (body.sources ?? body.data_sources ?? []).find((s) => s.source === name) as SourceRow;

const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
const paidUpcoming = () =>
  app.inject({
    method: "GET",
    url: "/v1/unlocks/upcoming?days=60&limit=500&view=full",
    headers: { "payment-signature": b64(v2Proof(requirementsV2(PRICES.upcoming, terms))) },
  });
interface UpcomingItem {
  token: string;
  unlock_event_id: string;
  days_until: number;
  market: { price_as_of: string; stale_days: number; price_usd: number; liquidity_confidence?: number };
}

describe("the running service refreshes its market data from the source, without a restart", () => {
  it("starts on the earlier snapshot: every Binance token priced at the held-back day", async () => {
    const body = await tokens();
    expect(tokenRow(body, "ARB").market).toMatchObject({
      price_as_of: EARLIER_LAST,
      stale_days: HELD_BACK + 1,
    });
    const res = await paidUpcoming();
    expect(res.statusCode).toBe(200);
    const items = (res.json() as { unlocks: UpcomingItem[] }).unlocks;
    const binanceItems = items.filter((i) => i.token !== "BLAST");
    expect(binanceItems.length).toBeGreaterThan(5);
    for (const i of binanceItems) expect(i.market.price_as_of).toBe(EARLIER_LAST);
  });

  it("one refresh later answers with the real later close; poisoned and down sources keep their last good data", async () => {
    const before = await paidUpcoming();
    const beforeItems = (before.json() as { unlocks: UpcomingItem[] }).unlocks;
    // The loop's first tick runs at start; a later runOnce waits for it (runs never overlap): no sleeping.
    data.refresh?.refresher.start(3_600_000);
    await data.refresh?.refresher.runOnce([]);
    expect(data.live.swaps()).toBe(1);

    const body = await tokens();
    expect(tokenRow(body, "ARB").market).toEqual(
      expect.objectContaining({ price_as_of: SHIPPED_LAST, stale_days: 1 }),
    );
    // Poisoned answers never replaced good data: still the held-back day.
    for (const sym of Object.keys(POISONED))
      expect(tokenRow(body, sym).market.price_as_of).toBe(EARLIER_LAST);
    // Bybit is down: BLAST keeps its series (it ends 2025-11-12 in the shipped data).
    expect(tokenRow(body, "BLAST").market.price_as_of).toBe("2025-11-12");

    const bn = source(body, "binance");
    expect(bn.failed).toBe(4);
    expect(bn.last_success).toBeNull();
    expect(bn.last_attempt).toBe(now.toISOString());
    expect(bn.data_as_of).toBe(SHIPPED_LAST);
    expect(bn.last_error).toMatch(/APT \(close [\d.]+ on 2026-03-18 is more than 20× off/);
    expect(bn.last_error).toMatch(/STRK \(HTML page instead of JSON\)/);
    expect(bn.last_error).toMatch(/TIA \(empty answer: no closed candle\)/);
    expect(bn.last_error).toMatch(/ZK \(not valid JSON/);
    expect(source(body, "bybit").last_error).toMatch(/BLAST \(unreachable/);
    expect(source(body, "coingecko").last_error).toMatch(/unreachable/);
    expect(bn.last_error).not.toMatch(/127\.0\.0\.1|http:/);

    // A paid answer now prices the same events at the later close, with the real figure of that candle.
    const after = await paidUpcoming();
    expect(after.statusCode).toBe(200);
    const items = (after.json() as { unlocks: UpcomingItem[] }).unlocks;
    const fullClose = (sym: string, day: string): number | null => {
      const series = full.tokens.find((t) => t.symbol === sym)?.prices;
      if (!series) return null;
      return series.close[parseDay(day) + 1 - parseDay(series.start)] ?? null;
    };
    let moved = 0;
    for (const i of items) {
      // Each figure is the real close of the candle it names, from the data the stand-in served.
      expect(i.market.price_usd).toBe(fullClose(i.token, i.market.price_as_of));
      const was = beforeItems.find((b) => b.token === i.token && b.unlock_event_id === i.unlock_event_id);
      if (i.token in POISONED || i.token === "BLAST") {
        expect(i.market.price_as_of <= EARLIER_LAST).toBe(true);
        if (was) expect(i.market).toEqual(was.market);
      } else if (was && i.market.price_as_of > was.market.price_as_of) {
        moved++;
        expect(i.market.stale_days).toBeLessThan(was.market.stale_days);
      }
      // A future release is valued at the latest close (an ongoing stream, days_until 0, at its own start).
      if (i.days_until > 0 && !(i.token in POISONED) && i.token !== "BLAST")
        expect(i.market).toMatchObject({ price_as_of: SHIPPED_LAST, stale_days: 1 });
    }
    expect(moved).toBeGreaterThan(5);
    expect(
      items.filter((i) => i.days_until > 0 && !(i.token in POISONED) && i.token !== "BLAST").length,
    ).toBeGreaterThan(5);
    // The refreshed snapshot is in DATA_DIR (a restart serves it), validated and with the real closes.
    const written = JSON.parse(
      readFileSync(join(dataDir, "unlocks.snapshot.json"), "utf8"),
    ) as UnlockSnapshot;
    expect(written.tokens.find((t) => t.symbol === "ARB")?.market.as_of).toBe(SHIPPED_LAST);
    expect(written.tokens.find((t) => t.symbol === "APT")?.market.as_of).toBe(EARLIER_LAST);
  });

  it("shows each source's freshness on GET /, /ready and /metrics", async () => {
    const root = (await app.inject({ method: "GET", url: "/" })).json() as { data_sources: SourceRow[] };
    expect(source(root, "binance").last_attempt).toBe(now.toISOString());
    const ready = (await app.inject({ method: "GET", url: "/ready" })).json() as {
      data_sources: SourceRow[];
    };
    expect(source(ready, "bybit").last_error).toMatch(/unreachable/);
    const metrics = await app.observability.metrics.scrape();
    expect(metrics).toMatch(/pressure402_data_source_failed_items\{source="binance"\} 4/);
    expect(metrics).toMatch(/pressure402_data_source_last_attempt_timestamp_seconds\{source="binance"\} \d+/);
  });

  it("a 429 with Retry-After changes nothing and holds the source off until then", async () => {
    now = new Date(now.getTime() + 86_400_000); // a day later: one more candle is due
    binance.through = formatDay(parseDay(SHIPPED_LAST)); // the source has nothing newer… and rate-limits us
    binance.rateLimitAll = true;
    const swaps = data.live.swaps();
    const asked = binance.requests.length;
    await data.refresh?.refresher.runOnce(["binance"]);
    expect(data.live.swaps()).toBe(swaps);
    expect(binance.requests.length - asked).toBeLessThanOrEqual(4); // stopped at the first 429s (4 in flight)
    const bn = source(await tokens(), "binance");
    expect(bn.last_error).toMatch(/HTTP 429 \(retry after 120 s\)/);
    expect(tokenRow(await tokens(), "ARB").market.price_as_of).toBe(SHIPPED_LAST);
    // Due again only after Retry-After: the next tick leaves it alone.
    const klines = () => binance.requests.filter((r) => r.startsWith("/fapi/v1/klines")).length;
    const again = klines();
    await data.refresh?.refresher.runOnce();
    expect(klines()).toBe(again);
    binance.rateLimitAll = false;
  });

  it("a request in flight during a swap finishes on the data it arrived with", async () => {
    let entered!: () => void;
    const inVerify = new Promise<void>((r) => {
      entered = r;
    });
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const verify = gateway.verifyResult;
    gateway.verifyResult = async (p, r) => {
      entered();
      await released;
      return verify(p, r);
    };
    const inFlight = paidUpcoming();
    await inVerify; // past its pre-payment checks, on the current generation
    const old = data.live.current().version;
    // The shipped snapshot has the poisoned tokens' later candles too: swapped in while the request waits.
    await data.live.swap({ ...full, generated_at: new Date(now.getTime() + 1).toISOString() });
    expect(data.live.current().version).not.toBe(old);
    release();
    const res = await inFlight;
    gateway.verifyResult = verify;
    expect(res.statusCode).toBe(200);
    const items = (res.json() as { unlocks: UpcomingItem[] }).unlocks;
    const poisonedItems = items.filter((i) => i.token in POISONED);
    expect(poisonedItems.length).toBeGreaterThan(0);
    for (const i of poisonedItems) expect(i.market.price_as_of <= EARLIER_LAST).toBe(true);
    // The next request reads the new generation.
    const next = ((await paidUpcoming()).json() as { unlocks: UpcomingItem[] }).unlocks;
    expect(
      next.filter((i) => i.token in POISONED && i.market.price_as_of > EARLIER_LAST).length,
    ).toBeGreaterThan(0);
  });
});
