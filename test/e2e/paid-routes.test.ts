import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { authorizationTypes } from "@x402/evm";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { describe, expect, it } from "vitest";
import { buyerClient, decodeSettlement, fetchPayingV1, payingFetch } from "../../scripts/buyer.js";
import { PRICES } from "../../src/operations/prices.js";
import { openLedger } from "../../src/ledger/embedded.js";
import { jsonInit, useDevnetServer } from "../helpers/devnet-server.js";
import { b64 } from "../helpers/proofs.js";

/*
 * The real server on the embedded devnet, over real HTTP, bought with real clients: every paid call must move exactly
 * the route's price from the buyer to payTo on chain, and every refused proof must move nothing.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAX = 1_000_000n;
// No load shedding: a busy machine must not turn paid answers into 503 overloaded (it is tested on its own).
const srv = useDevnetServer("p402-e2e-", { MAX_EVENT_LOOP_DELAY_MS: "0" });
const { devnet, url } = srv;

async function firstUpcoming(): Promise<{ token: string; unlock_event_id: string }> {
  const res = await payingFetch(devnet().buyers[8]!.privateKey, MAX)(url("/v1/unlocks/upcoming?days=120"));
  expect(res.status).toBe(200);
  const body = (await res.json()) as { unlocks: { token: string; unlock_event_id: string }[] };
  const { token, unlock_event_id } = body.unlocks[0]!;
  return { token, unlock_event_id };
}

async function expectPaid(buyer: `0x${string}`, price: string, call: () => Promise<Response>) {
  const d = devnet();
  const [payToBefore, buyerBefore] = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer)]);
  const res = await call();
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const settlement = decodeSettlement(res) as { success: boolean; transaction: `0x${string}`; payer: string };
  expect(settlement.success).toBe(true);
  expect(settlement.payer?.toLowerCase()).toBe(buyer.toLowerCase());
  const [payToAfter, buyerAfter] = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer)]);
  expect(payToAfter - payToBefore).toBe(BigInt(price));
  expect(buyerBefore - buyerAfter).toBe(BigInt(price));
  const chain = createPublicClient({ chain: base, transport: http(d.rpcUrl) });
  const receipt = await chain.getTransactionReceipt({ hash: settlement.transaction });
  expect(receipt.status).toBe("success");
  return { body: JSON.parse(text) as Record<string, unknown>, settlement };
}

async function expectNothingMoved(buyer: `0x${string}`, call: () => Promise<Response>, status = 402) {
  const d = devnet();
  const [payToBefore, buyerBefore] = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer)]);
  const res = await call();
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(text).not.toContain("risk_score");
  expect(await d.balanceOf(d.payTo)).toBe(payToBefore);
  expect(await d.balanceOf(buyer)).toBe(buyerBefore);
  return { res, text };
}

describe("paying every route with @x402/fetch (x402 v2, PAYMENT-SIGNATURE)", () => {
  it("GET /v1/unlocks/upcoming", async () => {
    const b = devnet().buyers[0]!;
    const { body } = await expectPaid(b.address, PRICES.upcoming.amount, () =>
      payingFetch(b.privateKey, MAX)(url("/v1/unlocks/upcoming?days=30&pp_ref=e2e.test")),
    );
    expect(body).toMatchObject({ days: 30, minRisk: 0 });
  });

  it("POST /v1/unlock-risk, /v1/token/risk-summary, /v1/unlock/backtest", async () => {
    const b = devnet().buyers[1]!;
    const event = await firstUpcoming();
    const pay = payingFetch(b.privateKey, MAX);
    const risk = await expectPaid(b.address, PRICES.unlockRisk.amount, () =>
      pay(url("/v1/unlock-risk"), jsonInit(event)),
    );
    expect(risk.body).toMatchObject({ ...event, risk_score: expect.any(Number) });
    await expectPaid(b.address, PRICES.riskSummary.amount, () =>
      pay(url("/v1/token/risk-summary"), jsonInit({ token: event.token, lookbackDays: 30 })),
    );
    await expectPaid(b.address, PRICES.backtest.amount, () =>
      pay(url("/v1/unlock/backtest"), jsonInit(event)),
    );
  });

  it("POST /v1/benchmark/endpoint", async () => {
    const b = devnet().buyers[2]!;
    const { body } = await expectPaid(b.address, PRICES.benchmark.amount, () =>
      payingFetch(b.privateKey, MAX)(
        url("/v1/benchmark/endpoint?pp_ref=agent-7"),
        jsonInit({ endpoint_url: "https://2s.io/api/crypto/token-price" }),
      ),
    );
    expect(body.endpoint_url).toBe("https://2s.io/api/crypto/token-price");
  });

  it("left a settled receipt with the transaction for each call", async () => {
    const ledger = openLedger(srv.ledgerPath);
    const receipts = await ledger.receipts();
    await ledger.close();
    const settled = receipts.filter((r) => r.status === "settled");
    expect(settled.length).toBeGreaterThanOrEqual(6);
    for (const r of settled) expect(r.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(settled.find((r) => r.route === PRICES.benchmark.route)?.ppRef).toBe("agent-7");
  });
});

describe("paying the four unlock routes in x402 v1 mode (registerV1, X-PAYMENT)", () => {
  it("each route settles for its price and answers X-PAYMENT-RESPONSE", async () => {
    const b = devnet().buyers[3]!;
    const event = await firstUpcoming();
    const calls: [string, string, RequestInit][] = [
      ["/v1/unlocks/upcoming?days=14", PRICES.upcoming.amount, { method: "GET" }],
      ["/v1/unlock-risk", PRICES.unlockRisk.amount, jsonInit(event)],
      ["/v1/token/risk-summary", PRICES.riskSummary.amount, jsonInit({ token: event.token })],
      ["/v1/unlock/backtest", PRICES.backtest.amount, jsonInit({ ...event, windowDays: 30 })],
    ];
    for (const [path, price, init] of calls) {
      let sent: Record<string, string> | undefined;
      const { settlement } = await expectPaid(b.address, price, async () => {
        const { response, paymentHeader } = await fetchPayingV1(url(path), init, b.privateKey, MAX);
        sent = paymentHeader;
        expect(response.headers.get("x-payment-response")).toBeTruthy();
        return response;
      });
      expect(Object.keys(sent ?? {})).toEqual(["X-PAYMENT"]);
      expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    }
  });
});

describe("the buyer CLI (npm run pay)", () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(
        process.execPath,
        ["--import", "tsx", "scripts/pay.ts", ...args],
        { cwd: ROOT, env: { ...process.env, BASE_URL: srv.server.address, ...env }, timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      );
    });

  it("pays a GET, prints status, body and the settlement with its devnet transaction", async () => {
    const payTo = await devnet().balanceOf(devnet().payTo);
    const { code, out } = await run(["GET", "/v1/unlocks/upcoming?days=30"], {
      BUYER_PRIVATE_KEY: devnet().buyers[6]!.privateKey,
    });
    expect(code, out).toBe(0);
    expect(out).toContain("status: 200");
    expect(out).toMatch(/"transaction": "0x[0-9a-f]{64}"/);
    expect((await devnet().balanceOf(devnet().payTo)) - payTo).toBe(20000n);
  });

  it("refuses to pay above MAX_PRICE_USD, and nothing moves", async () => {
    const event = JSON.stringify(await firstUpcoming());
    const payTo = await devnet().balanceOf(devnet().payTo);
    const { code, out } = await run(["POST", "/v1/unlock/backtest", event], {
      BUYER_PRIVATE_KEY: devnet().buyers[6]!.privateKey,
      MAX_PRICE_USD: "0.25",
    });
    expect(code).toBe(1);
    expect(out).toMatch(/refusing to pay/);
    expect(await devnet().balanceOf(devnet().payTo)).toBe(payTo);
  });
});

describe("refused proofs settle nothing", () => {
  async function required(path: string, init: RequestInit): Promise<PaymentRequirements> {
    const res = await fetch(url(path), init);
    expect(res.status).toBe(402);
    return decodePaymentRequiredHeader(res.headers.get("payment-required")!).accepts[0]!;
  }

  async function signV2(key: `0x${string}`, path: string, accepted: PaymentRequirements) {
    const client = buyerClient(key, MAX);
    return client.createPaymentPayload({ x402Version: 2, resource: { url: url(path) }, accepts: [accepted] });
  }

  const benchBody = { endpoint_url: "https://2s.io/api/fx/rates" };

  it("a v1 proof on the benchmark route", async () => {
    const b = devnet().buyers[4]!;
    const init = jsonInit(benchBody);
    const accepted = await required("/v1/benchmark/endpoint", init);
    const v1 = {
      ...accepted,
      maxAmountRequired: accepted.amount,
      network: "base",
      resource: url("/v1/benchmark/endpoint"),
      description: "",
      mimeType: "application/json",
    };
    const client = buyerClient(b.privateKey, MAX);
    const payload = await client.createPaymentPayload({ x402Version: 1, accepts: [v1] } as never);
    const { text } = await expectNothingMoved(b.address, () =>
      fetch(url("/v1/benchmark/endpoint"), {
        ...init,
        headers: { "content-type": "application/json", "X-PAYMENT": b64(payload) },
      }),
    );
    expect(text).toMatch(/v1/);
  });

  it("a tampered signature", async () => {
    const b = devnet().buyers[4]!;
    const accepted = await required("/v1/unlocks/upcoming", { method: "GET" });
    const payload = await signV2(b.privateKey, "/v1/unlocks/upcoming", accepted);
    const sig = String(payload.payload.signature);
    const tampered = {
      ...payload,
      payload: {
        ...payload.payload,
        signature: `${sig.slice(0, -6)}${sig.slice(-6) === "000000" ? "111111" : "000000"}`,
      },
    };
    const { res } = await expectNothingMoved(b.address, () =>
      fetch(url("/v1/unlocks/upcoming"), { headers: { "PAYMENT-SIGNATURE": b64(tampered) } }),
    );
    expect(decodePaymentRequiredHeader(res.headers.get("payment-required")!).error).toMatch(
      /signature|invalid/i,
    );
  });

  it("a wrong amount and a wrong payTo", async () => {
    const b = devnet().buyers[4]!;
    const accepted = await required("/v1/unlocks/upcoming", { method: "GET" });
    for (const wrong of [
      { ...accepted, amount: "1" },
      { ...accepted, payTo: privateKeyToAccount(b.privateKey).address },
    ]) {
      const payload = await signV2(b.privateKey, "/v1/unlocks/upcoming", wrong);
      await expectNothingMoved(b.address, () =>
        fetch(url("/v1/unlocks/upcoming"), { headers: { "PAYMENT-SIGNATURE": b64(payload) } }),
      );
    }
    // Signed for a smaller value but claiming the right requirements: only the facilitator can see this one.
    const cheap = await signV2(b.privateKey, "/v1/unlocks/upcoming", { ...accepted, amount: "1" });
    const lying = { ...cheap, accepted };
    const { res } = await expectNothingMoved(b.address, () =>
      fetch(url("/v1/unlocks/upcoming"), { headers: { "PAYMENT-SIGNATURE": b64(lying) } }),
    );
    expect(decodePaymentRequiredHeader(res.headers.get("payment-required")!).error).toBeTruthy();
  });

  it("an expired authorization", async () => {
    const b = devnet().buyers[4]!;
    const accepted = await required("/v1/unlocks/upcoming", { method: "GET" });
    const account = privateKeyToAccount(b.privateKey);
    const now = BigInt(Math.floor(Date.now() / 1000));
    const authorization = {
      from: account.address,
      to: accepted.payTo as `0x${string}`,
      value: BigInt(accepted.amount),
      validAfter: now - 600n,
      validBefore: now - 60n,
      nonce: `0x${"ee".repeat(32)}` as `0x${string}`,
    };
    const signature = await account.signTypedData({
      domain: {
        name: "USD Coin",
        version: "2",
        chainId: 8453,
        verifyingContract: accepted.asset as `0x${string}`,
      },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: authorization,
    });
    const payload = {
      x402Version: 2,
      accepted,
      payload: {
        signature,
        authorization: Object.fromEntries(
          Object.entries(authorization).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]),
        ),
      },
    };
    const { res } = await expectNothingMoved(b.address, () =>
      fetch(url("/v1/unlocks/upcoming"), { headers: { "PAYMENT-SIGNATURE": b64(payload) } }),
    );
    expect(decodePaymentRequiredHeader(res.headers.get("payment-required")!).error).toMatch(
      /valid_before|expired|before/i,
    );
  });

  it("a proof already used: the same request with its key gets its response again, anything else is asked to pay", async () => {
    const b = devnet().buyers[5]!;
    const accepted = await required("/v1/unlocks/upcoming", { method: "GET" });
    const payload = await signV2(b.privateKey, "/v1/unlocks/upcoming", accepted);
    const headers = { "PAYMENT-SIGNATURE": b64(payload) };
    let retryKey = "";
    await expectPaid(b.address, PRICES.upcoming.amount, async () => {
      const res = await fetch(url("/v1/unlocks/upcoming"), { headers });
      retryKey = res.headers.get("idempotency-key") ?? "";
      return res;
    });
    const d = devnet();
    const payToBefore = await d.balanceOf(d.payTo);
    // The proof alone (public on chain now) gets nothing; with the retry key the answer issued, the same response.
    const bare = await fetch(url("/v1/unlocks/upcoming"), { headers });
    expect(bare.status).toBe(402);
    expect(await bare.text()).not.toContain("risk_score");
    const again = await fetch(url("/v1/unlocks/upcoming"), {
      headers: { ...headers, "Idempotency-Key": retryKey },
    });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.text()).toContain("risk_score");
    expect(await d.balanceOf(d.payTo)).toBe(payToBefore);
    const { res } = await expectNothingMoved(b.address, () =>
      fetch(url("/v1/unlocks/upcoming?days=7"), { headers }),
    );
    expect(decodePaymentRequiredHeader(res.headers.get("payment-required")!).error).toMatch(/already_used/);
  });
});
