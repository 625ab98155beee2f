import type { UnlockStore } from "../store/unlocks-snapshot.js";
import { computeReaction, mean, median, selectNonOverlapping } from "./backtest.js";
import type { UnlockService } from "./service.js";

export const SIZE_BUCKETS = [
  { label: "<0.1%", lo: 0, hi: 0.1 },
  { label: "0.1–0.5%", lo: 0.1, hi: 0.5 },
  { label: "0.5–1%", lo: 0.5, hi: 1 },
  { label: "1–5%", lo: 1, hi: 5 },
  { label: "5–10%", lo: 5, hi: 10 },
  { label: ">10%", lo: 10, hi: Number.POSITIVE_INFINITY },
] as const;

export const PRE_WINDOW = 30;
export const POST_WINDOW = 14;

export interface CalibrationRow {
  group: string;
  count: number;
  mean_pre_abnormal_pct: number | null;
  median_pre_abnormal_pct: number | null;
  mean_post_abnormal_pct: number | null;
  median_post_abnormal_pct: number | null;
}

export interface CalibrationSample {
  id: string;
  token: string;
  date: string;
  category: string;
  recipient_class: "private" | "public";
  unlock_type: string;
  pct_circulating: number | null;
  risk_score: number;
  pre_abnormal_pct: number;
  post_abnormal_pct: number;
}

export interface CalibrationReport {
  events_considered: number;
  events_measured: number;
  excluded_overlapping: number;
  by_size: CalibrationRow[];
  by_class: CalibrationRow[];
  by_category: CalibrationRow[];
  spearman_risk_vs_post_abnormal: number | null;
  spearman_size_vs_post_abnormal: number | null;
  samples: CalibrationSample[];
}

/** Average ranks (ties share the mean rank). */
export function ranks(xs: readonly number[]): number[] {
  const idx = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length);
  let i = 0;
  while (i < idx.length) {
    let j = i;
    while (
      j + 1 < idx.length &&
      (idx[j + 1] as readonly [number, number])[0] === (idx[i] as readonly [number, number])[0]
    )
      j++;
    const r = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) out[(idx[k] as readonly [number, number])[1]] = r;
    i = j + 1;
  }
  return out;
}

/** Spearman's rho: Pearson correlation of the ranks. */
export function spearman(a: readonly number[], b: readonly number[]): number | null {
  if (a.length !== b.length || a.length < 3) return null;
  const ra = ranks(a);
  const rb = ranks(b);
  const ma = mean(ra) as number;
  const mb = mean(rb) as number;
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < ra.length; i++) {
    const x = (ra[i] as number) - ma;
    const y = (rb[i] as number) - mb;
    num += x * y;
    da += x * x;
    db += y * y;
  }
  return da === 0 || db === 0 ? null : num / Math.sqrt(da * db);
}

const r2 = (x: number | null): number | null => (x === null ? null : Math.round(x * 100) / 100);

function row(group: string, samples: readonly CalibrationSample[]): CalibrationRow {
  const pre = samples.map((s) => s.pre_abnormal_pct);
  const post = samples.map((s) => s.post_abnormal_pct);
  return {
    group,
    count: samples.length,
    mean_pre_abnormal_pct: r2(mean(pre)),
    median_pre_abnormal_pct: r2(median(pre)),
    mean_post_abnormal_pct: r2(mean(post)),
    median_post_abnormal_pct: r2(median(post)),
  };
}

const isPrivate = (category: string): boolean => category === "team" || category === "investors";

/**
 * Measures every discrete (cliff/step) unlock of the store: abnormal return vs the benchmark over
 * −30..0 and 0..+14 days, non-overlapping within a token at the 14-day window.
 */
