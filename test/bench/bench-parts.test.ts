import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  compareReport,
  compareTarget,
  dependencyDrift,
  formatSpread,
  ratioSpread,
  roundRatios,
  verdict,
} from "../../scripts/bench/compare.js";
import { startInstantFacilitator } from "../../scripts/bench/instant-facilitator.js";
import { spread } from "../../scripts/bench/load.js";
import { paymentHeaders, signAuthorizations } from "../../scripts/bench/proofs.js";
import { writeSyntheticStore } from "../../scripts/bench/synthetic-store.js";
import {
  BASE_USDC_ADDRESS,
  DEVNET_CHAIN_ID,
  devnetKey,
  USDC_EIP712_NAME,
  USDC_EIP712_VERSION,
} from "../../src/devnet/constants.js";
import { authorizationSigner } from "../../src/payments/terms/signature.js";
import { parseUnlockSnapshot } from "../../src/unlocks/data/snapshot.js";
import { expandTokenEvents } from "../../src/unlocks/events.js";

const PAY_TO = "0x00000000000000000000000000000000000000aa" as const;

describe("bench: spread", () => {
  it("gives min, median and max, the median of an even count being the mean of the middle two", () => {
    expect(spread([3, 1, 2])).toEqual({ min: 1, median: 2, max: 3 });
    expect(spread([4, 1, 3, 2])).toEqual({ min: 1, median: 2.5, max: 4 });
  });
});

describe("bench: pre-signed proofs", () => {
  it("are real EIP-3009 authorizations by anvil account 1, each with its own nonce", async () => {
    const signed = await signAuthorizations(3, PAY_TO, "20000");
    expect(new Set(signed.map((s) => s.authorization.nonce)).size).toBe(3);
    for (const s of signed) {
      const signer = await authorizationSigner(s, {
        name: USDC_EIP712_NAME,
        version: USDC_EIP712_VERSION,
        chainId: DEVNET_CHAIN_ID,
        verifyingContract: BASE_USDC_ADDRESS,
      });
      expect(signer).toBe(devnetKey(1).address);
      expect(s.authorization).toMatchObject({ to: PAY_TO, value: "20000" });
    }
    const accepted = {
      scheme: "exact",
      network: "eip155:8453",
      amount: "20000",
      asset: BASE_USDC_ADDRESS,
      payTo: PAY_TO,
      maxTimeoutSeconds: 300,
      extra: {},
    } as const;
    const [header] = paymentHeaders(signed.slice(0, 1), { accepted, resource: { url: "http://x/y" } });
    expect(JSON.parse(Buffer.from(header as string, "base64").toString("utf8"))).toEqual({
      x402Version: 2,
      resource: { url: "http://x/y" },
      accepted,
      payload: { signature: signed[0]?.signature, authorization: signed[0]?.authorization },
    });
  });
});

