import { BadAnswerError, HttpError } from "../unlocks/ingest/http.js";

/**
 * A source failure in words fit for a public status page: what went wrong, never the URL (a base URL may be an
 * internal address) or a stack.
 */
export function describeError(err: unknown): string {
  if (err instanceof HttpError)
    return `HTTP ${err.status}${err.retryAfterSeconds !== null ? ` (retry after ${err.retryAfterSeconds} s)` : ""}`;
  if (err instanceof BadAnswerError) return err.message.replace(/^GET \S+: /, "");
  const e = err as { name?: string; message?: string; cause?: { code?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return "timed out";
  if (e?.message === "fetch failed" || typeof e?.cause?.code === "string")
    return `unreachable${e.cause?.code ? ` (${e.cause.code})` : ""}`;
  return String(e?.message ?? err)
    .replace(/https?:\/\/\S+/g, "<source>")
    .replace(/\/[\w./-]+/g, (m) => (m.includes("/") && m.length > 20 ? "<path>" : m))
    .slice(0, 200);
}

/** Seconds a source asked us to wait, when the failure is a 429/418 with Retry-After. */
export const retryAfterOf = (err: unknown): number | null =>
  err instanceof HttpError ? err.retryAfterSeconds : null;
