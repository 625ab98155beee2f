import axios, { type AxiosError } from "axios";
import { createWalletClient, http, publicActions } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { describe, expect, it } from "vitest";
import { withPaymentInterceptor } from "x402-axios";
import { wrapFetchWithPayment } from "x402-fetch";
import { PRICES } from "../../src/operations/prices.js";
import { jsonInit, useDevnetServer } from "../helpers/devnet-server.js";

/*
 * The deprecated x402 v1 SDKs (x402-fetch 1.2, x402-axios 0.7.2; dev dependencies only) against the real server on
 * the devnet: they pay the v1-capable unlock routes, and on the v2-only benchmark route they stop with the server's
 * `x402_v2_only` reason, having signed and paid nothing.
 */
const srv = useDevnetServer("p402-legacy-", { MAX_EVENT_LOOP_DELAY_MS: "0" });
const BENCHMARK = { endpoint_url: "https://2s.io/api/crypto/token-price" };

/** A v1 SDK's wallet: a viem wallet client on Base (chain 8453, the devnet's anvil), as their README builds it. */
function wallet(privateKey: `0x${string}`) {
  return createWalletClient({
    account: privateKeyToAccount(privateKey),
    chain: base,
    transport: http(srv.devnet().rpcUrl),
  }).extend(publicActions);
}

/** Runs `call` and returns how the buyer's and payTo's USDC balances moved meanwhile (atomic units). */
async function deltas(buyer: `0x${string}`, call: () => Promise<void>) {
  const d = srv.devnet();
  const [b0, p0] = await Promise.all([d.balanceOf(buyer), d.balanceOf(d.payTo)]);
  await call();
  const [b1, p1] = await Promise.all([d.balanceOf(buyer), d.balanceOf(d.payTo)]);
  return { buyer: b1 - b0, payTo: p1 - p0 };
}

const V2_ONLY_REASON = /x402_v2_only: this route accepts only x402 v2 payments/;

/** `call` (answering its HTTP status) pays GET /v1/unlocks/upcoming: 200 and exactly its price moved on chain. */
async function expectPaysUpcoming(client: string, buyer: `0x${string}`, call: () => Promise<number>) {
  let status = 0;
  const moved = await deltas(buyer, async () => {
    status = await call();
  });
  console.log(`${client}, GET /v1/unlocks/upcoming: ${status}, buyer ${moved.buyer}, payTo +${moved.payTo}`);
  expect(status).toBe(200);
  expect(moved).toEqual({ buyer: -BigInt(PRICES.upcoming.amount), payTo: BigInt(PRICES.upcoming.amount) });
}

/** `call` (answering what it threw) stops on the benchmark route with the server's reason: no proof sent, nothing moved. */
async function expectStopsOnBenchmark(
  client: string,
  buyer: `0x${string}`,
  call: () => Promise<unknown>,
  sentProof: () => boolean,
) {
  let thrown: unknown;
  const moved = await deltas(buyer, async () => {
    thrown = await call();
  });
  console.log(
    `${client}, POST /v1/benchmark/endpoint: threw ${(thrown as Error).name}, buyer ${moved.buyer}, payTo +${moved.payTo}`,
  );
  expect(thrown).toBeInstanceOf(Error);
  expect(thrown).not.toBeInstanceOf(TypeError);
  expect((thrown as AxiosError).isAxiosError).not.toBe(true);
  expect((thrown as Error).message).toMatch(V2_ONLY_REASON);
  expect(sentProof()).toBe(false);
  expect(moved).toEqual({ buyer: 0n, payTo: 0n });
}

