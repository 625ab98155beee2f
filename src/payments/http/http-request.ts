import type { FastifyRequest } from "fastify";
import type { ProofOffer } from "../core/decide.js";
import { chooseProofHeader, HEADER_V1, HEADER_V2 } from "../terms/matching.js";
import { decodeProof } from "../terms/proof.js";

/** The proof an HTTP request offers in its payment headers (PAYMENT-SIGNATURE for v2, X-PAYMENT for v1). */
export function offerOf(header: (name: string) => string | undefined, acceptsV1: boolean): ProofOffer {
  const choice = chooseProofHeader(header(HEADER_V2), header(HEADER_V1), acceptsV1);
  if (choice.kind !== "pay") return choice;
  return { kind: "pay", name: choice.name, decoded: decodeProof(choice.name, choice.value) };
}

/**
 * Where a request's PaymentRequired resources point: PUBLIC_BASE_URL, or without it the request's own origin (its Host). pp_ref
 * is recorded with the paid call, never echoed: the resource URL is the request's without it.
 */
export function resourceUrls(publicBaseUrl: string | undefined) {
  const baseUrl = (request: FastifyRequest): string =>
    publicBaseUrl ?? `${request.protocol}://${request.host}`;
  // A URL parse per request cost a challenge about 4 µs; the verdict depends on the origin and the path, and a path never
  // fails to parse after a valid origin (the URL parser percent-encodes what it does not take), so it is kept per
  // origin. Bounded: a client inventing Host headers only recycles entries.
  const origins = new Map<string, boolean>();
  const originMakesUrl = (origin: string, host: string, url: string): boolean => {
    let ok = origins.get(origin);
    if (ok === undefined) {
      ok = validHost(host, url);
      if (origins.size >= 256) origins.delete(origins.keys().next().value as string);
      origins.set(origin, ok);
    }
    return ok;
  };
  return {
    baseUrl,
    resourceUrl: (request: FastifyRequest): string => `${baseUrl(request)}${withoutPpRef(request.url)}`,
    /** Without PUBLIC_BASE_URL the challenge's resource comes from Host: one that makes no URL is the caller's error. */
    hostMakesUrl: (request: FastifyRequest, path: string): boolean => {
      if (publicBaseUrl) return true;
      const origin = baseUrl(request);
      return path.startsWith("/")
        ? originMakesUrl(origin, request.host, `${origin}${path}`)
        : validHost(request.host, `${origin}${path}`);
    },
  };
}

/** A Host header: a name or IPv4 address, or a bracketed IPv6 address, and an optional port (RFC 9110 `uri-host`). */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/** Whether a Host header makes the challenge's resource URL (without PUBLIC_BASE_URL the resource comes from it). */
export function validHost(host: string, resourceUrl: string): boolean {
  if (!HOST.test(host)) return false;
  try {
    new URL(resourceUrl);
    return true;
  } catch {
    return false;
  }
}

// A cached body is one Buffer sent to many buyers: decoded once, and the same string each time lets the ledger see
// it is a body it already keeps.
const decodedBodies = new WeakMap<Buffer, string>();
/** The handler's payload as the text the ledger keeps for a retry. */
export function bodyText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  if (!Buffer.isBuffer(payload)) return "";
  let text = decodedBodies.get(payload);
  if (text === undefined) {
    text = payload.toString("utf8");
    decodedBodies.set(payload, text);
  }
  return text;
}

/** A request target without its pp_ref parameters (the rest of the query re-serialised only when one was there). */
export function withoutPpRef(target: string): string {
  const q = target.indexOf("?");
  if (q < 0 || !target.includes("pp_ref", q)) return target;
  const params = new URLSearchParams(target.slice(q + 1));
  if (!params.has("pp_ref")) return target;
  params.delete("pp_ref");
  const rest = params.toString();
  return `${target.slice(0, q)}${rest ? `?${rest}` : ""}`;
}
