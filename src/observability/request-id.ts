import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const REQUEST_ID_HEADER = "x-request-id";

/** Visible ASCII only and bounded: an inbound id lands in every log line, so it must not carry newlines or bulk. */
const VALID_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * The request id: the caller's `X-Request-Id` when it is a sane token (so a proxy's or client's id correlates across
 * systems), otherwise a fresh UUID. Fastify's own `requestIdHeader` would take any value verbatim.
 */
export function requestIdFor(req: Pick<IncomingMessage, "headers">): string {
  const raw = req.headers[REQUEST_ID_HEADER];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value !== undefined && VALID_ID.test(value) ? value : randomUUID();
}
