import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify from "fastify";
import { beforeAll, describe, expect, it } from "vitest";
import { tokensRoutes } from "../../src/routes/tokens.js";
import { refreshMarkets } from "../../src/sources/candles/refresh.js";
import type { FetchLike } from "../../src/sources/http.js";
import { loadReportedCirculating } from "../../src/unlocks/circulating-reported.js";
import { dayOf, formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import { buildUnlockStore, type DailySeries, readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { segmentsUsed } from "../../src/unlocks/market-context.js";
import { createUnlockService, type UnlockService } from "../../src/unlocks/service.js";

/*
 * Provenance of a refreshed figure: the shipped history (a file committed upstream) and the live extension the refresh
 * appended are two segments, each with its own URL, as-of and fetch time, in paid answers and on GET /v1/tokens alike.
 */
const SHIPPED_URL =
  "https://github.com/silertrades/gravestone-data/blob/5ae91cae283a2c12a5498ba8105e66a518009849/data/1d/ARBUSDT.csv";
const SHIPPED_FETCHED = "2026-03-19T20:28:45.000Z";
const LIVE_URL = "https://fapi.binance.com/fapi/v1/klines?symbol=ARBUSDT&interval=1d";
const NOW = new Date("2026-04-10T12:00:00Z");
const LAST_LIVE = "2026-04-09";

/** Binance's klines answer for the days asked, each close 1 % above the one before (no network: answered here). */
function klinesStandIn(lastClose: Map<string, { day: number; close: number }>): FetchLike {
  return async (url) => {
    const u = new URL(url);
    const pair = u.searchParams.get("symbol") ?? "";
    const limit = Number(u.searchParams.get("limit"));
    const held = lastClose.get(pair);
    if (!held) return { ok: false, status: 404, json: async () => ({}), text: async () => "unknown symbol" };
    const rows = Array.from({ length: limit }, (_, i) => {
      const day = held.day + i;
      const close = held.close * 1.01 ** i;
      return [day * 86_400_000, close, close, close, close, 1, (day + 1) * 86_400_000 - 1, 1_000_000 + i];
    });
    return { ok: true, status: 200, json: async () => rows, text: async () => JSON.stringify(rows) };
  };
}

let service: UnlockService;
let refreshed: UnlockSnapshot;

beforeAll(async () => {
  const full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
  const base: UnlockSnapshot = { ...full, tokens: full.tokens.filter((t) => t.symbol === "ARB") };
  const held = new Map<string, { day: number; close: number }>();
  for (const [sym, s] of [
    ["ARB", base.tokens[0]?.prices],
    [base.benchmark.symbol, base.benchmark.prices],
  ] as const) {
    if (!s) continue;
    const last = s.close[s.close.length - 1] as number;
    held.set(`${sym}USDT`, { day: parseDay(s.start) + s.close.length - 2, close: last });
  }
  const r = await refreshMarkets(
    base,
    {
      fetchImpl: klinesStandIn(held),
      binanceBase: "https://fapi.binance.com",
      bybitBase: "https://api.bybit.com",
    },
    NOW,
    ["binance"],
  );
  expect(r.changed).toBe(true);
  refreshed = r.snapshot;
  service = createUnlockService(buildUnlockStore(refreshed, loadReportedCirculating()), () => NOW);
}, 60_000);

describe("a refreshed figure names both segments it rests on", () => {
  it("the risk summary's market: shipped history then live extension, each with its URL, as-of and fetch time", () => {
    const s = service.summary("ARB", 90);
    expect(s.market.price_as_of).toBe(LAST_LIVE);
    expect(s.market.source_url).toBe(LIVE_URL);
    expect(s.market.segments).toEqual([
      {
        part: "shipped_history",
        used_for: ["adv_30d"],
        source: "Binance USDT-margined perpetual futures (USDⓈ-M) daily candles",
        url: SHIPPED_URL,
        first_candle: "2026-03-11",
        // The refresh asks again for the last candle it holds and serves the venue's answer for that day.
        as_of: "2026-03-17",
        fetched_at: SHIPPED_FETCHED,
      },
      {
        part: "live_extension",
        used_for: ["price", "adv_30d"],
        source: "Binance USDT-margined perpetual futures (USDⓈ-M) daily candles",
        url: LIVE_URL,
        first_candle: "2026-03-18",
        as_of: LAST_LIVE,
        // The refresh's own segment: when this refresh read the venue.
        fetched_at: NOW.toISOString(),
      },
    ]);
  });

  it("an upcoming item valued at the latest close carries the same segments", () => {
    // An event after the last candle (one inside the history is valued at its own day's close).
    const item = service
      .upcoming(365, 0)
      .unlocks.find((u) => u.token === "ARB" && u.unlock_date > "2026-04-10");
    expect(item).toBeDefined();
    expect(item?.market.source_url).toBe(LIVE_URL);
    expect(item?.market.segments?.map((x) => [x.part, x.url, x.as_of])).toEqual([
      ["shipped_history", SHIPPED_URL, "2026-03-17"],
      ["live_extension", LIVE_URL, LAST_LIVE],
    ]);
  });

  it("a past event inside the shipped history names only the shipped file", () => {
    const item = service.score("ARB", "unlock_arb_2025_03_16", false);
    expect(item.market.source_url).toBe(SHIPPED_URL);
    expect(item.market.segments?.map((x) => [x.part, x.as_of, x.fetched_at])).toEqual([
      ["shipped_history", "2025-03-15", SHIPPED_FETCHED],
    ]);
  });

  it("GET /v1/tokens tells the same story as the paid summary", async () => {
    const app = Fastify().withTypeProvider<TypeBoxTypeProvider>();
    await app.register(tokensRoutes, { unlocksFor: () => service, clock: () => NOW });
    type Tokens = {
      tokens: {
        symbol: string;
        market: { source_url: string; segments?: unknown[]; source?: string };
        supply: { circulating: number | null; circulating_rule: string; source: string; method?: string };
        circulating_reported: { source: string; as_of: string } | null;
      }[];
    };
    const body = (await app.inject({ url: "/v1/tokens?view=full" })).json() as Tokens;
    // Compact (the default) holds the same figures without the words and the per-segment provenance.
    const compact = (await app.inject({ url: "/v1/tokens" })).json() as Tokens;
    await app.close();
    expect(compact.tokens.length).toBe(body.tokens.length);
    for (const [i, t] of compact.tokens.entries()) {
      const f = body.tokens[i];
      expect(t.market.segments).toBeUndefined();
      expect(t.supply.method).toBeUndefined();
      const { segments: _s, source: _src, ...market } = f?.market ?? { source_url: "" };
      const { method: _m, ...supply } = f?.supply ?? { circulating: null, circulating_rule: "", source: "" };
      expect({ ...t, market: t.market, supply: t.supply }).toEqual({ ...f, market, supply });
    }
    expect(JSON.stringify(compact).length).toBeLessThan(JSON.stringify(body).length / 2);
    const arb = body.tokens.find((t) => t.symbol === "ARB");
    const paid = service.summary("ARB", 90);
    expect(arb?.market.source_url).toBe(paid.market.source_url);
    expect(arb?.market.segments).toEqual(paid.market.segments);
    expect(arb?.supply.circulating).toBe(paid.circulating_supply);
    expect(arb?.supply.circulating_rule).toBe(paid.supply_coverage.circulating_rule);
    expect(arb?.circulating_reported).toEqual({
      circulating_supply: String(paid.supply_coverage.circulating_report?.circulating_supply),
      source: "coinmarketcap",
      coin_id: null,
      as_of: paid.supply_coverage.circulating_report?.date,
    });
  });
});

describe("a live segment recorded by the refresh", () => {
  it("is its own part, with the endpoint and fetch time it carries", () => {
    const day = dayOf(NOW);
    const series = {
      startDay: day - 100,
      segments: [
        {
          from: formatDay(day - 100),
          to: formatDay(day - 10),
          venue: "Binance",
          instrument: "USDT-margined perpetual futures (USDⓈ-M)",
          quote: "USDT",
          volume: true,
          source_url: SHIPPED_URL,
          fetched_at: new Date((day - 10) * 86_400_000 + 3_600_000).toISOString(),
        },
        {
          from: formatDay(day - 9),
          to: formatDay(day),
          venue: "Binance",
          instrument: "USDT-margined perpetual futures (USDⓈ-M)",
          quote: "USDT",
          volume: true,
          source_url: "http://127.0.0.1:9/fapi/v1/klines?symbol=ARBUSDT&interval=1d",
          fetched_at: NOW.toISOString(),
        },
      ],
    } as unknown as DailySeries;
    const used = segmentsUsed(series, "ARB", day, false);
    expect(used).toEqual([
      expect.objectContaining({
        part: "live_extension",
        used_for: ["price"],
        url: "http://127.0.0.1:9/fapi/v1/klines?symbol=ARBUSDT&interval=1d",
        as_of: formatDay(day - 1),
        fetched_at: NOW.toISOString(),
      }),
    ]);
  });
});
