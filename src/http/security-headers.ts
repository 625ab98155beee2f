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
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  },
  xFrameOptions: { action: "deny" },
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
};

/** HTML pages (/docs, /problems) reached over TLS: helmet's defaults; Swagger UI replaces the CSP with its own. */
const HTML_TLS: HelmetOptions = {};

/**
 * The same pages over plain http: without `upgrade-insecure-requests`, which would rewrite every asset of the page to
 * https and leave it blank on a host that serves only http (a container opened by its LAN address, for instance).
 */
const HTML_PLAIN: HelmetOptions = {
  contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
};

const UPGRADE = "upgrade-insecure-requests";

/**
 * A page's CSP as this request may carry it: `upgrade-insecure-requests` only when the request came over TLS, as
 * Fastify reads it (the socket, or X-Forwarded-Proto from a proxy trusted by TRUST_PROXY).
 */
export function cspForProtocol(csp: string, protocol: string): string {
  const kept = csp
    .split(";")
    .map((d) => d.trim())
    .filter((d) => d !== "" && d !== UPGRADE);
  if (protocol === "https") kept.push(UPGRADE);
  return kept.join("; ");
}

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
  const api = helmetHeaders(API);
  const html = { https: helmetHeaders(HTML_TLS), http: helmetHeaders(HTML_PLAIN) };
  app.addHook("onRequest", (request, reply, done) => {
    const set =
      request.routeOptions.config.pageKind === "html"
        ? html[request.protocol === "https" ? "https" : "http"]
        : api;
    for (const [name, value] of set) reply.header(name, value);
    done();
  });
}