describe("bench: instant facilitator", () => {
  let fac: Awaited<ReturnType<typeof startInstantFacilitator>>;
  beforeAll(async () => {
    fac = await startInstantFacilitator();
  });
  afterAll(() => fac.close());

  const post = (path: string, body: unknown) =>
    fetch(`${fac.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  const request = {
    paymentPayload: { payload: { authorization: { from: "0x000000000000000000000000000000000000b0b0" } } },
    paymentRequirements: { network: "eip155:8453" },
  };

  it("lists the exact scheme on Base for v2 and v1", async () => {
    const res = await fetch(`${fac.url}/supported`);
    expect((await res.json()) as unknown).toMatchObject({
      kinds: [
        { x402Version: 2, scheme: "exact", network: "eip155:8453" },
        { x402Version: 1, scheme: "exact", network: "base" },
      ],
    });
  });

  it("verifies and settles any readable request for its payer, each settlement with a fresh transaction", async () => {
    expect(await (await post("/verify", request)).json()).toEqual({
      isValid: true,
      payer: request.paymentPayload.payload.authorization.from,
    });
    const a = (await (await post("/settle", request)).json()) as { success: boolean; transaction: string };
    const b = (await (await post("/settle", request)).json()) as { transaction: string };
    expect(a).toMatchObject({
      success: true,
      network: "eip155:8453",
      payer: request.paymentPayload.payload.authorization.from,
    });
    expect(a.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(b.transaction).not.toBe(a.transaction);
    expect((await fetch(`${fac.url}/settle`, { method: "POST", body: "{" })).status).toBe(400);
    expect((await fetch(`${fac.url}/nope`)).status).toBe(404);
  });
});

describe("bench: synthetic store", () => {
  const dir = mkdtempSync(join(tmpdir(), "p402-synthetic-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reaches the target event count, validates as a snapshot, and labels every copy synthetic", () => {
    const store = writeSyntheticStore(join(dir, "s.json"), 5_000);
    const snap = parseUnlockSnapshot(readFileSync(store.path, "utf8"), store.path);
    const events = snap.tokens.reduce((n, t) => n + expandTokenEvents(t).length, 0);
    expect(events).toBe(store.events);
    expect(events).toBeGreaterThanOrEqual(5_000);
    expect(snap.synthetic).toBe(true);
    expect(snap.description).toMatch(/^SYNTHETIC BENCH DATA/);
    expect(new Set(snap.tokens.map((t) => t.symbol.toLowerCase())).size).toBe(snap.tokens.length);
    for (const t of snap.tokens) {
      expect(t.notes).toMatch(/^SYNTHETIC BENCH DATA/);
      expect(t.name).toMatch(/synthetic bench copy/);
      expect(t.market.synthetic && t.supply.synthetic).toBe(true);
    }
  });
});

describe("bench: comparison with an earlier commit", () => {
  it("takes an existing .json as a saved result and anything else as a commit for git to resolve", () => {
    expect(compareTarget("3ed0897", () => false)).toEqual({ kind: "commit", ref: "3ed0897" });
    expect(compareTarget("v1.0.0~1", () => false)).toEqual({ kind: "commit", ref: "v1.0.0~1" });
    expect(compareTarget("before.json", (p) => p === "before.json")).toEqual({
      kind: "saved",
      file: "before.json",
    });
    expect(() => compareTarget("missing.json", () => false)).toThrow(/no saved result/);
    expect(() => compareTarget(" ", () => true)).toThrow(/give a commit/);
  });

  it("divides round by round and skips a round where either side is missing or not positive", () => {
    expect(roundRatios([200, 300, 400], [100, 100, 200])).toEqual([2, 3, 2]);
    expect(roundRatios([200, Number.NaN, 400, 10], [100, 100, 0])).toEqual([2]);
    expect(ratioSpread([100, 90, 120], [50, 60, 40])).toEqual({ min: 1.5, median: 2, max: 3 });
    expect(ratioSpread([], [])).toMatchObject({ median: Number.NaN });
  });

  it("says a goal is met only when every round is on its side, and a range across it is no result", () => {
    expect(verdict({ min: 1.02, median: 1.1, max: 1.3 }, "≥", 1)).toBe("met");
    expect(verdict({ min: 0.7, median: 0.8, max: 0.95 }, "≥", 1)).toBe("not met");
    expect(verdict({ min: 0.9, median: 1.05, max: 1.2 }, "≥", 1)).toBe("straddles");
    expect(verdict({ min: 0.2, median: 0.22, max: 0.25 }, "≤", 0.25)).toBe("met");
    expect(verdict({ min: 0.3, median: 0.4, max: 0.5 }, "≤", 0.25)).toBe("not met");
    expect(verdict({ min: 0.2, median: 0.26, max: 0.3 }, "≤", 0.25)).toBe("straddles");
    expect(verdict({ min: Number.NaN, median: Number.NaN, max: Number.NaN }, "≥", 1)).toBe("not met");
    expect(formatSpread({ min: 0.5, median: 1, max: 1.25 })).toBe("1.00 (0.50–1.25)");
    expect(formatSpread({ min: Number.NaN, median: Number.NaN, max: Number.NaN })).toBe("unknown");
  });

  it("lists the dependencies whose declared versions differ between two package.json files", () => {
    const before = JSON.stringify({
      dependencies: { a: "^1.0.0", b: "^2.0.0" },
      devDependencies: { t: "1" },
    });
    const after = JSON.stringify({ dependencies: { a: "^1.0.0", b: "^2.1.0", c: "^3.0.0" } });
    expect(dependencyDrift(before, after)).toEqual([
      "b: ^2.0.0 → ^2.1.0",
      "c: absent → ^3.0.0",
      "t: 1 → absent",
    ]);
    expect(dependencyDrift(before, before)).toEqual([]);
  });

  it("reports each ratio against the previous release and the references, with its goal", () => {
    const run = (reqPerSec: number[], cpu: number[]) =>
      reqPerSec.map((r, i) => ({
        reqPerSec: r,
        cpuUsPerRequest: cpu[i] as number,
        p50Ms: 1,
        p99Ms: 2,
        requests: 100,
        unexpected: 0,
        errors: 0,
      }));
    const lines = compareReport({
      previous: "aaaa",
      today: "bbbb",
      rounds: 2,
      pinned: true,
      unpaid: {
        previous: run([100, 100], [80, 80]),
        today: run([120, 130], [60, 64]),
        fastify: run([150, 150], [30, 32]),
        hono: run([50, 60], [150, 160]),
      },
      paid: {
        previous: run([10, 10], [1000, 1000]),
        today: run([12, 11], [880, 960]),
        hono: run([4, 4], [4000, 4000]),
      },
      bytes: { today: { unpaid402: 4568, paid200: 1000 } },
    }).join("\n");
    expect(lines).toMatch(/unpaid req\/s: today \/ previous\s+1\.25 \(1\.20–1\.30\)\s+≥ 1 {2}met/);
    expect(lines).toMatch(/unpaid CPU\/req: today \/ previous\s+0\.78 \(0\.75–0\.80\)\s+≤ 1 {2}met/);
    expect(lines).toMatch(
      /402 req\/s: today \/ bare Fastify \(same bytes\)\s+0\.83 \(0\.80–0\.87\)\s+≥ 0\.8 {2}met/,
    );
    expect(lines).toMatch(/402 req\/s: today \/ @x402\/hono\s+2\.28 \(2\.17–2\.40\)\s+≥ 2 {2}met/);
    expect(lines).toMatch(/paid CPU\/req: today \/ @x402\/hono\s+0\.23 \(0\.22–0\.24\)\s+≤ 0\.25 {2}met/);
    expect(lines).toMatch(/paid req\/s: today \/ @x402\/hono\s+2\.88 \(2\.75–3\.00\)\s+≥ 2\.5 {2}met/);
    expect(lines).toMatch(/402 req\/s: previous \/ bare Fastify/);
  });

  it("compares a saved earlier run with today only, never with this run's references", () => {
    const one = {
      reqPerSec: 100,
      cpuUsPerRequest: 50,
      p50Ms: 1,
      p99Ms: 2,
      requests: 100,
      unexpected: 0,
      errors: 0,
    };
    const lines = compareReport({
      previous: "aaaa (saved in before.json)",
      today: "bbbb",
      rounds: 1,
      pinned: false,
      saved: true,
      unpaid: { previous: [one], today: [one], fastify: [one], hono: [one] },
      paid: { previous: [one], today: [one], hono: [one] },
      bytes: {},
    }).join("\n");
    expect(lines).toMatch(/previous is a saved run/);
    expect(lines).toMatch(/unpaid CPU\/req: today \/ previous\s+1\.00/);
    expect(lines).not.toMatch(/previous \/ bare Fastify|previous \/ @x402\/hono/);
  });
});
