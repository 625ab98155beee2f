import { BadAnswerError, HttpError } from "./http.js";

/**
 * An answer that reads fine but cannot be true against what we already hold (a series that moved too far since the
 * last good data, a supply above the maximum). `refused` is the data refused: it is kept aside in DATA_DIR
 * (quarantine) with the reason, and the last good data keeps serving.
 */
export class ImplausibleError extends Error {
  constructor(
    readonly reason: string,
    readonly refused: unknown,
  ) {
    super(`implausible: ${reason}`);
    this.name = "ImplausibleError";
  }
}

/** A source failure's kind, for the status pages and the metric (a closed set: never free text in a label). */
export type FailureKind =
  | "implausible"
  | "too_large"
  | "timeout"
  | "redirect"
  | "not_json"
  | "cut_short"
  | "refused_url"
  | "http"
  | "unreachable"
  | "invalid";

export const FAILURE_KINDS: readonly FailureKind[] = [
  "implausible",
  "too_large",
  "timeout",
  "redirect",
  "not_json",
  "cut_short",
  "refused_url",
  "http",
  "unreachable",
  "invalid",
];

export function failureKind(err: unknown): FailureKind {
  if (err instanceof ImplausibleError) return "implausible";
  if (err instanceof HttpError) return "http";
  if (err instanceof BadAnswerError) return err.fault;
  const e = err as { name?: string; message?: string; cause?: { code?: string } };
  if (e?.name === "TimeoutError" || e?.name === "AbortError") return "timeout";
  if (e?.message === "fetch failed" || typeof e?.cause?.code === "string") return "unreachable";
  return "invalid";
}

/**
 * A source failure in words fit for a public status page: what went wrong, never the URL (a base URL may be an
 * internal address) or a stack.
 */
export function describeError(err: unknown): string {
  if (err instanceof HttpError)
    return `HTTP ${err.status}${err.retryAfterSeconds !== null ? ` (retry after ${err.retryAfterSeconds} s)` : ""}`;
  if (err instanceof BadAnswerError) return err.message.replace(/^GET \S+: /, "");
  if (err instanceof ImplausibleError) return err.message.slice(0, 300);
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

/** One item a source could not update: its public reason, its kind and, when implausible, the data refused. */
export interface ItemFailure {
  readonly item: string;
  readonly error: string;
  readonly kind?: FailureKind;
  /** The refused data, written to the quarantine by the runner (never served, never kept in the status). */
  readonly refused?: unknown;
}

export function failure(item: string, err: unknown): ItemFailure {
  return {
    item,
    error: describeError(err),
    kind: failureKind(err),
    ...(err instanceof ImplausibleError ? { refused: err.refused } : {}),
  };
}
