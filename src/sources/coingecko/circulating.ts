import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../../files/atomic-write.js";
import { dataPath } from "../../files/paths.js";
import type { ReportIndex } from "../../unlocks/circulating-reported.js";
import type { SchedulePiece } from "../../unlocks/data/types.js";
import { failure, ImplausibleError, retryAfterOf } from "../errors.js";
import type { SourceOutcome } from "../status.js";
import { type CgClient, type CgMarket, fetchMarkets } from "./client.js";

/**
 * One reported circulating-supply figure, as written to `$DATA_DIR/circulating-reported/live.json` (the shape the
 * snapshot builder's loader of reported figures accepts).
 */
export interface ReportedCirculating {
  readonly token: string;
  readonly date: string;
  readonly circulating_supply: string;
  readonly source: "coingecko";
  readonly coin_id: string;
  readonly as_of: string;
  /** CoinGecko's USD price in the same row: the second source a refreshed close is checked against. */
  readonly price_usd?: number | null;
}

export const LIVE_CIRCULATING_FILE = join("circulating-reported", "live.json");

/** Token symbol → CoinGecko coin id (shipped in data/coingecko-ids.json): figures are matched by id, never symbol. */
export function readCoinIds(path = dataPath("coingecko-ids.json")): ReadonlyMap<string, string> {
  const raw = JSON.parse(readFileSync(path, "utf8")) as { ids: Record<string, string> };
  return new Map(Object.entries(raw.ids));
}

/** A non-negative number as a plain decimal string (no exponent), at most 8 decimals. */
export function decimalString(n: number): string {
  return n.toLocaleString("en-US", { useGrouping: false, maximumFractionDigits: 8 });
}

/** Checks one row: the id asked for, a positive finite figure, not above the reported max supply. */
export function reportedFrom(
  token: string,
  coinId: string,
  row: CgMarket | undefined,
  now: Date,
): ReportedCirculating {
  if (!row) throw new Error("not in the answer");
  if (row.id !== coinId) throw new Error(`answer names ${row.id}, not ${coinId}`);
  const c = row.circulating_supply;
  if (typeof c !== "number" || !Number.isFinite(c) || !(c > 0)) throw new Error("no circulating supply");
  const cap = row.max_supply ?? row.total_supply ?? null;
  if (typeof cap === "number" && cap > 0 && c > cap * 1.001)
    throw new Error(`circulating ${c} above the reported supply cap ${cap}`);
  const at =
    row.last_updated && !Number.isNaN(Date.parse(row.last_updated)) ? new Date(row.last_updated) : now;
  return {
    token,
    date: at.toISOString().slice(0, 10),
    circulating_supply: decimalString(c),
    source: "coingecko",
    coin_id: coinId,
    as_of: at.toISOString(),
    price_usd:
      typeof row.current_price === "number" && Number.isFinite(row.current_price) && row.current_price > 0
        ? row.current_price
        : null,
  };
}

/** The live records as written (the agreed shape), for the unlock store's report loader; [] when none. */
export function readLiveCirculatingRecords(dataDir: string): unknown[] {
  try {
    const rows = JSON.parse(readFileSync(join(dataDir, LIVE_CIRCULATING_FILE), "utf8")) as unknown;
    return Array.isArray(rows) ? rows : [];
  } catch {
    return [];
  }
}

/** The last figures written, by token (empty when none). */
export function readLiveCirculating(dataDir: string): ReadonlyMap<string, ReportedCirculating> {
  try {
    const rows = JSON.parse(
      readFileSync(join(dataDir, LIVE_CIRCULATING_FILE), "utf8"),
    ) as ReportedCirculating[];
    return new Map(rows.map((r) => [r.token, r]));
  } catch {
    return new Map();
  }
}

/** A report a new figure is judged against: the last live one, or the shipped one before any live one. */
export interface PriorReport {
  readonly date: string;
  readonly circulating_supply: string;
  /** The figure counts releases up to this time. */
  readonly as_of: string;
  readonly source: string;
}

