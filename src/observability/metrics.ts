import { timingSafeEqual } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";
import fastifyMetricsModule from "fastify-metrics";
import client from "prom-client";
import { PROBLEM_CONTENT_TYPE, problem } from "../http/problem.js";
import type { InFlightStats } from "../ledger/port.js";
import type { PaymentObserver } from "../payments/core/events.js";

// fastify-metrics is CommonJS with `exports.default`: under Node's ESM interop the default import is the module object.
const fastifyMetrics = fastifyMetricsModule.default;

/**
 * Prometheus metrics: fastify-metrics for the HTTP histograms and process metrics, plus the payment series, all in
 * one registry per app. A registry per app (not prom-client's global one) lets several apps live in one process
 * (tests, a future admin listener) without "metric already registered" errors.
 */
export interface Metrics {
  registry: client.Registry;
  observer: PaymentObserver;
  /** The exposition text, with gauges that are cheaper to read than to push refreshed first (circuit state). */
  scrape(): Promise<string>;
  /** What scrape() refreshes first. */
  beforeScrape: () => void;
}

const CIRCUIT_STATES = ["closed", "half_open", "open"] as const;
/** Methods kept as a label value; anything else Node's parser accepts is "OTHER" (a bounded label set). */
const KNOWN_METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "PATCH",
  "DELETE",
  "OPTIONS",
  "TRACE",
  "CONNECT",
]);

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  const registers = [registry];

  const payments = new client.Counter({
    name: "pressure402_payments_total",
    help: "Paid-route requests that carried a payment proof, by route, x402 version and outcome",
    labelNames: ["route", "x402_version", "outcome"] as const,
    registers,
  });
  // Atomic USDC (6 decimals) stays an integer-valued counter; Prometheus stores it as a double, which is exact up to
  // 2^53 atomic units (about 9 billion USD).
  const revenue = new client.Counter({
    name: "pressure402_revenue_usdc_atomic_total",
    help: "Settled revenue in atomic USDC units (1e-6 USD), by route",
    labelNames: ["route"] as const,
    registers,
  });
  const facilitator = new client.Histogram({
    name: "pressure402_facilitator_request_duration_seconds",
    help: "Facilitator call latency by operation and whether it answered (a verify/settle refusal is an answer)",
    labelNames: ["operation", "ok"] as const,
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const circuit = new client.Gauge({
    name: "pressure402_facilitator_circuit_state",
    help: "Facilitator circuit breaker: 1 for the current state, 0 for the others",
    labelNames: ["state"] as const,
    registers,
  });
  // Registered on the reconciler's first report: until then the backlog is unknown, and an absent series says so
  // where a 0 would claim an empty backlog.
  let backlog: client.Gauge | undefined;

  const setCircuit = (state: (typeof CIRCUIT_STATES)[number]) => {
    for (const s of CIRCUIT_STATES) circuit.set({ state: s }, s === state ? 1 : 0);
  };
  setCircuit("closed");

  const observer: PaymentObserver = {
    paymentOutcome({ route, x402Version, outcome, amount }) {
      payments.inc({ route, x402_version: String(x402Version), outcome });
      if (outcome === "settled") revenue.inc({ route }, Number(BigInt(amount)));
    },
    facilitatorCall({ operation, seconds, ok }) {
      facilitator.observe({ operation, ok: String(ok) }, seconds);
    },
    circuitState: setCircuit,
    reconcilerBacklog(count) {
      backlog ??= new client.Gauge({
        name: "pressure402_reconciler_backlog",
        help: "Receipts whose settlement outcome is not yet known (settling/unknown) awaiting reconciliation",
        registers,
      });
      backlog.set(count);
    },
  };
  const m: Metrics = {
    registry,
    observer,
    beforeScrape: () => {},
    scrape: async () => {
      m.beforeScrape();
      return registry.metrics();
    },
  };
  return m;
}

/**
 * The ledger's in-flight receipts, read at each scrape (read-only, index range scans): `pressure402_ledger_receipts`
 * by state (claimed, settling, pending, unknown) and the age of the oldest receipt still `settling` (0 when none):
 * a settlement the facilitator never answered, which the reconciler should have resolved. When the ledger cannot be
 * read, both are absent from that scrape (an absent series is "unknown", never a false 0).
 */
export function registerLedgerMetrics(
  registry: client.Registry,
  stats: () => Promise<InFlightStats>,
  clock: () => Date = () => new Date(),
): void {
  let last: Promise<InFlightStats | undefined> | undefined;
  // One ledger read per scrape, shared by both gauges: a scrape starts every collect() in one synchronous pass, so the
  // read is forgotten at the next microtask, before any later scrape.
  const read = () => {
    if (!last) {
      last = stats().catch(() => undefined);
      queueMicrotask(() => {
        last = undefined;
      });
    }
    return last;
  };
  new client.Gauge({
    name: "pressure402_ledger_receipts",
    help: "Receipts in the ledger per in-flight state (claimed, settling, pending, unknown)",
    labelNames: ["state"] as const,
    registers: [registry],
    async collect() {
      this.reset();
      const s = await read();
      if (!s) return;
      for (const [state, n] of Object.entries(s.byStatus)) this.set({ state }, n);
    },
  });
  new client.Gauge({
    name: "pressure402_ledger_oldest_settling_age_seconds",
    help: "Seconds since the oldest receipt still settling began settling (0 when none is)",
    registers: [registry],
    async collect() {
      this.reset();
      const s = await read();
      if (!s) return;
      const since = s.oldestSettlingSince ? Date.parse(s.oldestSettlingSince) : undefined;
      this.set(since === undefined ? 0 : Math.max(0, (clock().getTime() - since) / 1000));
    },
  });
}

/** Fans one event out to several observers (metrics plus whatever the caller adds). */
export function combineObservers(...observers: PaymentObserver[]): PaymentObserver {
  return {
    paymentOutcome: (e) => {
      for (const o of observers) o.paymentOutcome(e);
    },
    facilitatorCall: (e) => {
      for (const o of observers) o.facilitatorCall(e);
    },
    circuitState: (s) => {
      for (const o of observers) o.circuitState(s);
    },
    reconcilerBacklog: (n) => {
      for (const o of observers) o.reconcilerBacklog(n);
    },
  };
}

/** Upper bounds of the HTTP duration histogram, in seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface DurationSeries {
  labels: { method: string; route: string; status_code: string };
  /** Per bucket (not cumulative), the last one +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

/**
 * `http_request_duration_seconds` by method, route pattern and status, as fastify-metrics named it (dashboards and
 * alerts read it): a prom-client metric object of our own, because prom-client's Histogram validates and hashes its
 * label object on every observation. Here a series is found by one string key, and the exposition is built at scrape.
 */
export function routeDurations() {
  const series = new Map<string, DurationSeries>();
  const name = "http_request_duration_seconds";
  return {
    name,
    help: "request duration in seconds",
    type: "histogram" as const,
    aggregator: "sum" as const,
    labelNames: ["method", "route", "status_code"],
    observe(method: string, route: string, status: number, seconds: number): void {
      const key = `${status} ${method} ${route}`;
      let s = series.get(key);
      if (!s) {
        s = {
          labels: { method, route, status_code: String(status) },
          counts: new Array<number>(DURATION_BUCKETS.length + 1).fill(0),
          sum: 0,
          count: 0,
        };
        series.set(key, s);
      }
      let b = 0;
      while (b < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[b] as number)) b++;
      s.counts[b] = (s.counts[b] as number) + 1;
      s.sum += seconds;
      s.count++;
    },
    reset(): void {
      series.clear();
    },
    async get() {
      // Shaped as prom-client's own histogram exports them (`le` first, the series' labels shared).
      const values: Array<{
        labels: Record<string, string | number>;
        sharedLabels?: Record<string, string>;
        value: number;
        metricName: string;
      }> = [];
      for (const s of series.values()) {
        let cumulative = 0;
        for (let b = 0; b <= DURATION_BUCKETS.length; b++) {
          cumulative += s.counts[b] as number;
          values.push({
            labels: { le: b < DURATION_BUCKETS.length ? (DURATION_BUCKETS[b] as number) : "+Inf" },
            sharedLabels: s.labels,
            value: cumulative,
            metricName: `${name}_bucket`,
          });
        }
        values.push({ labels: s.labels, value: s.sum, metricName: `${name}_sum` });
        values.push({ labels: s.labels, value: s.count, metricName: `${name}_count` });
      }
      return { name, help: this.help, type: this.type, aggregator: this.aggregator, values };
    },
  };
}

