import { x402Client } from "@x402/core/client";
import { HTTPFacilitatorClient } from "@x402/core/http";
import type {
  Network,
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
  PaymentRequirementsV1,
} from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/client";
import { createPublicClient, type Hex, http, parseEventLogs } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getDevnetContracts } from "../../src/devnet/artifacts.js";
import { devnetChain } from "../../src/devnet/deploy.js";
import { type Devnet, startDevnet } from "../../src/devnet/index.js";

const PRICE = 20_000n;

function v2Requirements(devnet: Devnet): PaymentRequirements {
  return {
    scheme: "exact",
    network: "eip155:8453",
    asset: devnet.usdc,
    amount: PRICE.toString(),
    payTo: devnet.payTo,
    maxTimeoutSeconds: 60,
    extra: { name: "USD Coin", version: "2" },
  };
}

function v1Requirements(devnet: Devnet): PaymentRequirementsV1 {
  return {
    scheme: "exact",
    // v1 uses network names; the TS type says CAIP-2 but the v1 schemes expect "base".
    network: "base" as Network,
    maxAmountRequired: PRICE.toString(),
    resource: "http://127.0.0.1/v1/unlocks/upcoming",
    description: "devnet test payment",
    mimeType: "application/json",
    outputSchema: {},
    payTo: devnet.payTo,
    maxTimeoutSeconds: 60,
    asset: devnet.usdc,
    extra: { name: "USD Coin", version: "2" },
  };
}

async function payV2(devnet: Devnet, buyer: number, requirements = v2Requirements(devnet)) {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(devnet.buyers[buyer]!.privateKey) });
  const paymentRequired: PaymentRequired = {
    x402Version: 2,
    resource: {
      url: "http://127.0.0.1/v1/unlocks/upcoming",
      description: "test",
      mimeType: "application/json",
    },
    accepts: [requirements],
  };
  return client.createPaymentPayload(paymentRequired);
}

async function payV1(devnet: Devnet, buyer: number, requirements = v1Requirements(devnet)) {
  const client = new x402Client().registerV1(
    "base",
    new ExactEvmSchemeV1(privateKeyToAccount(devnet.buyers[buyer]!.privateKey)),
  );
  const paymentRequired = { x402Version: 1, error: "payment required", accepts: [requirements] };
  return client.createPaymentPayload(paymentRequired as unknown as PaymentRequired);
}

/** Flips one hex digit inside r, leaving length and v intact. */
function tamper(signature: string): Hex {
  const i = 10;
  const flipped = signature[i] === "0" ? "1" : "0";
  return `${signature.slice(0, i)}${flipped}${signature.slice(i + 1)}` as Hex;
}

function withSignature(payload: PaymentPayload, signature: Hex): PaymentPayload {
  return { ...payload, payload: { ...payload.payload, signature } };
}

