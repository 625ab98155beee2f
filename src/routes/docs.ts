import swaggerUi from "@fastify/swagger-ui";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { onSendHookHandler } from "fastify";
import { Type } from "typebox";
import { asArray } from "../discovery/openapi.js";
import { PROBLEM_TYPES, type ProblemType } from "../discovery/problems.js";
import { HttpProblem } from "../http/problem.js";
import { cspForProtocol } from "../http/security-headers.js";
import { problem } from "./responses.js";

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );

/** Inline `code` spans of the catalog's plain text, escaped first. */
const inline = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, "<code>$1</code>");

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · pressure402</title><link rel="icon" href="/favicon.svg">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
code{background:#f2f2f2;padding:0 .2em;border-radius:3px}dt{font-weight:600;margin-top:.8em}</style></head>
<body>${body}
<p><a href="/problems">All problem types</a> · <a href="/docs">API docs</a> · <a href="/openapi.json">OpenAPI</a></p>
</body></html>
`;
}

function problemPage(slug: string, p: ProblemType): string {
  return page(
    p.title,
    `<h1>${escapeHtml(p.title)}</h1>
<p>Problem type <code>/problems/${escapeHtml(slug)}</code>, HTTP status <strong>${p.status}</strong>
(RFC 9457 <code>application/problem+json</code>).</p>
<dl><dt>What it means</dt><dd>${inline(p.meaning)}</dd>
<dt>What to do</dt><dd>${inline(p.action)}</dd>
<dt>Payment</dt><dd>${inline(p.charged)}</dd></dl>`,
  );
}

function indexPage(): string {
  const items = Object.entries(PROBLEM_TYPES)
    .map(
      ([slug, p]) =>
        `<li><a href="/problems/${escapeHtml(slug)}">${escapeHtml(p.title)}</a> (${p.status})</li>`,
    )
    .join("\n");
  return page(
    "Problem types",
    `<h1>Problem types</h1><p>Every error answer is RFC 9457 problem+json; its <code>type</code> is one of:</p><ul>${items}</ul>`,
  );
}

/** Swagger UI's static CSP always asks to upgrade insecure requests: keep that only for requests that came over TLS. */
const tlsOnlyUpgrade: onSendHookHandler = (request, reply, payload, done) => {
  const csp = reply.getHeader("content-security-policy");
  if (typeof csp === "string") reply.header("content-security-policy", cspForProtocol(csp, request.protocol));
  done(null, payload);
};

/** A 402 on a dark square: the icon browsers and directory listings show for the service. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" fill="#1b1b1b"/><text x="32" y="41" font-family="monospace" font-size="24" font-weight="700" fill="#49cc90" text-anchor="middle">402</text></svg>`;

/** Human-facing pages: the OpenAPI document rendered by Swagger UI at /docs, and one page per problem type. */
export const docsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Every route of this plugin (Swagger UI's included) is a page for a browser: document security headers.
  app.addHook("onRoute", (route) => {
    route.config = { ...route.config, pageKind: "html" };
    // A route-level hook runs after every context hook, so after Swagger UI's own onSend has set its static CSP.
    route.onSend = [...asArray(route.onSend), tlsOnlyUpgrade];
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    // Swagger UI's own CSP (hashes of its inline scripts) replaces helmet's default on these routes.
    staticCSP: true,
    // Swagger UI sets element styles from script; inline styles cannot run code, inline scripts stay hash-pinned.
    transformStaticCSP: (header) => header.replace(/style-src ([^;]*);/, "style-src $1 'unsafe-inline';"),
    uiConfig: { docExpansion: "list", deepLinking: true, defaultModelsExpandDepth: 0 },
  });

  app.get("/favicon.svg", { schema: { hide: true } }, async (_request, reply) =>
    reply.type("image/svg+xml").header("Cache-Control", "public, max-age=86400").send(FAVICON),
  );

  const html = { 200: { description: "HTML page", content: { "text/html": { schema: Type.String() } } } };

  app.get(
    "/problems",
    {
      schema: { tags: ["meta"], summary: "Index of problem types", produces: ["text/html"], response: html },
    },
    async (_request, reply) => reply.type("text/html; charset=utf-8").send(indexPage()),
  );

  app.get(
    "/problems/:slug",
    {
      schema: {
        tags: ["meta"],
        summary: "What one problem type means and what to do about it",
        produces: ["text/html"],
        params: Type.Object({ slug: Type.String({ pattern: "^[a-z0-9-]{1,64}$" }) }),
        response: { ...html, 404: problem("No problem type has this slug (see GET /problems for the list)") },
      },
    },
    async (request, reply) => {
      const p = Object.hasOwn(PROBLEM_TYPES, request.params.slug)
        ? PROBLEM_TYPES[request.params.slug]
        : undefined;
      if (!p) throw new HttpProblem(404, "not-found", `No problem type ${request.params.slug}.`);
      return reply.type("text/html; charset=utf-8").send(problemPage(request.params.slug, p));
    },
  );
};
