import { decodePaymentResponseHeader } from "@x402/core/http";
import { describe, expect, it } from "vitest";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import { TEST_PAY_TO } from "../helpers/app.js";
import {
  type HttpApp,
  signedUpcomingProof,
  startFaultFacilitator,
  startHttpApp,
  UPCOMING_PATH,
} from "../helpers/fault-facilitator.js";
import { useFaultStack } from "../helpers/fault-stack.js";
import { b64, v2Proof } from "../helpers/proofs.js";

/*
 * The slow-isValidSignature attack: a proof whose `from` is a contract with an expensive isValidSignature makes each
 * verify run until it times out. Here the facilitator double holds every verify of the attacker's payer behind a gate
 * that opens only at the end (each of them times out), and answers everyone else at once. One client, at the default
 * rate limit (300/min: 288 attacker requests), 8 at a time. Honest buyers (EOA-signed proofs, each its own payer,
 * from another address) must still be served and the circuit must stay closed: those timeouts are the attacker's.
 */
const stack = useFaultStack();
const ATTACKER = "0x5100000000000000000000000000000000000bad";
const ATTACK_REQUESTS = 288;
const ATTACK_WIDTH = 8;
const HONEST = 20;

function attackerProof(app: HttpApp): string {
  const accepted = requirementsV2(PRICES.upcoming, {
    payTo: TEST_PAY_TO,
    maxTimeoutSeconds: app.config.paymentTimeoutSeconds,
    network: app.config.network,
  });
  const p = v2Proof(accepted);
  // A smart-wallet signature: it does not recover to `from`, only the contract (slowly) can say it is valid.
  return b64({
    ...p,
    payload: { ...p.payload, authorization: { ...p.payload.authorization, from: ATTACKER } },
  });
}

describe("the slow-isValidSignature attack", () => {
  it("at the default rate limit leaves honest buyers served (≥ 95 %) and the circuit closed", async () => {
    stack.fac = await startFaultFacilitator();
    const fac = stack.fac;
    let release: () => void = () => {};
    fac.verifyGateFor.set(ATTACKER.toLowerCase(), new Promise<void>((r) => (release = r)));
    stack.http = await startHttpApp(fac.url, {
      TRUST_PROXY: "true",
      RATE_LIMIT_MAX: "300", // the defaults
      RATE_LIMIT_WINDOW_MS: "60000",
      CIRCUIT_FAILURE_THRESHOLD: "5",
      FACILITATOR_TIMEOUT_MS: "300", // each held verify ends in a timeout, quickly
    });
    const app = stack.http;
    const attackerStatuses: Record<number, number> = {};
    let sent = 0;
    const attack = async (until: number) => {
      await Promise.all(
        Array.from({ length: ATTACK_WIDTH }, async () => {
          while (sent < until) {
            sent += 1;
            const res = await fetch(`${app.url}${UPCOMING_PATH}`, {
              headers: { "payment-signature": attackerProof(app), "x-forwarded-for": "198.51.100.66" },
            });
            await res.arrayBuffer();
            attackerStatuses[res.status] = (attackerStatuses[res.status] ?? 0) + 1;
          }
        }),
      );
    };
    // The first wave: ATTACK_WIDTH verifies held until they time out (before: enough to open the circuit).
    await attack(ATTACK_WIDTH);
    // The rest of the attack, with the honest buyers paying meanwhile.
    const rest = attack(ATTACK_REQUESTS);
    const honest: number[] = [];
    for (let i = 0; i < HONEST; i++) {
      const res = await fetch(`${app.url}${UPCOMING_PATH}`, {
        headers: {
          "payment-signature": await signedUpcomingProof(app.config),
          "x-forwarded-for": `203.0.113.${i + 1}`,
        },
      });
      if (res.status === 200)
        expect(decodePaymentResponseHeader(res.headers.get("payment-response") as string).success).toBe(true);
      else await res.arrayBuffer();
      honest.push(res.status);
    }
    await rest;
    const attackerVerifies = fac.verifiesBy.get(ATTACKER.toLowerCase()) ?? 0;
    const served = honest.filter((s) => s === 200).length;
    console.info(
      `honest served ${served}/${HONEST} (${JSON.stringify(honest.filter((s) => s !== 200))}); circuit ${app.gateway.position()}; attacker ${sent} requests ${JSON.stringify(attackerStatuses)}, ${attackerVerifies} reached the facilitator`,
    );
    release();
    expect(sent).toBe(ATTACK_REQUESTS);
    expect(served / HONEST).toBeGreaterThanOrEqual(0.95);
    expect(app.gateway.position()).toBe("closed");
    expect(app.gateway.circuit.openedAt).toBeNull();
    // The attacker's requests are refused before the facilitator once its slots are taken and its faults pile up.
    expect(attackerVerifies).toBeLessThanOrEqual(ATTACK_REQUESTS / 10);
    expect(attackerStatuses[200] ?? 0).toBe(0);
  }, 120_000);
});
