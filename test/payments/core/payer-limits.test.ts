import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload } from "@x402/core/types";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it, vi } from "vitest";
import { PRICES } from "../../../src/operations/prices.js";
import { createPayerLimits, DEFAULT_PAYER_LIMITS } from "../../../src/payments/core/payer-limits.js";
import { createFacilitatorGateway, PayerLimited } from "../../../src/payments/facilitator/gateway.js";
import { DEFAULT_VERIFY_LANE } from "../../../src/payments/facilitator/verify-lanes.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_PAY_TO } from "../../helpers/app.js";
import { signedV2Proof, TEST_BUYER_KEY, TEST_NETWORK, v2Proof } from "../../helpers/proofs.js";

describe("per-payer verification limits", () => {
  it("at most maxInFlight verifications per payer; other payers are not affected", () => {
    const l = createPayerLimits({ maxInFlight: 2 });
    expect(l.admit("0xA", 0)).toEqual({ allowed: true });
    expect(l.admit("0xa", 0)).toEqual({ allowed: true }); // one payer, whatever the case
    expect(l.admit("0xA", 0)).toMatchObject({ allowed: false, why: "busy" });
    expect(l.admit("0xB", 0)).toEqual({ allowed: true });
    l.settle("0xA", "neutral", 0);
    expect(l.admit("0xA", 0)).toEqual({ allowed: true });
    // Uncapped admission (a payer proven by its own signature) still counts, but is never "busy".
    expect(l.admit("0xB", 0, false)).toEqual({ allowed: true });
    expect(l.admit("0xB", 0, false)).toEqual({ allowed: true });
    expect(l.peek("0xB")?.inFlight).toBe(3);
  });

  it("backs off after consecutive faults, doubling up to the maximum; an answer clears it", () => {
    const l = createPayerLimits({ faultsBeforeBackoff: 2, baseBackoffMs: 1000, maxBackoffMs: 4000 });
    const fault = (now: number) => {
      expect(l.admit("0xA", now)).toEqual({ allowed: true });
      l.settle("0xA", "fault", now);
    };
    fault(0); // the first fault: no wait yet (a single timeout may be the facilitator's)
    fault(0);
    expect(l.admit("0xA", 999)).toEqual({ allowed: false, retryAfterMs: 1, why: "backoff" });
    fault(1000);
    expect(l.admit("0xA", 2999)).toMatchObject({ allowed: false, why: "backoff" });
    fault(3000);
    fault(7000);
    expect(l.admit("0xA", 10_999)).toMatchObject({ allowed: false, retryAfterMs: 1 }); // capped at 4 s
    expect(l.admit("0xA", 11_000)).toEqual({ allowed: true });
    l.settle("0xA", "answer", 11_000);
    expect(l.peek("0xA")).toEqual({ inFlight: 0, faults: 0, until: 0 });
  });

  it("remembers a bounded number of payers", () => {
    const l = createPayerLimits({ maxPayers: 100 });
    for (let i = 0; i < 1000; i++) l.settle(`0x${i}`, "neutral", l.admit(`0x${i}`, 0) ? 0 : 0);
    expect(l.peek("0x0")).toBeUndefined();
    expect(l.peek("0x999")).toBeDefined();
  });
});

describe("per-payer limits at the facilitator gateway", () => {
  const accepted = requirementsV2(PRICES.upcoming, {
    payTo: TEST_PAY_TO,
    maxTimeoutSeconds: 60,
    network: TEST_NETWORK,
  });
  const victim = privateKeyToAccount(TEST_BUYER_KEY).address;

  /** A facilitator stand-in: holds every verify of a proof whose signature is `held` until the test opens the gate. */
  function gatedClient(held: string) {
    let open: () => void = () => {};
    const gate = new Promise<void>((r) => (open = r));
    const seen = { held: 0, answered: 0 };
    const client = {
      verify: async (p: PaymentPayload) => {
        if ((p.payload as { signature?: string }).signature === held) {
          seen.held += 1;
          await gate;
        } else seen.answered += 1;
        return { isValid: true, payer: victim };
      },
      settle: async () => {
        throw new Error("not used");
      },
      getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
    } as unknown as FacilitatorClient;
    return { client, seen, open: () => open() };
  }

  it("proofs that only name a payer cannot take that payer's slots: its own signed proof is still verified", async () => {
    const junk = v2Proof(accepted);
    const naming = {
      ...junk,
      payload: { ...junk.payload, authorization: { ...junk.payload.authorization, from: victim } },
    };
    const signature = (junk.payload as { signature: string }).signature;
    const { client, seen, open } = gatedClient(signature);
    const gw = createFacilitatorGateway(client, { failureThreshold: 5, cooldownMs: 30_000 });
    const squatters = Array.from({ length: 8 }, () =>
      gw.verify(naming as PaymentPayload, accepted).then(
        () => "answered",
        (e: unknown) => (e instanceof PayerLimited ? "limited" : "other"),
      ),
    );
    // The unproven proofs are limited under their own key, not the victim's: the non-EOA lane lets 2 per claimed
    // wallet reach the facilitator and queues the rest (holding no payer slot while they wait).
    await vi.waitFor(() => expect(seen.held).toBe(DEFAULT_VERIFY_LANE.perContract));
    const own = await signedV2Proof(accepted);
    await expect(gw.verify(own as PaymentPayload, accepted)).resolves.toMatchObject({ isValid: true });
    expect(seen.answered).toBe(1);
    open();
    const outcomes = await Promise.all(squatters);
    expect(outcomes).toEqual(Array(8).fill("answered"));
    // Never more of them at the facilitator at once than the unproven payer cap allows.
    expect(DEFAULT_VERIFY_LANE.perContract).toBeLessThanOrEqual(DEFAULT_PAYER_LIMITS.maxInFlight);
  });

  it("a payer whose signature checks out is not capped in parallel calls", async () => {
    const { client, seen, open } = gatedClient("none");
    let held = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const inner = client.verify.bind(client);
    client.verify = async (p, r) => {
      held += 1;
      await gate;
      return inner(p, r);
    };
    const gw = createFacilitatorGateway(client, { failureThreshold: 5, cooldownMs: 30_000 });
    const n = DEFAULT_PAYER_LIMITS.maxInFlight * 3;
    const proofs = await Promise.all(Array.from({ length: n }, () => signedV2Proof(accepted)));
    const calls = proofs.map((p) => gw.verify(p as PaymentPayload, accepted));
    await vi.waitFor(() => expect(held).toBe(n));
    release();
    open();
    await expect(Promise.all(calls)).resolves.toHaveLength(n);
    expect(seen.answered).toBe(n);
  });
});
