import type { FastifyInstance, RouteOptions } from "fastify";
import type { PaymentNetwork } from "../chain/networks.js";
import { commonErrorResponses } from "../routes/responses.js";
import { DISCOVERABLE, type DiscoverableRoute } from "./catalog.js";

/** What an agent should know before calling anything; also the head of /llms.txt. */
export const agentGuidance = (network: PaymentNetwork) =>
  "Pay-per-call API, no account or API key. Every paid route first answers 402 with x402 payment requirements in the " +
  `PAYMENT-REQUIRED header (base64 JSON): sign the USDC authorization it asks for (scheme exact, network ${network.caip2}) ` +
  "and repeat the identical request with the proof in PAYMENT-SIGNATURE (x402 v2; the four unlock routes also take " +
  "x402 v1 proofs in X-PAYMENT). Invalid input (400), an unknown token or event (404) and a closed benchmark (503) are " +
  "answered before any 402, so nothing is charged for them. Order for unlock research: GET /v1/tokens (free) lists " +
  "the covered tokens with each one's next unlock and its unlock_event_id; GET /v1/unlocks/upcoming (compact rows, " +
  "filters, view=full for detail) finds events in a window; then POST /v1/unlock-risk for one event's evidence, POST " +
  "/v1/token/risk-summary to compare tokens, POST /v1/unlock/backtest to check an event against history. " +
  "POST /v1/benchmark/endpoint is independent: it prices another x402 endpoint against its market. The same " +
  'operations are MCP tools at /mcp (proof in _meta["x402/payment"]). To retry safely, bind a secret to the payment: ' +
  "an Idempotency-Key header, or a payment-identifier extension id in the payment payload; without either, keep the " +
  "Idempotency-Key the paid answer carries (the retry key). The same secret, proof and request replay the paid answer " +
  "without a second charge; the proof alone never does.";

export interface OpenApiOptions {
  version: string;
  publicBaseUrl: string | undefined;
  /** `info.contact` (CONTACT_EMAIL, CONTACT_URL); left out when neither is configured. */
  contact?: { email?: string; url?: string };
  /** The chain and USDC paid with (NETWORK). */
  network: PaymentNetwork;
}

/** The document-level part of the OpenAPI description (@fastify/swagger's `openapi` option). */
export function openapiDocument(opts: OpenApiOptions) {
  const network = opts.network;
  return {
    openapi: "3.1.0",
    info: {
      title: "pressure402",
      version: opts.version,
      description:
        "Pay-per-call API for token unlock sell-pressure risk and x402 endpoint price benchmarks. Every paid route " +
        `is settled with x402 in USDC on ${network.label} (${network.caip2}): call without a proof to receive 402 and PAYMENT-REQUIRED, ` +
        "then repeat the identical request with PAYMENT-SIGNATURE (x402 v2) or, on the unlock routes, X-PAYMENT (v1).",
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      ...(opts.contact && (opts.contact.email || opts.contact.url)
        ? { contact: { name: "pressure402", ...opts.contact } }
        : {}),
      "x-guidance": agentGuidance(network),
    },
    // Relative to where the document is served unless the operator names the public origin.
    servers: [{ url: opts.publicBaseUrl ?? "/", description: "This server" }],
    tags: [
      { name: "unlocks", description: "Token unlock sell-pressure intelligence" },
      { name: "benchmark", description: "x402 endpoint price benchmarks (provisional)" },
      { name: "meta", description: "Free service routes and discovery documents" },
    ],
  };
}

/** operationIds of the free routes; the paid ones come from the discovery catalog. */
const FREE_OPERATIONS: Record<string, string> = {
  "GET /": "describeService",
  "GET /health": "health",
  "GET /ready": "readiness",
  "GET /v1/tokens": "listTokens",
  "GET /.well-known/x402": "wellKnownX402",
  "GET /llms.txt": "llmsTxt",
  "GET /problems": "listProblemTypes",
  "GET /problems/:slug": "problemType",
};

export const asArray = <T>(v: T | T[] | undefined): T[] =>
  v === undefined ? [] : Array.isArray(v) ? v : [v];

type Schema = Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> };

/** A copy of an object schema whose fields carry their example value (`examples`, as OpenAPI 3.1 reads it). */
function withFieldExamples(schema: Schema, example: Record<string, unknown>): Schema {
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([k, v]) => [
      k,
      k in example ? { ...v, examples: [example[k]] } : v,
    ]),
  );
  return { ...schema, properties };
}

/** The route's example request as a link a person can open (GET routes take their whole input in the query). */
export function browserLink(d: DiscoverableRoute): string {
  const query = new URLSearchParams(
    Object.entries(d.inputExample).map(([k, v]): [string, string] => [k, String(v)]),
  );
  return `${d.path}?${query}`;
}

/** How a person pays the operation from a browser: the paywall page for GETs; a link cannot send a POST's body. */
function inBrowser(d: DiscoverableRoute): string {
  return d.method === "GET"
    ? `**Pay in a browser:** open [${browserLink(d)}](${browserLink(d)}). A browser gets the x402 paywall page: connect a wallet, sign the USDC authorization and the answer is shown.`
    : "**In a browser:** the x402 paywall page serves the GET route only (a link cannot carry this JSON body); pay this one with an x402 client (README, How to integrate).";
}

/**
 * Completes each route's OpenAPI operation as it is registered: operationId, security (the payment headers), request
 * and response examples on paid routes, and the statuses every route can answer. Must be added before the routes.
 */
export function describeRoutes(app: FastifyInstance): void {
  app.addHook("onRoute", (route: RouteOptions) => {
    const schema = route.schema as (Record<string, unknown> & { hide?: boolean }) | undefined;
    if (!schema || schema.hide) return;
    for (const method of asArray(route.method)) {
      const id = `${method} ${route.url}`;
      const paid = DISCOVERABLE.find((d) => d.route === id);
      const response = (schema.response ?? {}) as Record<string, Record<string, unknown>>;
      if (paid) {
        schema.operationId = paid.operationId;
        // No credential is needed to call (the first answer is the 402) and there is no API key. The proof headers are
        // documented as header parameters, not as apiKey security schemes: agent discovery tools (@agentcash/discovery)
        // read any apiKey scheme on a paid operation as "apiKey+paid", i.e. "get an API key first". `x-payment-info`
        // is what marks the operation as paid.
        schema.security = [{}];
        if (paid.inputIn === "body")
          schema.body = { ...(schema.body as Schema), examples: [paid.inputExample] };
        else schema.querystring = withFieldExamples(schema.querystring as Schema, paid.inputExample);
        if (response[200]) response[200] = { ...response[200], examples: [paid.outputExample] };
        schema.description = [schema.description, inBrowser(paid)].filter(Boolean).join("\n\n");
      } else if (FREE_OPERATIONS[id]) {
        schema.operationId = FREE_OPERATIONS[id];
        schema.security = [];
        schema.response = { ...commonErrorResponses, ...response };
      }
    }
  });
}

/** The x402 network and asset, for documents that state them once. */
export const paymentRail = (network: PaymentNetwork) =>
  ({ network: network.caip2, asset: network.usdc.address, scheme: "exact" }) as const;
