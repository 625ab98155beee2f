import { randomBytes } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequirements } from "@x402/core/types";
import { generatePrivateKey } from "viem/accounts";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CapacityFacilitator,
  shippedLimits,
  startCapacityFacilitator,
  tally,
} from "../helpers/capacity-facilitator.js";
import { type HttpApp, startHttpApp, UPCOMING_PATH } from "../helpers/fault-facilitator.js";
import { b64, signedV2Proof, v2Proof } from "../helpers/proofs.js";

/*
 * One client floods the server from one address, at the default limits (rate limit 300 a minute, 8 requests in flight
 * per client, the non-EOA facilitator lane), while honest buyers on other addresses pay over HTTP and over MCP. The
 * facilitator has a fixed capacity (16 requests at once, the 17th answered 503) and holds the flood's junk verifies
 * until the test releases them: the outcome is decided by counters and barriers, not by how fast anything runs.
 * Load shedding (MAX_EVENT_LOOP_DELAY_MS) is off here: it measures time, and the counters must decide before it does.
 */
const DEFAULTS = shippedLimits();
const FLOODER = "198.51.100.66";
const CAPACITY = 16;
const TOOL = { name: "unlocks_upcoming", arguments: { days: 30 } };

let facilitator: CapacityFacilitator | undefined;
let served: HttpApp | undefined;
afterEach(async () => {
  facilitator?.release();
  await served?.close();
  await facilitator?.close();
  served = undefined;
  facilitator = undefined;
});

/** POST /mcp with one JSON-RPC message or a batch; the HTTP status and the parsed body. */
async function mcpPost(
  app: HttpApp,
  ip: string,
  message: unknown,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${app.url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "x-forwarded-for": ip,
    },
    body: JSON.stringify(message),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const toolCall = (id: number, payment?: unknown) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { ...TOOL, ...(payment ? { _meta: { "x402/payment": payment } } : {}) },
});

type Result = { isError?: boolean; structuredContent?: { accepts?: PaymentRequirements[]; status?: number } };

/** What an MCP tool call came to: "200" for a result, else its problem's status, or "402" for a PaymentRequired. */
function outcome(r: { status: number; body: unknown }): string {
  if (r.status !== 200) return String(r.status);
  const result = (r.body as { result?: Result }).result;
  if (!result) return "jsonrpc-error";
  if (!result.isError) return "200";
  return String(result.structuredContent?.status ?? 402);
}

async function requirements(app: HttpApp) {
  const unpaid = await fetch(`${app.url}${UPCOMING_PATH}`, { headers: { "x-forwarded-for": "192.0.2.1" } });
  await unpaid.arrayBuffer();
  const http = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string)
    .accepts[0] as PaymentRequirements;
  const first = await mcpPost(app, "192.0.2.2", toolCall(1));
  const mcp = (first.body as { result: Result }).result.structuredContent
    ?.accepts?.[0] as PaymentRequirements;
  return { http, mcp };
}

/** A junk proof (random signature) naming `from`: only the facilitator can tell it is not a smart wallet's. */
function junk(accepted: PaymentRequirements, from: string) {
  const p = v2Proof(accepted);
  return { ...p, payload: { ...p.payload, authorization: { ...p.payload.authorization, from } } };
}

const address = () => `0x${randomBytes(20).toString("hex")}`;

/** Three honest HTTP buyers and three honest MCP buyers, each on its own address, paying with its own EOA. */
async function honestBuyers(app: HttpApp, accepted: { http: PaymentRequirements; mcp: PaymentRequirements }) {
  const http = Array.from({ length: 3 }, async (_, i) => {
    const proof = b64(await signedV2Proof(accepted.http, undefined, generatePrivateKey()));
    const res = await fetch(`${app.url}${UPCOMING_PATH}`, {
      headers: { "payment-signature": proof, "x-forwarded-for": `203.0.113.${i + 1}` },
    });
    await res.arrayBuffer();
    return String(res.status);
  });
  const mcp = Array.from({ length: 3 }, async (_, i) => {
    const proof = await signedV2Proof(accepted.mcp, undefined, generatePrivateKey());
    return outcome(await mcpPost(app, `203.0.113.${i + 101}`, toolCall(7, proof)));
  });
  return { http: await Promise.all(http), mcp: await Promise.all(mcp) };
}

/** Resolves once `n` of the promises have settled (a barrier on the answers, not a sleep). */
function settled<T>(promises: Promise<T>[], n: number): Promise<void> {
  let done = 0;
  return new Promise((resolve) => {
    if (n <= 0) resolve();
    for (const p of promises)
      void p.finally(() => {
        done += 1;
        if (done === n) resolve();
      });
  });
}

