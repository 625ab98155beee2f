import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { authorizationSigner } from "../../src/payments/signature.js";
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
