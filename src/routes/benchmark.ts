import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { availabilityLabel, type BenchmarkPhase } from "../benchmark/availability.js";
import type { BenchmarkService } from "../benchmark/service.js";
import { HttpProblem } from "../http/problem.js";
import type { LedgerPort as Ledger } from "../ledger/port.js";
import { BenchmarkBody } from "../schemas/benchmark.js";
import { BenchmarkResult } from "../schemas/benchmark-response.js";
import { BenchmarkPaymentHeaders, PaidQuery } from "../schemas/common.js";
import { OPERATIONS, operationDescription } from "./paid-operations.js";
import { PRICES, paymentInfo } from "./prices.js";
import { paid, paidErrorResponses } from "./responses.js";

export interface BenchmarkRouteOptions {
  benchmark: BenchmarkService;
  ledger: Ledger;
  phase: BenchmarkPhase;
  provisionalCap: number;
  clock: () => Date;
}

const DAY_MS = 86_400_000;

function utcDayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/** Placeholders ({id}, %7Bid%7D, :address) are legal in the contract but not in WHATWG URLs' host; the path is fine. */
function assertAbsoluteUrl(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new HttpProblem(
      400,
      "invalid-request",
      "endpoint_url is not an absolute URL.",
      {},
      {
        errors: [{ in: "body", pointer: "/endpoint_url", detail: "must be an absolute http(s) URL" }],
      },
    );
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    !url.hostname ||
    url.username ||
    url.password
  )
    throw new HttpProblem(
      400,
      "invalid-request",
      "endpoint_url must be an http(s) URL without credentials.",
      {},
      {
        errors: [
          {
            in: "body",
            pointer: "/endpoint_url",
            detail: "must be an absolute http(s) URL without user info",
          },
        ],
      },
    );
}

export const benchmarkRoutes: FastifyPluginAsyncTypebox<BenchmarkRouteOptions> = async (app, opts) => {
  const route = PRICES.benchmark.route;

  /** Checked before the 402, so nobody pays for a call the cap would refuse. Counts survive restarts (ledger). */
  async function capState(now: Date): Promise<{ reached: boolean; retryAfterSeconds: number }> {
    if (opts.phase !== "provisional") return { reached: false, retryAfterSeconds: 0 };
    const dayStart = utcDayStart(now);
    const used = await opts.ledger.countPaidSince(route, dayStart);
    const retryAfterSeconds = Math.max(1, Math.ceil((dayStart.getTime() + DAY_MS - now.getTime()) / 1000));
    return { reached: used >= opts.provisionalCap, retryAfterSeconds };
  }

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
        "x-payment-info": paymentInfo(PRICES.benchmark),
        "x-provisional": opts.phase === "provisional",
      },
      preHandler: [
        async (request) => {
          assertAbsoluteUrl(request.body.endpoint_url);
          // What the live probe would refuse is refused here, before any payment request.
          const refusal = await opts.benchmark.precheck({ endpoint_url: request.body.endpoint_url });
          if (refusal !== null)
            throw new HttpProblem(
              400,
              "invalid-request",
              `endpoint_url ${refusal.detail}.`,
              {},
              { errors: [{ in: "body", pointer: "/endpoint_url", detail: refusal.detail }] },
            );
          const cap = await capState(opts.clock());
          if (cap.reached)
            throw new HttpProblem(
              503,
              "provisional-cap-reached",
              `The benchmark's provisional daily cap (${opts.provisionalCap} paid calls per UTC day) is reached; it reopens at 00:00 UTC.`,
              { "Retry-After": String(cap.retryAfterSeconds) },
              { availability: availabilityLabel(opts.phase, true) },
            );
        },
        // The pre-check above answers before any 402; this reserves the slot atomically with the payment's claim.
        app.payments.guard({
          ...PRICES.benchmark,
          cap: () =>
            opts.phase === "provisional"
              ? { limit: opts.provisionalCap, since: utcDayStart(opts.clock()) }
              : undefined,
        }),
      ],
    },
    async (request) =>
      opts.benchmark.benchmark(
        {
          endpoint_url: request.body.endpoint_url,
          ...(request.body.category_hint ? { category_hint: request.body.category_hint } : {}),
        },
        { availability: availabilityLabel(opts.phase, false) },
      ),
  );
};