/**
 * What we hold of a token to judge a reported figure by: our own max supply, its supply schedule and the latest
 * shipped report (CoinMarketCap's monthly snapshot), which stands in for the previous report until a live one exists,
 * so the first live report is bounded too.
 */
export interface SupplyBounds {
  readonly maxSupply: number | null;
  readonly schedule: readonly Pick<SchedulePiece, "kind" | "start" | "end" | "amount_tokens">[];
  readonly shipped?: PriorReport | undefined;
}

/** The latest shipped report of each token (by symbol as the snapshot spells it), in the shape a live one has. */
export function shippedPriorReports(
  reports: ReportIndex,
  symbols: readonly string[],
): ReadonlyMap<string, PriorReport> {
  const out = new Map<string, PriorReport>();
  for (const symbol of symbols) {
    const last = reports.get(symbol.toLowerCase())?.at(-1);
    if (!last) continue;
    out.set(symbol, {
      date: last.date,
      circulating_supply: decimalString(last.value),
      // A report dated D counts every release up to the end of D.
      as_of: new Date((last.day + 1) * DAY_MS).toISOString(),
      source: last.source,
    });
  }
  return out;
}

const DAY_MS = 86_400_000;

/** Tokens the schedule releases after day `from` up to day `to` (cliffs on their day, linear pieces pro rata). */
export function releasedBetween(schedule: SupplyBounds["schedule"], from: number, to: number): number {
  let sum = 0;
  for (const p of schedule) {
    const start = Date.parse(p.start) / DAY_MS;
    if (p.kind === "cliff" || p.end === null) {
      if (start > from && start <= to) sum += p.amount_tokens;
      continue;
    }
    const end = Date.parse(p.end) / DAY_MS;
    const span = end - start;
    if (!(span > 0)) continue;
    const overlap = Math.max(0, Math.min(end, to) - Math.max(start, from));
    sum += (p.amount_tokens * overlap) / span;
  }
  return sum;
}

/**
 * A reported figure may move from the last one by what the schedule released since, within this factor either way
 * (aggregators revise their method, burns and buybacks shrink supply); beyond it, it is refused.
 */
export const MAX_REPORT_DRIFT = 1.5;

/**
 * Refuses a reported circulating supply above our own max supply, or off from the last good report by more than the
 * schedule's movement since then allows (`MAX_REPORT_DRIFT` either way). The last good report is the previous live
 * one, or, before there is one, the latest shipped report: a first live report is held to the same bound. A token
 * with neither (no shipped report names it) is bounded by its max supply only.
 */
export function checkCirculating(
  token: string,
  figure: number,
  at: Date,
  bounds: SupplyBounds | undefined,
  live: PriorReport | undefined,
): void {
  const refused = { token, circulating_supply: figure, as_of: at.toISOString() };
  const max = bounds?.maxSupply ?? null;
  if (max !== null && figure > max * 1.001)
    throw new ImplausibleError(`circulating ${figure} is above the max supply ${max}`, refused);
  // The newer of the two: a live report from long ago does not outrank a newer shipped one.
  const shipped = bounds?.shipped;
  const previous = live && (!shipped || live.as_of >= shipped.as_of) ? live : shipped;
  if (!previous) return;
  const before = Number(previous.circulating_supply);
  if (!(before > 0)) return;
  const released = bounds
    ? releasedBetween(bounds.schedule, Date.parse(previous.as_of) / DAY_MS, at.getTime() / DAY_MS)
    : 0;
  const expected = before + released;
  if (figure > expected * MAX_REPORT_DRIFT || figure * MAX_REPORT_DRIFT < before)
    throw new ImplausibleError(
      `circulating ${figure} against ${before} reported${previous === live ? "" : ` by ${previous.source} (shipped)`} on ${previous.date} plus ${Math.round(released)} released by the schedule since (bound ×${MAX_REPORT_DRIFT})`,
      { ...refused, previous },
    );
}

