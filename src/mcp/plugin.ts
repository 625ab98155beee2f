import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { BASE_MAINNET, type PaymentNetwork } from "../chain/networks.js";
import { problem, sendProblem } from "../http/problem.js";
import { META_PAYMENT, META_RETRY_KEY, problemResult, type ToolResult, toolResult } from "./results.js";
import { httpCall, MCP_PATH, PAID_TOOLS, type PaidTool, priceMeta, toolNamed } from "./tools.js";

export interface McpOptions {
  /** Server version shown to MCP clients (initialize). */
  version: string;
  /** The chain and USDC paid with; Base mainnet when unset. */
  network?: PaymentNetwork;
}

export { MCP_PATH };

/** Shown to agents at initialize: how the tools are paid and in which order to call them. */
const instructions = (network: PaymentNetwork) =>
  `Every tool is a paid call settled with x402 in USDC on ${network.label} (${network.caip2}); each description gives its price. ` +
  'A call without payment returns isError with the x402 PaymentRequired (structuredContent, content[0].text and _meta["x402/error"]); sign it and repeat the same call with the PaymentPayload in _meta["x402/payment"] (the object, or its base64 encoding as in PAYMENT-SIGNATURE); the settlement comes back in _meta["x402/payment-response"]. ' +
  'The same payment with the same arguments returns the same result again at no extra charge, but only when the retry carries the secret of the paying call: its payment-identifier id (PaymentPayload extensions["payment-identifier"].info.id, advertised in every PaymentRequired), or the _meta["pressure402/idempotency-key"] its answer returned. ' +
  "Invalid arguments and " +
  "unknown tokens or events are refused before any price is asked. Start with unlocks_upcoming for event ids, then " +
  "unlock_risk, token_risk_summary or unlock_backtest; benchmark_endpoint prices an x402 endpoint URL.";

/**
 * `_meta["x402/payment"]` as the PAYMENT-SIGNATURE value: a PaymentPayload object is encoded the way HTTP clients
 * encode it (base64 of its JSON); a string is taken as that encoding already (Cloudflare's `withX402Client` sends
 * one). Any JSON value goes through: the payment core decides whether it is a well-formed proof, as for HTTP.
 */
function proofHeader(proof: unknown): string | undefined {
  if (typeof proof === "string") return proof;
  try {
    return Buffer.from(JSON.stringify(proof)).toString("base64");
  } catch {
    return undefined;
  }
}

/**
 * Design: every tool call is dispatched through the app's own HTTP route with `app.inject()` — the proof as the
 * PAYMENT-SIGNATURE header, the settlement read back from PAYMENT-RESPONSE. Validation, 404s before payment, prices,
 * the provisional cap, the ledger, exactly-once and at-least-once delivery, rate limiting and fault answers are then
 * the HTTP route's, by construction; this adapter only translates. (The alternative, lifting the payment core out of
 * the Fastify hooks, would change src/payments/plugin.ts while it is being rebuilt.)
 */
async function callTool(
  app: FastifyInstance,
  caller: FastifyRequest,
  tool: PaidTool,
  args: Record<string, unknown> | undefined,
  meta: Record<string, unknown> | undefined,
): Promise<ToolResult> {
  const call = httpCall(tool, args);
  const headers: Record<string, string> = {};
  // The same Host makes the same 402 `resource` as a direct HTTP call (PUBLIC_BASE_URL overrides both).
  if (caller.headers.host) headers.host = caller.headers.host;
  const ua = caller.headers["user-agent"];
  if (ua) headers["user-agent"] = ua;
  if (call.body !== undefined) headers["content-type"] = "application/json";
  const proof = meta?.[META_PAYMENT];
  if (proof !== undefined) {
    const encoded = proofHeader(proof);
    if (encoded === undefined)
      return problemResult(
        problem(
          400,
          "invalid-payment-header",
          `_meta["${META_PAYMENT}"] is not a JSON PaymentPayload.`,
          tool.path,
        ),
      );
    headers["payment-signature"] = encoded;
    const retryKey = meta?.[META_RETRY_KEY];
    if (typeof retryKey === "string") headers["idempotency-key"] = retryKey;
  }
  const res = await app.inject({
    method: call.method,
    url: call.url,
    headers,
    ...(call.body !== undefined ? { payload: call.body } : {}),
    // Rate limits and logs see the MCP caller, not the loopback of inject.
    remoteAddress: caller.ip,
  });
  return toolResult(
    { statusCode: res.statusCode, headers: res.headers, body: res.body },
    { tool, url: call.url, paid: proof !== undefined },
  );
}

