import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import type { PaymentRequiredV1 } from "@x402/core/types/v1";
import {
  type PaymentTerms,
  paymentRequiredV1,
  paymentRequiredV2,
  paymentRequiredV2Only,
  type RoutePrice,
} from "../terms/requirements.js";

export interface Challenge {
  /** The v2 PaymentRequired. */
  required: PaymentRequired;
  /** PAYMENT-REQUIRED: base64 of `required`. */
  header: string;
  /**
   * The JSON body: the v1 PaymentRequired on v1-capable routes; elsewhere a v1 body whose only entry's scheme is the
   * "x402_v2_only" refusal, so v1-only clients stop with that reason instead of failing inside their own parsing (v2
   * clients read the header).
   */
  body: Readonly<PaymentRequiredV1>;
  /** `body` as the JSON bytes sent: serialized once, not by the route's serializer on every PaymentRequired. */
  bytes: Buffer;
}

/**
 * Characters of error text a challenge carries. Some reasons come from the facilitator (`invalidReason`,
 * `errorReason`), whose length we do not control; PAYMENT-REQUIRED must still fit a 4 KiB proxy buffer.
 */
export const ERROR_MAX = 100;

/** The error text cut to ERROR_MAX characters, marked with "…" where cut. */
export const boundedError = (error: string): string =>
  error.length > ERROR_MAX ? `${error.slice(0, ERROR_MAX - 1)}…` : error;

/**
 * A route's PaymentRequired challenges, each built once: the price, terms and encoding never change for a route, and a challenge
 * varies only with the resource URL (path and query) and the error text. Bounded, so a client walking random query
 * strings costs memory for at most `max` entries.
 */
export function challengeCache(
  route: RoutePrice,
  terms: PaymentTerms,
  max = 256,
): (resourceUrl: string, error: string, v1Error?: string) => Challenge {
  // By resource URL, then by error text: the texts are a handful of constants per route, so no key is built per
  // request (a joined key of URL and text was a fresh string to hash on every challenge).
  const cache = new Map<string, Map<string, Map<string | undefined, Challenge>>>();
  let entries = 0;
  return (resourceUrl, fullError, fullV1Error) => {
    let byError = cache.get(resourceUrl);
    if (!byError) {
      byError = new Map();
      cache.set(resourceUrl, byError);
    }
    let byV1 = byError.get(fullError);
    if (!byV1) {
      byV1 = new Map();
      byError.set(fullError, byV1);
    }
    const hit = byV1.get(fullV1Error);
    if (hit) return hit;
    const error = boundedError(fullError);
    const v1Error = fullV1Error === undefined ? undefined : boundedError(fullV1Error);
    const body = Object.freeze(
      route.acceptsV1
        ? paymentRequiredV1(route, terms, resourceUrl, v1Error ?? error)
        : paymentRequiredV2Only(route, terms, resourceUrl, error),
    );
    const required = paymentRequiredV2(route, terms, resourceUrl, error);
    const built: Challenge = {
      required,
      header: encodePaymentRequiredHeader(required),
      body,
      bytes: Buffer.from(JSON.stringify(body)),
    };
    // Bounded as a whole: a client walking random query strings (or a facilitator's free-text reasons) at most
    // refills the cache from empty, each challenge rebuilt in tens of µs.
    if (++entries > max) {
      cache.clear();
      entries = 1;
      cache.set(resourceUrl, new Map([[fullError, new Map([[fullV1Error, built]])]]));
      return built;
    }
    byV1.set(fullV1Error, built);
    return built;
  };
}

/** Every route's challenge cache, each built on the route's first challenge. */
export function routeChallenges(terms: PaymentTerms) {
  const caches = new WeakMap<RoutePrice, ReturnType<typeof challengeCache>>();
  return (route: RoutePrice, resourceUrl: string) => {
    let cache = caches.get(route);
    if (!cache) {
      cache = challengeCache(route, terms);
      caches.set(route, cache);
    }
    const built = cache;
    return (error: string, v1Error?: string): Challenge => built(resourceUrl, error, v1Error);
  };
}
