import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { formatDay, parseDay } from "../unlocks/data/dates.js";
import { type DailySeries, seriesAt, toDailySeries } from "../unlocks/data/snapshot.js";
import type {
  PriceSeries,
  RecipientCategory,
  SchedulePiece,
  TokenRecord,
  UnlockSnapshot,
} from "../unlocks/data/types.js";
import { buildBenchmarkSeries, readMarketIndex } from "../unlocks/market-history.js";

/** One file of data/unlock-history-6mv (see its README). */
export interface SixMvFile {
  coingecko_id: string;
  allocation_class: "private" | "public";
  groups: string[];
  days: {
    date: string;
    price_usd: number | null;
    eth_usd: number | null;
    circulating_supply: number | null;
    total_supply: number | null;
    unlocked_tokens: number | null;
    unlocked_by_group?: Record<string, number>;
  }[];
}

export const SIXMV_SOURCE = "6th Man Ventures token-vesting study (CoinGecko prices and supplies)";
export const SIXMV_URL = "https://github.com/6th-Man-Ventures/token-vesting";

/** Recipient category from a 6MV group label; the allocation class decides when the label says nothing. */
export function categoryFromLabel(label: string, cls: "private" | "public"): RecipientCategory {
  const l = label.toLowerCase();
  if (/investor|backer|private|seed|strategic|round/.test(l)) return "investors";
  if (/team|contributor|advisor|founder|protocol labs|core/.test(l)) return "team";
  if (/foundation/.test(l)) return "foundation";
  if (/airdrop/.test(l)) return "airdrop";
  if (/treasury|reserve/.test(l)) return "treasury";
  if (/ecosystem|grant/.test(l)) return "ecosystem";
  if (/community|public|sale/.test(l)) return "community";
  return cls === "private" ? "investors" : "community";
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/**
 * Splits a daily unlock series into schedule pieces: a day's amount up to twice its neighbourhood
 * median (±3 days) is steady streaming (linear), anything above is a one-off release (cliff).
 * Runs of equal streaming amounts become linear pieces over [first day, last day + 1).
 */
export function piecesFromDaily(
  amounts: ReadonlyMap<number, number>,
  recipient: string,
  category: RecipientCategory,
): SchedulePiece[] {
  const days = [...amounts.keys()].sort((a, b) => a - b);
  const at = (d: number): number => amounts.get(d) ?? 0;
  const linear = new Map<number, number>();
  const pieces: SchedulePiece[] = [];
  const base = {
    recipient,
    category,
    steps: null,
    step_days: null,
    source_type: "aggregator" as const,
    timing_precision: "exact" as const,
    source_url: SIXMV_URL,
  };
  for (const d of days) {
    const a = at(d);
    if (!(a > 0)) continue;
    const b = median([-3, -2, -1, 1, 2, 3].map((k) => at(d + k)));
    const streaming = b > 0 ? Math.min(a, b) : 0;
    const oneOff = b > 0 && a <= 2 * b ? 0 : a - streaming;
    const lin = a - oneOff;
    if (lin > 0) linear.set(d, lin);
    if (oneOff > 0)
      pieces.push({ ...base, kind: "cliff", start: formatDay(d), end: null, amount_tokens: oneOff });
  }
  let run: { start: number; last: number; rate: number; sum: number } | null = null;
  const flush = () => {
    if (run)
      pieces.push({
        ...base,
        kind: "linear",
        start: formatDay(run.start),
        end: formatDay(run.last + 1),
        amount_tokens: run.sum,
      });
  };
  for (const d of [...linear.keys()].sort((a, b) => a - b)) {
    const v = linear.get(d) as number;
    if (run && d === run.last + 1 && Math.abs(v - run.rate) <= 0.01 * run.rate) {
      run.last = d;
      run.sum += v;
    } else {
      flush();
      run = { start: d, last: d, rate: v, sum: v };
    }
  }
  flush();
  return pieces.sort((a, b) => a.start.localeCompare(b.start));
}

export function symbolFromId(id: string): string {
  return id
    .replace(/[^a-z0-9]/gi, "")
    .toUpperCase()
    .slice(0, 20);
}

function denseSeries(byDay: Map<number, number | null>): { start: number; values: (number | null)[] } {
  const days = [...byDay.keys()].sort((a, b) => a - b);
  const start = days[0] as number;
  const end = days[days.length - 1] as number;
  const values: (number | null)[] = [];
  for (let d = start; d <= end; d++) values.push(byDay.get(d) ?? null);
  return { start, values };
}

/** 6MV's date D holds the 00:00 UTC price of D+1 (local-time labelling): every row moves one day later. */
export const SIXMV_DAY_SHIFT = 1;
/** Lag-0 gate: a table's own ETH column must be within 1 % of the real ETH on at least 95 % of its days. */
export const ETH_GATE = { tolerance: 0.01, minShare: 0.95 } as const;

export interface TableGate {
  table: string;
  days_compared: number;
  share_within_1pct: number;
  passed: boolean;
  /** Days the table's dates move: 1 (6MV's usual D → 00:00 UTC of D+1) or 0 (a table labelled at lag 0). */
  shift: number;
}

export const tableName = (f: SixMvFile): string => `${f.coingecko_id}.${f.allocation_class}`;

function gateAt(f: SixMvFile, eth: DailySeries, shift: number): TableGate {
  let n = 0;
  let ok = 0;
  for (const row of f.days) {
    if (!(row.eth_usd !== null && row.eth_usd > 0)) continue;
    const real = seriesAt(eth.close, eth.startDay, parseDay(row.date) + shift);
    if (real === null) continue;
    n++;
    if (Math.abs(row.eth_usd / real - 1) <= ETH_GATE.tolerance) ok++;
  }
  const share = n > 0 ? ok / n : 0;
  return {
    table: tableName(f),
    days_compared: n,
    share_within_1pct: share,
    passed: n > 0 && share >= ETH_GATE.minShare,
    shift,
  };
}

/**
 * Compares a table's own ETH column (dates shifted) with the real ETH series on the same day. A table that fails at
 * 6MV's usual shift but passes unshifted is labelled at lag 0: it is realigned (shift 0), not discarded.
 */
export function gateTable(f: SixMvFile, eth: DailySeries): TableGate {
  const usual = gateAt(f, eth, SIXMV_DAY_SHIFT);
  if (usual.passed) return usual;
  const lag0 = gateAt(f, eth, 0);
  return lag0.passed ? lag0 : usual;
}

export interface SixMvImport {
  snapshot: UnlockSnapshot;
  gates: TableGate[];
}

/**
 * Converts the 6MV files into a snapshot: real prices, supplies and unlocks with dates shifted to
 * 00:00 UTC of D+1 (or kept at D for the tables labelled at lag 0), measured against the real ETH series (`eth`)
 * aligned by date. Tables whose own ETH column matches at neither shift are left out entirely (named in `gates`).
 */
export function import6mv(allFiles: readonly SixMvFile[], ethPrices: PriceSeries): SixMvImport {
  const eth = toDailySeries(ethPrices);
  const gates = allFiles.map((f) => gateTable(f, eth));
  const shiftOf = new Map(allFiles.map((f, i) => [f, (gates[i] as TableGate).shift]));
  const files = allFiles.filter((_, i) => (gates[i] as TableGate).passed);
  const byId = new Map<string, SixMvFile[]>();
  for (const f of files) byId.set(f.coingecko_id, [...(byId.get(f.coingecko_id) ?? []), f]);
  let lastDay = Number.NEGATIVE_INFINITY;
  const tokens: TokenRecord[] = [];
  for (const [id, group] of [...byId.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const price = new Map<number, number | null>();
    const circ = new Map<number, number | null>();
    const schedules: SchedulePiece[] = [];
    let total: number | null = null;
    for (const f of group) {
      const perGroup = new Map<string, Map<number, number>>();
      for (const row of f.days) {
        const d = parseDay(row.date) + (shiftOf.get(f) ?? SIXMV_DAY_SHIFT);
        lastDay = Math.max(lastDay, d);
        if (row.price_usd !== null && row.price_usd > 0 && !price.get(d)) price.set(d, row.price_usd);
        else if (!price.has(d)) price.set(d, null);
        if (row.circulating_supply !== null && row.circulating_supply > 0)
          circ.set(d, row.circulating_supply);
        else if (!circ.has(d)) circ.set(d, null);
        if (row.total_supply) total = row.total_supply;
        const split =
          row.unlocked_by_group ??
          (row.unlocked_tokens ? { [f.groups.join(" + ")]: row.unlocked_tokens } : {});
        for (const [label, amt] of Object.entries(split)) {
          if (!(amt > 0)) continue;
          const m = perGroup.get(label) ?? new Map<number, number>();
          m.set(d, amt);
          perGroup.set(label, m);
        }
      }
      for (const [label, amounts] of perGroup)
        schedules.push(
          ...piecesFromDaily(
            amounts,
            `${label} (${f.allocation_class})`,
            categoryFromLabel(label, f.allocation_class),
          ),
        );
    }
    const p = denseSeries(price);
    const c = denseSeries(circ);
    // Align circulating to the price series' range.
    const circAligned = p.values.map((_, i) => c.values[p.start + i - c.start] ?? null);
    const lastPrice = [...p.values].reverse().find((v) => v !== null) ?? 1;
    const lastCirc = [...circAligned].reverse().find((v) => v !== null) ?? 0;
    const asOf = formatDay(p.start + p.values.length - 1);
    const prices: PriceSeries = {
      start: formatDay(p.start),
      close: p.values,
      volume_usd: null,
      circulating: circAligned,
      source: SIXMV_SOURCE,
      source_url: SIXMV_URL,
      synthetic: false,
    };
    tokens.push({
      symbol: symbolFromId(id),
      name: id,
      coingecko_id: id,
      defillama_slug: null,
      chain: null,
      max_supply: total,
      supply: {
        circulating: lastCirc,
        total,
        as_of: asOf,
        source: SIXMV_SOURCE,
        source_url: SIXMV_URL,
        synthetic: false,
        assumptions: [],
      },
      market: {
        price_usd: lastPrice,
        adv_30d_usd: null,
        depth_2pct_usd: null,
        as_of: asOf,
        source: SIXMV_SOURCE,
        source_url: SIXMV_URL,
        synthetic: false,
        assumptions: ["the 6MV tables carry no volume or depth"],
      },
      schedules,
      sources: [SIXMV_URL],
      notes: `imported from ${group.map((f) => `${f.coingecko_id}.${f.allocation_class}.json`).join(", ")}`,
      prices,
    });
  }
  const snapshot: UnlockSnapshot = {
    schema_version: 1,
    generated_at: new Date(0).toISOString(),
    as_of: formatDay(lastDay),
    synthetic: false,
    description:
      "6th Man Ventures unlock history (real daily prices, supplies and unlocks) for tests and calibration",
    generator: null,
    benchmark: { symbol: "ETH", name: "Ether", prices: ethPrices },
    tokens,
  };
  return { snapshot, gates };
}

export function read6mvDir(dir: string): SixMvFile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json") && f !== "index.json")
    .sort()
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as SixMvFile);
}

/** The shipped 6MV tables measured against the shipped real ETH series (Binance spot back to 2018). */
export function load6mv(sixmvDir: string, marketDir: string): SixMvImport {
  const eth = buildBenchmarkSeries(marketDir, readMarketIndex(marketDir), "ETH");
  return import6mv(read6mvDir(sixmvDir), eth);
}
