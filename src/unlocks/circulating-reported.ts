import { readFileSync } from "node:fs";
import { Type } from "typebox";
import { Compile } from "typebox/compile";
import { dataPath } from "../files/paths.js";
import { parseDay } from "./data/dates.js";

/** One reported circulating-supply figure: what an aggregator published for the token at the end of `date`. */
export interface CirculatingReport {
  /** Day number of `date`; the figure counts everything released up to the end of that day. */
  readonly day: number;
  readonly date: string;
  readonly value: number;
  /** `coinmarketcap` (shipped monthly snapshots) or the live source's name (`coingecko`). */
  readonly source: string;
  /** How the figure is to be attributed wherever it is shown. */
  readonly attribution: string;
}

/** A report with the symbol it belongs to. */
export interface TokenReport extends CirculatingReport {
  readonly token: string;
}

/** Reports per lower-case symbol, sorted by day (one per source and day). */
export type ReportIndex = ReadonlyMap<string, readonly CirculatingReport[]>;

export const EMPTY_REPORTS: ReportIndex = new Map();

/** The shipped file: CoinMarketCap's monthly snapshots, compacted to our tokens (scripts/import-circulating.ts). */
export const SHIPPED_REPORTS_FILE = "circulating-reported/coinmarketcap-monthly.csv";

const DECIMAL = "^\\d+(\\.\\d+)?$";

/** A live record as the refresh loop writes it (`$DATA_DIR/circulating-reported/live.json`, an array of these). */
export const LiveReportRecord = Type.Object(
  {
    token: Type.String({ pattern: "^[A-Za-z0-9]{1,20}$" }),
    date: Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$" }),
    circulating_supply: Type.String({ pattern: DECIMAL }),
    source: Type.String({ minLength: 1 }),
    coin_id: Type.String({ minLength: 1 }),
    as_of: Type.String({ minLength: 1 }),
  },
  { additionalProperties: true },
);
export interface LiveReportRecord {
  token: string;
  date: string;
  circulating_supply: string;
  source: string;
  coin_id: string;
  as_of: string;
}
const liveChecker = Compile(LiveReportRecord);

export class ReportRecordError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid circulating-supply records:\n  ${problems.slice(0, 20).join("\n  ")}`);
    this.name = "ReportRecordError";
  }
}

const cmcAttribution = (date: string) =>
  `circulating supply reported by CoinMarketCap, monthly snapshot of ${date}`;

/** Parses the shipped CSV (`token,date,circulating_supply,cmc_name,cmc_symbol`). */
export function parseShippedReports(text: string): TokenReport[] {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0] !== "token,date,circulating_supply,cmc_name,cmc_symbol")
    throw new Error(`${SHIPPED_REPORTS_FILE}: unexpected header`);
  return lines.slice(1).map((line, i) => {
    const [token, date, value] = line.split(",") as [string, string, string];
    const day = parseDay(date);
    if (Number.isNaN(day) || !new RegExp(DECIMAL).test(value) || !(Number(value) > 0))
      throw new Error(`${SHIPPED_REPORTS_FILE}:${i + 2}: bad row`);
    return {
      token,
      day,
      date,
      value: Number(value),
      source: "coinmarketcap",
      attribution: cmcAttribution(date),
    };
  });
}

function liveReports(extra: readonly unknown[]): TokenReport[] {
  const problems: string[] = [];
  const out: TokenReport[] = [];
  extra.forEach((r, i) => {
    if (!liveChecker.Check(r)) {
      problems.push(
        `[${i}]: ${[...liveChecker.Errors(r)].map((e) => `${e.instancePath || "(record)"} ${e.message}`).join("; ")}`,
      );
      return;
    }
    const rec = r as LiveReportRecord;
    const day = parseDay(rec.date);
    const value = Number(rec.circulating_supply);
    if (Number.isNaN(day)) problems.push(`[${i}].date: not a calendar date (${rec.date})`);
    else if (!(value > 0)) problems.push(`[${i}].circulating_supply: not positive`);
    else
      out.push({
        token: rec.token,
        day,
        date: rec.date,
        value,
        source: rec.source,
        attribution: `circulating supply reported by ${rec.source} (${rec.coin_id}) as of ${rec.as_of}`,
      });
  });
  if (problems.length > 0) throw new ReportRecordError(problems);
  return out;
}

/**
 * The reports per token: the shipped ones plus `extra` records of the live shape (validated; a bad record throws,
 * naming it). One figure per token, source and day: a later record of the same key replaces the earlier one.
 */
export function reportIndexOf(shipped: readonly TokenReport[], extra: readonly unknown[] = []): ReportIndex {
  const byKey = new Map<string, TokenReport>();
  for (const r of [...shipped, ...liveReports(extra)])
    byKey.set(`${r.token.toLowerCase()}\u0000${r.source}\u0000${r.day}`, r);
  const out = new Map<string, CirculatingReport[]>();
  for (const r of byKey.values()) {
    const k = r.token.toLowerCase();
    const { token: _t, ...report } = r;
    out.set(k, [...(out.get(k) ?? []), report]);
  }
  for (const list of out.values()) list.sort((a, b) => a.day - b.day || a.source.localeCompare(b.source));
  return out;
}

/** The shipped reports (data/circulating-reported/) plus optional live records of the agreed shape. */
export function loadReportedCirculating(
  extra: readonly unknown[] = [],
  file: string = dataPath(SHIPPED_REPORTS_FILE),
): ReportIndex {
  return reportIndexOf(parseShippedReports(readFileSync(file, "utf8")), extra);
}

/** The latest report strictly before `day` (it counts releases up to its own day's end), or null. */
export function latestReportBefore(
  reports: readonly CirculatingReport[] | undefined,
  day: number,
): CirculatingReport | null {
  if (!reports || reports.length === 0) return null;
  let lo = 0;
  let hi = reports.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((reports[mid] as CirculatingReport).day < day) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return null;
  // Several sources on the same latest day: the live one (not CoinMarketCap's monthly snapshot) is the newer read.
  const last = reports[lo - 1] as CirculatingReport;
  for (let k = lo - 1; k >= 0 && (reports[k] as CirculatingReport).day === last.day; k--)
    if ((reports[k] as CirculatingReport).source !== "coinmarketcap") return reports[k] as CirculatingReport;
  return last;
}
