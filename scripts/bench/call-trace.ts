/**
 * Which source files one paid call runs, and how deep the call is when it reaches the facilitator gateway: a paid
 * POST /v1/unlock-risk over HTTP and the same operation as the MCP tool `unlock_risk`, each measured on its second
 * call (the first warms caches), against the test app over a real socket, with the real facilitator gateway in front
 * of an in-process facilitator that accepts and settles.
 *
 *   npx tsx scripts/bench/call-trace.ts [--json]
 *
 * Files: V8 precise coverage (function call counts) taken around the measured call, files under src/ with a function
 * that ran. Depth: the async stack when the facilitator's verify is called, counted in frames of src/ and of the whole
 * server (Fastify, the MCP SDK and src/, from the request's first frame).
 */
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
Error.stackTraceLimit = 200;

const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });

const { appWith, testApp } = await import("../../test/helpers/app.js");
const { v2Proof } = await import("../../test/helpers/proofs.js");
/** The facilitator gateway module, wherever this version of the tree keeps it. */
async function gatewayModule(): Promise<typeof import("../../src/payments/facilitator/gateway.js")> {
  for (const path of ["../../src/payments/gateway.js", "../../src/payments/facilitator.js"]) {
    try {
      return (await import(path)) as typeof import("../../src/payments/facilitator/gateway.js");
    } catch {}
  }
  throw new Error("no facilitator gateway module");
}
const { createFacilitatorGateway } = await gatewayModule();

// The real gateway (signature check, payer limits, circuit) over an in-process facilitator that accepts and settles.
let stack = "";
let tx = 0;
const facilitator = {
  verify: async (p: { payload: { authorization: { from: string } } }) => {
    stack = new Error("trace").stack ?? "";
    return { isValid: true, payer: p.payload.authorization.from };
  },
  settle: async (p: { payload: { authorization: { from: string } } }, r: { network: string }) => ({
    success: true,
    transaction: `0x${(++tx).toString(16).padStart(64, "0")}`,
    network: r.network,
    payer: p.payload.authorization.from,
  }),
  getSupported: async () => ({ kinds: [], extensions: [], signers: {} }),
};
const base = await testApp();
await base.app.close();
const app = await appWith({
  config: base.config,
  ledger: base.ledger,
  gateway: createFacilitatorGateway(facilitator as never, base.config.circuit),
});
const url = await app.listen({ host: "127.0.0.1", port: 0 });

const ARGS = { token: "ARB", unlock_event_id: "unlock_arb_2026_12_16" };
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function httpCall(proof?: unknown): Promise<Response> {
  return fetch(`${url}/v1/unlock-risk`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(proof ? { "payment-signature": Buffer.from(JSON.stringify(proof)).toString("base64") } : {}),
    },
    body: JSON.stringify(ARGS),
  });
}

let id = 0;
async function mcpCall(proof?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: MCP_HEADERS,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: ++id,
      method: "tools/call",
      params: {
        name: "unlock_risk",
        arguments: ARGS,
        ...(proof ? { _meta: { "x402/payment": proof } } : {}),
      },
    }),
  });
  return ((await res.json()) as { result: Record<string, unknown> }).result;
}

interface Coverage {
  result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[];
}

/** Files under src/ with a function that ran since the last take. */
async function ranFiles(): Promise<string[]> {
  const { result } = (await session.post("Profiler.takePreciseCoverage")) as unknown as Coverage;
  return result
    .filter((s) => s.url.includes(`${ROOT}src/`) && s.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0))
    .map((s) => s.url.slice(s.url.indexOf("src/")))
    .sort();
}

function depth(trace: string): { src: number; server: number } {
  const frames = trace.split("\n").slice(2);
  const server = frames.filter(
    (f) =>
      f.includes(`${ROOT}src/`) ||
      /node_modules\/(fastify|@modelcontextprotocol|avvio|light-my-request)/.test(f),
  );
  return { src: frames.filter((f) => f.includes(`${ROOT}src/`)).length, server: server.length };
}

async function measure(
  name: string,
  unpaid: () => Promise<unknown>,
  paid: (proof: unknown) => Promise<void>,
) {
  const accepted = (await unpaid()) as Parameters<typeof v2Proof>[0];
  await paid(v2Proof(accepted));
  await ranFiles();
  stack = "";
  await paid(v2Proof(accepted));
  const files = await ranFiles();
  return { name, files, depth: depth(stack), stack };
}

const http = await measure(
  "HTTP POST /v1/unlock-risk",
  async () => {
    const res = await httpCall();
    const header = res.headers.get("payment-required") as string;
    await res.arrayBuffer();
    return JSON.parse(Buffer.from(header, "base64").toString("utf8")).accepts[0];
  },
  async (proof) => {
    const res = await httpCall(proof);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`HTTP paid call: ${res.status}`);
  },
);
const mcp = await measure(
  "MCP tools/call unlock_risk",
  async () => ((await mcpCall()).structuredContent as { accepts: unknown[] }).accepts[0],
  async (proof) => {
    const r = await mcpCall(proof);
    if (r.isError) throw new Error(`MCP paid call: ${JSON.stringify(r.structuredContent)}`);
  },
);
await app.close();
await base.ledger.close();
session.disconnect();

if (process.argv.includes("--json")) process.stdout.write(`${JSON.stringify({ http, mcp }, null, 2)}\n`);
else
  for (const m of [http, mcp]) {
    const byFolder = new Map<string, number>();
    for (const f of m.files)
      byFolder.set(
        f.split("/").slice(0, -1).join("/"),
        (byFolder.get(f.split("/").slice(0, -1).join("/")) ?? 0) + 1,
      );
    process.stdout.write(
      `${m.name}: ${m.files.length} files under src/ (${[...byFolder].map(([d, n]) => `${d} ${n}`).join(", ")}); ` +
        `at the gateway's verify: ${m.depth.src} frames in src/, ${m.depth.server} in the server\n`,
    );
  }