describe("local facilitator over HTTP", () => {
  let devnet: Devnet;
  let facilitator: HTTPFacilitatorClient;

  beforeAll(async () => {
    devnet = await startDevnet();
    facilitator = new HTTPFacilitatorClient({ url: devnet.facilitatorUrl });
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  it("GET /supported lists exact on eip155:8453 (v2) and base (v1), signed by anvil account 0", async () => {
    const supported = await facilitator.getSupported();
    expect(supported.kinds).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ x402Version: 2, scheme: "exact", network: "eip155:8453" }),
        expect.objectContaining({ x402Version: 1, scheme: "exact", network: "base" }),
      ]),
    );
    expect(Object.values(supported.signers).flat()).toContain("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
  });

  it("v2: verifies and settles 20000 atomic USDC for real on the chain", async () => {
    const buyer = devnet.buyers[0]!.address;
    const [buyerBefore, payToBefore] = [await devnet.balanceOf(buyer), await devnet.balanceOf(devnet.payTo)];
    const requirements = v2Requirements(devnet);
    const payload = await payV2(devnet, 0, requirements);
    expect(payload.x402Version).toBe(2);

    const verified = await facilitator.verify(payload, requirements);
    expect(verified).toMatchObject({ isValid: true, payer: buyer });
    // Verification alone moves no money.
    expect(await devnet.balanceOf(buyer)).toBe(buyerBefore);

    const settled = await facilitator.settle(payload, requirements);
    expect(settled).toMatchObject({ success: true, network: "eip155:8453", payer: buyer });
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    // Visible as soon as settle returns: the facilitator waited for the receipt.
    expect(await devnet.balanceOf(buyer)).toBe(buyerBefore - PRICE);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(payToBefore + PRICE);

    const client = createPublicClient({ chain: devnetChain(devnet.rpcUrl), transport: http(devnet.rpcUrl) });
    const receipt = await client.getTransactionReceipt({ hash: settled.transaction as Hex });
    expect(receipt.status).toBe("success");
    expect(receipt.from.toLowerCase()).toBe("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
    const { abi } = getDevnetContracts().TestUSDC;
    const transfers = parseEventLogs({ abi, logs: receipt.logs, eventName: "Transfer" });
    expect(transfers).toHaveLength(1);
    expect(transfers[0]!.args).toMatchObject({ from: buyer, to: devnet.payTo, value: PRICE });
  });

  it("v2: a replayed authorization is refused by /verify and /settle, and no money moves", async () => {
    const requirements = v2Requirements(devnet);
    const payload = await payV2(devnet, 1, requirements);
    expect((await facilitator.settle(payload, requirements)).success).toBe(true);
    const buyer = devnet.buyers[1]!.address;
    const [buyerAfter, payToAfter] = [await devnet.balanceOf(buyer), await devnet.balanceOf(devnet.payTo)];

    const again = await facilitator.verify(payload, requirements);
    expect(again.isValid).toBe(false);
    expect(again.invalidReason).toBe("invalid_exact_evm_nonce_already_used");
    const resettled = await facilitator.settle(payload, requirements);
    expect(resettled.success).toBe(false);
    expect(resettled.errorReason).toBeTruthy();
    expect(await devnet.balanceOf(buyer)).toBe(buyerAfter);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(payToAfter);
  });

  it("v2: a tampered signature is refused by /verify and /settle", async () => {
    const requirements = v2Requirements(devnet);
    const payload = await payV2(devnet, 2, requirements);
    const forged = withSignature(payload, tamper(payload.payload.signature as string));
    const buyerBefore = await devnet.balanceOf(devnet.buyers[2]!.address);

    const verified = await facilitator.verify(forged, requirements);
    expect(verified).toMatchObject({ isValid: false, invalidReason: "invalid_exact_evm_signature" });
    const settled = await facilitator.settle(forged, requirements);
    expect(settled).toMatchObject({ success: false, transaction: "" });
    expect(await devnet.balanceOf(devnet.buyers[2]!.address)).toBe(buyerBefore);
    // The genuine payload is still good: the refusal did not burn its nonce.
    expect((await facilitator.verify(payload, requirements)).isValid).toBe(true);
  });

  it("v2: a payment to another address or for another amount is refused", async () => {
    const requirements = v2Requirements(devnet);
    const payload = await payV2(devnet, 3, requirements);
    const elsewhere = { ...requirements, payTo: devnet.buyers[4]!.address };
    expect(await facilitator.verify(payload, elsewhere)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_recipient_mismatch",
    });
    const pricier = { ...requirements, amount: "20001" };
    expect((await facilitator.verify(payload, pricier)).isValid).toBe(false);
  });

  it("v1: verifies and settles 20000 atomic USDC on network 'base'", async () => {
    const buyer = devnet.buyers[5]!.address;
    const [buyerBefore, payToBefore] = [await devnet.balanceOf(buyer), await devnet.balanceOf(devnet.payTo)];
    const requirements = v1Requirements(devnet);
    const payload = await payV1(devnet, 5, requirements);
    expect(payload).toMatchObject({ x402Version: 1, scheme: "exact", network: "base" });
    const asV2 = requirements as unknown as PaymentRequirements;

    expect(await facilitator.verify(payload, asV2)).toMatchObject({ isValid: true, payer: buyer });
    const settled = await facilitator.settle(payload, asV2);
    expect(settled).toMatchObject({ success: true, network: "base", payer: buyer });
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await devnet.balanceOf(buyer)).toBe(buyerBefore - PRICE);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(payToBefore + PRICE);

    // Replay and forgery, v1 flavour.
    const replay = await facilitator.verify(payload, asV2);
    expect(replay).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_nonce_already_used",
    });
    expect((await facilitator.settle(payload, asV2)).success).toBe(false);
    const fresh = await payV1(devnet, 5, requirements);
    const forged = withSignature(fresh, tamper(fresh.payload.signature as string));
    expect(await facilitator.verify(forged, asV2)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_signature",
    });
    expect((await facilitator.settle(forged, asV2)).success).toBe(false);
    expect(await devnet.balanceOf(buyer)).toBe(buyerBefore - PRICE);
  });

  it("concurrent settlements from different buyers all land (one facilitator account, no nonce clash)", async () => {
    const requirements = v2Requirements(devnet);
    const payloads = await Promise.all([6, 7, 8].map((i) => payV2(devnet, i, requirements)));
    const payToBefore = await devnet.balanceOf(devnet.payTo);
    const results = await Promise.all(payloads.map((p) => facilitator.settle(p, requirements)));
    expect(results.map((r) => r.success)).toEqual([true, true, true]);
    expect(new Set(results.map((r) => r.transaction)).size).toBe(3);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(payToBefore + 3n * PRICE);
  });

  describe("HTTP contract", () => {
    const post = (path: string, body: unknown) =>
      fetch(`${devnet.facilitatorUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });

    it("answers malformed JSON and bodies with 400 in the VerifyResponse / SettleResponse shape", async () => {
      const bad = await post("/verify", "{not json");
      expect(bad.status).toBe(400);
      expect(await bad.json()).toMatchObject({ isValid: false, invalidReason: "invalid_request" });

      const missing = await post("/settle", { x402Version: 2, paymentPayload: {} });
      expect(missing.status).toBe(400);
      expect(await missing.json()).toMatchObject({
        success: false,
        errorReason: "invalid_request",
        transaction: "",
      });
    });

    it("answers a malformed EIP-3009 payload with 400 rather than a facilitator fault", async () => {
      const requirements = v2Requirements(devnet);
      const payload = await payV2(devnet, 0, requirements);
      const broken = { ...payload, payload: { signature: payload.payload.signature } };
      const res = await post("/verify", {
        x402Version: 2,
        paymentPayload: broken,
        paymentRequirements: requirements,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ isValid: false, invalidReason: "invalid_request" });
    });

    it("refuses an unsupported network with 400; HTTPFacilitatorClient surfaces it as a VerifyError", async () => {
      const payload = await payV2(devnet, 0);
      const requirements = { ...v2Requirements(devnet), network: "eip155:1" as const };
      const res = await post("/verify", {
        x402Version: 2,
        paymentPayload: payload,
        paymentRequirements: requirements,
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ isValid: false, invalidReason: "unsupported_scheme" });
      await expect(facilitator.verify(payload, requirements)).rejects.toMatchObject({
        name: "VerifyError",
        statusCode: 400,
        invalidReason: "unsupported_scheme",
      });
    });

    it("404 for unknown paths, 405 for wrong methods", async () => {
      expect((await fetch(`${devnet.facilitatorUrl}/nope`)).status).toBe(404);
      expect((await fetch(`${devnet.facilitatorUrl}/verify`)).status).toBe(405);
      expect((await post("/supported", {})).status).toBe(405);
    });
  });
});
