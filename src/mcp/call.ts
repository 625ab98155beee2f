import type { FastifyReply, FastifyRequest, FastifySchemaValidationError } from "fastify";
import type { TSchema } from "typebox";
import {
  HttpProblem,
  PROBLEM_CONTENT_TYPE,
  type Problem,
  problemOf,
  validationProblem,
} from "../http/problem.js";
import { validatorCompiler } from "../http/validation.js";
import type { PaidHandler, PaidHandlers } from "../operations/handler.js";
import { OPERATIONS } from "../operations/table.js";
import { completePayment, type HandlerResponse, type PaymentCore } from "../payments/core/core.js";
import { decideCall, logFault, type ProofOffer } from "../payments/core/decide.js";
import { internalProblem, outcomeProblem } from "../payments/http/http-answers.js";
import { HEADER_V2 } from "../payments/terms/matching.js";
import { decodeProof, proofObject } from "../payments/terms/proof.js";
import { paid } from "../routes/responses.js";
import { PaidQuery } from "../schemas/common.js";
import {
  META_PAYMENT,
  META_RETRY_KEY,
  problemResult,
  type ToolResult,
  toolChallenge,
  toolResult,
} from "./results.js";
import { type PaidTool, toolInput } from "./tools.js";
import { unpaidChallenge } from "./unpaid.js";

/** What a tool call needs of the server: the payment core, the operations, and where its 402s point. */
export interface ToolServer {
  core: PaymentCore;
  handlers: PaidHandlers;
  /** Whether the request's Host makes the MCP endpoint's URL (the PaymentRequired's resource). */
  hostMakesUrl(request: FastifyRequest, path: string): boolean;
  baseUrl(request: FastifyRequest): string;
}

const PROOF_NAME = `_meta["${META_PAYMENT}"]`;

type Validate = (data: unknown) => { value?: unknown; error?: Error };
const compile = (schema: TSchema, httpPart: "body" | "querystring", tool: PaidTool): Validate =>
  validatorCompiler({ schema, httpPart, method: tool.method, url: tool.path }) as Validate;

/** Per tool: its query and body validators (the route's own schemas and compiler) and its 200 schema. */
const shapes = new Map<string, { query: Validate; body?: Validate; result: object }>();
function shapeOf(tool: PaidTool) {
  let s = shapes.get(tool.name);
  if (!s) {
    const op = OPERATIONS[tool.key];
    s =
      op.inputIn === "query"
        ? { query: compile(op.inputSchema, "querystring", tool), result: paid(op.outputSchema) }
        : {
            query: compile(PaidQuery, "querystring", tool),
            body: compile(op.inputSchema, "body", tool),
            result: paid(op.outputSchema),
          };
    shapes.set(tool.name, s);
  }
  return s;
}

/** The arguments validated as the route validates its request (body first, then query), or the route's problem. */
function validated(
  tool: PaidTool,
  args: Record<string, unknown> | undefined,
): { problem: Problem } | { query: Record<string, string>; body: Record<string, unknown> | undefined } {
  const shape = shapeOf(tool);
  const input = toolInput(tool, args);
  const invalid = (error: Error, part: string) =>
    validationProblem(
      (error as unknown as { validation: FastifySchemaValidationError[] }).validation,
      part,
      tool.path,
    );
  if (shape.body) {
    const body = shape.body(input.body);
    if (body.error) return { problem: invalid(body.error, "body") };
  }
  const query = shape.query(input.query);
  if (query.error) return { problem: invalid(query.error, "querystring") };
  return { query: input.query, body: input.body };
}

/** The offer of `_meta["x402/payment"]`: the PaymentPayload object, or its base64 text as PAYMENT-SIGNATURE carries it. */
function offerOf(proof: unknown): ProofOffer {
  if (proof === undefined) return { kind: "none" };
  const decoded =
    typeof proof === "string" ? decodeProof(HEADER_V2, proof, PROOF_NAME) : proofObject(proof, PROOF_NAME);
  return { kind: "pay", name: HEADER_V2, decoded };
}

/** A problem the operation threw on purpose, as the HTTP error handler would answer it. */
const thrown = (err: unknown, instance: string) =>
  err instanceof HttpProblem ? { problem: problemOf(err, instance), headers: err.headers } : undefined;

/**
 * One paid tool call on the payment core, in the MCP request's own lifecycle: arguments validated as the route's
 * request, the operation's pre-payment check, the core's decision, the operation's answer serialized as the route
 * serializes it, then settlement, exactly as the HTTP route's payment hook does it.
 */
export async function callPaidTool(
  server: ToolServer,
  request: FastifyRequest,
  reply: FastifyReply,
  tool: PaidTool,
  args: Record<string, unknown> | undefined,
  meta: Record<string, unknown> | undefined,
): Promise<ToolResult> {
  const instance = tool.path;
  const handler = server.handlers[tool.key] as PaidHandler<unknown>;
  if (!server.hostMakesUrl(request, instance))
    return problemResult(
      outcomeProblem(
        {
          kind: "invalid_request",
          code: "invalid-host",
          detail: "The Host header does not make a valid URL.",
        },
        instance,
      ),
    );
  const input = validated(tool, args);
  if ("problem" in input) return problemResult(input.problem);
  const operationInput = tool.method === "GET" ? input.query : input.body;
  try {
    await handler.check(operationInput, request);
  } catch (err) {
    const refusal = thrown(err, instance);
    if (!refusal) throw err;
    return problemResult(refusal.problem, refusal.headers["Retry-After"]);
  }

  const proof = meta?.[META_PAYMENT];
  const retryKey = meta?.[META_RETRY_KEY];
  const baseUrl = server.baseUrl(request);
  const challenge =
    proof === undefined
      ? unpaidChallenge(tool, handler.price, server.core.terms, baseUrl)
      : toolChallenge(tool, handler.price, server.core.terms, baseUrl, true);
  const decision = await decideCall(server.core, handler.price, {
    method: tool.method,
    offer: offerOf(proof),
    idempotencyKey: typeof retryKey === "string" ? retryKey : undefined,
    query: input.query,
    body: input.body,
    resourceUrl: `${baseUrl}${instance}`,
    client: request.ip,
    generation: server.core.dataGeneration(request),
    log: request.log,
  });
  if (decision.kind === "answer") return toolResult(decision.outcome, tool, challenge);

  const response = await answered(handler, operationInput, request, reply, tool);
  const completion = await completePayment(server.core, decision.payment, response);
  logFault(request.log, completion);
  return toolResult(completion, tool, challenge, response);
}

/** The operation's answer as its route would send it: the 200 body its serializer writes, or the problem. */
async function answered(
  handler: PaidHandler<unknown>,
  input: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  tool: PaidTool,
): Promise<HandlerResponse> {
  try {
    const value = await handler.answer(input, request);
    return {
      statusCode: 200,
      contentType: "application/json; charset=utf-8",
      body: String(
        reply.serializeInput(
          value as Record<string, unknown>,
          shapeOf(tool).result as Record<string, unknown>,
        ),
      ),
    };
  } catch (err) {
    const refusal = thrown(err, tool.path);
    if (!refusal) request.log.error({ err, tool: tool.name }, "mcp tool call failed");
    const p = refusal?.problem ?? internalProblem(tool.path, "The server failed to answer this request.");
    return { statusCode: p.status, contentType: PROBLEM_CONTENT_TYPE, body: JSON.stringify(p) };
  }
}
