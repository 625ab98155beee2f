import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { withOwnershipProofs } from "../discovery/documents.js";
import { compressBody, precompressedEncoding } from "../http/encoding.js";
import { createResponseCache } from "../http/response-cache.js";
import type { PaymentNetwork } from "../chain/networks.js";
import { formatUsdc } from "../chain/usdc.js";
import { type FreshnessSource, freshnessView } from "../refresh/freshness.js";
import { SourceFreshness } from "../schemas/freshness.js";
import { PRICES } from "../operations/prices.js";

export interface MetaOptions {
  payTo: string;
  facilitator: string;
  version: string;
  publicBaseUrl: string | undefined;
  /** The payee's ownership proofs that verify for an origin, added to /openapi.json for agent-wallet discovery. */
  proofsFor: (origin: string) => Promise<`0x${string}`[]>;
  /** The chain and USDC paid with; Base mainnet when unset. */
  /** The chain and USDC paid with (NETWORK), passed down from the configuration. */
  network: PaymentNetwork;
  /** Per-source data freshness (refresh state), listed on GET /. */
  freshness?: FreshnessSource | undefined;
  clock?: () => Date;
}

/** Free routes: service description, health, and the OpenAPI document. */
export const metaRoutes: FastifyPluginAsyncTypebox<MetaOptions> = async (app, opts) => {
  app.get(
    "/",
    {
      schema: {
        tags: ["meta"],
        summary: "Service description: paid routes, prices, network, asset and payee",
        response: {
          200: Type.Object(
            {
              name: Type.String(),
              version: Type.String(),
              network: Type.String(),
              asset: Type.String(),
              payTo: Type.String(),
              facilitator: Type.String(),
              openapi: Type.String(),
              docs: Type.String({ description: "Human-readable API docs (Swagger UI)" }),
              llms: Type.String({ description: "Guidance for AI agents (llms.txt)" }),
              discovery: Type.String({ description: "x402 discovery document" }),
              tokens: Type.String({
                description:
                  "Covered tokens, each with its next unlock and event id, and data freshness (free)",
              }),
              mcp: Type.String({
                description: "MCP endpoint: the paid operations as tools (x402 MCP transport)",
              }),
              retries: Type.String({
                description:
                  "How to retry a paid call without paying twice (Idempotency-Key, payment-identifier, retry key)",
              }),
              data_sources: Type.Array(SourceFreshness, {
                description: "Each data source's last refresh attempt, success, age and error",
              }),
              routes: Type.Array(
                Type.Object(
                  {
                    route: Type.String(),
                    price_usd: Type.String(),
                    amount_atomic: Type.String(),
                    x402_versions: Type.Array(Type.Integer()),
                  },
                  { additionalProperties: false },
                ),
              ),
            },
            { additionalProperties: false },
          ),
        },
      },
    },
    async () => ({
      name: "pressure402",
      version: opts.version,
      network: opts.network.caip2,
      asset: opts.network.usdc.address,
      payTo: opts.payTo,
      facilitator: opts.facilitator,
      openapi: "/openapi.json",
      docs: "/docs",
      llms: "/llms.txt",
      discovery: "/.well-known/x402",
      tokens: "/v1/tokens",
      mcp: "/mcp",
      retries:
        "Bind a secret to the payment: an Idempotency-Key header or a payment-identifier extension id in the payment payload; without either, keep the Idempotency-Key the paid answer carries (the retry key). The same secret, proof and request replay the answer without a second charge.",
      data_sources: freshnessView(opts.freshness, (opts.clock ?? (() => new Date()))()),
      routes: Object.values(PRICES).map((p) => ({
        route: p.route,
        price_usd: formatUsdc(p.amount),
        amount_atomic: p.amount,
        x402_versions: p.acceptsV1 ? [2, 1] : [2],
      })),
    }),
  );

  app.get(
    "/health",
    {
      schema: {
        tags: ["meta"],
        summary: "Liveness",
        response: { 200: Type.Object({ status: Type.Literal("ok") }, { additionalProperties: false }) },
      },
      // Liveness is never shed: a process that answers is alive, and a 503 here would get a busy, healthy instance
      // restarted by its orchestrator (or flagged down right after start, when loading the data lags the loop).
      config: { pressureHandler: () => undefined },
    },
    async () => ({ status: "ok" as const }),
  );

  // The document (≈ 250 kB) depends only on the origin: it is serialized and compressed once per origin and encoding,
  // not per request (a flood of /openapi.json made honest paid calls 47× slower). Host is the client's to choose, so
  // the cache is bounded; an origin pushed out is simply built again.
  const documents = createResponseCache({ maxEntries: 32, maxUnits: 16 * 1024 * 1024 });
  app.get("/openapi.json", { schema: { hide: true } }, async (request, reply) => {
    const origin = opts.publicBaseUrl ?? `${request.protocol}://${request.host}`;
    const proofs = await opts.proofsFor(origin);
    const body = documents.get("static", origin, () =>
      Buffer.from(JSON.stringify(withOwnershipProofs(app.swagger(), proofs))),
    );
    reply.type("application/json; charset=utf-8");
    const encoding = precompressedEncoding(request, reply);
    if (!encoding) return reply.send(body);
    return reply.send(documents.get("static", `${origin}|${encoding}`, () => compressBody(body, encoding)));
  });
};
