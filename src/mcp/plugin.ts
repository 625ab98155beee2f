import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  type JSONRPCMessage,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/sdk/types.js";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { PaymentNetwork } from "../chain/networks.js";
import { problem, sendProblem } from "../http/problem.js";
import type { PaidHandlers } from "../operations/handler.js";
import { internalProblem, MCP_ENDPOINT_STATUS } from "../payments/http/http-answers.js";
import { callPaidTool, type ToolServer } from "./call.js";
import { problemResult, type ToolResult } from "./results.js";
import { MCP_PATH, PAID_TOOLS, type PaidTool, priceMeta, toolNamed } from "./tools.js";

export interface McpOptions {
  /** Server version shown to MCP clients (initialize). */
  version: string;
  /** The chain and USDC paid with; Base mainnet when unset. */
  network: PaymentNetwork;
  /** Each paid operation's checks and answer: the same the HTTP routes run. */
  handlers: PaidHandlers;
}

/** Shown to agents at initialize: how the tools are paid and in which order to call them. */
const instructions = (network: PaymentNetwork) =>
  `Every tool is a paid call settled with x402 in USDC on ${network.label} (${network.caip2}); each description gives its price. ` +
  'A call without payment returns isError with the x402 PaymentRequired (structuredContent, content[0].text and _meta["x402/error"]); sign it and repeat the same call with the PaymentPayload in _meta["x402/payment"] (the object, or its base64 encoding as in PAYMENT-SIGNATURE); the settlement comes back in _meta["x402/payment-response"]. ' +
  'The same payment with the same arguments returns the same result again at no extra charge, but only when the retry carries the secret of the paying call: its payment-identifier id (PaymentPayload extensions["payment-identifier"].info.id, advertised in every PaymentRequired), or the _meta["pressure402/idempotency-key"] its answer returned. ' +
  "Invalid arguments and " +
  "unknown tokens or events are refused before any price is asked. Start with unlocks_upcoming for event ids, then " +
  "unlock_risk, token_risk_summary or unlock_backtest; benchmark_endpoint prices an x402 endpoint URL.";

/** What the call's answer was, for its log line: answered, a payment asked for, or the problem's status. */
function resultOf(result: ToolResult): number | "answered" | "payment-required" {
  if (!result.isError) return "answered";
  const status = result.structuredContent?.status;
  return typeof status === "number" ? status : "payment-required";
}

/** The HTTP request a pooled server is answering, while it is checked out. */
interface Pooled {
  server: Server;
  call?: { caller: FastifyRequest; reply: FastifyReply };
}

/**
 * An MCP server (tools/list and tools/call of the paid operations), built once and reused: the SDK takes one transport
 * per connection, and a stateless request is one connection, so a server is checked out for one request at a time and
 * closed (which detaches its transport) before it is used again.
 */
function pooledServer(tools: ToolServer, version: string, network: PaymentNetwork): Pooled {
  const pooled: Pooled = {
    server: new Server(
      { name: "pressure402", version },
      { capabilities: { tools: {} }, instructions: instructions(network) },
    ),
  };
  const listed = PAID_TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema,
    annotations: { title: t.title, readOnlyHint: true, openWorldHint: false },
    _meta: priceMeta(t, network),
  }));
  pooled.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));
  pooled.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = toolNamed(request.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    const call = pooled.call;
    if (!call) throw new McpError(ErrorCode.InternalError, "No request in progress");
    return runTool(tools, call.caller, call.reply, tool, request.params.arguments, request.params._meta);
  });
  return pooled;
}