/**
 * Two sources price the same token (the venue's daily close, CoinGecko's aggregate price): past this factor apart, on
 * days at most MAX_REFERENCE_AGE_DAYS apart, one of them is wrong, and the newcomer is refused.
 */
export const MAX_SOURCE_DISAGREEMENT = 3;
export const MAX_REFERENCE_AGE_DAYS = 3;

/** Refuses a price that another source, near the same day, puts more than MAX_SOURCE_DISAGREEMENT× away. */
export function checkAgainstOtherSource(
  what: string,
  price: number,
  day: number,
  other: { readonly name: string; readonly price: number; readonly day: number } | null,
  refused: unknown,
): void {
  if (!other || !(other.price > 0) || Math.abs(day - other.day) > MAX_REFERENCE_AGE_DAYS) return;
  const ratio = price / other.price;
  if (ratio > MAX_SOURCE_DISAGREEMENT || ratio * MAX_SOURCE_DISAGREEMENT < 1)
    throw new ImplausibleError(
      `${what} ${price} is ${ratio.toPrecision(3)}× ${other.name}'s ${other.price} (bound ${MAX_SOURCE_DISAGREEMENT}× between sources)`,
      refused,
    );
}

/**
 * Refreshes reported circulating supply from CoinGecko `/coins/markets` (keyless; a key only raises the limits).
 * A token whose row is missing or fails its checks keeps its previous figure; the file is replaced atomically and only
 * when some figure was fetched.
 */
export async function refreshCirculating(
  client: CgClient,
  ids: ReadonlyMap<string, string>,
  dataDir: string,
  now: Date,
  /** Per token: our max supply and schedule, to refuse implausible figures. */
  bounds: ReadonlyMap<string, SupplyBounds> = new Map(),
  /** Per token: the latest venue close and its day, to check CoinGecko's price against. */
  closes: ReadonlyMap<string, { readonly price: number; readonly day: number }> = new Map(),
): Promise<{ outcome: SourceOutcome; figures: ReadonlyMap<string, ReportedCirculating> }> {
  const previous = readLiveCirculating(dataDir);
  let rows: Map<string, CgMarket>;
  try {
    rows = await fetchMarkets(client, [...new Set(ids.values())]);
    if (rows.size === 0) throw new Error("empty answer");
  } catch (err) {
    return {
      outcome: {
        source: "coingecko",
        updated: [],
        failed: [...ids.keys()].map((item) => failure(item, err)),
        dataAsOf: null,
        retryAfterSeconds: retryAfterOf(err),
      },
      figures: previous,
    };
  }
  const next = new Map(previous);
  const updated: string[] = [];
  const failed: { item: string; error: string }[] = [];
  let newest: string | null = null;
  for (const [token, coinId] of ids) {
    try {
      const r = reportedFrom(token, coinId, rows.get(coinId), now);
      checkCirculating(
        token,
        Number(r.circulating_supply),
        new Date(r.as_of),
        bounds.get(token),
        previous.get(token),
      );
      const close = closes.get(token);
      if (typeof r.price_usd === "number")
        checkAgainstOtherSource(
          "CoinGecko price",
          r.price_usd,
          Math.floor(Date.parse(r.as_of) / DAY_MS),
          close ? { name: "the venue's last close", ...close } : null,
          r,
        );
      next.set(token, r);
      updated.push(token);
      if (newest === null || r.as_of > newest) newest = r.as_of;
    } catch (err) {
      failed.push(failure(token, err));
    }
  }
  if (updated.length > 0)
    writeFileAtomic(
      join(dataDir, LIVE_CIRCULATING_FILE),
      `${JSON.stringify(
        [...next.values()].sort((a, b) => a.token.localeCompare(b.token)),
        null,
        1,
      )}\n`,
    );
  return {
    outcome: { source: "coingecko", updated, failed, dataAsOf: newest, retryAfterSeconds: null },
    figures: next,
  };
}
