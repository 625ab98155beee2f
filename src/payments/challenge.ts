import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequiredV1 } from "@x402/core/types/v1";
import { type PaymentTerms, paymentRequiredV1, paymentRequiredV2, type RoutePrice } from "./requirements.js";

export interface Challenge {
  /** PAYMENT-REQUIRED: base64 of the v2 PaymentRequired. */
  header: string;
  /** The v1 body on v1-capable routes. */
  v1: Readonly<PaymentRequiredV1> | undefined;
}

/**
 * A route's 402 challenges, each built once: the price, terms and encoding never change for a route, and a challenge
 * varies only with the resource URL (path and query) and the error text. Bounded (least recently used out), so a
 * client walking random query strings costs memory for at most `max` entries.
 */
export function challengeCache(
  route: RoutePrice,
  terms: PaymentTerms,
  max = 256,
): (resourceUrl: string, error: string) => Challenge {
  const cache = new Map<string, Challenge>();
  return (resourceUrl, error) => {
    const key = `${resourceUrl}\n${error}`;
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return hit;
    }
    const built: Challenge = {
      header: encodePaymentRequiredHeader(paymentRequiredV2(route, terms, resourceUrl, error)),
      v1: route.acceptsV1 ? Object.freeze(paymentRequiredV1(route, terms, resourceUrl, error)) : undefined,
    };
    cache.set(key, built);
    if (cache.size > max) cache.delete(cache.keys().next().value as string);
    return built;
  };
}
