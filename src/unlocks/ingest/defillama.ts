import { formatDay } from "../../store/unlocks-dates.js";
import type { RecipientCategory, SchedulePiece } from "../../store/unlocks-types.js";
import { type FetchLike, getJson, joinUrl } from "./http.js";

/**
 * DefiLlama emissions adapter. `GET {base}/emission/{slug}` answers `{ body, lastModified }` where
 * body (an object, or the same object serialised as a string) holds `metadata.unlockEvents`: per
 * timestamp, `cliffAllocations` `{recipient, category, unlockType, amount}` and `linearAllocations`
 * `{recipient, category, unlockType, previousRatePerWeek, newRatePerWeek, endTimestamp}`.
 * Default base: https://api.llama.fi (pro: https://pro-api.llama.fi/<key>/api).
 */
export const DEFILLAMA_DEFAULT_BASE = "https://api.llama.fi";

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
export interface DlEmissionBody {
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

/** Converts unlockEvents to schedule pieces: cliffs as they are, linear rates as pieces between rate changes. */
export function piecesFromUnlockEvents(events: readonly DlUnlockEvent[], sourceUrl: string): SchedulePiece[] {
  const base = {
    steps: null,
    step_days: null,
    source_type: "aggregator" as const,
    timing_precision: "day" as const,
    source_url: sourceUrl,
  };
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

export interface DlEmission {
  readonly name: string | null;
  readonly geckoId: string | null;
  readonly sources: string[];
  readonly notes: string[];
  readonly pieces: SchedulePiece[];
  readonly lastModified: string | null;
}

export async function fetchEmission(fetchImpl: FetchLike, base: string, slug: string): Promise<DlEmission> {
  const url = joinUrl(base, `emission/${encodeURIComponent(slug)}`);
  const raw = (await getJson(fetchImpl, url)) as { body?: unknown; lastModified?: string };
  const body = (typeof raw.body === "string" ? JSON.parse(raw.body) : raw.body) as DlEmissionBody | undefined;
  if (!body || typeof body !== "object") throw new Error(`${url}: response has no body`);
  const events = body.metadata?.unlockEvents ?? [];
  return {
    name: body.name ?? null,
    geckoId: body.gecko_id ?? null,
    sources: body.metadata?.sources ?? [],
    notes: body.metadata?.notes ?? [],
    pieces: piecesFromUnlockEvents(events, `https://defillama.com/unlocks/${slug}`),
    lastModified: raw.lastModified ?? null,
  };
}