/**
 * Collects the HTTP duration histogram (by method, route pattern and status) and the Node process metrics of `app`.
 * GET /metrics is not on this app's port unless `token` is given, and then only with `Authorization: Bearer <token>`:
 * the series show revenue per route, and a scrape costs far more than a request. The usual place is its own listener
 * (metricsListener, on loopback by default).
 */
export async function registerMetrics(
  app: FastifyInstance,
  metrics: Metrics,
  opts: { token?: string | undefined } = {},
): Promise<void> {
  await app.register(fastifyMetrics, {
    endpoint: null,
    defaultMetrics: { enabled: true, register: metrics.registry, prefix: "pressure402_" },
    // The route histogram is our own (routeDurations): fastify-metrics' costs a timer hook and a label hash on every
    // request.
    routeMetrics: { enabled: false },
  });
  const durations = routeDurations();
  metrics.registry.registerMetric(durations as unknown as client.Metric);
  // Requests no route matched (unknown paths, unknown methods on a known path): the route histogram leaves them out to
  // keep its series bounded, so they are counted here by method and status alone.
  const unmatched = new client.Counter({
    name: "pressure402_http_unmatched_requests_total",
    help: "Requests that matched no route (404 for an unknown path or method), by method and status",
    labelNames: ["method", "status_code"] as const,
    registers: [metrics.registry],
  });
  // One callback hook for both series (no promise per request); reply.elapsedTime is Fastify's own clock of the
  // request, started as its route handling began.
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url;
    if (route === undefined) {
      const method = KNOWN_METHODS.has(request.method) ? request.method : "OTHER";
      unmatched.inc({ method, status_code: String(reply.statusCode) });
    } else if (route !== "/metrics")
      durations.observe(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  const token = opts.token;
  if (token === undefined) return;
  const expected = Buffer.from(`Bearer ${token}`);
  app.get(
    "/metrics",
    {
      logLevel: "warn",
      exposeHeadRoute: false,
      schema: { hide: true },
      // preHandler, not onRequest: the rate limiter's onRequest hook runs first, so every wrong guess counts against
      // the address's limit (a route's own onRequest that answers would end the request before it is counted).
      preHandler: async (request, reply) => {
        const given = Buffer.from(request.headers.authorization ?? "");
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
          return reply
            .code(401)
            .header("WWW-Authenticate", 'Bearer realm="metrics"')
            .type(PROBLEM_CONTENT_TYPE)
            .send(
              problem(
                401,
                "unauthorized",
                "GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.",
                request.url,
              ),
            );
      },
    },
    async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.scrape()),
  );
}

/**
 * The metrics listener: a bare HTTP server with GET /metrics only, for METRICS_HOST:METRICS_PORT (loopback by
 * default). No rate limit (it is not the public port) and no payment code on its path.
 */
export async function metricsListener(metrics: Metrics): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.get("/metrics", async (_request, reply) =>
    reply
      .type(metrics.registry.contentType)
      .header("Cache-Control", "no-store")
      .send(await metrics.scrape()),
  );
  await app.ready();
  return app;
}