/** A tool call on the payment core, logged; a failure is a problem result without internals. */
async function runTool(
  tools: ToolServer,
  caller: FastifyRequest,
  reply: FastifyReply,
  tool: PaidTool,
  args: Record<string, unknown> | undefined,
  meta: Record<string, unknown> | undefined,
): Promise<ToolResult> {
  try {
    const result = await callPaidTool(tools, caller, reply, tool, args, meta);
    // One line per tool call, as the access log has one per HTTP request (the JSON-RPC POST's says only 200).
    caller.log.info({ tool: tool.name, result: resultOf(result) }, "mcp tool call");
    return result;
  } catch (err) {
    // Internal failures stay in the log; the client gets a problem without internals.
    caller.log.error({ err, tool: tool.name }, "mcp tool call failed");
    return problemResult(internalProblem(tool.path, "The server failed to answer this tool call."));
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const onlyKeys = (o: Record<string, unknown>, allowed: ReadonlySet<string>): boolean => {
  for (const key in o) if (!allowed.has(key)) return false;
  return true;
};

const REQUEST_KEYS: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"]);
const CALL_PARAMS_KEYS: ReadonlySet<string> = new Set(["name", "arguments", "_meta"]);
const PROTOCOL_VERSIONS: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS);

/** A plain tools/call of one of the tools, as `directCall` runs it. */
interface PlainCall {
  id: string | number;
  tool: PaidTool;
  args: Record<string, unknown> | undefined;
  meta: Record<string, unknown> | undefined;
}

/**
 * A POST the SDK's transport and server would run as one tools/call of a known tool and nothing else, or undefined
 * (then the SDK answers it, errors included). The SDK's own checks, each kept or made stricter: Accept lists both
 * application/json and text/event-stream (its substring test); Content-Type exactly application/json (any other
 * spelling goes to the SDK's media-type parser); no session id (stateless); an MCP-Protocol-Version, when sent, one it
 * supports; a JSON-RPC 2.0 request (its strict schema: no other members) with a string or integer id; params with only
 * `name` (a string naming a tool), `arguments` and `_meta` (objects when present), no task, and a `_meta` without the
 * two members the SDK's schema types (progress token, related task).
 */
function plainToolCall(request: FastifyRequest): PlainCall | undefined {
  const headers = request.headers;
  const accept = headers.accept;
  if (
    typeof accept !== "string" ||
    !accept.includes("application/json") ||
    !accept.includes("text/event-stream")
  )
    return undefined;
  if (headers["content-type"] !== "application/json" || headers["mcp-session-id"] !== undefined)
    return undefined;
  const version = headers["mcp-protocol-version"];
  if (version !== undefined && (typeof version !== "string" || !PROTOCOL_VERSIONS.has(version)))
    return undefined;
  const m = request.body;
  if (!isPlainObject(m) || !onlyKeys(m, REQUEST_KEYS)) return undefined;
  if (m.jsonrpc !== "2.0" || m.method !== "tools/call") return undefined;
  const id = m.id;
  if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) return undefined;
  const params = m.params;
  if (!isPlainObject(params) || !onlyKeys(params, CALL_PARAMS_KEYS) || typeof params.name !== "string")
    return undefined;
  const tool = toolNamed(params.name);
  if (!tool) return undefined;
  const { arguments: args, _meta: meta } = params;
  if (args !== undefined && !isPlainObject(args)) return undefined;
  if (
    meta !== undefined &&
    (!isPlainObject(meta) || "progressToken" in meta || RELATED_TASK_META_KEY in meta)
  )
    return undefined;
  return { id, tool, args, meta };
}

/**
 * The JSON text the SDK answers a plain tools/call with, without its web transport and protocol layer (their
 * Request, Response, abort controller and schema passes were about a fifth of a paid MCP call's CPU): the result as the
 * SDK's server passes it on (its members in CallToolResultSchema's order, as that schema's parse leaves them), in the same
 * response object, members in the SDK's order. test/mcp/direct-call.test.ts compares both paths byte for byte.
 */
async function directCall(tools: ToolServer, request: FastifyRequest, reply: FastifyReply, call: PlainCall) {
  const result = await runTool(tools, request, reply, call.tool, call.args, call.meta);
  const plain = schemaOrdered(result);
  if (plain) return sendJson(reply, { result: plain, jsonrpc: "2.0", id: call.id });
  const checked = CallToolResultSchema.safeParse(result);
  const message = checked.success
    ? { result: checked.data, jsonrpc: "2.0", id: call.id }
    : {
        jsonrpc: "2.0",
        id: call.id,
        // What the SDK's server answers a result its schema refuses (an McpError's message carries its code).
        error: {
          code: ErrorCode.InvalidParams,
          message: new McpError(
            ErrorCode.InvalidParams,
            `Invalid tools/call result: ${checked.error.message}`,
          ).message,
        },
      };
  return sendJson(reply, message);
}

const sendJson = (reply: FastifyReply, message: unknown) =>
  reply.code(200).header("content-type", "application/json").send(JSON.stringify(message));

const RESULT_KEYS: ReadonlySet<string> = new Set(["content", "structuredContent", "isError", "_meta"]);

/**
 * A result of the shape every tool call here returns (text blocks, an object, a flag, a `_meta` without the members
 * the SDK's schema types), as CallToolResultSchema's parse returns it: the same values, members in the schema's order
 * (`_meta`, `content`, `structuredContent`, `isError`), which is what the SDK sends. That parse walked the result for
 * about 60 µs of each paid call. Undefined for any other shape, which the schema itself then parses.
 */
function schemaOrdered(r: ToolResult): ToolResult | undefined {
  if (!onlyKeys(r, RESULT_KEYS) || !Array.isArray(r.content)) return undefined;
  for (const block of r.content)
    if (
      !isPlainObject(block) ||
      block.type !== "text" ||
      typeof block.text !== "string" ||
      Object.keys(block).length !== 2
    )
      return undefined;
  const { _meta: meta, content, structuredContent, isError } = r;
  if (structuredContent !== undefined && !isPlainObject(structuredContent)) return undefined;
  if (isError !== undefined && typeof isError !== "boolean") return undefined;
  if (
    meta !== undefined &&
    (!isPlainObject(meta) || "progressToken" in meta || RELATED_TASK_META_KEY in meta)
  )
    return undefined;
  return {
    ...(meta === undefined ? {} : { _meta: meta }),
    content,
    ...(structuredContent === undefined ? {} : { structuredContent }),
    ...(isError === undefined ? {} : { isError }),
  };
}

/** Idle servers kept for reuse; beyond this many, a server whose request ended is dropped. */
const POOL_MAX = 64;

