/**
 * What each paid unlock route's typical answer costs a model to read: its bytes and an estimate of its tokens, in the
 * default compact view and with `view=full`, and the text an MCP tool result carries. Answers are the operations' own
 * (src/operations/unlocks.ts) over the shipped snapshot, computed in process: sizes do not depend on the machine.
 *
 * Tokens are estimated as bytes / 4 (rounded up), the usual rule of thumb for English and JSON under GPT-style BPE
 * tokenizers; JSON full of numbers and ids runs somewhat above it, so read the figure as an order of magnitude.
 *
 *   tsx scripts/bench/answer-size.ts [--at 2026-11-27]      (also `npm run bench -- --only answers`)
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { FastifyRequest } from "fastify";
import { toolSummary } from "../../src/mcp/summary.js";
import type { OperationKey } from "../../src/operations/table.js";
import { unlockHandlers } from "../../src/operations/unlocks.js";
import { loadUnlockStore } from "../../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../../src/unlocks/service.js";

export interface AnswerSize {
  route: string;
  call: string;
  compactBytes: number;
  fullBytes: number;
  mcpTextBytes: number;
  items: number;
}

export const estimateTokens = (bytes: number): number => Math.ceil(bytes / 4);

const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

/** Each paid unlock route's typical call (the README's and the examples'), at `at`. */
export async function answerSizes(at: Date = new Date()): Promise<AnswerSize[]> {
  const service = createUnlockService(loadUnlockStore(), () => at);
  const ops = unlockHandlers({ unlocksFor: () => service });
  const request = {} as FastifyRequest;
  const event = service.upcoming(90, 0).unlocks.find((u) => u.token === "ARB" && u.unlock_type !== "linear");
  if (!event) throw new Error("no upcoming ARB event to size the answers with");
  const ref = { token: "ARB", unlock_event_id: event.unlock_event_id };
  const cases: {
    key: OperationKey;
    route: string;
    call: string;
    run: (view: "compact" | "full") => unknown;
  }[] = [
    {
      key: "upcoming",
      route: "GET /v1/unlocks/upcoming",
      call: "days=30, every event (limit=500)",
      run: (view) => ops.upcoming.answer({ days: 30, minRisk: 0, limit: 500, view }, request),
    },
    {
      key: "upcoming",
      route: "GET /v1/unlocks/upcoming",
      call: "days=30 (default limit 100)",
      run: (view) => ops.upcoming.answer({ days: 30, minRisk: 0, view }, request),
    },
    {
      key: "unlockRisk",
      route: "POST /v1/unlock-risk",
      call: `${ref.unlock_event_id}, includeEvidence`,
      run: (view) => ops.unlockRisk.answer({ ...ref, includeEvidence: true, view }, request),
    },
    {
      key: "riskSummary",
      route: "POST /v1/token/risk-summary",
      call: "ARB, 90 days",
      run: (view) => ops.riskSummary.answer({ token: "ARB", lookbackDays: 90, view }, request),
    },
    {
      key: "backtest",
      route: "POST /v1/unlock/backtest",
      call: `${ref.unlock_event_id}, 14 days`,
      run: (view) => ops.backtest.answer({ ...ref, windowDays: 14, view }, request),
    },
  ];
  const out: AnswerSize[] = [];
  for (const c of cases) {
    const compact = (await c.run("compact")) as Record<string, unknown>;
    const full = await c.run("full");
    const text = toolSummary(c.key, compact) ?? JSON.stringify(compact);
    const list = (compact.unlocks ?? compact.top_events ?? compact.reactions) as unknown[] | undefined;
    out.push({
      route: c.route,
      call: c.call,
      compactBytes: bytes(compact),
      fullBytes: bytes(full),
      mcpTextBytes: Buffer.byteLength(text),
      items: list?.length ?? 1,
    });
  }
  return out;
}

export function logAnswerSizes(sizes: AnswerSize[], log: (line: string) => void, at: Date): void {
  log(`answer sizes at ${at.toISOString().slice(0, 10)} (tokens ≈ bytes / 4):`);
  for (const s of sizes)
    log(
      `  ${s.route} (${s.call}; ${s.items} items): compact ${s.compactBytes} B ≈ ${estimateTokens(s.compactBytes)} tokens; ` +
        `view=full ${s.fullBytes} B ≈ ${estimateTokens(s.fullBytes)} tokens; MCP text ${s.mcpTextBytes} B ≈ ${estimateTokens(s.mcpTextBytes)} tokens`,
    );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { at: { type: "string" } } });
  const at = values.at ? new Date(`${values.at}T12:00:00Z`) : new Date();
  answerSizes(at)
    .then((sizes) => logAnswerSizes(sizes, (l) => process.stdout.write(`${l}\n`), at))
    .catch((err: unknown) => {
      process.stderr.write(`answer-size: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
