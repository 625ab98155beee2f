import { createHash } from "node:crypto";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { paymentNetwork } from "../../chain/networks.js";
import { compressBody, precompressedEncoding } from "../../http/encoding.js";
import { createResponseCache } from "../../http/response-cache.js";
import { cspForProtocol } from "../../http/security-headers.js";
import { PAYMENT_REQUIRED_STATUS } from "./http-answers.js";

/**
 * The browser paywall: a paid GET opened by a person (a browser navigating to it) answers its PaymentRequired with the x402
 * paywall page of `@x402/paywall` instead of the JSON challenge. The page shows the route's price and description,
 * connects the person's wallet, signs the same payment an agent would, repeats the request with PAYMENT-SIGNATURE and
 * shows the answer. It is built from the answer's own PAYMENT-REQUIRED header, so it offers exactly what an agent is
 * offered (its `resource.serviceName` and `iconUrl` name the seller in the wallet's prompt); the status stays Payment Required and
 * the header stays on the answer.
 */
type Header = string | number | string[] | undefined;

/**
 * A person's browser navigating to the URL, the rule the x402 HTTP servers use (@x402/core `isWebBrowser`): it asks
 * for text/html and calls itself Mozilla. API clients (application/json, *\/*, no Accept) never get the page.
 */
export function wantsPaywall(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? "";
  const agent = request.headers["user-agent"] ?? "";
  return request.method === "GET" && accept.includes("text/html") && agent.includes("Mozilla");
}

/** Every inline script of an HTML page (what the HTML tokenizer sees: each runs to the first `</script`). */
export function inlineScripts(html: string): string[] {
  const scripts: string[] = [];
  let at = 0;
  for (;;) {
    const open = html.indexOf("<script", at);
    if (open < 0) return scripts;
    const bodyStart = html.indexOf(">", open) + 1;
    const close = html.indexOf("</script", bodyStart);
    if (bodyStart === 0 || close < 0) return scripts;
    scripts.push(html.slice(bodyStart, close));
    at = close + 8;
  }
}

/**
 * The page's CSP: its scripts pinned by hash (the bundled app and the per-request `window.x402` configuration), styles
 * inline (React sets them), and the wallet's own traffic allowed out over https/wss (chain RPC for the USDC balance,
 * wallet relays). No form, base, object or framing of the page.
 */
export function paywallCsp(scriptHashes: readonly string[], protocol: string): string {
  return cspForProtocol(
    [
      "default-src 'none'",
      `script-src ${scriptHashes.map((h) => `'${h}'`).join(" ")}`,
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data: https:",
      "font-src 'self' data: https:",
      "connect-src 'self' https: wss:",
      "frame-src https:",
      "base-uri 'none'",
      "form-action 'none'",
      "object-src 'none'",
      "frame-ancestors 'none'",
    ].join("; "),
    protocol,
  );
}

type EvmPaywall = typeof import("@x402/paywall/evm")["evmPaywall"];

/**
 * Builds pages. The bundle (2.3 MB of script) is loaded on the first browser visit, not at start-up; its script's
 * hash is computed once (the same text every time), only the small configuration script is hashed per page.
 */
export function paywallPages() {
  let evm: Promise<EvmPaywall> | undefined;
  const hashes = new Map<string, string>();
  const hashOf = (script: string) => {
    const known = hashes.get(script);
    if (known) return known;
    const hash = `sha256-${createHash("sha256").update(script).digest("base64")}`;
    // Small scripts are the per-request configuration: not worth keeping.
    if (script.length > 4096) hashes.set(script, hash);
    return hash;
  };

  return async (required: PaymentRequired, protocol: string) => {
    evm ??= import("@x402/paywall/evm").then((m) => m.evmPaywall);
    const paywall = await evm;
    const requirement = required.accepts.find((r) => paywall.supports(r));
    if (!requirement) return undefined;
    // Re-serialised through URL so the page script never receives a raw `<` or quote from the request line.
    const url = new URL(required.resource.url).href;
    const html = paywall.generateHtml(
      requirement,
      { ...required, resource: { ...required.resource, url } },
      {
        appName: required.resource.serviceName ?? "",
        appLogo: required.resource.iconUrl ?? "",
        // The page says "testnet" and offers the faucet on a test network only (NETWORK names a testnet).
        testnet: paymentNetwork(requirement.network)?.testnet ?? false,
      },
    );
    return { html, csp: paywallCsp(inlineScripts(html).map(hashOf), protocol) };
  };
}

const varyAccept = (reply: FastifyReply) => {
  const vary = reply.getHeader("vary") as Header;
  // What CORS leaves on every answer: no list to read.
  if (vary === "Origin") {
    reply.header("vary", "Origin, Accept");
    return;
  }
  const list =
    vary === undefined
      ? []
      : String(vary)
          .split(",")
          .map((v) => v.trim());
  if (!list.some((v) => v.toLowerCase() === "accept")) reply.header("vary", [...list, "Accept"].join(", "));
};

/**
 * Turns a paid GET's PaymentRequired into the paywall page for a browser. An onSend hook on the app: it sees every
 * PaymentRequired as the payments plugin built it (the PAYMENT-REQUIRED header) and replaces only the body, before
 * compression.
 */
export function registerPaywall(app: FastifyInstance): void {
  const page = paywallPages();
  // A page is 2.3 MB of HTML: built once per challenge (the PAYMENT-REQUIRED header and protocol it is made of) and
  // compressed once per encoding, then served from memory — building and gzipping it per request made every browser
  // visit cost ~70× a JSON challenge's CPU. Both caches are bounded, so walking query strings only recycles entries.
  const pages = new Map<string, Promise<{ html: Buffer; csp: string } | undefined>>();
  const bodies = createResponseCache({ maxEntries: 24, maxUnits: 32 * 1024 * 1024 });
  const pageFor = (header: string, protocol: string) => {
    const key = `${protocol}\n${header}`;
    let built = pages.get(key);
    if (built) {
      pages.delete(key);
    } else {
      built = page(decodePaymentRequiredHeader(header), protocol).then((p) =>
        p ? { html: Buffer.from(p.html), csp: p.csp } : undefined,
      );
      built.catch(() => pages.delete(key));
      if (pages.size >= PAGES_KEPT) pages.delete(pages.keys().next().value as string);
    }
    pages.set(key, built);
    return { key, built };
  };
  const pageBody = async (request: FastifyRequest, reply: FastifyReply, header: string, payload: unknown) => {
    const { key, built: pending } = pageFor(header, request.protocol);
    const built = await pending;
    if (!built) return payload;
    reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", built.csp)
      .header("cache-control", "no-store");
    const encoding = precompressedEncoding(request, reply);
    if (!encoding) return built.html;
    return bodies.get("paywall", `${key}\n${encoding}`, () => compressBody(built.html, encoding));
  };
  // A callback hook: every answer passes here, and only a browser's PaymentRequired needs to wait for anything.
  app.addHook("onSend", (request, reply, payload, done) => {
    if (reply.statusCode !== PAYMENT_REQUIRED_STATUS || request.method !== "GET") return done(null, payload);
    // Browsers and agents get different bodies at the same URL: caches must keep them apart.
    varyAccept(reply);
    const header = reply.getHeader("payment-required");
    if (!wantsPaywall(request) || typeof header !== "string") return done(null, payload);
    pageBody(request, reply, header, payload).then(
      (body) => done(null, body),
      (err: Error) => done(err),
    );
  });
}

/** Paywall pages kept built (each ~2.3 MB of HTML). */
const PAGES_KEPT = 8;
