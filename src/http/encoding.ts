import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { autoConfig as compressConfig } from "../plugins/external/compress.js";

export type ContentEncoding = "br" | "gzip";

/**
 * The encoding to answer with, from an Accept-Encoding header: the highest q among br and gzip (br on a tie, `*`
 * counts for both), or undefined when the client accepts neither (absent header, identity only, q=0).
 */
export function negotiateEncoding(header: string | undefined): ContentEncoding | undefined {
  if (!header) return undefined;
  const q: Record<string, number> = {};
  for (const part of header.split(",")) {
    const [rawName = "", ...params] = part.toLowerCase().split(";");
    const name = rawName.trim();
    let weight = 1;
    for (const p of params) {
      const [key = "", value = ""] = p.split("=").map((x) => x.trim());
      // A q that is not a number makes the coding unacceptable rather than preferred.
      if (key === "q") weight = /^[0-9.]+$/.test(value) ? Number(value) : 0;
    }
    if (name) q[name] = Number.isFinite(weight) ? weight : 0;
  }
  const weight = (enc: ContentEncoding) => q[enc] ?? q["*"] ?? 0;
  const br = weight("br");
  const gzip = weight("gzip");
  if (br <= 0 && gzip <= 0) return undefined;
  return br >= gzip ? "br" : "gzip";
}

/**
 * Compresses a body meant to be cached and sent many times: a little more effort than per-request compression
 * (brotli 5 rather than 4), since it is paid once per cache entry.
 */
export function compressBody(body: string | Buffer, encoding: ContentEncoding): Buffer {
  return encoding === "br"
    ? brotliCompressSync(body, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: 5,
          [constants.BROTLI_PARAM_SIZE_HINT]: Buffer.byteLength(body),
        },
      })
    : gzipSync(body);
}

/**
 * For a body compressed ahead of time: the encoding this request accepts, with Content-Encoding and Vary set on the
 * reply (@fastify/compress then leaves the body alone); undefined, and nothing set, when it accepts neither or sent
 * `x-no-compression`.
 */
export function precompressedEncoding(
  request: FastifyRequest,
  reply: FastifyReply,
): ContentEncoding | undefined {
  if (request.headers["x-no-compression"] !== undefined) return undefined;
  const header = request.headers["accept-encoding"];
  const encoding = negotiateEncoding(Array.isArray(header) ? header.join(",") : header);
  if (!encoding) return undefined;
  // Appended, not set: CORS has already put Origin there.
  const vary = reply.getHeader("vary");
  reply
    .header("Content-Encoding", encoding)
    .header("Vary", vary ? `${String(vary)}, Accept-Encoding` : "Accept-Encoding");
  return encoding;
}

/**
 * Every 402 a route sends for one resource URL is the same Buffer (its challenge body, serialized once): compressed
 * here once per body and encoding, where @fastify/compress compressed it again on every answer to a client that
 * accepts br or gzip, which every agent's HTTP client does. That was about 110 µs of a 402's CPU (`profile.ts get402
 * --accept-encoding "gzip, deflate, br"`: 164–178 µs a 402, against 56–59 µs without the header). Registered after the
 * paywall's hook (a browser's 402 is a page by then, not this Buffer); the plugin leaves a body that already has a
 * Content-Encoding alone. Bodies under the plugin's threshold stay as they are, as before.
 */
export function registerPrecompressedChallenges(app: FastifyInstance): void {
  const threshold = compressConfig.threshold ?? 1024;
  const copies = new WeakMap<Buffer, Partial<Record<ContentEncoding, Buffer>>>();
  app.addHook("onSend", (request, reply, payload, done) => {
    if (reply.statusCode !== 402 || !Buffer.isBuffer(payload) || payload.length < threshold)
      return done(null, payload);
    if (reply.hasHeader("content-encoding")) return done(null, payload);
    const encoding = precompressedEncoding(request, reply);
    if (!encoding) return done(null, payload);
    let kept = copies.get(payload);
    if (kept === undefined) {
      kept = {};
      copies.set(payload, kept);
    }
    kept[encoding] ??= compressBody(payload, encoding);
    done(null, kept[encoding]);
  });
}
