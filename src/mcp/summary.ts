import type { OperationKey } from "../operations/table.js";
import type { WireItem as Item } from "../unlocks/views.js";

/**
 * The text of a paid tool's successful result: a few lines an assistant can quote (the top events, the totals, the
 * legend's key points), where the whole answer would cost a model tens of thousands of tokens to read. The whole
 * answer is the result's `structuredContent`; this text never holds a figure that is not in it.
 */
type Answer = Record<string, unknown>;

const TOP = 5;

/** USD as people write it: $1.4M, $950k, $12. */
export function usd(x: unknown): string {
  if (typeof x !== "number" || !Number.isFinite(x)) return "unknown USD";
  const abs = Math.abs(x);
  if (abs >= 1e9) return `$${(x / 1e9).toFixed(2)}B`;
  if (abs >= 1e6) return `$${(x / 1e6).toFixed(2)}M`;
  if (abs >= 1e3) return `$${(x / 1e3).toFixed(1)}k`;
  return `$${x.toFixed(2)}`;
}

/**
 * Made once: `toLocaleString` with a locale builds a new Intl.NumberFormat on every call (about 130 µs of each paid MCP
 * call's CPU in a V8 profile); `format` of the same locale and options writes the same text.
 */
const NUMBER = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });
const num = (x: unknown): string => (typeof x === "number" ? NUMBER.format(x) : "unknown");
const pct = (x: unknown): string => (typeof x === "number" ? `${x}% of circulating` : "circulating unknown");

function itemLine(u: Item): string {
  const when = u.date_end && u.date_end !== u.date ? `${u.date}..${u.date_end}` : u.date;
  const codes = u.codes.length > 0 ? ` [${u.codes.join(",")}]` : "";
  return `- ${when} ${u.token} ${u.type} (${u.category}): ${num(u.amount_tokens)} tokens, ${usd(u.amount_usd)}, ${pct(u.pct_circulating)}, risk ${u.risk_score}; id ${u.unlock_event_id}${codes}`;
}

function legendLines(a: Answer): string[] {
  const legend = a.legend as { fields?: Record<string, string>; codes?: Record<string, string> } | undefined;
  const out: string[] = [];
  if (legend?.fields?.risk_score) out.push(`Risk score: ${legend.fields.risk_score}.`);
  const codes = Object.entries(legend?.codes ?? {});
  if (codes.length > 0)
    out.push(`Codes: ${codes.map(([k, v]) => `${k} = ${v.split(/[:;(]/)[0]?.trim()}`).join("; ")}.`);
  return out;
}

const WHOLE = "The whole answer (every item, field and the legend) is in structuredContent.";

function upcoming(a: Answer): string {
  const items = (a.unlocks as Item[]) ?? [];
  const top = [...items].sort((x, y) => y.amount_usd - x.amount_usd).slice(0, TOP);
  return [
    `${a.total} unlock events release tokens ${a.window_start}..${a.window_end} (UTC), ${usd(a.total_amount_usd)} in all; this page has ${a.count}${a.next_cursor ? `, next page: cursor=${a.next_cursor}` : ""}.`,
    top.length > 0 ? `Largest by USD on this page:` : "No event matches.",
    ...top.map(itemLine),
    ...legendLines(a),
    WHOLE,
  ].join("\n");
}

function unlockRisk(a: Answer): string {
  const evidence = (a.evidence as { factor: string; contribution: number }[] | undefined) ?? [];
  return [
    itemLine(a as unknown as Item).slice(2),
    ...(evidence.length > 0
      ? [`Score contributions: ${evidence.map((e) => `${e.factor} ${e.contribution}`).join(", ")}.`]
      : []),
    ...legendLines(a),
    WHOLE,
  ].join("\n");
}

function riskSummary(a: Answer): string {
  const next = a.next_unlock as { date: string; unlock_event_id: string; amount_usd: number } | null;
  const top = ((a.top_events as Item[]) ?? []).slice(0, TOP);
  return [
    `${a.token}, ${a.window_start}..${a.window_end}: ${a.eventCount} unlock events, ${num(a.tokens_unlocking)} tokens, ${usd(a.usd_unlocking)}, ${pct(a.pct_circulating_unlocking)}${a.maxRiskScore === undefined ? "" : `, highest risk ${a.maxRiskScore}`}.`,
    next
      ? `Next unlock: ${next.date}, ${usd(next.amount_usd)}, id ${next.unlock_event_id}.`
      : "No unlock ahead.",
    ...(top.length > 0 ? ["Top events by risk:", ...top.map(itemLine)] : []),
    ...legendLines(a),
    WHOLE,
  ].join("\n");
}

function backtest(a: Answer): string {
  const s = (a.summary as Record<string, unknown> | undefined) ?? {};
  const p = (x: unknown) => (typeof x === "number" ? `${x}%` : "unknown");
  return [
    `${a.token} ${a.unlock_event_id}, ${a.windowDays}-day windows, basis ${a.basis}${a.pooled_across_tokens ? " (pooled across tokens)" : ""}: ${s.sample_size} past unlocks measured against ${a.benchmark}.`,
    `Median abnormal return ${p(s.median_abnormal_return_pct)}, mean ${p(s.mean_abnormal_return_pct)}, share negative ${typeof s.share_negative_abnormal === "number" ? s.share_negative_abnormal : "unknown"}, mean max drawdown ${p(s.mean_max_drawdown_pct)}.`,
    WHOLE,
  ].join("\n");
}

const SUMMARIES: Partial<Record<OperationKey, (a: Answer) => string>> = {
  upcoming,
  unlockRisk,
  riskSummary,
  backtest,
};

/** The quotable text of a tool's answer, or undefined where the answer's own JSON is short enough to be its text. */
export function toolSummary(key: OperationKey, answer: Answer): string | undefined {
  const summarize = SUMMARIES[key];
  if (!summarize) return undefined;
  try {
    return summarize(answer);
  } catch {
    // A summary is a courtesy: a shape it cannot read falls back to the answer's JSON.
    return undefined;
  }
}
