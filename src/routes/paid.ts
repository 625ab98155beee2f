import type {
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  FastifyTypeProviderDefault,
  onSendHookHandler,
} from "fastify";
import type { PaymentNetwork } from "../chain/networks.js";
import type { PaidHandler, PaidHandlers } from "../operations/handler.js";
import { PRICES, paymentInfo } from "../operations/prices.js";
import {
  OPERATIONS,
  type OperationKey,
  type PaidOperation,
  operationDescription,
} from "../operations/table.js";
import { BenchmarkPaymentHeaders, PaidQuery, UnlockPaymentHeaders } from "../schemas/common.js";
import { paid, paidErrorResponses, problem } from "./responses.js";

/**
 * How an operation sends its paid answer when returning it for Fastify to serialize will not do (the upcoming list
 * sends a cached, precompressed body): the route's handler and, if it needs one, an onSend hook of the route.
 */
export interface AnswerBody {
  send(request: FastifyRequest, reply: FastifyReply, handler: PaidHandler<never>): Promise<unknown>;
  onSend?: onSendHookHandler;
}

export interface PaidRoutesOptions {
  /** Each operation's check and answer (src/operations). */
  handlers: PaidHandlers;
  /** The network the 402 asks payment on, stated in each operation's `x-payment-info`. */
  network: PaymentNetwork;
  /** Whether the operations marked provisional in the table are offered under provisional terms now. */
  provisional: boolean;
  /** Only the operations listed under this OpenAPI tag; all of them when absent. */
  tag?: PaidOperation["openapiTag"];
  /** Operation-specific ways of sending the answer. */
  answerBodies?: { readonly [K in OperationKey]?: AnswerBody };
}

/**
 * One route per paid operation of the table: its input and result schemas, the payment headers it reads, every
 * status it can answer, its price texts and `x-payment-info`; its check runs before the payments guard, which asks for
 * the operation's price, and its answer after it.
 */
export const paidRoutes: FastifyPluginAsync<PaidRoutesOptions> = async (app, opts) => {
  // Inputs are typed by each operation's handler (it takes what its schema validates), not by the route.
  const routes = app.withTypeProvider<FastifyTypeProviderDefault>();
  for (const [key, op] of Object.entries(OPERATIONS) as [OperationKey, PaidOperation][]) {
    if (opts.tag !== undefined && op.openapiTag !== opts.tag) continue;
    const handler = opts.handlers[key] as PaidHandler<unknown>;
    const price = PRICES[key];
    const inputOf = (request: FastifyRequest): unknown =>
      op.inputIn === "query" ? request.query : request.body;
    const refusals = Object.fromEntries(
      Object.entries(op.refusals ?? {}).map(([status, description]) => [status, problem(description)]),
    );
    const answerBody = opts.answerBodies?.[key];
    routes.route({
      method: op.method,
      url: op.path,
      schema: {
        tags: [op.openapiTag],
        summary: op.summary,
        description: operationDescription(op),
        querystring: op.inputIn === "query" ? op.inputSchema : PaidQuery,
        headers: op.acceptsV1 ? UnlockPaymentHeaders : BenchmarkPaymentHeaders,
        ...(op.inputIn === "body" ? { body: op.inputSchema } : {}),
        response: { 200: paid(op.outputSchema), ...paidErrorResponses(price), ...refusals },
        "x-payment-info": paymentInfo(price, opts.network),
        ...(op.provisional ? { "x-provisional": opts.provisional } : {}),
      },
      preHandler: app.payments.guard(handler.price, (request) => handler.check(inputOf(request), request)),
      ...(answerBody?.onSend ? { onSend: answerBody.onSend } : {}),
      handler: answerBody
        ? (request, reply) => answerBody.send(request, reply, handler)
        : async (request) => handler.answer(inputOf(request), request),
    });
  }
};
