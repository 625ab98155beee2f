import { type TSchema, Type } from "typebox";
import type { PaymentNetwork } from "../chain/networks.js";
import { formatUsdc } from "../chain/usdc.js";
import { OPERATIONS, type OperationKey } from "../operations/table.js";
import { PpRef, ProblemSchema } from "../schemas/common.js";

export const MCP_PATH = "/mcp";

/** JSON Schema as MCP carries it (`inputSchema`/`outputSchema` of a tool): plain JSON, object at the root. */
export type JsonSchema = { type: "object"; [key: string]: unknown };

/** One paid operation exposed as an MCP tool. */
export interface PaidTool {
  /** The operation's key in the table of paid operations. */
  key: OperationKey;
  name: string;
  title: string;
  method: "GET" | "POST";
  path: string;
  /** USDC atomic units, the operation's own price. */
  amount: string;
  description: string;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
}

/** x402 v2 PaymentRequired, as a paid tool's error result carries it (x402 MCP transport). */
export const PaymentRequiredSchema = Type.Object(
  {
    x402Version: Type.Literal(2),
    error: Type.Optional(Type.String()),
    resource: Type.Object({ url: Type.String() }, { additionalProperties: true }),
    accepts: Type.Array(Type.Object({}, { additionalProperties: true }), { minItems: 1 }),
    extensions: Type.Optional(Type.Object({}, { additionalProperties: true })),
  },
  { additionalProperties: true, description: "x402 v2 PaymentRequired (isError results)" },
);

/**
 * TypeBox schemas as plain JSON, without `$id`: MCP clients compile every tool's schemas into one Ajv instance, where a
 * repeated `$id` (Problem) would be refused.
 */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === "$id" ? undefined : value)) as Record<
    string,
    unknown
  >;
}

/** A POST route's body schema plus the `pp_ref` tag, which the route takes in its query. */
function withPpRef(body: TSchema): JsonSchema {
  const s = plain(body) as JsonSchema & { properties: Record<string, unknown> };
  return { ...s, properties: { ...s.properties, pp_ref: plain(PpRef) } };
}

/**
 * The result schema, or the shapes of a tool error. The x402 MCP transport puts the PaymentRequired in
 * `structuredContent` of an `isError` result, and the official TypeScript client (1.32) validates `structuredContent`
 * against `outputSchema` even on errors (modelcontextprotocol/typescript-sdk#1943): the error shapes are declared so
 * that a paying client can read them at all.
 */
function output(result: TSchema): JsonSchema {
  return {
    type: "object",
    anyOf: [plain(result), plain(PaymentRequiredSchema), plain(ProblemSchema)],
  };
}

const priced = (amount: string, what: string) =>
  `${what} Price per call: ${formatUsdc(amount)} USD (${amount} USDC atomic units on Base, x402 exact scheme). ` +
  'Call without payment to receive the x402 PaymentRequired (isError result); pay by repeating the call with the signed PaymentPayload in _meta["x402/payment"]; the settlement comes back in _meta["x402/payment-response"].';

/** Every paid operation as a tool: a GET's query or a POST's body (plus `pp_ref`) as arguments. */
export const PAID_TOOLS: readonly PaidTool[] = Object.entries(OPERATIONS).map(([key, op]) => ({
  key: key as OperationKey,
  name: op.mcp.name,
  title: op.mcp.title,
  method: op.method,
  path: op.path,
  amount: op.amount,
  description: priced(op.amount, op.mcp.description),
  inputSchema: op.method === "GET" ? (plain(op.inputSchema) as JsonSchema) : withPpRef(op.inputSchema),
  outputSchema: output(op.outputSchema),
}));

export const toolNamed = (name: string): PaidTool | undefined => PAID_TOOLS.find((t) => t.name === name);

/**
 * The price a client can read in tools/list before calling (`Tool._meta`): under Cloudflare `agents`' keys, which its
 * x402 client (`withX402Client`) adds to the tool's description, and under ours, in USDC atomic units with the scheme,
 * network and asset the call's PaymentRequired will ask for. (The x402 MCP transport defines no tool-level key.)
 */
export const priceMeta = (tool: PaidTool, network: PaymentNetwork): Record<string, unknown> => ({
  "agents-x402/paymentRequired": true,
  // Decimal text, never a float: rendered as "$0.02".
  "agents-x402/priceUSD": formatUsdc(tool.amount),
  "pressure402/price": {
    scheme: "exact",
    network: network.caip2,
    asset: network.usdc.address,
    amount: tool.amount,
  },
});

/** Query-string text of one argument: scalars as written, anything else as JSON (the query schema then refuses it). */
const text = (v: unknown): string =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : JSON.stringify(v);

/**
 * The parts of the operation's request a tool call stands for, as its HTTP route receives them before validation: a
 * GET's arguments are its query, as text (so they are coerced and checked exactly as a query string is); a POST's are
 * its JSON body, except `pp_ref`, which the route takes in its query.
 */
export function toolInput(
  tool: PaidTool,
  args: Record<string, unknown> | undefined,
): { query: Record<string, string>; body?: Record<string, unknown> } {
  const all = args ?? {};
  if (tool.method === "GET") {
    const query: Record<string, string> = {};
    for (const [k, v] of Object.entries(all)) if (v !== undefined) query[k] = text(v);
    return { query };
  }
  const { pp_ref, ...body } = all;
  return { query: pp_ref === undefined ? {} : { pp_ref: text(pp_ref) }, body };
}
