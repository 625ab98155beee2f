import type { Static } from "typebox";
import { availabilityLabel, type BenchmarkPhase } from "../benchmark/availability.js";
import type { BenchmarkService } from "../benchmark/service.js";
import { HttpProblem } from "../http/problem.js";
import type { LedgerPort } from "../ledger/port.js";
import { PRICES } from "./prices.js";
import type { BenchmarkBody } from "../schemas/benchmark.js";
import type { PaidHandler } from "./handler.js";

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

  /** Counts survive restarts (ledger). */
  async function capState(now: Date): Promise<{ reached: boolean; retryAfterSeconds: number }> {
    if (opts.phase !== "provisional") return { reached: false, retryAfterSeconds: 0 };
    const dayStart = utcDayStart(now);
    const used = await opts.ledger.countPaidSince(route, dayStart);
    const retryAfterSeconds = Math.max(1, Math.ceil((dayStart.getTime() + DAY_MS - now.getTime()) / 1000));
    return { reached: used >= opts.provisionalCap, retryAfterSeconds };
  }

  const benchmark: BenchmarkHandlers["benchmark"] = {
    // The check answers before any 402; the cap rule reserves the slot atomically with the payment's claim.
    price: {
      ...PRICES.benchmark,
      cap: () =>
        opts.phase === "provisional"
          ? { limit: opts.provisionalCap, since: utcDayStart(opts.clock()) }
          : undefined,
    },
    check: async (body) => {
      assertAbsoluteUrl(body.endpoint_url);
      const refusal = await opts.benchmark.precheck({ endpoint_url: body.endpoint_url });
      if (refusal !== null) throw invalidUrl(`endpoint_url ${refusal.detail}.`, refusal.detail);
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
