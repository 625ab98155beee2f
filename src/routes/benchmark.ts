import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Static } from "typebox";
import type { BenchmarkPhase } from "../benchmark/availability.js";
import type { PaymentNetwork } from "../chain/networks.js";
import type { PaidHandler } from "../operations/handler.js";
import { PRICES, paymentInfo } from "../operations/prices.js";
import { OPERATIONS, operationDescription } from "../operations/table.js";
import { BenchmarkBody } from "../schemas/benchmark.js";
import { BenchmarkResult } from "../schemas/benchmark-response.js";
import { BenchmarkPaymentHeaders, PaidQuery } from "../schemas/common.js";
import { paid, paidErrorResponses } from "./responses.js";

export interface BenchmarkRouteOptions {
  handler: PaidHandler<Static<typeof BenchmarkBody>>;
  phase: BenchmarkPhase;
  /** The network the 402 asks payment on, stated in the operation's `x-payment-info`. */
  network: PaymentNetwork;
}

export const benchmarkRoutes: FastifyPluginAsyncTypebox<BenchmarkRouteOptions> = async (app, opts) => {
  const { handler } = opts;
  app.post(
    OPERATIONS.benchmark.path,
    {
      schema: {
        tags: ["benchmark"],
        summary: OPERATIONS.benchmark.summary,
        description: operationDescription(OPERATIONS.benchmark),
        querystring: PaidQuery,
        headers: BenchmarkPaymentHeaders,
        body: BenchmarkBody,
        response: { 200: paid(BenchmarkResult), ...paidErrorResponses(PRICES.benchmark) },
        "x-payment-info": paymentInfo(PRICES.benchmark, opts.network),
        "x-provisional": opts.phase === "provisional",
      },
      preHandler: [
        async (request) => handler.check(request.body, request),
        app.payments.guard(handler.price),
      ],
    },
    async (request) => handler.answer(request.body, request),
  );
};
