/**
 * The MCP section of `npm run bench` (`--only mcp`): the server's CPU per paid call of the same operation
 * (POST /v1/unlock-risk, 0.10 USD) over HTTP and as the MCP tool `unlock_risk`, each proof a real signed EIP-3009
 * authorization, settled through the bench's instant facilitator. Calls are sequential (one in flight), so the figure
 * is the work of one paid call, read from /proc for the server process alone (the client and facilitator run in other
 * processes).
 */
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { type BenchProcess, cpuMsOf, startBenchProcess } from "./processes.js";
import { type SignedAuthorization, signAuthorizations } from "./proofs.js";
import { BENCH_PAY_TO } from "./serve.js";

const ARGS = { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" };
const PRICE = "100000";
const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};

export interface McpBenchResult {
  calls: number;
  rounds: number;
  /** Server CPU ms per paid call, one figure per round. */
  httpCpuMsPerCall: number[];
  mcpCpuMsPerCall: number[];
}

const proofFor = (
  s: SignedAuthorization,
  required: { accepted: PaymentRequirements; resource: unknown },
) => ({
  x402Version: 2,
  resource: required.resource,
  accepted: required.accepted,
  payload: { signature: s.signature, authorization: s.authorization },
});

let rpcId = 0;
async function toolCall(url: string, meta?: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: MCP_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: ++rpcId,
      method: "tools/call",
      params: { name: "unlock_risk", arguments: ARGS, ...(meta ? { _meta: meta } : {}) },
    }),
  });
  const body = (await res.json()) as { result?: Record<string, unknown> };
  if (!body.result) throw new Error(`MCP tools/call answered ${res.status} without a result`);
  return body.result;
}

async function httpRequired(url: string) {
  const res = await fetch(`${url}/v1/unlock-risk`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(ARGS),
  });
  await res.arrayBuffer();
  const header = res.headers.get("payment-required");
  if (res.status !== 402 || !header) throw new Error(`expected a 402, got ${res.status}`);
  const pr = decodePaymentRequiredHeader(header);
  return { accepted: pr.accepts[0] as PaymentRequirements, resource: pr.resource };
}

async function mcpRequired(url: string) {
  const result = await toolCall(url);
  const pr = result.structuredContent as PaymentRequired;
  return { accepted: pr.accepts[0] as PaymentRequirements, resource: pr.resource };
}

async function paidHttp(
  url: string,
  required: Awaited<ReturnType<typeof httpRequired>>,
  s: SignedAuthorization,
) {
  const res = await fetch(`${url}/v1/unlock-risk`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "payment-signature": Buffer.from(JSON.stringify(proofFor(s, required))).toString("base64"),
    },
    body: JSON.stringify(ARGS),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`paid HTTP call answered ${res.status}`);
}

async function paidMcp(
  url: string,
  required: Awaited<ReturnType<typeof mcpRequired>>,
  s: SignedAuthorization,
) {
  const result = await toolCall(url, { "x402/payment": proofFor(s, required) });
  if (result.isError) throw new Error(`paid MCP call failed: ${JSON.stringify(result.structuredContent)}`);
}

async function cpuPerCall(pid: number, calls: number, one: (i: number) => Promise<void>): Promise<number> {
  const before = cpuMsOf(pid);
  for (let i = 0; i < calls; i++) await one(i);
  const after = cpuMsOf(pid);
  if (before === undefined || after === undefined) return Number.NaN;
  return (after - before) / calls;
}

export async function benchMcp(o: {
  calls: number;
  rounds: number;
  procs: BenchProcess[];
}): Promise<McpBenchResult> {
  const facilitator = await startBenchProcess("scripts/bench/instant-facilitator.ts", []);
  o.procs.push(facilitator);
  const server = await startBenchProcess("scripts/bench/serve.ts", ["pressure402", facilitator.url, ""]);
  o.procs.push(server);
  const pid = server.child.pid as number;
  const pool = await signAuthorizations(2 * o.calls * (o.rounds + 1), BENCH_PAY_TO, PRICE, {
    distinctPayers: true,
  });
  let next = 0;
  const take = () => pool[next++] as SignedAuthorization;
  const http = await httpRequired(server.url);
  const mcp = await mcpRequired(server.url);
  // Warm-up: both paths compiled and their caches filled before anything is measured.
  for (let i = 0; i < o.calls; i++) {
    await paidHttp(server.url, http, take());
    await paidMcp(server.url, mcp, take());
  }
  const result: McpBenchResult = {
    calls: o.calls,
    rounds: o.rounds,
    httpCpuMsPerCall: [],
    mcpCpuMsPerCall: [],
  };
  for (let r = 0; r < o.rounds; r++) {
    result.httpCpuMsPerCall.push(await cpuPerCall(pid, o.calls, () => paidHttp(server.url, http, take())));
    result.mcpCpuMsPerCall.push(await cpuPerCall(pid, o.calls, () => paidMcp(server.url, mcp, take())));
  }
  return result;
}

export function logMcp(r: McpBenchResult, log: (line: string) => void): void {
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(", ");
  log(`paid unlock_risk, ${r.calls} sequential calls per round, server CPU ms per call:`);
  log(`  HTTP POST /v1/unlock-risk: ${fmt(r.httpCpuMsPerCall)}`);
  log(`  MCP tools/call unlock_risk: ${fmt(r.mcpCpuMsPerCall)}`);
}
