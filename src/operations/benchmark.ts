import type { Static } from "typebox";
import { availabilityLabel, type BenchmarkPhase } from "../benchmark/availability.js";
import type { BenchmarkService } from "../benchmark/service.js";
import { HttpProblem } from "../http/problem.js";
import type { LedgerPort } from "../ledger/port.js";
import { capReached, type ProvisionalCap } from "../payments/core/outcomes.js";
import { refusalError } from "../payments/http/http-answers.js";
import type { BenchmarkBody } from "../schemas/benchmark.js";
import type { PaidHandler } from "./handler.js";
import { PRICES } from "./prices.js";

export interface BenchmarkHandlerOptions {
  benchmark: BenchmarkService;
  ledger: LedgerPort;
  phase: BenchmarkPhase;
  provisionalCap: number;
  clock: () => Date;
}

const DAY_MS = 86_400_000;

function utcDayStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

const invalidUrl = (detail: string, pointerDetail: string) =>
  new HttpProblem(
    400,
    "invalid-request",
    detail,
    {},
    { errors: [{ in: "body", pointer: "/endpoint_url", detail: pointerDetail }] },
  );

/** Placeholders ({id}, %7Bid%7D, :address) are legal in the contract but not in WHATWG URLs' host; the path is fine. */
function assertAbsoluteUrl(value: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidUrl("endpoint_url is not an absolute URL.", "must be an absolute http(s) URL");
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    !url.hostname ||
    url.username ||
    url.password
  )
    throw invalidUrl(
      "endpoint_url must be an http(s) URL without credentials.",
      "must be an absolute http(s) URL without user info",
    );
}

export interface BenchmarkHandlers {
  benchmark: PaidHandler<Static<typeof BenchmarkBody>>;
}

/** The benchmark operation: what the live probe would refuse and the provisional daily cap, both before payment. */
export function benchmarkHandlers(opts: BenchmarkHandlerOptions): BenchmarkHandlers {
  const route = PRICES.benchmark.route;

  /** The provisional phase's cap of this UTC day; counts survive restarts (ledger). */
  function capOf(now: Date): ProvisionalCap | undefined {
    if (opts.phase !== "provisional") return undefined;
    const since = utcDayStart(now);
    return {
      limit: opts.provisionalCap,
      since,
      until: new Date(since.getTime() + DAY_MS),
      detail: `The benchmark's provisional daily cap (${opts.provisionalCap} paid calls per UTC day) is reached; it reopens at 00:00 UTC.`,
      extensions: { availability: availabilityLabel(opts.phase, true) },
    };
  }

  const benchmark: BenchmarkHandlers["benchmark"] = {
    // The check answers before any 402; the cap rule reserves the slot atomically with the payment's claim.
    price: {
      ...PRICES.benchmark,
      cap: () => capOf(opts.clock()),
    },
    check: async (body) => {
      assertAbsoluteUrl(body.endpoint_url);
      const refusal = await opts.benchmark.precheck({ endpoint_url: body.endpoint_url });
      if (refusal !== null) throw invalidUrl(`endpoint_url ${refusal.detail}.`, refusal.detail);
      const now = opts.clock();
      const cap = capOf(now);
      if (cap && (await opts.ledger.countPaidSince(route, cap.since)) >= cap.limit)
        throw refusalError(capReached(cap, now));
    },
    answer: (body) =>
      opts.benchmark.benchmark(
        {
          endpoint_url: body.endpoint_url,
          ...(body.category_hint ? { category_hint: body.category_hint } : {}),
        },
        { availability: availabilityLabel(opts.phase, false) },
      ),
  };
  return { benchmark };
}
