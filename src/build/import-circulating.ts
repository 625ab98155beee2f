import type { TokenRecord } from "../unlocks/data/types.js";

/** One row of a CoinMarketCap monthly snapshot page (the fields kept). */
export interface CmcRow {
  readonly name: string;
  readonly symbol: string;
  /** The published figure, kept as its decimal text (no float round trip). */
  readonly circulating: string;
  /** YYYY-MM-DD. */
  readonly date: string;
}

/** A matched report as shipped: our symbol, the day, the figure. */
export interface ShippedReportRow {
  readonly token: string;
  readonly date: string;
  readonly circulating_supply: string;
  readonly cmc_name: string;
  readonly cmc_symbol: string;
}

const HEADER =
  "Rank,Name,Symbol,Market Cap,Price,Circulating Supply,Volume (24h),% 1h,% 24h,% 7d,snapshot_date";

/** Parses one `coinmarketcap_monthly_YYYYMM01.csv` (names never hold commas in these files; checked per row). */
export function parseCmcCsv(text: string, file: string): CmcRow[] {
  const lines = text.trim().split(/\r?\n/);
  if (lines[0] !== HEADER) throw new Error(`${file}: unexpected header ${lines[0]}`);
  return lines.slice(1).map((line, i) => {
    const c = line.split(",");
    if (c.length !== 11) throw new Error(`${file}:${i + 2}: expected 11 columns, got ${c.length}`);
    const d = c[10] as string;
    if (!/^\d{8}$/.test(d)) throw new Error(`${file}:${i + 2}: bad snapshot_date ${d}`);
    return {
      name: c[1] as string,
      symbol: c[2] as string,
      circulating: c[5] as string,
      date: `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}`,
    };
  });
}

const norm = (s: string): string =>
  s
    .toLowerCase()
    .replace(/\(.*?\)|\[.*?\]/g, "")
    .replace(/[^a-z0-9]/g, "");

/**
 * CMC names that are the same asset as ours although no name, id or slug of ours spells them (checked by hand in
 * the snapshots: same supply path, renamed listing). Everything else with our symbol but another name is a namesake.
 */
const SAME_ASSET: Readonly<Record<string, readonly string[]>> = {
  BNB: ["BNB"],
  S: ["Sonic (prev. FTM)"],
  POL: ["POL (ex-MATIC)", "POL (prev. MATIC)", "Polygon (prev. MATIC)"],
  SYRUP: ["Maple Finance"],
  GMT: ["GMT"],
  SUPER: ["SuperVerse"],
  ZKJ: ["Polyhedra Network"],
  METIS: ["MetisDAO"],
  SUN: ["Sun (New)", "Sun [New]"],
  WOO: ["WOO Network"],
  TON: ["Toncoin"],
  EIGEN: ["EigenLayer"],
  TRUMP: ["OFFICIAL TRUMP"],
  MELANIA: ["Official Melania Meme"],
  DEEP: ["DeepBook Protocol"],
  DYDX: ["dYdX (Native)"],
  MOCA: ["Moca Network"],
};

/**
 * POL was MATIC until September 2024 (1:1 migration): CMC's `Polygon` / MATIC rows are POL's figures up to the month
 * before CMC lists POL itself; later MATIC rows are the unmigrated remainder, not POL.
 */
const RENAMED_FROM: Readonly<Record<string, { symbol: string; name: string; until: string }>> = {
  POL: { symbol: "MATIC", name: "Polygon", until: "2024-09-01" },
};

/** Whether a CMC row is our token: same symbol and a name that is ours (trap 1: namesakes share symbols). */
export function isSameAsset(
  t: Pick<TokenRecord, "symbol" | "name" | "coingecko_id" | "defillama_slug">,
  r: CmcRow,
): boolean {
  const renamed = RENAMED_FROM[t.symbol];
  if (renamed && r.symbol === renamed.symbol && r.name === renamed.name && r.date <= renamed.until)
    return true;
  if (r.symbol !== t.symbol) return false;
  if (SAME_ASSET[t.symbol]?.includes(r.name)) return true;
  const n = norm(r.name);
  if (n === "") return false;
  const ours = [t.name, t.coingecko_id ?? "", t.defillama_slug ?? ""]
    .map((x) => norm(x.replace(/-\d+$/, "")))
    .filter((x) => x.length >= 3);
  return ours.some((o) => o === n || o.includes(n) || n.includes(o));
}

/**
 * Our tokens' reports from CMC rows: one per token and day. Two different rows for one token-day (a namesake that
 * passed the name check, or a listing and its successor) are an error, never a silent pick.
 */
export function matchReports(
  rows: readonly CmcRow[],
  tokens: readonly Pick<TokenRecord, "symbol" | "name" | "coingecko_id" | "defillama_slug">[],
): ShippedReportRow[] {
  const out = new Map<string, ShippedReportRow>();
  for (const t of tokens)
    for (const r of rows) {
      if (!isSameAsset(t, r)) continue;
      if (!(Number(r.circulating) > 0)) continue;
      const key = `${t.symbol}\u0000${r.date}`;
      const prev = out.get(key);
      if (prev && prev.circulating_supply !== r.circulating)
        throw new Error(
          `${t.symbol} ${r.date}: two reports (${prev.cmc_name} ${prev.circulating_supply}, ${r.name} ${r.circulating})`,
        );
      out.set(key, {
        token: t.symbol,
        date: r.date,
        circulating_supply: r.circulating,
        cmc_name: r.name,
        cmc_symbol: r.symbol,
      });
    }
  return [...out.values()].sort((a, b) => a.token.localeCompare(b.token) || a.date.localeCompare(b.date));
}
