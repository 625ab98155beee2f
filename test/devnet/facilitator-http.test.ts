import { x402Facilitator } from "@x402/core/facilitator";
import { HTTPFacilitatorClient } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements, SchemeNetworkFacilitator } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FacilitatorServer, startFacilitatorServer } from "../../src/devnet/facilitator.js";

// The HTTP mapping of startFacilitatorServer, without a chain: a scheme whose outcome the test picks.
type Outcome = "valid" | "invalid" | "throw";

function scriptedScheme(outcome: () => Outcome): SchemeNetworkFacilitator {
  return {
    scheme: "exact",
    caipFamily: "eip155:*",
    getExtra: () => undefined,
    getSigners: () => ["0x0000000000000000000000000000000000000001"],
    verify: async () => {
      const o = outcome();
      if (o === "throw") throw new Error("rpc unreachable");
      return o === "valid" ? { isValid: true, payer: "0xabc" } : { isValid: false, invalidReason: "nope" };
    },
    settle: async (_payload, requirements) => {
      const o = outcome();
      if (o === "throw") throw new Error("rpc unreachable");
      return o === "valid"
        ? { success: true, transaction: `0x${"ab".repeat(32)}`, network: requirements.network }
        : { success: false, errorReason: "nope", transaction: "", network: requirements.network };
    },
  };
}

const requirements: PaymentRequirements = {
  scheme: "exact",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  amount: "20000",
  payTo: "0xBcd4042DE499D14e55001CcbB24a551F3b954096",
  maxTimeoutSeconds: 60,
  extra: { name: "USD Coin", version: "2" },
};

const payload: PaymentPayload = {
  x402Version: 2,
  accepted: requirements,
  payload: {
    signature: `0x${"11".repeat(65)}`,
    authorization: {
      from: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      to: requirements.payTo,
      value: "20000",
      validAfter: "0",
      validBefore: "99999999999",
      nonce: `0x${"22".repeat(32)}`,
    },
  },
};

describe("facilitator HTTP mapping", () => {
  let outcome: Outcome = "valid";
  let server: FacilitatorServer;
  let client: HTTPFacilitatorClient;

  beforeAll(async () => {
    const facilitator = new x402Facilitator().register(
      "eip155:8453",
      scriptedScheme(() => outcome),
    );
    server = await startFacilitatorServer(facilitator);
    client = new HTTPFacilitatorClient({ url: server.url });
  });

  afterAll(async () => {
    await server?.close();
    await server?.close();
  });

  it("listens on a random 127.0.0.1 port", () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("passes scheme outcomes through with 200, valid or not", async () => {
    outcome = "valid";
    expect(await client.verify(payload, requirements)).toMatchObject({ isValid: true, payer: "0xabc" });
    expect(await client.settle(payload, requirements)).toMatchObject({
      success: true,
      network: "eip155:8453",
    });
    outcome = "invalid";
    expect(await client.verify(payload, requirements)).toMatchObject({
      isValid: false,
      invalidReason: "nope",
    });
    expect(await client.settle(payload, requirements)).toMatchObject({ success: false, errorReason: "nope" });
  });

  it("turns a facilitator fault into a 500 that the client reports as an error, not as a bad payment", async () => {
    outcome = "throw";
    const res = await fetch(`${server.url}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
    });
    expect(res.status).toBe(500);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ error: "unexpected_facilitator_error", message: "rpc unreachable" });
    expect(body).not.toHaveProperty("isValid");

    const verifyError = await client.verify(payload, requirements).catch((e: unknown) => e);
    expect(verifyError).toBeInstanceOf(Error);
    expect((verifyError as Error).name).not.toBe("VerifyError");
    expect((verifyError as Error).message).toMatch(/\(500\)/);
    const settleError = await client.settle(payload, requirements).catch((e: unknown) => e);
    expect((settleError as Error).name).not.toBe("SettleError");
    expect((settleError as Error).message).toMatch(/\(500\)/);
  });

  it("rejects a v1 payload when only v2 is registered with 400 unsupported_scheme", async () => {
    outcome = "valid";
    const v1 = { x402Version: 1, scheme: "exact", network: "base", payload: payload.payload };
    const res = await fetch(`${server.url}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        x402Version: 1,
        paymentPayload: v1,
        paymentRequirements: {
          scheme: "exact",
          network: "base",
          maxAmountRequired: "20000",
          resource: "http://127.0.0.1/x",
          description: "x",
          mimeType: "application/json",
          payTo: requirements.payTo,
          maxTimeoutSeconds: 60,
          asset: requirements.asset,
          extra: { name: "USD Coin", version: "2" },
        },
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ isValid: false, invalidReason: "unsupported_scheme" });
  });

  it("refuses a body whose x402Version disagrees with the payload's", async () => {
    const res = await fetch(`${server.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 1, paymentPayload: payload, paymentRequirements: requirements }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ success: false, errorReason: "invalid_request" });
  });
});

describe("facilitator HTTP server before its facilitator is ready (the devnet's chain starting)", () => {
  const verify = (url: string) =>
    fetch(`${url}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
    });

  it("answers /supported 503 until it is ready, and holds /verify until then", async () => {
    let ready!: (f: x402Facilitator) => void;
    const server = await startFacilitatorServer(new Promise<x402Facilitator>((resolve) => (ready = resolve)));
    try {
      const early = await fetch(`${server.url}/supported`);
      expect(early.status).toBe(503);
      expect(await early.json()).toMatchObject({ error: "starting" });
      expect((await fetch(`${server.url}/health`)).status).toBe(200);

      let answered = false;
      const held = verify(server.url).then((res) => {
        answered = true;
        return res;
      });
      // Not answered while the facilitator is missing, however long that takes: it can only answer once it has one.
      await new Promise((resolve) => setImmediate(resolve));
      expect(answered).toBe(false);
      ready(
        new x402Facilitator().register(
          "eip155:8453",
          scriptedScheme(() => "valid"),
        ),
      );
      const res = await held;
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ isValid: true });
      const supported = await new HTTPFacilitatorClient({ url: server.url }).getSupported();
      expect(supported.kinds.map((k) => k.network)).toContain("eip155:8453");
    } finally {
      await server.close();
    }
  });

  it("answers 503 with the reason, without isValid, when it never becomes ready", async () => {
    let fail!: (err: Error) => void;
    const server = await startFacilitatorServer(new Promise<x402Facilitator>((_, reject) => (fail = reject)));
    try {
      const held = verify(server.url);
      fail(new Error("anvil exited with code 1"));
      const res = await held;
      expect(res.status).toBe(503);
      const body = await res.json();
      expect(body).toEqual({ error: "unavailable", message: "anvil exited with code 1" });
      const supported = await fetch(`${server.url}/supported`);
      expect(supported.status).toBe(503);
      expect(await supported.json()).toEqual({ error: "unavailable", message: "anvil exited with code 1" });
    } finally {
      await server.close();
    }
  });
});
