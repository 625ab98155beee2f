import { readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../files/atomic-write.js";
import { dataPath } from "../files/paths.js";
import { type CgClient, type CgMarket, fetchMarkets } from "../unlocks/ingest/coingecko.js";
import { describeError, retryAfterOf } from "./errors.js";
import type { SourceOutcome } from "./status.js";

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
        failed: [...ids.keys()].map((item) => ({ item, error: describeError(err) })),
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
      next.set(token, r);
      updated.push(token);
      if (newest === null || r.as_of > newest) newest = r.as_of;
    } catch (err) {
      failed.push({ item: token, error: describeError(err) });
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
