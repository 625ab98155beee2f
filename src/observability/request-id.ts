import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const REQUEST_ID_HEADER = "x-request-id";

/** Visible ASCII only and bounded: an inbound id lands in every log line, so it must not carry newlines or bulk. */
const VALID_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * Fresh ids in the UUID v4 layout: a random prefix drawn once per 2^48 ids (the first 24 characters of a random
 * UUID, version and variant included) and a counter in the last 12 hex digits. An id only has to be unique, in this
 * process and across the instances whose logs meet (74 random bits apart); it is no secret. Every request without an
 * id of its own draws one, and a counter costs a fraction of `randomUUID`'s buffered draw and formatting (about
 * 1.3 µs of a 402's CPU in a V8 profile).
 */
const COUNTER_SPAN = 2 ** 48;
let prefix = randomUUID().slice(0, 24);
let counter = 0;
function freshId(): string {
  if (counter === COUNTER_SPAN) {
    prefix = randomUUID().slice(0, 24);
    counter = 0;
  }
  const n = (counter++).toString(16);
  return `${prefix}${"000000000000".slice(n.length)}${n}`;
}

/**
 * The request id: the caller's `X-Request-Id` when it is a sane token (so a proxy's or client's id correlates across
 * systems), otherwise a fresh one in the UUID layout. Fastify's own `requestIdHeader` would take any value verbatim.
 */
export function requestIdFor(req: Pick<IncomingMessage, "headers">): string {
  const raw = req.headers[REQUEST_ID_HEADER];
  if (raw === undefined) return freshId();
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value !== undefined && VALID_ID.test(value) ? value : freshId();
}
