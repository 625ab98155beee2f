import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type FaultFacilitator,
  type HttpApp,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
  upcomingProof,
} from "../helpers/fault-facilitator.js";
import { useFaultStack } from "../helpers/fault-stack.js";

// Idempotency and replay under real concurrency: a real HTTP server, a real facilitator client, 100 sockets at once.
const stack = useFaultStack();

async function setup(env: Record<string, string> = {}, ledgerPath?: string, paymentsClock?: () => Date) {
  const fac = await startFaultFacilitator();
  stack.fac = fac;
  const http = await startHttpApp(fac.url, env, { ledgerPath, ...(paymentsClock ? { paymentsClock } : {}) });
  stack.http = http;
  return { fac, http };
}

/**
 * The first request is held inside verify (a gate, not a delay) while `n - 1` identical ones are answered; then the
 * gate opens. What each gets does not depend on how fast the machine is.
 */
async function heldBurst(f: FaultFacilitator, app: HttpApp, n: number, headers: Record<string, string>) {
  let open: () => void = () => {};
  f.verifyGate = new Promise<void>((r) => (open = r));
  const first = get(app, headers);
  await f.untilCalls("verify", 1);
  const rest = await burst(app, n - 1, headers);
  open();
  f.verifyGate = undefined;
  const r = await first;
  return [{ status: r.status, retryAfter: r.headers.get("retry-after"), body: await r.text() }, ...rest];
}

const get = (app: HttpApp, headers: Record<string, string>, path = UPCOMING_PATH) =>
  fetch(`${app.url}${path}`, { headers });

async function burst(app: HttpApp, n: number, headers: Record<string, string>) {
  const responses = await Promise.all(Array.from({ length: n }, () => get(app, headers)));
  return Promise.all(
    responses.map(async (r) => ({
      status: r.status,
      retryAfter: r.headers.get("retry-after"),
      body: await r.text(),
    })),
  );
}

function tally(statuses: number[]): Record<number, number> {
  const t: Record<number, number> = {};
  for (const s of statuses) t[s] = (t[s] ?? 0) + 1;
  return t;
}

describe("one proof buys one response, under 100 concurrent identical requests", () => {
  it("without an Idempotency-Key: one 200, 99 × 409, one verify, one settlement", async () => {
    const { fac, http } = await setup();
    const proof = upcomingProof(http.config);
    const results = await heldBurst(fac, http, 100, { "payment-signature": proof });
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 1, 409: 99 });
    for (const r of results.filter((r) => r.status === 409)) {
      expect(r.retryAfter).toBe("1");
      expect(r.body).not.toContain(`"unlocks":`);
    }
    expect(fac.calls).toMatchObject({ verify: 1, settle: 1 });
    expect(fac.transfers.size).toBe(1);
    expect(await http.ledger.receipts()).toHaveLength(1);
  });

  it("with one Idempotency-Key: one 200, 99 × 409, then replays are identical and never reach the facilitator", async () => {
    const { fac, http } = await setup();
    const headers = { "payment-signature": upcomingProof(http.config), "idempotency-key": "order-7f3a" };
    const results = await heldBurst(fac, http, 100, headers);
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 1, 409: 99 });
    expect(fac.calls).toMatchObject({ verify: 1, settle: 1 });
    const original = results.find((r) => r.status === 200)?.body;

    const first = await get(http, headers);
    const firstHeader = first.headers.get("payment-response");
    fac.resetCounters();
    // Replays, also concurrent: all 200 with the stored body and settlement header, no facilitator traffic at all.
    const replays = await Promise.all(Array.from({ length: 20 }, () => get(http as HttpApp, headers)));
    for (const r of replays) {
      expect(r.status).toBe(200);
      expect(r.headers.get("idempotent-replayed")).toBe("true");
      expect(r.headers.get("payment-response")).toBe(firstHeader);
      expect(await r.text()).toBe(original);
    }
    expect(await first.text()).toBe(original);
    expect(fac.calls).toEqual({ verify: 0, settle: 0, supported: 0 });
    expect(fac.connections).toBe(0);
    expect(fac.transfers.size).toBe(1);
  });

  it("100 concurrent requests, each with its own proof, all settle (the lock is per proof, not global)", async () => {
    const { fac, http } = await setup();
    const responses = await Promise.all(
      Array.from({ length: 100 }, () => get(http, { "payment-signature": upcomingProof(http.config) })),
    );
    expect(tally(responses.map((r) => r.status))).toEqual({ 200: 100 });
    expect(fac.transfers.size).toBe(100);
    expect(new Set((await http.ledger.receipts()).map((r) => r.transaction)).size).toBe(100);
  });
});

describe("idempotency records", () => {
  it("expire after IDEMPOTENCY_TTL_SECONDS (a clock the test moves): the key is free again, the old proof stays spent", async () => {
    let now = Date.now();
    const { fac, http } = await setup({ IDEMPOTENCY_TTL_SECONDS: "60" }, undefined, () => new Date(now));
    const proof = upcomingProof(http.config);
    expect((await get(http, { "payment-signature": proof, "idempotency-key": "ttl-key" })).status).toBe(200);
    // Within the TTL: the key is bound to that request and proof.
    const otherProof = upcomingProof(http.config);
    const reused = await get(
      http,
      { "payment-signature": otherProof, "idempotency-key": "ttl-key" },
      "/v1/unlocks/upcoming?days=7",
    );
    expect(reused.status).toBe(422);
    const replay = await get(http, { "payment-signature": proof, "idempotency-key": "ttl-key" });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");

    now += 60_000;
    // After it: no replay of the old response (its retention ended too) and no fresh PAYMENT-REQUIRED for a proof
    // that paid for this request: a 409 that says so, without a facilitator call…
    fac.resetCounters();
    const stale = await get(http, { "payment-signature": proof, "idempotency-key": "ttl-key" });
    expect(stale.status).toBe(409);
    expect(stale.headers.get("idempotent-replayed")).toBeNull();
    expect(stale.headers.get("payment-required")).toBeNull();
    expect(((await stale.json()) as { type: string }).type).toMatch(/payment-already-used$/);
    expect(fac.calls.verify).toBe(0);
    // …and the key can carry a new request and proof.
    const fresh = await get(
      http,
      { "payment-signature": otherProof, "idempotency-key": "ttl-key" },
      "/v1/unlocks/upcoming?days=7",
    );
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
  });

  it("survive a restart: the same key and proof replay from the ledger file with no facilitator call", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-"));
    stack.dirs.push(dir);
    const ledgerPath = join(dir, "ledger.sqlite");
    const { http: first } = await setup({}, ledgerPath);
    const headers = { "payment-signature": upcomingProof(first.config), "idempotency-key": "restart-key" };
    const original = await get(first, headers);
    expect(original.status).toBe(200);
    const body = await original.text();
    const settlement = original.headers.get("payment-response");
    await first.close();
    await stack.fac?.close();

    const { fac: fac2, http: second } = await setup({}, ledgerPath);
    const replay = await get(second, headers);
    expect(replay.status).toBe(200);
    expect(await replay.text()).toBe(body);
    expect(replay.headers.get("payment-response")).toBe(settlement);
    expect(fac2.calls).toMatchObject({ verify: 0, settle: 0 }); // (supported: the background health refresh)
  });
});
