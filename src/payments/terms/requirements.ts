import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { declarePaymentIdentifierExtension, PAYMENT_IDENTIFIER } from "@x402/extensions/payment-identifier";

/**
 * payment-identifier, optional: a buyer without an id still pays, but only an id (or an Idempotency-Key) lets it
 * recover a lost response. Declared by its `info` alone — all that clients' helpers read
 * (`appendPaymentIdentifierToExtensions`, `isPaymentIdentifierExtension` of @x402/extensions) — without the JSON
 * schema `declarePaymentIdentifierExtension` adds: its ~380 base64 bytes would push the largest PAYMENT-REQUIRED past
 * a 4 KiB proxy header buffer. Ids are checked against the extension's rules on arrival (`paymentIdOf`).
 */
const PAYMENT_IDENTIFIER_DECLARED = (() => {
  const { info } = declarePaymentIdentifierExtension(false);
  // Frozen all the way down: the client helper writes its id into `info` of the object it is given.
  return Object.freeze({ info: Object.freeze(info) });
})();

import type { PaymentRequiredV1, PaymentRequirementsV1 } from "@x402/core/types/v1";
import type { PaymentNetwork } from "../../chain/networks.js";

/** The EIP-712 domain fields the exact scheme's requirements carry in `extra`. */
const domainOf = (network: PaymentNetwork) => ({ name: network.usdc.name, version: network.usdc.version });

/** What the payments plugin needs to know about one paid route; the domain never sees it. */
export interface RoutePrice {
  /** Price in USDC atomic units (6 decimals), as a decimal string. */
  amount: string;
  description: string;
  /** Whether the route also takes x402 v1 proofs (X-PAYMENT) and answers its payment request with a v1 body. */
  acceptsV1: boolean;
  /** v2 PaymentRequired `extensions` (e.g. Bazaar discovery), passed through as given. */
  extensions?: Record<string, unknown>;
  /** v1 `outputSchema` (v1 discovery: how to call the route and what it answers), passed through as given. */
  outputSchema?: Record<string, unknown>;
  /** v2 `resource.tags`: at most 5 short printable-ASCII words indexers file the route under. */
  tags?: readonly string[];
}

/** Who sells: v2 `resource.serviceName` and `resource.iconUrl` of every PaymentRequired (indexers and the paywall show them). */
export interface ServiceIdentity {
  /** At most 32 printable ASCII characters. */
  name: string;
  /** Path of an icon on the server's own origin; the PaymentRequired carries it as an absolute URL beside the resource's. */
  iconPath: string;
}

export interface PaymentTerms {
  payTo: `0x${string}`;
  /** The chain and USDC paid with (the configuration's NETWORK). */
  network: PaymentNetwork;
  maxTimeoutSeconds: number;
  service?: ServiceIdentity;
}

export function requirementsV2(price: RoutePrice, terms: PaymentTerms): PaymentRequirements {
  const { network } = terms;
  return {
    scheme: "exact",
    network: network.caip2,
    asset: network.usdc.address,
    amount: price.amount,
    payTo: terms.payTo,
    maxTimeoutSeconds: terms.maxTimeoutSeconds,
    extra: domainOf(network),
  };
}

export function requirementsV1(
  price: RoutePrice,
  terms: PaymentTerms,
  resourceUrl: string,
): PaymentRequirementsV1 {
  const { network } = terms;
  return {
    scheme: "exact",
    // @x402/core types v1 networks as CAIP-2, but the v1 wire format uses plain names ("base").
    network: network.v1Name as unknown as PaymentRequirementsV1["network"],
    maxAmountRequired: price.amount,
    resource: resourceUrl,
    description: price.description,
    mimeType: "application/json",
    outputSchema: price.outputSchema ?? {},
    payTo: terms.payTo,
    maxTimeoutSeconds: terms.maxTimeoutSeconds,
    asset: network.usdc.address,
    extra: domainOf(network),
  };
}

export function paymentRequiredV2(
  price: RoutePrice,
  terms: PaymentTerms,
  resourceUrl: string,
  error: string,
): PaymentRequired {
  return {
    x402Version: 2,
    error,
    resource: {
      url: resourceUrl,
      description: price.description,
      mimeType: "application/json",
      ...(terms.service
        ? {
            serviceName: terms.service.name,
            iconUrl: new URL(terms.service.iconPath, resourceUrl).href,
          }
        : {}),
      ...(price.tags ? { tags: [...price.tags] } : {}),
    },
    accepts: [requirementsV2(price, terms)],
    // payment-identifier: the buyer's id is the secret that alone recovers a paid response (the proof becomes public).
    extensions: { ...price.extensions, [PAYMENT_IDENTIFIER]: PAYMENT_IDENTIFIER_DECLARED },
  };
}

export function paymentRequiredV1(
  price: RoutePrice,
  terms: PaymentTerms,
  resourceUrl: string,
  error: string,
): PaymentRequiredV1 {
  return { x402Version: 1, error, accepts: [requirementsV1(price, terms, resourceUrl)] };
}

/**
 * The PaymentRequired of a v2-only route, for v1-only clients. It stays a v1 PaymentRequired they can read, with one entry in
 * `accepts` whose scheme is the refusal itself (`x402_v2_only: …`) and whose other fields are the route's real terms:
 * no v1 client pays a scheme it does not know (nothing is signed), and the legacy SDKs (x402-fetch 1.x, x402-axios
 * 0.7), which validate each entry before choosing one, stop with a validation error that quotes that scheme, instead
 * of a TypeError on an empty `accepts`. v2 clients read the PAYMENT-REQUIRED header and never look here.
 */
export function paymentRequiredV2Only(
  price: RoutePrice,
  terms: PaymentTerms,
  resourceUrl: string,
  error: string,
): PaymentRequiredV1 {
  const refusal = `x402_v2_only: ${V2_ONLY}`;
  return {
    x402Version: 1,
    error: `${refusal}; ${error}`,
    accepts: [{ ...requirementsV1(price, terms, resourceUrl), scheme: refusal as "exact" }],
  };
}

export const V2_ONLY =
  "this route accepts only x402 v2 payments: decode the PAYMENT-REQUIRED header and retry with PAYMENT-SIGNATURE";
