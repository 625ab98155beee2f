/** Minimal JSON GET with a timeout; adapters take `fetchImpl` so tests can point them at a local server. */
export type FetchLike = (
  url: string,
  init?: { headers?: Record<string, string>; signal?: AbortSignal },
) => Promise<{
  ok: boolean;
  status: number;
  headers?: { get(name: string): string | null };
  json(): Promise<unknown>;
  text(): Promise<string>;
}>;

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
export class BadAnswerError extends Error {
  constructor(
    readonly url: string,
    detail: string,
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
 * GET and parse JSON, refusing what a proxy, a CDN or a rate limiter sends instead of data: a non-2xx status (429/418
 * carry their Retry-After), an empty body, an HTML page, and JSON cut short. The body is read as text first so a
 * truncated answer is told apart from a network error.
 */
export async function getJson(
  fetchImpl: FetchLike,
  url: string,
  headers: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<unknown> {
  const res = await fetchImpl(url, {
    headers: { accept: "application/json", ...headers },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) {
    const wait =
      res.status === 429 || res.status === 418 ? retryAfterSeconds(res.headers?.get("retry-after")) : null;
    const text = await res.text().catch(() => "");
    throw new HttpError(url, res.status, /^\s*</.test(text) ? "(HTML page)" : text.slice(0, 200), wait);
  }
  const text = await res.text();
  if (text.trim() === "") throw new BadAnswerError(url, "empty answer");
  if (/^\s*</.test(text)) throw new BadAnswerError(url, "HTML page instead of JSON");
  try {
    return JSON.parse(text);
  } catch {
    throw new BadAnswerError(url, `not valid JSON (${text.length} bytes; cut short?)`);
  }
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}
