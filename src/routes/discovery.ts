import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { PaymentNetwork } from "../chain/networks.js";
import { llmsTxt, wellKnownX402 } from "../discovery/documents.js";
import { PRICES } from "../operations/prices.js";

export interface DiscoveryRouteOptions {
  publicBaseUrl: string | undefined;
  /** The payee's ownership proofs that verify for an origin (documents.ts ownershipProofCache). */
  proofsFor: (origin: string) => Promise<`0x${string}`[]>;
  /** The chain and USDC paid with. */
  /** The chain and USDC paid with (NETWORK), passed down from the configuration. */
  network: PaymentNetwork;
}

/** Free discovery documents for indexers and agents: /.well-known/x402 and /llms.txt. */
export const discoveryRoutes: FastifyPluginAsyncTypebox<DiscoveryRouteOptions> = async (app, opts) => {
  const origin = (request: FastifyRequest) => opts.publicBaseUrl ?? `${request.protocol}://${request.host}`;

  app.get(
    "/.well-known/x402",
    {
      schema: {
        tags: ["meta"],
        summary: "x402 discovery document: the paid resources and the payee's ownership proofs",
        response: {
          200: Type.Object(
            {
              version: Type.Literal(1),
              resources: Type.Array(Type.String(), { description: "Absolute URLs of the paid routes" }),
              ownershipProofs: Type.Optional(
                Type.Array(Type.String(), {
                  description: "EIP-191 signatures of this origin by the PAY_TO key (only those that verify)",
                }),
              ),
              instructions: Type.String(),
            },
            { additionalProperties: false },
          ),
        },
      },
    },
    async (request) => {
      const o = origin(request);
      return wellKnownX402(o, await opts.proofsFor(o), opts.network);
    },
  );

  app.get(
    "/llms.txt",
    {
      schema: {
        tags: ["meta"],
        summary: "For AI agents: what each route answers, its price, and the order to call them in",
        produces: ["text/plain"],
        response: {
          200: {
            description: "Markdown (llmstxt.org)",
            content: { "text/plain": { schema: Type.String() } },
          },
        },
      },
    },
    async (request, reply) =>
      reply
        .type("text/plain; charset=utf-8")
        .send(llmsTxt(origin(request), Object.values(PRICES), opts.network)),
  );
};
