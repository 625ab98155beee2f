import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import helmet, { type HelmetOptions } from "helmet";

/**
 * Security headers, decided by helmet and computed once. @fastify/helmet builds a fresh helmet middleware (and parses
 * its CSP) on every request, about 16 µs of a 402's CPU; the headers depend only on the kind of page, so helmet runs
 * once per kind at start-up and each request copies the result.
 */
export type PageKind = "api" | "html";

/**
 * JSON answers (every paid route, problem, 402): the OWASP REST set. Nothing in a JSON body is rendered, so the CSP
 * forbids everything and framing; the browser-isolation headers meant for documents are left out.
 */
const API: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  xFrameOptions: { action: "deny" },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
};

/** HTML pages (/docs, /problems): helmet's defaults; Swagger UI replaces the CSP with its own hash-pinned one. */
const HTML: HelmetOptions = {};

/** The headers helmet sets for `options`, captured from one run of its middleware. */
export function helmetHeaders(options: HelmetOptions): readonly (readonly [string, string])[] {
  const headers: [string, string][] = [];
  const res = {
    setHeader: (name: string, value: unknown) => headers.push([name, String(value)]),
    removeHeader: () => undefined,
  };
  helmet(options)({} as IncomingMessage, res as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err;
  });
  return headers;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Which security headers the route's answers carry (default "api"). */
    pageKind?: PageKind;
  }
}

/** Sets each answer's security headers (404s and errors included) from the precomputed sets. */
export function registerSecurityHeaders(app: FastifyInstance): void {
  const sets: Record<PageKind, readonly (readonly [string, string])[]> = {
    api: helmetHeaders(API),
    html: helmetHeaders(HTML),
  };
  app.addHook("onRequest", (request, reply, done) => {
    for (const [name, value] of sets[request.routeOptions.config.pageKind ?? "api"]) reply.header(name, value);
    done();
  });
}