describe("x402-fetch 1.2 (v1 only)", () => {
  it("pays the v1-capable GET /v1/unlocks/upcoming with X-PAYMENT", async () => {
    const b = srv.devnet().buyers[6]!;
    const pay = wrapFetchWithPayment(fetch, wallet(b.privateKey) as never);
    await expectPaysUpcoming("x402-fetch 1.2", b.address, async () => {
      const res = await pay(srv.url("/v1/unlocks/upcoming?days=30"));
      await res.arrayBuffer();
      return res.status;
    });
  }, 60_000);

  it("stops on the v2-only benchmark route with the x402_v2_only reason, nothing signed or paid", async () => {
    const b = srv.devnet().buyers[6]!;
    let sentProof = false;
    const watched: typeof fetch = async (input, init) => {
      if (new Headers(init?.headers).has("x-payment")) sentProof = true;
      return fetch(input, init);
    };
    const pay = wrapFetchWithPayment(watched, wallet(b.privateKey) as never);
    await expectStopsOnBenchmark(
      "x402-fetch 1.2",
      b.address,
      () => pay(srv.url("/v1/benchmark/endpoint"), jsonInit(BENCHMARK)).catch((e: unknown) => e),
      () => sentProof,
    );
  }, 60_000);
});

describe("an unfunded v1 buyer (x402-fetch 1.2)", () => {
  // The devnet's facilitator already refuses it at verify; a transfer that reverts at settle instead (the balance
  // spent meanwhile) is answered the same way, its reason read from viem's text: test/payments/core/chain-observer.test.ts.
  it("is answered like v2: 402 with the reason code, never 409 and never the library's text; nothing moves", async () => {
    const key = generatePrivateKey();
    const buyer = privateKeyToAccount(key).address;
    let answer: { status: number; headers: Headers; body: string } | undefined;
    const watched: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (new Headers(init?.headers).has("x-payment"))
        answer = { status: res.status, headers: res.headers, body: await res.clone().text() };
      return res;
    };
    const pay = wrapFetchWithPayment(watched, wallet(key) as never);
    const moved = await deltas(buyer, async () => {
      await pay(srv.url("/v1/unlocks/upcoming?days=30")).catch((e: unknown) => e);
    });
    expect(moved).toEqual({ buyer: 0n, payTo: 0n });
    expect(answer?.status).toBe(402);
    expect(JSON.parse(answer?.body ?? "{}")).toMatchObject({
      x402Version: 1,
      error: "invalid_exact_evm_insufficient_balance",
    });
    const settlement = answer?.headers.get("x-payment-response");
    if (settlement)
      expect(JSON.parse(Buffer.from(settlement, "base64").toString("utf8"))).toMatchObject({
        success: false,
        errorReason: "invalid_exact_evm_insufficient_balance",
      });
    const everything = `${JSON.stringify([...(answer?.headers ?? [])])}${answer?.body}`;
    for (const leak of ["viem", "Contract Call", "Docs:", "Version:", "sender"])
      expect(everything, leak).not.toContain(leak);
  }, 60_000);
});

describe("x402-axios 0.7.2 (v1 only)", () => {
  it("pays the v1-capable GET /v1/unlocks/upcoming with X-PAYMENT", async () => {
    const b = srv.devnet().buyers[7]!;
    const api = withPaymentInterceptor(axios.create({ baseURL: srv.url("") }), wallet(b.privateKey) as never);
    await expectPaysUpcoming(
      "x402-axios 0.7.2",
      b.address,
      async () => (await api.get("/v1/unlocks/upcoming", { params: { days: 30 } })).status,
    );
  }, 60_000);

  it("stops on the v2-only benchmark route with the x402_v2_only reason, nothing signed or paid", async () => {
    const b = srv.devnet().buyers[7]!;
    const instance = axios.create({ baseURL: srv.url("") });
    let sentProof = false;
    instance.interceptors.request.use((config) => {
      if (config.headers.has("X-PAYMENT")) sentProof = true;
      return config;
    });
    const api = withPaymentInterceptor(instance, wallet(b.privateKey) as never);
    await expectStopsOnBenchmark(
      "x402-axios 0.7.2",
      b.address,
      () => api.post("/v1/benchmark/endpoint", BENCHMARK).catch((e: unknown) => e),
      () => sentProof,
    );
  }, 60_000);
});
