import { parseJsonOffThread } from "./parse-worker.js";

/**
 * A JSON GET every source reads through; adapters take `fetchImpl` so tests can point them at a local server. The
 * answer's body is read as a stream when the fetch exposes one (the global fetch does).
 */
export type FetchLike = (
  url: string,
  init?: { headers?: Record<string, string>; signal?: AbortSignal; redirect?: "manual" },
) => Promise<{
  ok: boolean;
  status: number;
  headers?: { get(name: string): string | null };
  body?: ReadableStream<Uint8Array> | null;
  json(): Promise<unknown>;
  text(): Promise<string>;
}>;

/** What one answer may cost: its size and the time from asking to its last byte. */
export interface ReadLimits {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /**
   * The signal that ends one answer's time (`timeoutMs` for the answer to `url`); `AbortSignal.timeout` unless a test
   * injects its own clock, so the time cap is proved without waiting for it.
   */
  readonly deadline?: (timeoutMs: number, url: string) => AbortSignal;
}

/**
 * The largest real answers are a DefiLlama emission document and a Bazaar page (a few MB at most); 1500 klines are
 * about 250 kB. Anything past 16 MiB is not data we asked for.
 */
export const DEFAULT_READ_LIMITS: ReadLimits = { maxBytes: 16 * 1024 * 1024, timeoutMs: 30_000 };

/** Redirects followed, and only within the configured origin. */
const MAX_REDIRECTS = 3;

export class HttpError extends Error {
  constructor(
    readonly url: string,
    readonly status: number,
    detail: string,
    /** Seconds the source asked us to wait (429/418 with Retry-After), when it said so. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(`GET ${url} failed: ${status} ${detail}`.trim());
    this.name = "HttpError";
  }
}

/** An answer that came back 200 but is not the data asked for (HTML error page, empty, cut short, wrong shape). */
/** Why an answer was not read: the kinds a status page and a metric name. */
export type AnswerFault = "not_json" | "too_large" | "redirect" | "cut_short" | "refused_url";

export class BadAnswerError extends Error {
  constructor(
    readonly url: string,
    detail: string,
    readonly fault: AnswerFault = "not_json",
  ) {
    super(`GET ${url}: ${detail}`);
    this.name = "BadAnswerError";
  }
}

/** Retry-After as seconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * Only HTTPS is read, except plain HTTP to a loopback address, which only an operator or a test configures (a local
 * stand-in); anything else is refused before a byte is sent.
 */
export function checkSourceUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BadAnswerError(url, "not a URL", "refused_url");
  }
  const loopback = u.hostname === "127.0.0.1" || u.hostname === "[::1]" || u.hostname === "localhost";
  if (u.protocol === "https:" || (u.protocol === "http:" && loopback)) return u;
  throw new BadAnswerError(url, "refused: only HTTPS sources (or HTTP on loopback) are read", "refused_url");
}

/** An answer read whole within its limits: the bytes, and JSON parsed off the main thread. */
export interface BoundedAnswer {
  readonly ok: boolean;
  readonly status: number;
  readonly headers?: { get(name: string): string | null };
  readonly bytes: Uint8Array;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

async function readCapped(
  url: string,
  res: Awaited<ReturnType<FetchLike>>,
  maxBytes: number,
): Promise<Uint8Array> {
  const declared = Number(res.headers?.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw new BadAnswerError(
      url,
      `answer of ${declared} bytes is over the ${maxBytes}-byte cap`,
      "too_large",
    );
  }
  if (!res.body) {
    // A stand-in without a stream: the cap still holds on what it gives.
    const bytes = new TextEncoder().encode(await res.text());
    if (bytes.length > maxBytes)
      throw new BadAnswerError(url, `answer is over the ${maxBytes}-byte cap`, "too_large");
    return bytes;
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let step: Awaited<ReturnType<typeof reader.read>>;
    try {
      step = await reader.read();
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === "TimeoutError" || name === "AbortError") throw err;
      throw new BadAnswerError(url, "answer cut short (connection closed mid-body)", "cut_short");
    }
    if (step.done) break;
    total += step.value.length;
    if (total > maxBytes) {
      // Stop reading at once: the rest of a huge body is never held.
      await reader.cancel().catch(() => {});
      throw new BadAnswerError(url, `answer is over the ${maxBytes}-byte cap`, "too_large");
    }
    chunks.push(step.value);
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * GET within limits: HTTPS (or loopback HTTP) only, redirects followed only within the same origin, the whole answer
 * (headers and body) within `timeoutMs`, the body read as a stream and dropped past `maxBytes`.
 */
export async function boundedGet(
  fetchImpl: FetchLike,
  url: string,
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
  limits: ReadLimits = DEFAULT_READ_LIMITS,
): Promise<BoundedAnswer> {
  const origin = checkSourceUrl(url).origin;
  const timeout = limits.deadline
    ? limits.deadline(limits.timeoutMs, url)
    : AbortSignal.timeout(limits.timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  let at = url;
  for (let hop = 0; ; hop++) {
    const res = await fetchImpl(at, { ...init, signal, redirect: "manual" });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => {});
      const location = res.headers?.get("location");
      const next = location ? new URL(location, at) : null;
      if (!next || next.origin !== origin || hop >= MAX_REDIRECTS)
        throw new BadAnswerError(url, "redirected away from the configured host: refused", "redirect");
      at = next.toString();
      continue;
    }
    const bytes = await readCapped(url, res, limits.maxBytes);
    return {
      ok: res.ok,
      status: res.status,
      ...(res.headers ? { headers: res.headers } : {}),
      bytes,
      text: async () => new TextDecoder().decode(bytes),
      json: async () => {
        const r = await parseJsonOffThread(bytes);
        if ("value" in r) return r.value;
        throw new BadAnswerError(url, r.error);
      },
    };
  }
}

/** A fetch for code that takes `typeof fetch` (the Bazaar reader): every answer bounded as `boundedGet` bounds it. */
export function boundedFetch(fetchImpl: FetchLike, limits: ReadLimits = DEFAULT_READ_LIMITS): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.toString() : input.url;
    const a = await boundedGet(
      fetchImpl,
      url,
      {
        ...(init?.headers ? { headers: init.headers as Record<string, string> } : {}),
        ...(init?.signal ? { signal: init.signal } : {}),
      },
      limits,
    );
    return {
      ok: a.ok,
      status: a.status,
      headers: a.headers ?? new Headers(),
      json: a.json,
      text: a.text,
    } as unknown as Response;
  }) as typeof fetch;
}

/**
 * GET and parse JSON within limits (`boundedGet`), refusing what a proxy, a CDN or a rate limiter sends instead of
 * data: a non-2xx status (429/418 carry their Retry-After), an empty body, an HTML page, and JSON cut short. The body
 * is parsed off the main thread.
 */
export async function getJson(
  fetchImpl: FetchLike,
  url: string,
  headers: Record<string, string> = {},
  limits: ReadLimits = DEFAULT_READ_LIMITS,
): Promise<unknown> {
  const res = await boundedGet(
    fetchImpl,
    url,
    { headers: { accept: "application/json", ...headers } },
    limits,
  );
  if (!res.ok) {
    const wait =
      res.status === 429 || res.status === 418 ? retryAfterSeconds(res.headers?.get("retry-after")) : null;
    const text = new TextDecoder().decode(res.bytes.subarray(0, 400));
    throw new HttpError(url, res.status, /^\s*</.test(text) ? "(HTML page)" : text.slice(0, 200), wait);
  }
  return res.json();
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}