describe("one address floods the server", () => {
  it("32 connections of junk-proof tool calls and batches: the flooder gets 429, honest HTTP and MCP buyers are served", async () => {
    facilitator = await startCapacityFacilitator(CAPACITY);
    const app = await startHttpApp(facilitator.url, DEFAULTS);
    served = app;
    const accepted = await requirements(app);

    // Wave 1: 16 connections, each a tool call with a junk proof naming its own payer (held at the facilitator).
    const payers = Array.from({ length: 16 }, address);
    for (const p of payers) facilitator.slow.add(p);
    const wave1 = payers.map((p, i) =>
      mcpPost(app, FLOODER, toolCall(i, junk(accepted.mcp, p))).then(outcome),
    );
    // 8 are in flight (2 at the facilitator, 6 waiting for the lane's per-sender slots), 8 are refused at once.
    await facilitator.untilHeld(2);
    await settled(wave1, 8);
    // Wave 2: 16 more connections, each a JSON-RPC batch of 37 (tools/list, unpaid and junk-proof calls).
    const batch = Array.from({ length: 37 }, (_, i) =>
      i % 3 === 0
        ? { jsonrpc: "2.0", id: i, method: "tools/list" }
        : toolCall(i, i % 3 === 1 ? undefined : junk(accepted.mcp, address())),
    );
    const wave2 = await Promise.all(
      Array.from({ length: 16 }, () => mcpPost(app, FLOODER, batch).then((r) => String(r.status))),
    );

    // While the flood holds its 8 requests, the honest buyers pay.
    const during = await honestBuyers(app, accepted);
    const heldDuring = facilitator.held;

    facilitator.release();
    const flood1 = await Promise.all(wave1);

    // Then the same address keeps calling, 8 at a time, 320 unpaid tool calls: past 300 a minute, 429.
    const more: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let i = lane; i < 320; i += 8) more.push(outcome(await mcpPost(app, FLOODER, toolCall(i))));
      }),
    );
    const after = await honestBuyers(app, accepted);

    const flooder = [...flood1, ...wave2, ...more];
    console.info(
      `connection flood: honest during ${[...during.http, ...during.mcp].filter((s) => s === "200").length}/6 (HTTP ${JSON.stringify(tally(during.http))}, MCP ${JSON.stringify(tally(during.mcp))}), after ${[...after.http, ...after.mcp].filter((s) => s === "200").length}/6; flooder ${flooder.length} requests ${JSON.stringify(tally(flooder))} (wave 1 ${JSON.stringify(tally(flood1))}, batches ${JSON.stringify(tally(wave2))}, then ${JSON.stringify(tally(more))}); facilitator held ${heldDuring} of the flood at once (peak ${facilitator.peakHeld}), ${facilitator.saturated} refused as saturated`,
    );
    expect([...during.http, ...during.mcp]).toEqual(Array(6).fill("200"));
    expect([...after.http, ...after.mcp]).toEqual(Array(6).fill("200"));
    // The flood held at most the lane's 2 per sender at the facilitator, which was never saturated.
    expect(facilitator.peakHeld).toBe(2);
    expect(facilitator.saturated).toBe(0);
    // Wave 1: 8 in flight answered 402 once released; the other 8 refused as that client's 9th+ request at once.
    expect(tally(flood1)).toEqual({ "402": 8, "429": 8 });
    // Every batch met a full in-flight share: 429, nothing in it run.
    expect(wave2).toEqual(Array(16).fill("429"));
    // 8 requests were counted by the rate limit in wave 1 (refused ones never reach it): 300 - 8 more, then 429.
    expect(tally(more)).toEqual({ "402": 292, "429": 28 });
    expect(flooder.filter((s) => s.startsWith("5"))).toEqual([]);
    // Only honest buyers were charged.
    expect(facilitator.transfers.size).toBe(12);
  }, 60_000);

  it("a batch flood is refused whole and counted per POST: 400, then 429; honest buyers are served meanwhile", async () => {
    facilitator = await startCapacityFacilitator(CAPACITY);
    const app = await startHttpApp(facilitator.url, DEFAULTS);
    served = app;
    const accepted = await requirements(app);
    // Batches of 37: tools/list, unpaid calls and junk-proof calls (each junk proof naming a payer held by the facilitator).
    const batch = () =>
      Array.from({ length: 37 }, (_, i) => {
        if (i % 3 === 0) return { jsonrpc: "2.0", id: i, method: "tools/list" };
        if (i % 3 === 1) return toolCall(i);
        const from = address();
        facilitator?.slow.add(from);
        return toolCall(i, junk(accepted.mcp, from));
      });
    // 320 batches from one address, 8 connections at a time; once the first 8 are sent, the honest buyers pay.
    const statuses: string[] = [];
    let sent = 0;
    let half: () => void = () => {};
    const halfway = new Promise<void>((resolve) => {
      half = resolve;
    });
    let resume: () => void = () => {};
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const flood = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (sent < 320) {
          sent += 1;
          if (sent === 8) half();
          if (sent > 8) await resumed;
          const r = await mcpPost(app, FLOODER, batch());
          statuses.push(
            r.status === 400
              ? `400:${(r.body as { error?: { code?: number } }).error?.code}`
              : String(r.status),
          );
        }
      }),
    );
    await halfway;
    const during = await honestBuyers(app, accepted);
    facilitator.release();
    resume();
    await flood;
    console.info(
      `batch flood: honest ${[...during.http, ...during.mcp].filter((s) => s === "200").length}/6 (HTTP ${JSON.stringify(tally(during.http))}, MCP ${JSON.stringify(tally(during.mcp))}); flooder ${statuses.length} batches of 37 ${JSON.stringify(tally(statuses))}; facilitator verifies held ${facilitator.peakHeld}, fast ${facilitator.fastVerifies}`,
    );
    expect([...during.http, ...during.mcp]).toEqual(Array(6).fill("200"));
    // Every batch was refused whole (JSON-RPC invalid request) until the 300 a minute were spent, then 429.
    expect(tally(statuses)).toEqual({ "400:-32600": 300, "429": 20 });
    // Nothing in a batch ran: no junk verify reached the facilitator; the 6 fast verifies are the honest buyers'.
    expect(facilitator.peakHeld).toBe(0);
    expect(facilitator.fastVerifies).toBe(6);
  }, 60_000);
});
