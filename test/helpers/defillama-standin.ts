import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { parseDay } from "../../src/unlocks/data/dates.js";
import type { RecipientCategory, SchedulePiece } from "../../src/unlocks/data/types.js";

/**
 * A DefiLlama emissions stand-in on 127.0.0.1: `GET {url}/emissions/{slug}` (the keyless datasets host's path; `url`
 * ends in `/defillama-datasets` so the adapter picks that path) answers the served document shape
 * `{body: "<JSON string>", lastModified}`, whose body holds `metadata.unlockEvents` with `cliffAllocations`
 * `{recipient, category, unlockType, amount}` and `linearAllocations` `{recipient, category, unlockType,
 * previousRatePerWeek, newRatePerWeek, endTimestamp}` (as in test/fixtures/unlocks/defillama-emission-arbitrum.json).
 * The events are written from schedule pieces the test gives (the shipped snapshot's own, which came from DefiLlama's
 * emissions adapters), so the figures are real ones.
 *
 * Poison per slug: an HTML error page, an empty 200, JSON cut short, a document with no events, or one that lost two
 * thirds of its events; unknown slugs answer 404 as the host does.
 */
export type SchedulePoison = "html" | "empty" | "truncated" | "no-events" | "lost";

export interface DefiLlamaStandIn {
  /** Base URL to give as DEFILLAMA_BASE_URL. */
  readonly url: string;
  /** Slug → the pieces its document is written from. */
  readonly schedules: Map<string, readonly SchedulePiece[]>;
  readonly poison: Map<string, SchedulePoison>;
  lastModified: string;
  readonly requests: string[];
  close(): Promise<void>;
}

const DL_CATEGORY: Record<RecipientCategory, string> = {
  team: "insiders",
  investors: "privateSale",
  community: "farming",
  airdrop: "airdrop",
  treasury: "noncirculating",
  foundation: "noncirculating",
  ecosystem: "farming",
  other: "liquidity",
} as Record<RecipientCategory, string>;

const ts = (day: string): number => parseDay(day) * 86_400;

/** unlockEvents for schedule pieces: one event per day, cliffs as cliff allocations, linear pieces as rate starts. */
export function unlockEventsOf(pieces: readonly SchedulePiece[]): object[] {
  const byDay = new Map<number, { cliffAllocations: object[]; linearAllocations: object[] }>();
  const at = (t: number) => {
    let e = byDay.get(t);
    if (!e) {
      e = { cliffAllocations: [], linearAllocations: [] };
      byDay.set(t, e);
    }
    return e;
  };
  for (const p of pieces) {
    const category = DL_CATEGORY[p.category] ?? "liquidity";
    if (p.kind === "cliff" || p.end === null)
      at(ts(p.start)).cliffAllocations.push({
        recipient: p.recipient,
        category,
        unlockType: "cliff",
        amount: p.amount_tokens,
      });
    else {
      const days = parseDay(p.end) - parseDay(p.start);
      at(ts(p.start)).linearAllocations.push({
        recipient: p.recipient,
        category,
        unlockType: "linear_start",
        previousRatePerWeek: 0,
        newRatePerWeek: days > 0 ? (p.amount_tokens / days) * 7 : 0,
        endTimestamp: ts(p.end),
      });
    }
  }
  return [...byDay.entries()].sort((a, b) => a[0] - b[0]).map(([timestamp, e]) => ({ timestamp, ...e }));
}

export async function defillamaStandIn(): Promise<DefiLlamaStandIn> {
  const state = {
    schedules: new Map<string, readonly SchedulePiece[]>(),
    poison: new Map<string, SchedulePoison>(),
    lastModified: "2026-11-25T00:00:00.000Z",
    requests: [] as string[],
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://127.0.0.1").pathname;
    state.requests.push(path);
    const m = /^\/defillama-datasets\/emissions\/([^/]+)$/.exec(path);
    const slug = m ? decodeURIComponent(m[1] as string) : "";
    const pieces = state.schedules.get(slug);
    if (!pieces) {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
      return;
    }
    const poison = state.poison.get(slug);
    if (poison === "html") {
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(
          "<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>cloudflare</body></html>",
        );
      return;
    }
    if (poison === "empty") {
      res.writeHead(200, { "content-type": "application/json" }).end("");
      return;
    }
    let served = pieces;
    if (poison === "no-events") served = [];
    if (poison === "lost") {
      // An adapter that lost sections: only the pieces that add up to under 40 % of the supply are left.
      const total = pieces.reduce((s, p) => s + p.amount_tokens, 0);
      let sum = 0;
      const kept: SchedulePiece[] = [];
      for (const p of [...pieces].sort((a, b) => a.amount_tokens - b.amount_tokens)) {
        sum += p.amount_tokens;
        if (sum < 0.4 * total) kept.push(p);
      }
      served = kept;
    }
    const events = unlockEventsOf(served);
    const body = {
      name: slug,
      metadata: { sources: [`https://example.org/${slug}/tokenomics`], notes: [], unlockEvents: events },
    };
    const text = JSON.stringify({ body: JSON.stringify(body), lastModified: state.lastModified });
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(poison === "truncated" ? text.slice(0, Math.floor(text.length / 2)) : text);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/defillama-datasets`,
    get schedules() {
      return state.schedules;
    },
    get poison() {
      return state.poison;
    },
    get lastModified() {
      return state.lastModified;
    },
    set lastModified(v: string) {
      state.lastModified = v;
    },
    get requests() {
      return state.requests;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