/** The body is handed over already parsed, so the headers that describe the raw body or connection stay behind. */
const NOT_FORWARDED = new Set(["content-length", "transfer-encoding", "connection", "keep-alive"]);

const URL_SEEN_BY_SDK = `http://localhost${MCP_PATH}`;

/**
 * What the SDK's transport reads of the web `Request` of a POST whose body is handed over parsed: its method, its URL
 * (for `requestInfo`), and its headers through `get` and `entries` (Accept, Content-Type, Mcp-Session-Id,
 * Mcp-Protocol-Version, and all of them for `requestInfo`). Building undici's `Request` and `Headers` for that (URL
 * parsing, header validation, an abort signal) was about 60 µs of each MCP call's CPU in a V8 profile; this reads the
 * Node request's own headers, lower-cased by Node, repeated ones joined as `Headers` joins them.
 */
function sdkRequest(request: FastifyRequest): Request {
  const raw = request.headers;
  const value = (name: string): string | null => {
    if (NOT_FORWARDED.has(name)) return null;
    const v = raw[name];
    return v === undefined ? null : Array.isArray(v) ? v.join(", ") : String(v);
  };
  const headers = {
    get: (name: string) => value(name.toLowerCase()),
    has: (name: string) => value(name.toLowerCase()) !== null,
    *entries(): IterableIterator<[string, string]> {
      for (const name of Object.keys(raw).sort()) {
        const v = value(name);
        if (v !== null) yield [name, v];
      }
    },
  };
  return { method: "POST", url: URL_SEEN_BY_SDK, headers } as unknown as Request;
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

/**
 * A JSON-RPC batch (an array of messages): allowed by the 2025-03-26 revision only, removed since (2025-06-18: "MUST
 * be a single JSON-RPC request, notification, or response"). Refused whole, nothing in it run: a batch of tool calls
 * would be many calls for the price of one request against the client's rate limit and in-flight share.
 */
const BATCH_REFUSED = {
  jsonrpc: "2.0",
  id: null,
  error: {
    code: ErrorCode.InvalidRequest,
    message: "Invalid Request: JSON-RPC batches are not supported; send one message per POST.",
  },
};

/** `/mcp`: the MCP streamable HTTP transport in stateless mode with JSON responses (no SSE stream, no sessions). */
const mcpPlugin: FastifyPluginAsync<McpOptions> = async (app, opts) => {
  const tools: ToolServer = {
    core: app.payments.core,
    handlers: opts.handlers,
    hostMakesUrl: app.payments.hostMakesUrl,
    baseUrl: app.payments.baseUrl,
  };
  const idle: Pooled[] = [];
  app.post(MCP_PATH, { schema: { hide: true } }, async (request, reply) => {
    if (Array.isArray(request.body))
      return reply.code(MCP_ENDPOINT_STATUS.batchRefused).type("application/json").send(BATCH_REFUSED);
    const invalid = nonObjectArguments(request.body);
    if (invalid) return reply.code(200).type("application/json").send(invalid);
    const plain = plainToolCall(request);
    if (plain) return directCall(tools, request, reply, plain);
    const pooled = idle.pop() ?? pooledServer(tools, opts.version, opts.network);
    pooled.call = { caller: request, reply };
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // The one JSON-RPC response the server sends for the one request of this POST. In JSON response mode the SDK's
    // body for a single request is `JSON.stringify` of that message: serialized here from the message itself, the
    // web Response's body is never read (its stream, reader and decoding were about 90 µs of a paid call's CPU).
    let answered: JSONRPCMessage | undefined;
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      if ("id" in message && ("result" in message || "error" in message)) answered = message;
      return send(message, options);
    };
    try {
      await pooled.server.connect(transport);
      const res = await transport.handleRequest(sdkRequest(request), { parsedBody: request.body });
      reply.code(res.status);
      res.headers.forEach((value, key) => {
        reply.header(key, value);
      });
      if (
        answered !== undefined &&
        res.status === 200 &&
        res.headers.get("content-type") === "application/json"
      )
        return reply.send(JSON.stringify(answered));
      const text = await res.text();
      return reply.send(text.length ? text : undefined);
    } finally {
      // Closing detaches the transport; the SDK builds a "connection closed" McpError on every close whether or not a
      // request is pending, and its stack trace was ~40 µs of each paid call's CPU: nothing reads it here.
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      const closed = pooled.server.close();
      Error.stackTraceLimit = limit;
      await closed;
      pooled.call = undefined;
      if (idle.length < POOL_MAX) idle.push(pooled);
    }
  });

  // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
  const notAllowed = async (_request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(
      reply.header("Allow", "POST"),
      problem(
        MCP_ENDPOINT_STATUS.methodNotAllowed,
        "method-not-allowed",
        "This MCP endpoint is stateless: send JSON-RPC with POST.",
        MCP_PATH,
      ),
    );
  app.get(MCP_PATH, { schema: { hide: true } }, notAllowed);
  app.delete(MCP_PATH, { schema: { hide: true } }, notAllowed);
};

export default mcpPlugin;
