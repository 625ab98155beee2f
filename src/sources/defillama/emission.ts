import { formatDay } from "../../unlocks/data/dates.js";
import type { RecipientCategory, SchedulePiece } from "../../unlocks/data/types.js";
import { type FetchLike, getJson, joinUrl } from "../http.js";

/**
 * DefiLlama emissions adapter. The keyless datasets host serves `GET {base}/emissions/{slug}`; the
 * legacy `api.llama.fi/emission/{slug}` (now 402 without a plan) and the pro API document
 * `{ body, lastModified }`. `body` is documented as an object but served as a JSON string by the
 * legacy host: both are accepted, as is a bare body. It holds `metadata.unlockEvents`: per
 * timestamp, `cliffAllocations` `{recipient, category, unlockType, amount}` and `linearAllocations`
 * `{recipient, category, unlockType, previousRatePerWeek, newRatePerWeek, endTimestamp}`.
 */
export const DEFILLAMA_DEFAULT_BASE = "https://defillama-datasets.llama.fi";

/** The datasets host says `emissions/`, the API hosts `emission/`. */
export function emissionUrl(base: string, slug: string): string {
  const path = /defillama-datasets/.test(base) ? "emissions" : "emission";
  return joinUrl(base, `${path}/${encodeURIComponent(slug)}`);
}

/** The emission document from any of the served shapes: `{body: object}`, `{body: "<json>"}` or the body itself. */
export function emissionBody(raw: unknown, url: string): DlEmissionBody {
  const env = raw as { body?: unknown } | null;
  if (env === null || typeof env !== "object") throw new Error(`${url}: response is not an object`);
  let body: unknown = "body" in env ? env.body : env;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      throw new Error(`${url}: body is a string but not JSON`);
    }
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new Error(`${url}: response has no body`);
  return body as DlEmissionBody;
}

export interface DlCliff {
  recipient: string;
  category: string;
  unlockType?: string;
  amount: number;
}
export interface DlLinear {
  recipient: string;
  category: string;
  unlockType?: string;
  previousRatePerWeek: number;
  newRatePerWeek: number;
  endTimestamp: number;
}
export interface DlUnlockEvent {
  timestamp: number;
  cliffAllocations?: DlCliff[];
  linearAllocations?: DlLinear[];
}
/** The documented (pro API) shape: per allocation label, cumulative `unlocked` at timestamps. */
export interface DlDocumentedSeries {
  label: string;
  data: { timestamp: number; unlocked: number; rawEmission?: number; burned?: number }[];
}
export interface DlEmissionBody {
  documentedData?: { data?: DlDocumentedSeries[] };
  name?: string;
  gecko_id?: string;
  metadata?: { sources?: string[]; notes?: string[]; unlockEvents?: DlUnlockEvent[]; token?: string };
  supplyMetrics?: { maxSupply?: number | null };
}

const DL_CATEGORY: Record<string, RecipientCategory> = {
  insiders: "team",
  privateSale: "investors",
  publicSale: "community",
  airdrop: "airdrop",
  farming: "community",
  noncirculating: "treasury",
  liquidity: "other",
};

/** The recipient's own label wins (DefiLlama lumps team and investors into "insiders"). */
export function dlCategory(recipient: string, category: string): RecipientCategory {
  const l = recipient.toLowerCase();
  if (/investor|backer|private|seed|strategic|series/.test(l)) return "investors";
  if (/team|contributor|advisor|founder|core|employee/.test(l)) return "team";
  if (/foundation/.test(l)) return "foundation";
  if (/airdrop/.test(l)) return "airdrop";
  if (/ecosystem|grant|developer|builder/.test(l)) return "ecosystem";
  if (/treasury|dao|reserve/.test(l)) return "treasury";
  if (/community|reward|incentive|staking|farming|public/.test(l)) return "community";
  return DL_CATEGORY[category] ?? "other";
}

const dayOfTs = (ts: number): number => Math.floor(ts / 86_400);

/** The fields every piece read from DefiLlama shares: a daily-precision aggregator source, no steps. */
const aggregatorPieceBase = (sourceUrl: string) => ({
  steps: null,
  step_days: null,
  source_type: "aggregator" as const,
  timing_precision: "day" as const,
  source_url: sourceUrl,
});

/** Converts unlockEvents to schedule pieces: cliffs as they are, linear rates as pieces between rate changes. */
export function piecesFromUnlockEvents(events: readonly DlUnlockEvent[], sourceUrl: string): SchedulePiece[] {
  const base = aggregatorPieceBase(sourceUrl);
  const pieces: SchedulePiece[] = [];
  const open = new Map<
    string,
    { start: number; end: number; ratePerDay: number; category: RecipientCategory }
  >();
  const close = (recipient: string, at: number) => {
    const s = open.get(recipient);
    if (!s) return;
    const end = Math.min(at, s.end);
    if (end > s.start && s.ratePerDay > 0)
      pieces.push({
        ...base,
        recipient,
        category: s.category,
        kind: "linear",
        start: formatDay(s.start),
        end: formatDay(end),
        amount_tokens: s.ratePerDay * (end - s.start),
      });
    open.delete(recipient);
  };
  for (const ev of [...events].sort((a, b) => a.timestamp - b.timestamp)) {
    const day = dayOfTs(ev.timestamp);
    for (const c of ev.cliffAllocations ?? []) {
      if (!(c.amount > 0)) continue;
      pieces.push({
        ...base,
        recipient: c.recipient,
        category: dlCategory(c.recipient, c.category),
        kind: "cliff",
        start: formatDay(day),
        end: null,
        amount_tokens: c.amount,
      });
    }
    for (const l of ev.linearAllocations ?? []) {
      close(l.recipient, day);
      if (l.newRatePerWeek > 0)
        open.set(l.recipient, {
          start: day,
          end: dayOfTs(l.endTimestamp),
          ratePerDay: l.newRatePerWeek / 7,
          category: dlCategory(l.recipient, l.category),
        });
    }
  }
  for (const [recipient, s] of [...open.entries()]) close(recipient, s.end);
  return pieces.sort((a, b) => a.start.localeCompare(b.start) || a.recipient.localeCompare(b.recipient));
}

