import type { SchedulePiece, TokenRecord, UnlockSnapshot } from "../../unlocks/data/types.js";
import { pool } from "../candles/refresh.js";
import { failure, retryAfterOf } from "../errors.js";
import type { FetchLike } from "../http.js";
import type { SourceOutcome } from "../status.js";
import { type DlEmission, fetchEmission } from "./emission.js";

/** A refreshed schedule releasing less than this share of the tokens the previous one released is refused. */
export const MIN_SCHEDULE_SHARE = 2 / 3;

/**
 * Why a refreshed schedule must not replace the previous one (it releases under two thirds of the tokens the previous
 * one did: an adapter that lost a section, not a real change of tokenomics), or null when it may.
 */
export function scheduleLoss(
  previous: readonly SchedulePiece[],
  next: readonly SchedulePiece[],
): string | null {
  const total = (ps: readonly SchedulePiece[]) => ps.reduce((s, p) => s + p.amount_tokens, 0);
  const before = total(previous);
  const after = total(next);
  if (before > 0 && after < before * MIN_SCHEDULE_SHARE)
    return `releases ${Math.round(after)} tokens, under two thirds of the previous ${Math.round(before)}`;
  return null;
}

/**
 * The token with DefiLlama's schedule in place of its own, or why it must keep its own: no unlock events (an empty or
 * stripped answer), or a schedule that releases under two thirds of what the previous one did. What the one-shot and
 * the refresh loop both apply.
 */
export function withEmission(t: TokenRecord, em: DlEmission): { token: TokenRecord } | { refused: string } {
  if (em.pieces.length === 0) return { refused: "returned no unlock events" };
  const lost = scheduleLoss(t.schedules, em.pieces);
  if (lost !== null) return { refused: `schedule ${lost}` };
  return {
    token: {
      ...t,
      schedules: em.pieces,
      sources: [...new Set([`https://defillama.com/unlocks/${t.defillama_slug}`, ...em.sources])],
    },
  };
}

export interface ScheduleSources {
  readonly fetchImpl: FetchLike;
  /** DefiLlama emissions datasets host (`DEFILLAMA_BASE_URL`). */
  readonly base: string;
  readonly concurrency?: number;
}

export interface ScheduleRefresh {
  /** The snapshot with every refreshed schedule in place; null when no schedule changed. */
  readonly snapshot: UnlockSnapshot | null;
  readonly outcome: SourceOutcome;
}

/**
 * The tokens whose schedule is DefiLlama's to refresh: those with a DefiLlama slug whose every piece already came from
 * the aggregator. A schedule taken from the project's own documents is never replaced by an aggregator's reading of
 * it, and a token whose schedule was deliberately left out (no pieces) stays without one.
 */
export const refreshableSchedule = (t: TokenRecord): boolean =>
  t.defillama_slug !== null &&
  t.schedules.length > 0 &&
  t.schedules.every((p) => p.source_type === "aggregator");

const sameSchedule = (a: TokenRecord, b: TokenRecord): boolean =>
  JSON.stringify(a.schedules) === JSON.stringify(b.schedules);

/**
 * Fetches each refreshable token's emission document and takes its schedule through the one-shot's own rule
 * (`withEmission`: no events, or under two thirds of the previous supply, is refused). A token whose answer fails, is
 * refused or looks wrong (HTML, empty, cut short) keeps its last good schedule and is named in the outcome; a 429
 * stops the source for this run. Pure apart from the fetches: nothing is written. The unlock model rebuilds the
 * events from the new pieces when the snapshot is swapped in.
 */
export async function refreshSchedules(
  current: UnlockSnapshot,
  src: ScheduleSources,
  now: Date,
): Promise<ScheduleRefresh> {
  const updated: string[] = [];
  const failed: { item: string; error: string }[] = [];
  const changed = new Map<string, TokenRecord>();
  let retry: number | null = null;
  let newest: string | null = null;
  const jobs = current.tokens.filter(refreshableSchedule);
  await pool(
    jobs,
    src.concurrency ?? 4,
    async (t) => {
      try {
        const em = await fetchEmission(src.fetchImpl, src.base, t.defillama_slug as string);
        const taken = withEmission(t, em);
        if ("refused" in taken) {
          failed.push({ item: t.symbol, error: `${taken.refused}; last good schedule kept` });
          return;
        }
        if (!sameSchedule(t, taken.token)) changed.set(t.symbol, taken.token);
        updated.push(t.symbol);
        const asOf = em.lastModified && !Number.isNaN(Date.parse(em.lastModified)) ? em.lastModified : null;
        const stamp = asOf ? new Date(asOf).toISOString() : now.toISOString();
        if (newest === null || stamp > newest) newest = stamp;
      } catch (err) {
        failed.push(failure(t.symbol, err));
        const wait = retryAfterOf(err);
        if (wait !== null || (err as { status?: number }).status === 429) retry = wait ?? 60;
      }
    },
    () => retry !== null,
  );
  if (retry !== null) {
    const done = new Set([...updated, ...failed.map((f) => f.item)]);
    for (const t of jobs)
      if (!done.has(t.symbol)) failed.push({ item: t.symbol, error: "not asked: source rate-limited us" });
  }
  const outcome: SourceOutcome = {
    source: "defillama",
    updated,
    failed,
    dataAsOf: newest,
    retryAfterSeconds: retry,
  };
  if (changed.size === 0) return { snapshot: null, outcome };
  return {
    snapshot: {
      ...current,
      generated_at: now.toISOString(),
      tokens: current.tokens.map((t) => changed.get(t.symbol) ?? t),
    },
    outcome,
  };
}
