/** Minimal JSON GET with a timeout; adapters take `fetchImpl` so tests can point them at a local server. */
export type FetchLike = (
  url: string,
  init?: { headers?: Record<string, string>; signal?: AbortSignal },
) => Promise<{
  ok: boolean;
  status: number;
  json(): Promise<unknown>;
  text(): Promise<string>;
}>;

export class HttpError extends Error {
  constructor(
    readonly url: string,
    readonly status: number,
    detail: string,
  ) {
    super(`GET ${url} failed: ${status} ${detail}`.trim());
    this.name = "HttpError";
  }
}

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
  if (!res.ok) throw new HttpError(url, res.status, (await res.text()).slice(0, 200));
  return res.json();
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}
