import { verifyMessage } from "viem";
import type { PaymentNetwork } from "../chain/networks.js";
import { formatUsdc } from "../chain/usdc.js";
import type { PaidRoute } from "../payments/http/plugin.js";
import { DISCOVERABLE, type DiscoverableRoute } from "./catalog.js";
import { agentGuidance, paymentRail } from "./openapi.js";

/**
 * `/.well-known/x402` in the shape x402 indexers (x402scan) fetch: a version, the paid resource URLs, and ownership
 * proofs, each an EIP-191 `personal_sign` signature of the origin by the key of the address that is paid.
 */
export interface WellKnownX402 {
  version: 1;
  resources: string[];
  ownershipProofs?: string[];
  instructions: string;
}

export function wellKnownX402(
  origin: string,
  proofs: readonly string[],
  network: PaymentNetwork,
): WellKnownX402 {
  return {
    version: 1,
    resources: DISCOVERABLE.map((d) => `${origin}${d.path}`),
    ...(proofs.length > 0 ? { ownershipProofs: [...proofs] } : {}),
    instructions: `${agentGuidance(network)} Full contract: ${origin}/openapi.json; for agents: ${origin}/llms.txt.`,
  };
}

/** The proofs that really are the payee's signature of this origin: a wrong or stale one is never published. */
export async function validProofs(
  origin: string,
  payTo: `0x${string}`,
  proofs: readonly `0x${string}`[],
): Promise<`0x${string}`[]> {
  const checks = await Promise.all(
    proofs.map((signature) =>
      verifyMessage({ address: payTo, message: origin, signature }).catch(() => false),
    ),
  );
  return proofs.filter((_, i) => checks[i]);
}

/** The verified proofs of each origin this server is reached by, checked once per origin (at most 16 remembered). */
export function ownershipProofCache(
  payTo: `0x${string}`,
  proofs: readonly `0x${string}`[],
): (origin: string) => Promise<`0x${string}`[]> {
  const byOrigin = new Map<string, Promise<`0x${string}`[]>>();
  return (origin) => {
    let found = byOrigin.get(origin);
    if (!found) {
      found = validProofs(origin, payTo, proofs);
      if (byOrigin.size < 16) byOrigin.set(origin, found);
    }
    return found;
  };
}

/**
 * The OpenAPI document with the payee's ownership proofs where agent-wallet discovery reads them
 * (@agentcash/discovery: `x-agentcash-provenance.ownershipProofs`, else `x-discovery.ownershipProofs`); a document
 * that has none is returned as it is.
 */
export function withOwnershipProofs<T extends object>(doc: T, proofs: readonly string[]): T {
  if (proofs.length === 0) return doc;
  return {
    ...doc,
    "x-agentcash-provenance": { ownershipProofs: [...proofs] },
    "x-discovery": { ownershipProofs: [...proofs] },
  };
}

function describeInput(d: DiscoverableRoute): string {
  const props = d.inputSchema.properties as Record<string, { type?: string; default?: unknown }>;
  const required = new Set((d.inputSchema.required as string[] | undefined) ?? []);
  return Object.entries(props)
    .map(([name, s]) => {
      const note = required.has(name)
        ? "required"
        : s.default !== undefined
          ? `default ${JSON.stringify(s.default)}`
          : "optional";
      return `\`${name}\` (${s.type ?? "value"}, ${note})`;
    })
    .join(", ");
}

/** `/llms.txt` (llmstxt.org): what each route answers, what it costs, and the order to call them in. */
export function llmsTxt(origin: string, prices: readonly PaidRoute[], network: PaymentNetwork): string {
  const price = (route: string) => prices.find((p) => p.route === route);
  const rail = paymentRail(network);
  const lines = [
    "# pressure402",
    "",
    `> Pay-per-call x402 API: modelled sell-pressure risk of scheduled token unlocks, and price benchmarks for other x402 endpoints. USDC on ${network.label}, no account, no API key.`,
    "",
    agentGuidance(network),
    "",
    `Payment: x402 scheme \`${rail.scheme}\`, network \`${rail.network}\`, asset USDC \`${rail.asset}\`. Amounts are in atomic units (6 decimals).`,
    "",
    "## Paid routes, in the order to call them",
    "",
  ];
  DISCOVERABLE.forEach((d, i) => {
    const p = price(d.route);
    const usd = p ? `${formatUsdc(p.amount)} USD (${p.amount} atomic)` : "unknown";
    const proofs = p?.acceptsV1 ? "PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1)" : "PAYMENT-SIGNATURE (v2 only)";
    const where = d.inputIn === "query" ? "query string" : "JSON body";
    lines.push(
      `${i + 1}. [${d.route}](${origin}${d.path}): ${usd}; proof in ${proofs}. ${d.answers}`,
      `   Input (${where}): ${describeInput(d)}. Example: \`${JSON.stringify(d.inputExample)}\``,
      // The 402's Bazaar extension shows only the answer's headline (a 4 KiB proxy buffer must hold it).
      `   Output: the full schema and example are operation \`${d.operationId}\` in ${origin}/openapi.json; the 402's Bazaar extension shows its headline fields (${Object.keys(d.outputHeadline).join(", ")}).`,
    );
  });
  lines.push(
    "",
    "## Free routes",
    "",
    `- [Covered tokens](${origin}/v1/tokens): every token with its next unlock (date, \`unlock_event_id\`, tokens, USD, % of circulating), schedule completeness and data freshness. Free, rate-limited, cacheable (ETag); start here to learn event ids without paying.`,
    `- [MCP endpoint](${origin}/mcp): the same paid operations as MCP tools (streamable HTTP, x402 MCP transport): call without payment for the PaymentRequired, repeat with the signed payload in \`_meta["x402/payment"]\`. A tool's text result is a short summary; the whole answer is \`structuredContent\`.`,
    "",
    "## Retrying a paid call without paying twice",
    "",
    "- Bind a secret to the payment before it settles: an `Idempotency-Key` header (1-255 visible ASCII characters), or the x402 `payment-identifier` extension's id in the payment payload (the 402 offers the extension).",
    '- Without either, the paid answer carries an `Idempotency-Key` header (over MCP `_meta["pressure402/idempotency-key"]`): the retry key. Keep it.',
    "- Repeating the same request with the same proof and that secret replays the stored answer with no second charge; a different request with the same secret is a 422; the proof alone never replays (it is public on chain).",
    "",
    "## Answer size",
    "",
    "- Unlock answers are compact by default: per item its figures, id and short codes; every repeated sentence once in `legend`. `view=full` adds each item's detail. The upcoming list takes `minUsd`, `minPctCirculating`, `tokens`, `category`, `type`, `sort` and `limit`/`cursor`.",
    "",
    "## Docs",
    "",
    `- [OpenAPI 3.1 document](${origin}/openapi.json): every route, field, status and example; \`x-payment-info\` on paid operations.`,
    `- [x402 discovery document](${origin}/.well-known/x402): the paid resources.`,
    `- [Human-readable docs](${origin}/docs)`,
    `- [Problem types](${origin}/problems): what each error \`type\` means and what to do.`,
    "",
  );
  return lines.join("\n");
}