/** One MCP server per request (stateless streamable HTTP): tools/list and tools/call of the five paid routes. */
function mcpServer(
  app: FastifyInstance,
  caller: FastifyRequest,
  version: string,
  network: PaymentNetwork,
): Server {
  const server = new Server(
    { name: "pressure402", version },
    { capabilities: { tools: {} }, instructions: instructions(network) },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: PAID_TOOLS.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.inputSchema,
      outputSchema: t.outputSchema,
      annotations: { title: t.title, readOnlyHint: true, openWorldHint: false },
      _meta: priceMeta(t, network),
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = toolNamed(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    try {
      return await callTool(app, caller, tool, request.params.arguments, request.params._meta);
    } catch (err) {
      // Internal failures stay in the log; the client gets a problem without internals.
      caller.log.error({ err, tool: tool.name }, "mcp tool call failed");
      return problemResult(
        problem(500, "internal", "The server failed to answer this tool call.", tool.path),
      );
    }
  });
  return server;
}

/** The body is handed over already parsed, so the headers that describe the raw body or connection stay behind. */
const NOT_FORWARDED = new Set(["content-length", "transfer-encoding", "connection", "keep-alive"]);

function webHeaders(request: FastifyRequest): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(request.headers)) {
    if (v === undefined || NOT_FORWARDED.has(k)) continue;
    h.set(k, Array.isArray(v) ? v.join(", ") : String(v));
  }
  return h;
}

/**
 * A tools/call whose `arguments` is not an object: answered here with JSON-RPC's invalid-params error, since the SDK
 * would turn its own schema failure into a -32603 carrying zod's text. Undefined for anything else.
 */
function nonObjectArguments(body: unknown) {
  const m = body as { method?: unknown; id?: unknown; params?: { arguments?: unknown } } | null;
  if (typeof m !== "object" || m === null || Array.isArray(m) || m.method !== "tools/call") return undefined;
  const args = m.params?.arguments;
  if (args === undefined || (typeof args === "object" && args !== null && !Array.isArray(args)))
    return undefined;
  return {
    jsonrpc: "2.0",
    id: typeof m.id === "string" || typeof m.id === "number" ? m.id : null,
    error: {
      code: ErrorCode.InvalidParams,
      message: "Invalid params: tools/call arguments must be an object of the tool's named arguments.",
    },
  };
}

/** `/mcp`: the MCP streamable HTTP transport in stateless mode with JSON responses (no SSE stream, no sessions). */
const mcpPlugin: FastifyPluginAsync<McpOptions> = async (app, opts) => {
  app.post(MCP_PATH, { schema: { hide: true } }, async (request, reply) => {
    const invalid = nonObjectArguments(request.body);
    if (invalid) return reply.code(200).type("application/json").send(invalid);
    const server = mcpServer(app, request, opts.version, opts.network ?? BASE_MAINNET);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const res = await transport.handleRequest(
        new Request(`http://localhost${MCP_PATH}`, { method: "POST", headers: webHeaders(request) }),
        { parsedBody: request.body },
      );
      reply.code(res.status);
      res.headers.forEach((value, key) => {
        reply.header(key, value);
      });
      const text = await res.text();
      return reply.send(text.length ? text : undefined);
    } finally {
      await server.close();
    }
  });

  // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
  const notAllowed = async (_request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(
      reply.header("Allow", "POST"),
      problem(
        405,
        "method-not-allowed",
        "This MCP endpoint is stateless: send JSON-RPC with POST.",
        MCP_PATH,
      ),
    );
  app.get(MCP_PATH, { schema: { hide: true } }, notAllowed);
  app.delete(MCP_PATH, { schema: { hide: true } }, notAllowed);
};

export default mcpPlugin;
