import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { PRICES } from "../../../src/operations/prices.js";
import { createFacilitatorGateway, PayerLimited } from "../../../src/payments/facilitator/gateway.js";
import { createVerifyLane, LaneFull } from "../../../src/payments/facilitator/verify-lanes.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { TEST_PAY_TO } from "../../helpers/app.js";
import { signedV2Proof, TEST_NETWORK, v2Proof } from "../../helpers/proofs.js";

/** A promise's state once every queued promise callback has run (one macrotask turn: no clock involved). */
async function state<T>(p: Promise<T>): Promise<"pending" | "resolved" | "rejected"> {
  let now: "pending" | "resolved" | "rejected" = "pending";
  p.then(
    () => {
      now = "resolved";
    },
    () => {
      now = "rejected";
    },
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  return now;
}

describe("the non-EOA verify lane", () => {
  it("caps a sender: the next waits in line and gets the slot when one leaves; past the line, refused", async () => {
    const lane = createVerifyLane({ maxInFlight: 10, perContract: 10, perSender: 2, queue: 1 });
    const a1 = await lane.enter("0xA", "s1");
    const a2 = await lane.enter("0xB", "s1");
    const a3 = lane.enter("0xC", "s1");
    await expect(lane.enter("0xD", "s1")).rejects.toEqual(new LaneFull("sender"));
    // Another sender is not held by s1's share.
    const b1 = await lane.enter("0xD", "s2");
    expect(await state(a3)).toBe("pending");
    a1();
    a1(); // twice is once
    expect(await state(a3)).toBe("resolved");
    // The line is free again: the next one waits there (not refused) and is served when a2 leaves.
    const a4 = lane.enter("0xE", "s1");
    expect(await state(a4)).toBe("pending");
    expect(lane.inFlight).toBe(3);
    a2();
    expect(await state(a4)).toBe("resolved");
    for (const leave of [b1, await a3, await a4]) leave();
    expect(lane.inFlight).toBe(0);
  });

  it("caps a contract (whatever the address's case) across senders", async () => {
    const lane = createVerifyLane({ maxInFlight: 10, perContract: 1, perSender: 10, queue: 1 });
    const a = await lane.enter("0xAbC", "s1");
    const b = lane.enter("0xabc", "s2");
    await expect(lane.enter("0xABC", "s3")).rejects.toEqual(new LaneFull("contract"));
    expect(await state(b)).toBe("pending");
    a();
    expect(await state(b)).toBe("resolved");
    (await b)();
    expect(lane.inFlight).toBe(0);
  });

  it("caps the lane as a whole, first come first served", async () => {
    const lane = createVerifyLane({ maxInFlight: 2, perContract: 10, perSender: 10, queue: 1 });
    const a = await lane.enter("0x1", "s1");
    const b = await lane.enter("0x2", "s2");
    const c = lane.enter("0x3", "s3");
    await expect(lane.enter("0x4", "s4")).rejects.toEqual(new LaneFull("lane"));
    expect(lane.inFlight).toBe(2);
    b();
    expect(await state(c)).toBe("resolved");
    a();
    (await c)();
    expect(lane.inFlight).toBe(0);
    expect(lane.peak).toBe(2);
  });
});

describe("the gateway's lanes", () => {
  const accepted = requirementsV2(PRICES.upcoming, {
    payTo: TEST_PAY_TO,
    maxTimeoutSeconds: 300,
    network: TEST_NETWORK,
  });

  function heldClient() {
    let open: () => void = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const seen = { held: 0, eoa: 0 };
    const client = {
      verify: async (p: PaymentPayload) => {
        // The junk proofs name payers 0x0000…; the facilitator holds their verifies until the test opens the gate.
        const from = (p.payload as { authorization: { from: string } }).authorization.from;
        if (from.startsWith("0x0000")) {
          seen.held += 1;
          await gate;
          return { isValid: false, invalidReason: "invalid_exact_evm_signature", payer: from };
        }
        seen.eoa += 1;
        return { isValid: true, payer: from };
      },
      settle: async () => {
        throw new Error("not used");
      },
      getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
    } as unknown as FacilitatorClient;
    return { client, seen, open: () => open() };
  }

  const junkNaming = (i: number) => {
    const p = v2Proof(accepted);
    const from = `0x0000${i.toString(16).padStart(36, "0")}`;
    return {
      ...p,
      payload: { ...p.payload, authorization: { ...p.payload.authorization, from } },
    } as PaymentPayload;
  };

  it("junk from one sender holds at most its 2 lane slots; past its line, 429; EOA proofs never wait", async () => {
    const { client, seen, open } = heldClient();
    const gw = createFacilitatorGateway(client, { failureThreshold: 5, cooldownMs: 30_000 });
    const junk = Array.from({ length: 20 }, (_, i) =>
      gw.verify(junkNaming(i), accepted, { client: "198.51.100.9" }).then(
        (v) => (v.isValid ? "valid" : "invalid"),
        (e: unknown) => (e instanceof PayerLimited && e.reason === "payer_limited" ? "limited" : "other"),
      ),
    );
    // 2 at the facilitator, 16 waiting in the sender's line, 2 refused.
    const limited = await Promise.all(junk.slice(18));
    expect(limited).toEqual(["limited", "limited"]);
    expect(seen.held).toBe(2);
    expect(gw.smartWalletLane?.inFlight).toBe(2);
    // An EOA's own proofs, many at once from the same address, go straight through.
    const eoa = await Promise.all(
      Array.from({ length: 10 }, async () =>
        gw.verify((await signedV2Proof(accepted)) as PaymentPayload, accepted, { client: "198.51.100.9" }),
      ),
    );
    expect(eoa.every((v) => v.isValid && v.signature === "eoa")).toBe(true);
    expect(seen.eoa).toBe(10);
    open();
    expect(await Promise.all(junk.slice(0, 18))).toEqual(Array(18).fill("invalid"));
    expect(gw.smartWalletLane?.peak).toBe(2);
    expect(gw.smartWalletLane?.inFlight).toBe(0);
  });

  it("junk from many senders holds at most the lane's 8 facilitator slots", async () => {
    const { client, seen, open } = heldClient();
    const gw = createFacilitatorGateway(client, { failureThreshold: 5, cooldownMs: 30_000 });
    const junk = Array.from({ length: 40 }, (_, i) =>
      gw.verify(junkNaming(i), accepted, { client: `198.51.100.${i}` }).then(
        () => "answered",
        () => "refused",
      ),
    );
    // 8 run; of the 32 others, 16 wait in the lane's line and 16 are refused.
    const refused = await Promise.all(junk.slice(24));
    expect(refused).toEqual(Array(16).fill("refused"));
    expect(seen.held).toBe(8);
    open();
    expect(await Promise.all(junk.slice(0, 24))).toEqual(Array(24).fill("answered"));
    expect(gw.smartWalletLane?.peak).toBe(8);
  });
});
