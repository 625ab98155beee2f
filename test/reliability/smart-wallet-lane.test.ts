import { randomBytes } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { afterEach, describe, expect, it } from "vitest";
import type { SmartWalletCheck } from "../../src/payments/facilitator/smart-wallet.js";
import { DEFAULT_VERIFY_LANE } from "../../src/payments/facilitator/verify-lanes.js";
import {
  type CapacityFacilitator,
  shippedLimits,
  startCapacityFacilitator,
  tally,
} from "../helpers/capacity-facilitator.js";
import {
  type HttpApp,
  signedUpcomingProof,
  startHttpApp,
  UPCOMING_PATH,
} from "../helpers/fault-facilitator.js";
import { b64, v2Proof } from "../helpers/proofs.js";

/*
 * Gas-aware smart-wallet junk at the default settings: wallet contracts that answer "valid" to the chain pre-check
 * under its gas cap, but whose verify the facilitator never finishes under its own gas (held here until the test
 * releases it), sent from five addresses at once. The facilitator has a fixed capacity (16 requests, the 17th
 * answered 503). Honest EOA buyers, each on its own address, pay meanwhile. No timer decides anything: the
 * facilitator's barrier and the gateway's counters do.
 */
const DEFAULTS = shippedLimits();
const CAPACITY = 16;
const ATTACKERS = ["198.51.100.61", "198.51.100.62", "198.51.100.63", "198.51.100.64", "198.51.100.65"];
const PER_ATTACKER = 10;
const HONEST = 6;

let facilitator: CapacityFacilitator | undefined;
let served: HttpApp | undefined;
afterEach(async () => {
  facilitator?.release();
  await served?.close();
  await facilitator?.close();
  served = undefined;
  facilitator = undefined;
});

async function send(app: HttpApp, proof: string, ip: string): Promise<number> {
  const res = await fetch(`${app.url}${UPCOMING_PATH}`, {
    headers: { "payment-signature": proof, "x-forwarded-for": ip },
  });
  await res.arrayBuffer();
  return res.status;
}

describe("gas-aware smart-wallet junk against a facilitator of fixed capacity", () => {
  it("50 junk verifies from 5 addresses hold at most the lane's 8 facilitator slots; honest EOA buyers are all served", async () => {
    facilitator = await startCapacityFacilitator(CAPACITY);
    // Two wallet contracts per attacker address: valid under the pre-check's gas cap, held by the facilitator.
    const contracts = ATTACKERS.map(() => [0, 1].map(() => `0x${randomBytes(20).toString("hex")}`));
    const attackerWallets = new Set(contracts.flat());
    for (const c of attackerWallets) facilitator.slow.add(c);
    let checks = 0;
    const gasAware: SmartWalletCheck = async (exact) => {
      checks += 1;
      return attackerWallets.has(exact.authorization.from.toLowerCase())
        ? { kind: "valid" }
        : { kind: "not_a_contract" };
    };
    const app = await startHttpApp(facilitator.url, DEFAULTS, { smartWallet: gasAware });
    served = app;
    const unpaid = await fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "x-forwarded-for": "192.0.2.1" } });
    await unpaid.arrayBuffer();
    const accepted = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string)
      .accepts[0] as PaymentRequirements;
    const junk = (from: string) => {
      const p = v2Proof(accepted);
      return b64({ ...p, payload: { ...p.payload, authorization: { ...p.payload.authorization, from } } });
    };

    const attack = ATTACKERS.flatMap((ip, k) =>
      Array.from({ length: PER_ATTACKER }, (_, i) => send(app, junk(contracts[k]?.[i % 2] as string), ip)),
    );
    // The lane fills: 8 junk verifies at the facilitator (2 per address, 8 in all), the rest waiting or refused.
    await facilitator.untilHeld(DEFAULT_VERIFY_LANE.maxInFlight);
    const honest = await Promise.all(
      Array.from({ length: HONEST }, async (_, i) =>
        send(app, await signedUpcomingProof(app.config), `203.0.113.${i + 1}`),
      ),
    );
    const heldDuring = facilitator.held;
    facilitator.release();
    const attacker = await Promise.all(attack);
    // After the attack, the next honest buyers are served at once: nothing was left backed off or open.
    const after = await Promise.all(
      Array.from({ length: HONEST }, async (_, i) =>
        send(app, await signedUpcomingProof(app.config), `203.0.113.${i + 51}`),
      ),
    );
    console.info(
      `gas-aware junk: honest ${honest.filter((s) => s === 200).length}/${HONEST} during ${JSON.stringify(tally(honest))}, ${after.filter((s) => s === 200).length}/${HONEST} after; attacker ${attacker.length} requests ${JSON.stringify(tally(attacker))}; facilitator: ${heldDuring} junk verifies held during, peak ${facilitator.peakHeld}, peak busy ${facilitator.peakBusy}/${CAPACITY}, ${facilitator.saturated} refused as saturated; lane peak ${app.gateway.smartWalletLane?.peak}; chain checks ${checks}; circuit ${app.gateway.position()}`,
    );
    expect(honest).toEqual(Array(HONEST).fill(200));
    expect(after).toEqual(Array(HONEST).fill(200));
    // The junk never held more of the facilitator than the lane, and never saturated it.
    expect(facilitator.peakHeld).toBe(DEFAULT_VERIFY_LANE.maxInFlight);
    expect(app.gateway.smartWalletLane?.peak).toBe(DEFAULT_VERIFY_LANE.maxInFlight);
    expect(facilitator.saturated).toBe(0);
    expect(facilitator.peakBusy).toBeLessThanOrEqual(DEFAULT_VERIFY_LANE.maxInFlight + HONEST);
    // The attacker: refused as invalid once the facilitator answered (402), or turned away by its shares (429).
    // Each address had 8 requests in flight (CLIENT_MAX_IN_FLIGHT) and its 9th and 10th refused at once.
    expect(tally(attacker)).toEqual({ 402: 40, 429: 10 });
    expect(app.gateway.position()).toBe("closed");
    // Only the honest buyers were charged.
    expect(facilitator.transfers.size).toBe(2 * HONEST);
  }, 60_000);
});