/** A one-day increase is a cliff when the days either side release at most this share of it. */
const CLIFF_JUMP = 0.1;

/**
 * Pieces from the documented shape: the first point's cumulative amount is a cliff on its date; a one-day
 * increase standing far above its neighbours is a cliff on the later date; every other increase streams
 * linearly between the two dates (consecutive equal daily rates merge).
 */
export function piecesFromDocumented(
  series: readonly DlDocumentedSeries[],
  sourceUrl: string,
): SchedulePiece[] {
  const base = aggregatorPieceBase(sourceUrl);
  const pieces: SchedulePiece[] = [];
  for (const s of series) {
    const category = dlCategory(s.label, "");
    const pts = [...s.data]
      .filter((p) => Number.isFinite(p.unlocked))
      .sort((a, b) => a.timestamp - b.timestamp);
    const first = pts[0];
    if (!first) continue;
    if (first.unlocked > 0)
      pieces.push({
        ...base,
        recipient: s.label,
        category,
        kind: "cliff",
        start: formatDay(dayOfTs(first.timestamp)),
        end: null,
        amount_tokens: first.unlocked,
      });
    let run: { start: number; end: number; rate: number } | null = null;
    const flush = () => {
      if (run)
        pieces.push({
          ...base,
          recipient: s.label,
          category,
          kind: "linear",
          start: formatDay(run.start),
          end: formatDay(run.end),
          amount_tokens: run.rate * (run.end - run.start),
        });
      run = null;
    };
    // Daily rate of interval i (between points i−1 and i), 0 where it does not increase.
    const rateAt = (i: number): number => {
      const p = pts[i - 1];
      const q = pts[i];
      if (!p || !q) return 0;
      const d = dayOfTs(q.timestamp) - dayOfTs(p.timestamp);
      return d > 0 && q.unlocked > p.unlocked ? (q.unlocked - p.unlocked) / d : 0;
    };
    for (let i = 1; i < pts.length; i++) {
      const a = dayOfTs((pts[i - 1] as (typeof pts)[number]).timestamp);
      const b = dayOfTs((pts[i] as (typeof pts)[number]).timestamp);
      const inc = (pts[i] as (typeof pts)[number]).unlocked - (pts[i - 1] as (typeof pts)[number]).unlocked;
      if (!(b > a) || !(inc > 0)) {
        flush();
        continue;
      }
      const rate = inc / (b - a);
      // A one-day jump far above the days around it is a cliff: it is in the cumulative figure of day b, so it
      // happened on b (not a one-day stream over day a, which would date it a day early).
      if (b - a === 1 && rateAt(i - 1) <= CLIFF_JUMP * rate && rateAt(i + 1) <= CLIFF_JUMP * rate) {
        flush();
        pieces.push({
          ...base,
          recipient: s.label,
          category,
          kind: "cliff",
          start: formatDay(b),
          end: null,
          amount_tokens: inc,
        });
        continue;
      }
      const r = run as { start: number; end: number; rate: number } | null;
      if (r && r.end === a && Math.abs(rate - r.rate) <= 1e-9 * r.rate) r.end = b;
      else {
        flush();
        run = { start: a, end: b, rate };
      }
    }
    flush();
  }
  return pieces.sort((a, b) => a.start.localeCompare(b.start) || a.recipient.localeCompare(b.recipient));
}

export interface DlEmission {
  readonly name: string | null;
  readonly geckoId: string | null;
  readonly sources: string[];
  readonly notes: string[];
  readonly pieces: SchedulePiece[];
  readonly lastModified: string | null;
}

export async function fetchEmission(fetchImpl: FetchLike, base: string, slug: string): Promise<DlEmission> {
  const url = emissionUrl(base, slug);
  const raw = (await getJson(fetchImpl, url)) as { lastModified?: string };
  const body = emissionBody(raw, url);
  const events = body.metadata?.unlockEvents ?? [];
  const sourceUrl = `https://defillama.com/unlocks/${slug}`;
  const documented = body.documentedData?.data ?? [];
  return {
    name: body.name ?? null,
    geckoId: body.gecko_id ?? null,
    sources: body.metadata?.sources ?? [],
    notes: body.metadata?.notes ?? [],
    pieces:
      events.length > 0 || documented.length === 0
        ? piecesFromUnlockEvents(events, sourceUrl)
        : piecesFromDocumented(documented, sourceUrl),
    lastModified: raw.lastModified ?? null,
  };
}
