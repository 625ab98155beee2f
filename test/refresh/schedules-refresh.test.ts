import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNLOCKS_FILE } from "../../src/refresh/data-dir.js";
import { createLiveUnlocks } from "../../src/refresh/live-unlocks.js";
import { createRefresher, type Refresher } from "../../src/refresh/refresher.js";
import { refreshableSchedule } from "../../src/sources/defillama/schedules.js";
import { buildUnlockStore, readUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import type { SchedulePiece, TokenRecord, UnlockSnapshot } from "../../src/unlocks/data/types.js";
import { createUnlockService } from "../../src/unlocks/service.js";
import { type DefiLlamaStandIn, defillamaStandIn } from "../helpers/defillama-standin.js";

/** Linear pieces of one recipient never overlap: the unlockEvents format keeps one open rate per recipient. */
const oneRatePerRecipient = (t: TokenRecord): boolean => {
  const open = new Map<string, string>();
  for (const p of t.schedules
    .filter((x) => x.kind === "linear")
    .sort((a, b) => a.start.localeCompare(b.start))) {
    const end = open.get(p.recipient);
    if (end !== undefined && end > p.start) return false;
    open.set(p.recipient, p.end as string);
  }
  return true;
};

const total = (ps: readonly SchedulePiece[]) => ps.reduce((s, p) => s + p.amount_tokens, 0);

let full: UnlockSnapshot;
let initial: UnlockSnapshot;
let refreshed: TokenRecord[];
let curated: TokenRecord;
let stand: DefiLlamaStandIn;
let refresher: Refresher;
let live: ReturnType<typeof createLiveUnlocks>;
let dataDir: string;
let now = new Date("2026-11-26T12:00:00Z");
/** The cliff the source adds to the first token's schedule between two refreshes. */
const NEW_CLIFF = { recipient: "Ecosystem Fund", day: "2027-02-15", share: 0.05 };

beforeAll(async () => {
  full = readUnlockSnapshot(new URL("../../data/unlocks.snapshot.json", import.meta.url).pathname);
  // Five tokens whose schedules are DefiLlama's (from its emissions adapters) and one curated from official documents.
  refreshed = full.tokens.filter((t) => refreshableSchedule(t) && oneRatePerRecipient(t)).slice(0, 5);
  curated = full.tokens.find((t) => t.schedule_set === "curated" && t.defillama_slug !== null) as TokenRecord;
  expect(refreshed).toHaveLength(5);
  expect(refreshableSchedule(curated)).toBe(false);
  initial = { ...full, tokens: [...refreshed, curated] };
  stand = await defillamaStandIn();
  for (const t of [...refreshed, curated]) stand.schedules.set(t.defillama_slug as string, t.schedules);
  dataDir = mkdtempSync(join(tmpdir(), "p402-schedules-"));
  live = createLiveUnlocks(
    createUnlockService(buildUnlockStore(initial), () => now),
    () => now,
  );
  refresher = createRefresher({
    dataDir,
    initial,
    bases: {
      binance: "http://127.0.0.1:9",
      bybit: "http://127.0.0.1:9",
      coingecko: "http://127.0.0.1:9",
      defillama: stand.url,
    },
    coinIds: new Map(),
    clock: () => now,
    onSnapshot: async (s) => {
      await live.swap(s);
    },
  });
});
afterAll(async () => {
  await refresher?.stop();
  await stand?.close();
});

const status = () => refresher.status().find((s) => s.source === "defillama");
const token = (sym: string) => refresher.snapshot().tokens.find((t) => t.symbol === sym) as TokenRecord;

describe("vesting schedules refresh from DefiLlama's emissions in the loop", () => {
  it("runs every 24 periods, and only when DEFILLAMA_BASE_URL is given", () => {
    expect(refresher.status().map((s) => s.source)).toContain("defillama");
  });

  it("a good answer replaces the aggregator's schedules (with the new cliff), never an official one; the model rebuilds", async () => {
    const first = refreshed[0] as TokenRecord;
    const added: SchedulePiece = {
      ...(first.schedules[0] as SchedulePiece),
      recipient: NEW_CLIFF.recipient,
      category: "ecosystem",
      kind: "cliff",
      start: NEW_CLIFF.day,
      end: null,
      amount_tokens: Math.round(total(first.schedules) * NEW_CLIFF.share),
      steps: null,
      step_days: null,
    };
    stand.schedules.set(first.defillama_slug as string, [...first.schedules, added]);
    const run = await refresher.runOnce(["defillama"]);
    expect(run.swapped).toBe(true);
    expect(live.swaps()).toBe(1);

    const got = token(first.symbol);
    expect(got.schedules).toContainEqual(
      expect.objectContaining({
        recipient: NEW_CLIFF.recipient,
        kind: "cliff",
        start: NEW_CLIFF.day,
        amount_tokens: added.amount_tokens,
        source_type: "aggregator",
        source_url: `https://defillama.com/unlocks/${first.defillama_slug}`,
      }),
    );
    expect(total(got.schedules)).toBeCloseTo(total(first.schedules) + added.amount_tokens, -2);
    // The unlock model built its events from the new pieces: the added cliff is an event of the served data.
    const events = live.current().service.events();
    expect(
      events.some(
        (e) =>
          e.event.symbol === first.symbol &&
          e.event.date === NEW_CLIFF.day &&
          e.event.amount >= added.amount_tokens,
      ),
    ).toBe(true);
    // Written to DATA_DIR; the curated (official) schedule was never asked for and is unchanged.
    const written = readUnlockSnapshot(join(dataDir, UNLOCKS_FILE));
    expect(written.tokens.find((t) => t.symbol === first.symbol)?.schedules).toEqual(got.schedules);
    expect(stand.requests.some((r) => r.endsWith(`/${curated.defillama_slug}`))).toBe(false);
    expect(token(curated.symbol).schedules).toEqual(curated.schedules);

    const s = status();
    expect(s).toMatchObject({ updated: 5, failed: 0, last_error: null, data_as_of: stand.lastModified });
    expect(s?.last_success).toBe(now.toISOString());
  });

  it("poisoned answers (a third of the supply lost, no events, HTML, empty, cut short) keep the last good schedules and say so", async () => {
    const before = refresher.snapshot();
    const file = readFileSync(join(dataDir, UNLOCKS_FILE), "utf8");
    const lastGood = status()?.last_success;
    const [a, b, c, d, e] = refreshed as [TokenRecord, TokenRecord, TokenRecord, TokenRecord, TokenRecord];
    stand.poison.set(a.defillama_slug as string, "lost");
    stand.poison.set(b.defillama_slug as string, "no-events");
    stand.poison.set(c.defillama_slug as string, "html");
    stand.poison.set(d.defillama_slug as string, "empty");
    stand.poison.set(e.defillama_slug as string, "truncated");
    now = new Date(now.getTime() + 24 * 3_600_000);
    const run = await refresher.runOnce(["defillama"]);
    expect(run.swapped).toBe(false);
    expect(live.swaps()).toBe(1);
    for (const t of refreshed)
      expect(token(t.symbol).schedules).toEqual(before.tokens.find((x) => x.symbol === t.symbol)?.schedules);
    expect(readFileSync(join(dataDir, UNLOCKS_FILE), "utf8")).toBe(file);

    const s = status();
    expect(s).toMatchObject({
      updated: 0,
      failed: 5,
      last_success: lastGood,
      last_attempt: now.toISOString(),
    });
    const err = s?.last_error ?? "";
    expect(err).toMatch(/^5 of 5 failed, previous data kept/);
    expect(err).toContain(`${a.symbol} (schedule releases`);
    expect(err).toMatch(/under two thirds of the previous \d+; last good schedule kept/);
    expect(err).toContain(`${b.symbol} (returned no unlock events; last good schedule kept)`);
    expect(err).toContain(`${c.symbol} (HTML page instead of JSON)`);
    expect(err).toContain(`${d.symbol} (empty answer)`);
    expect(err).toMatch(new RegExp(`${e.symbol} \\(not valid JSON \\(\\d+ bytes; cut short\\?\\)\\)`));
    expect(err).not.toMatch(/127\.0\.0\.1|http/);
    stand.poison.clear();
  });

  it("a host that no longer lists the tokens (404) keeps their schedules", async () => {
    const slugs = refreshed.map((t) => t.defillama_slug as string);
    const saved = new Map(slugs.map((s) => [s, stand.schedules.get(s)]));
    for (const s of slugs) stand.schedules.delete(s);
    now = new Date(now.getTime() + 24 * 3_600_000);
    const run = await refresher.runOnce(["defillama"]);
    expect(run.swapped).toBe(false);
    expect(status()?.last_error).toMatch(/HTTP 404/);
    for (const [s, p] of saved) stand.schedules.set(s, p as readonly SchedulePiece[]);
  });
});
