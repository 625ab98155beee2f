import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { formatDay, parseDay } from "../../src/unlocks/data/dates.js";
import type { PriceSeries, UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { marketFromSeries } from "../../src/unlocks/market-snapshot.js";

/**
 * A Binance USDⓈ-M stand-in on 127.0.0.1 serving `GET /fapi/v1/klines` in Binance's documented format
 * (`[[openTime, open, high, low, close, volume, closeTime, quoteAssetVolume, trades, takerBuyBase, takerBuyQuote,
 * ignore], …]`, numbers as strings, oldest first, the still-open candle of the current day last) and its documented
 * error body for an unknown symbol (400 `{"code":-1121,"msg":"Invalid symbol."}`). The candles are the real ones the
 * shipped snapshot holds (data/market-history): close and quote volume as recorded; open, high, low, base volume and
 * trade counts are not shipped and are served as the close / "0".
 *
 * Poison per symbol: an HTML error page, an empty array, JSON cut short, a close 25× the previous one, or a 429 with
 * Retry-After; `rateLimitAll` answers 429 to everything.
 */
export type Poison = "html" | "empty" | "truncated" | "jump" | "429";

export interface BinanceStandIn {
  readonly url: string;
  /** Last closed candle day served (UTC `YYYY-MM-DD`); the next day is served as the open candle. */
  through: string;
  readonly poison: Map<string, Poison>;
  rateLimitAll: boolean;
  readonly requests: string[];
  close(): Promise<void>;
}

const DAY = 86_400_000;

/** Candle of day d from a 00:00 UTC series: index d+1 − start holds its close and volume. */
function candle(series: PriceSeries, day: number): { close: number; volume: number } | null {
  const i = day + 1 - parseDay(series.start);
  const c = series.close[i];
  if (typeof c !== "number") return null;
  return { close: c, volume: series.volume_usd?.[i] ?? 0 };
}

export async function binanceStandIn(
  full: UnlockSnapshot,
  through: string,
  /** Serve the day after `through` as the still-open candle (a clock past that day would take it as closed). */
  { openCandle = true }: { openCandle?: boolean } = {},
): Promise<BinanceStandIn> {
  const bySymbol = new Map<string, PriceSeries>();
  for (const t of full.tokens) if (t.prices) bySymbol.set(`${t.symbol.toUpperCase()}USDT`, t.prices);
  bySymbol.set(`${full.benchmark.symbol}USDT`, full.benchmark.prices);
  const state = {
    through,
    poison: new Map<string, Poison>(),
    rateLimitAll: false,
    requests: [] as string[],
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    state.requests.push(`${url.pathname}${url.search}`);
    const symbol = url.searchParams.get("symbol") ?? "";
    const series = bySymbol.get(symbol);
    if (url.pathname !== "/fapi/v1/klines" || !series) {
      res
        .writeHead(400, { "content-type": "application/json" })
        .end('{"code":-1121,"msg":"Invalid symbol."}');
      return;
    }
    const poison = state.rateLimitAll ? "429" : state.poison.get(symbol.replace(/USDT$/, ""));
    if (poison === "429") {
      res
        .writeHead(429, { "content-type": "application/json", "retry-after": "120" })
        .end('{"code":-1003,"msg":"Too many requests; current limit is 2400 request weight per 1 MINUTE."}');
      return;
    }
    if (poison === "html") {
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(
          "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>cloudfront</body></html>",
        );
      return;
    }
    if (poison === "empty") {
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
      return;
    }
    const last = parseDay(state.through);
    const limit = Math.min(1500, Number(url.searchParams.get("limit") ?? 500));
    const rows: unknown[] = [];
    // The newest `limit` candles including the open one (the day after `through`), oldest first.
    const newest = openCandle ? last + 1 : last;
    for (let d = newest - limit + 1; d <= newest; d++) {
      const c = d <= last ? candle(series, d) : candle(series, last);
      if (!c) continue;
      let close = c.close;
      if (poison === "jump" && d === last) close *= 25;
      const closeTime = (d + 1) * DAY - 1;
      const s = String(close);
      rows.push([d * DAY, s, s, s, s, "0", closeTime, String(c.volume), 0, "0", "0", "0"]);
    }
    const body = JSON.stringify(rows);
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(poison === "truncated" ? body.slice(0, Math.floor(body.length / 2)) : body);
  });
  // An idle socket the server closes just as the client reuses it fails with ECONNRESET: with Node's 5 s default the
  // refresh tests would depend on how long the steps between two ticks take on a loaded machine.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }) as BinanceStandIn;
}

/** A port on 127.0.0.1 with nothing listening: a source that is down (connection refused). */
export async function downUrl(): Promise<string> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

/** A series as it was `days` candles earlier: the last `days` prices (and volumes) dropped. */
export function cut(s: PriceSeries, days: number): PriceSeries {
  const close = s.close.slice(0, -days);
  const end = formatDay(parseDay(s.start) + close.length - 1);
  return {
    ...s,
    close,
    volume_usd: s.volume_usd?.slice(0, -days) ?? null,
    segments: s.segments?.filter((g) => g.from <= end).map((g) => (g.to > end ? { ...g, to: end } : g)),
  };
}

/** The shipped snapshot as if built `days` days earlier: every Binance series held back (Bybit's already ends earlier). */
export function asIfEarlier(full: UnlockSnapshot, days: number): UnlockSnapshot {
  return {
    ...full,
    benchmark: { ...full.benchmark, prices: cut(full.benchmark.prices, days) },
    tokens: full.tokens.map((t) => {
      if (!t.prices || t.market.venue !== "Binance") return t;
      const prices = cut(t.prices, days);
      return { ...t, prices, market: marketFromSeries(prices) };
    }),
  };
}
