import { readFileSync } from "node:fs";
import { join } from "node:path";
import { formatDay, parseDay } from "./data/dates.js";
import type { PriceSeries, SeriesSegment } from "./data/types.js";

/** One row of a data/market-history CSV: the daily candle of UTC day `date`. */
export interface Candle {
  readonly day: number;
  readonly close: number;
  readonly volume: number;
}

/** One entry of data/market-history/index.json (the fields this code reads). */
export interface MarketFile {
  readonly file: string;
  readonly symbol: string;
  readonly role: "primary" | "alternate";
  readonly venue: string;
  readonly instrument: string;
  readonly quote_currency: string;
  readonly first_date: string;
  readonly last_date: string;
  readonly source: {
    readonly repo: string;
    readonly path: string;
    readonly commit: string;
    /** When the file was committed: its collector fetched the candles then (closed candles only). */
    readonly commit_date?: string;
  };
}

export interface MarketIndex {
  readonly generated: string;
  readonly files: readonly MarketFile[];
}

/** Parses `date,close_usd,volume_usd`; rejects anything that is not a strictly daily, positive series. */
export function parseMarketCsv(text: string, where: string): Candle[] {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0]?.trim() !== "date,close_usd,volume_usd") throw new Error(`${where}: unexpected header`);
  const out: Candle[] = [];
  for (let i = 1; i < lines.length; i++) {
    const [date, close, volume] = (lines[i] as string).split(",");
    const day = parseDay(date ?? "");
    const c = Number(close);
    const v = Number(volume);
    if (Number.isNaN(day) || !(c > 0) || !(v >= 0)) throw new Error(`${where}:${i + 1}: bad row`);
    const prev = out[out.length - 1];
    if (prev && day !== prev.day + 1)
      throw new Error(`${where}:${i + 1}: not the day after the previous row`);
    out.push({ day, close: c, volume: v });
  }
  return out;
}

export function readMarketIndex(dir: string): MarketIndex {
  return JSON.parse(readFileSync(join(dir, "index.json"), "utf8")) as MarketIndex;
}

export function readCandles(dir: string, file: string): Candle[] {
  return parseMarketCsv(readFileSync(join(dir, file), "utf8"), file);
}

const sourceUrl = (f: MarketFile): string =>
  `https://github.com/${f.source.repo}/blob/${f.source.commit}/${f.source.path}`;

/** When the file's candles were fetched from the venue, as an ISO UTC time (its commit); absent when not recorded. */
const fetchedAt = (f: MarketFile): { fetched_at?: string } => {
  const t = f.source.commit_date ? Date.parse(f.source.commit_date) : Number.NaN;
  return Number.isNaN(t) ? {} : { fetched_at: new Date(t).toISOString() };
};

/** Binance spot first, then Bybit: spot is the closer match to the primary perp's price (data/market-history README). */
const ALT_ORDER = ["Binance|spot", "Bybit|USDT perpetual (linear)"];

/**
 * A token's daily series as 00:00 UTC prices: the close of the candle of day D is the price at
 * 00:00 UTC of D+1, so value i of the result is the close of candle start+i−1, and `volume_usd`
 * at the same index is the volume of that candle (the 24 h that end at the price).
 *
 * The primary file (one venue) is the series; days before it starts are filled from an alternate
 * venue's closes (prices agree across venues within 0.63 %, volumes do not), with volume null there
 * so volume never mixes venues. Rows before `firstDay` (pre-TGE pre-market perps) are dropped.
 */
export function buildTokenSeries(
  dir: string,
  index: MarketIndex,
  symbol: string,
  firstDay: number | null,
): PriceSeries | null {
  const files = index.files.filter((f) => f.symbol === symbol);
  const primary = files.find((f) => f.role === "primary");
  if (!primary) return null;
  const main = readCandles(dir, primary.file).filter((c) => firstDay === null || c.day >= firstDay);
  if (main.length === 0) return null;
  const mainStart = (main[0] as Candle).day;
  const alts = files
    .filter((f) => f.role === "alternate" && ALT_ORDER.includes(`${f.venue}|${f.instrument}`))
    .sort(
      (a, b) =>
        ALT_ORDER.indexOf(`${a.venue}|${a.instrument}`) - ALT_ORDER.indexOf(`${b.venue}|${b.instrument}`),
    );
  // Pick the alternate reaching furthest back before the primary, preferring spot on ties.
  let before: { file: MarketFile; rows: Candle[] } | null = null;
  for (const f of alts) {
    const rows = readCandles(dir, f.file).filter(
      (c) => c.day < mainStart && (firstDay === null || c.day >= firstDay),
    );
    if (rows.length === 0 || (rows[rows.length - 1] as Candle).day !== mainStart - 1) continue;
    if (before === null || (rows[0] as Candle).day < (before.rows[0] as Candle).day)
      before = { file: f, rows };
  }
  const rows = [...(before?.rows ?? []), ...main];
  const start = (rows[0] as Candle).day + 1;
  const segments: SeriesSegment[] = [];
  if (before)
    segments.push({
      from: formatDay((before.rows[0] as Candle).day + 1),
      to: formatDay(mainStart),
      venue: before.file.venue,
      instrument: before.file.instrument,
      quote: before.file.quote_currency,
      volume: false,
      source_url: sourceUrl(before.file),
      ...fetchedAt(before.file),
    });
  segments.push({
    from: formatDay(mainStart + 1),
    to: formatDay((main[main.length - 1] as Candle).day + 1),
    venue: primary.venue,
    instrument: primary.instrument,
    quote: primary.quote_currency,
    volume: true,
    source_url: sourceUrl(primary),
    ...fetchedAt(primary),
  });
  const beforeCount = before?.rows.length ?? 0;
  return {
    start: formatDay(start),
    close: rows.map((c) => c.close),
    volume_usd: rows.map((c, i) => (i < beforeCount ? null : c.volume)),
    source: `${primary.venue} ${primary.instrument} daily candles${before ? `; before ${formatDay(mainStart + 1)} closes from ${before.file.venue} ${before.file.instrument} (no volume)` : ""}`,
    source_url: sourceUrl(primary),
    synthetic: false,
    segments,
  };
}

/** The longest real ETH (or BTC) series: Binance spot back to 2018, then the primary perp. */
export function buildBenchmarkSeries(dir: string, index: MarketIndex, symbol: "ETH" | "BTC"): PriceSeries {
  const s = buildTokenSeries(dir, index, symbol, null);
  if (!s) throw new Error(`no ${symbol} series in ${dir}`);
  return s;
}
