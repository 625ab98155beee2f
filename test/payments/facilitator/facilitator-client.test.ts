import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { HTTPFacilitatorClient } from "@x402/core/http";
import {
  FacilitatorResponseError,
  FacilitatorTimeoutError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  VerifyError,
} from "@x402/core/types";
import { afterEach, describe, expect, it } from "vitest";
import {
  createFacilitatorHttpClient,
  FacilitatorUnreachableError,
  parseSettleResponse,
  parseVerifyResponse,
} from "../../../src/payments/facilitator/facilitator-client.js";
import { classify } from "../../../src/payments/facilitator/gateway.js";

const requirements = {
  scheme: "exact",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  amount: "20000",
  payTo: "0x00000000000000000000000000000000000000aa",
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
} as PaymentRequirements;
const payload = {
  x402Version: 2,
  accepted: requirements,
  payload: { signature: "0xsig", authorization: { from: "0xb0b", nonce: "0x01", value: "20000" } },
} as unknown as PaymentPayload;

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});
async function facilitator(handler: Handler): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", () => handler(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const json = (res: ServerResponse, status: number, data: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(typeof data === "string" ? data : JSON.stringify(data));
};

describe("facilitator HTTP client (undici request)", () => {
  it("posts the same request body as @x402/core's HTTPFacilitatorClient, with the per-path auth headers", async () => {
    const seen: { path: string; body: unknown; auth: string | undefined }[] = [];
    const url = await facilitator((req, body, res) => {
      seen.push({ path: req.url ?? "", body: JSON.parse(body), auth: req.headers.authorization });
      json(
        res,
        200,
        req.url === "/verify"
          ? { isValid: true, payer: "0xb0b" }
          : { success: true, transaction: "0xtx", network: "eip155:8453" },
      );
    });
    const createAuthHeaders = async () => ({
      verify: { Authorization: "Bearer v" },
      settle: { Authorization: "Bearer s" },
      supported: {},
    });
    const ours = createFacilitatorHttpClient({ url, timeoutMs: 10_000, createAuthHeaders });
    const core = new HTTPFacilitatorClient({ url, timeoutMs: 10_000, createAuthHeaders });
    expect(await ours.verify(payload, requirements)).toEqual(await core.verify(payload, requirements));
    expect(await ours.settle(payload, requirements)).toEqual(await core.settle(payload, requirements));
    expect(seen.map((s) => [s.path, s.auth])).toEqual([
      ["/verify", "Bearer v"],
      ["/verify", "Bearer v"],
      ["/settle", "Bearer s"],
      ["/settle", "Bearer s"],
    ]);
    expect(seen[0]?.body).toEqual(seen[1]?.body);
    expect(seen[2]?.body).toEqual(seen[3]?.body);
    expect(seen[0]?.body).toEqual({
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    await ours.close();
  });

  it("answers like @x402/core's client: verdicts, refusals, malformed answers and extension responses", async () => {
    let next: (res: ServerResponse) => void = () => undefined;
    const url = await facilitator((_req, _body, res) => next(res));
    const ours = createFacilitatorHttpClient({ url, timeoutMs: 10_000 });
    const core = new HTTPFacilitatorClient({ url, timeoutMs: 10_000 });
    const both = async (respond: (res: ServerResponse) => void, call: "verify" | "settle") => {
      next = respond;
      const settle = <T>(p: Promise<T>) =>
        p.then(
          (v) => ({ ok: v }),
          (e: unknown) => ({ err: e }),
        );
      const run = (c: typeof ours | typeof core): Promise<unknown> =>
        call === "verify" ? c.verify(payload, requirements) : c.settle(payload, requirements);
      return [await settle(run(ours)), await settle(run(core))] as const;
    };

    // A 400 with a verdict: VerifyError / SettleError carrying the facilitator's reason.
    const [v400, c400] = await both(
      (res) => json(res, 400, { isValid: false, invalidReason: "invalid_exact_evm_signature" }),
      "verify",
    );
    expect("err" in v400 && v400.err).toBeInstanceOf(VerifyError);
    expect("err" in c400 && c400.err).toBeInstanceOf(VerifyError);
    expect("err" in v400 && (v400.err as VerifyError).invalidReason).toBe("invalid_exact_evm_signature");
    const [s402] = await both(
      (res) =>
        json(res, 402, {
          success: false,
          errorReason: "insufficient_funds",
          transaction: "",
          network: "eip155:8453",
        }),
      "settle",
    );
    expect("err" in s402 && s402.err).toBeInstanceOf(SettleError);

    // A 503 without a verdict: the message classify() reads the status from.
    const [v503, c503] = await both((res) => json(res, 503, "upstream down"), "verify");
    const m503 = "err" in v503 ? String((v503.err as Error).message) : "";
    expect(m503).toBe("err" in c503 ? String((c503.err as Error).message) : "");
    expect(classify(("err" in v503 && v503.err) as Error, "verify", 5)).toMatchObject({
      counts: true,
      fault: { reason: "facilitator_error" },
    });

    // A 200 that is not JSON, or not the shape: FacilitatorResponseError (the circuit counts it).
    for (const bad of [
      "<html>",
      JSON.stringify({ isValid: "yes" }),
      JSON.stringify({ isValid: true, payer: 7 }),
    ]) {
      const [o, c] = await both((res) => json(res, 200, bad), "verify");
      expect("err" in o && o.err).toBeInstanceOf(FacilitatorResponseError);
      expect("err" in c && c.err).toBeInstanceOf(FacilitatorResponseError);
    }
    const [s200] = await both((res) => json(res, 200, { success: true, network: "eip155:8453" }), "settle");
    expect("err" in s200 && s200.err).toBeInstanceOf(FacilitatorResponseError);

    // Extension responses ride in a base64 header.
    const ext = Buffer.from(JSON.stringify({ bazaar: { status: "cataloged" } })).toString("base64");
    const [withExt] = await both(
      (res) => json(res, 200, { isValid: true, invalidReason: null }, { "EXTENSION-RESPONSES": ext }),
      "verify",
    );
    expect("ok" in withExt && withExt.ok).toEqual({
      isValid: true,
      extensionResponses: { bazaar: { status: "cataloged" } },
    });
    await ours.close();
  });

  it("a facilitator that never answers is a FacilitatorTimeoutError; a closed port is unreachable", async () => {
    const url = await facilitator(() => undefined); // holds every request
    const slow = createFacilitatorHttpClient({ url, timeoutMs: 50 });
    const timedOut = await slow.verify(payload, requirements).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(FacilitatorTimeoutError);
    expect(classify(timedOut, "verify", 5).fault.reason).toBe("facilitator_timeout");
    await slow.close();

    const gone = await facilitator(() => undefined);
    await new Promise((r) => servers.pop()?.close(r));
    const refused = createFacilitatorHttpClient({ url: gone, timeoutMs: 10_000 });
    const err = await refused.settle(payload, requirements).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FacilitatorUnreachableError);
    expect(classify(err, "settle", 5)).toMatchObject({
      counts: true,
      fault: { reason: "facilitator_unreachable" },
    });
    await refused.close();
  });
});

describe("facilitator answers, checked like @x402/core's schemas", () => {
  it("null optional fields are absent, unknown fields are dropped, wrong types are refused", () => {
    expect(
      parseVerifyResponse({ isValid: false, invalidReason: "x", invalidMessage: null, other: 1 }),
    ).toEqual({
      isValid: false,
      invalidReason: "x",
    });
    expect(() => parseVerifyResponse({ isValid: true, extra: [] })).toThrow();
    expect(
      parseSettleResponse({ success: true, transaction: "0xt", network: "eip155:8453", amount: null }),
    ).toEqual({
      success: true,
      transaction: "0xt",
      network: "eip155:8453",
    });
    expect(() => parseSettleResponse({ success: true, transaction: 1, network: "eip155:8453" })).toThrow();
    expect(() => parseSettleResponse({ success: true, transaction: "0xt" })).toThrow();
  });
});