export function calibrate(store: UnlockStore, service: UnlockService): CalibrationReport {
  const discrete = service.events().filter((s) => s.event.unlockType !== "linear");
  const subjects = discrete.map((s) => ({
    id: s.event.id,
    symbol: s.event.symbol,
    day: s.event.day,
    recipientCategory: s.event.recipientCategory,
    unlockType: s.event.unlockType,
    riskScore: s.risk.score,
    pctCirculating: s.pctCirculating,
  }));
  const measured: CalibrationSample[] = [];
  const computable = subjects.filter((subj) => {
    const series = store.pricesBySymbol.get(subj.symbol.toLowerCase());
    return (
      series !== undefined &&
      computeReaction(subj, series, store.benchmark, PRE_WINDOW) !== null &&
      computeReaction(subj, series, store.benchmark, POST_WINDOW) !== null
    );
  });
  const { kept, dropped } = selectNonOverlapping(computable, POST_WINDOW);
  for (const subj of kept) {
    const series = store.pricesBySymbol.get(subj.symbol.toLowerCase())!;
    const pre = computeReaction(subj, series, store.benchmark, PRE_WINDOW)!;
    const post = computeReaction(subj, series, store.benchmark, POST_WINDOW)!;
    measured.push({
      id: subj.id,
      token: subj.symbol,
      date: pre.unlock_date,
      category: subj.recipientCategory,
      recipient_class: isPrivate(subj.recipientCategory) ? "private" : "public",
      unlock_type: subj.unlockType,
      pct_circulating: subj.pctCirculating,
      risk_score: subj.riskScore,
      pre_abnormal_pct: pre.pre_abnormal_return_pct,
      post_abnormal_pct: post.abnormal_return_pct,
    });
  }
  const withSize = measured.filter((s) => s.pct_circulating !== null);
  const bySize = SIZE_BUCKETS.map((b) =>
    row(
      b.label,
      withSize.filter((s) => (s.pct_circulating as number) >= b.lo && (s.pct_circulating as number) < b.hi),
    ),
  );
  const unknownSize = measured.filter((s) => s.pct_circulating === null);
  if (unknownSize.length > 0) bySize.push(row("unknown (nothing circulating)", unknownSize));
  const categories = [...new Set(measured.map((s) => s.category))].sort();
  return {
    events_considered: subjects.length,
    events_measured: measured.length,
    excluded_overlapping: dropped,
    by_size: bySize,
    by_class: (["private", "public"] as const).map((c) =>
      row(
        c,
        measured.filter((s) => s.recipient_class === c),
      ),
    ),
    by_category: categories.map((c) =>
      row(
        c,
        measured.filter((s) => s.category === c),
      ),
    ),
    spearman_risk_vs_post_abnormal: r2(
      spearman(
        measured.map((s) => s.risk_score),
        measured.map((s) => s.post_abnormal_pct),
      ),
    ),
    spearman_size_vs_post_abnormal: r2(
      spearman(
        withSize.map((s) => s.pct_circulating as number),
        withSize.map((s) => s.post_abnormal_pct),
      ),
    ),
    samples: measured,
  };
}

export function formatReport(r: CalibrationReport): string {
  const fmt = (x: number | null) => (x === null ? "—" : x.toFixed(2));
  const table = (title: string, rows: CalibrationRow[]) =>
    [
      `\n${title}`,
      "| group | n | mean AR −30..0 % | median AR −30..0 % | mean AR 0..+14 % | median AR 0..+14 % |",
      "|---|---:|---:|---:|---:|---:|",
      ...rows.map(
        (x) =>
          `| ${x.group} | ${x.count} | ${fmt(x.mean_pre_abnormal_pct)} | ${fmt(x.median_pre_abnormal_pct)} | ${fmt(x.mean_post_abnormal_pct)} | ${fmt(x.median_post_abnormal_pct)} |`,
      ),
    ].join("\n");
  return [
    `discrete unlock events: ${r.events_considered}; measured (non-overlapping at ${POST_WINDOW} days, full windows): ${r.events_measured}; dropped as overlapping: ${r.excluded_overlapping}`,
    table("By size (% of circulating supply)", r.by_size),
    table("By recipient class (private = team + investors)", r.by_class),
    table("By recipient category", r.by_category),
    `\nSpearman rank correlation, risk_score vs abnormal return 0..+14: ${fmt(r.spearman_risk_vs_post_abnormal)} (n=${r.events_measured})`,
    `Spearman rank correlation, % of circulating vs abnormal return 0..+14: ${fmt(r.spearman_size_vs_post_abnormal)}`,
  ].join("\n");
}
