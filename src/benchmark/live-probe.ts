/**
 * One unpaid request to an x402 endpoint to read the price in its 402 answer — v2 header
 * PAYMENT-REQUIRED (base64 JSON) or v1 JSON body `accepts[].maxAmountRequired`.
 *
 * SSRF guard: the host is resolved first and every resolved address must be public (see
 * ip-guard.ts) unless the host is allow-listed; the connection then goes to the address that was
 * checked (no second lookup, so DNS rebinding cannot swap it); redirects are never followed; the
 * whole exchange has one deadline and the body a byte cap.
 */

import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { BASE_MAINNET } from "../chain/networks.js";
import { atomicToUsd } from "../chain/usdc.js";
import type { RawAccept } from "./bazaar.js";
import { type AddressClass, classifyAddress, isIpLiteral } from "./ip-guard.js";
import { toCaip2, usdcDecimals } from "./money.js";

export const PROBE_TIMEOUT_MS = 3000;
export const PROBE_MAX_BYTES = 64 * 1024;

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export interface ProbeOptions {
  /** Hostnames or IP literals exempt from the address check (e.g. "127.0.0.1" in tests). */
  allowHosts?: readonly string[];
  timeoutMs?: number;
  maxBytes?: number;
  /** DNS resolution; defaults to the system resolver (all addresses). */
  resolve?: Resolver;
  clock?: () => Date;
  /**
   * Answer every failure at the deadline, not when it happened, so the time to an answer does
   * not tell a closed port from a filtered one or an open non-x402 one.
   */
  uniformFailureTiming?: boolean;
}

export interface ProbeObservation {
  url: string;
  status: 402;
  x402_version: 1 | 2;
  amount_atomic: string;
  /** USD for known USDC assets, else null. */
  usd: number | null;
  network: string | null;
  asset: string | null;
  pay_to: string | null;
  scheme: string | null;
  observed_at: string;
  connected_address: string;
}

export type ProbeFailure =
  | "template_url"
  | "unsupported_scheme"
  | "refused_address"
  | "unresolvable"
  | "redirect_not_followed"
  | "not_402"
  | "no_price_in_402"
  | "too_large"
  | "timeout"
  | "network_error";

export type ProbeResult =
  | { ok: true; observation: ProbeObservation }
  | { ok: false; reason: ProbeFailure; detail: string };

const defaultResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

function fail(reason: ProbeFailure, detail: string): ProbeResult {
  return { ok: false, reason, detail };
}

type AcceptLike = RawAccept;

/** Picks the requirement to report: Base USDC first, then any with an atomic amount. */
export function pickAccept(
  accepts: readonly AcceptLike[],
  version: 1 | 2,
): (AcceptLike & { atomic: string }) | null {
  const withAmount = accepts
    .map((a) => {
      const raw = version === 1 ? (a.maxAmountRequired ?? a.amount) : (a.amount ?? a.maxAmountRequired);
      return typeof raw === "string" && /^\d+$/.test(raw) ? { ...a, atomic: raw } : null;
    })
    .filter((a): a is AcceptLike & { atomic: string } => a !== null);
  const baseUsdc = withAmount.find((a) => {
    const net = toCaip2(a.network);
    return (
      net === BASE_MAINNET.caip2 && usdcDecimals(net, typeof a.asset === "string" ? a.asset : null) !== null
    );
  });
  return baseUsdc ?? withAmount[0] ?? null;
}

/** Reads the price out of a 402 answer: the v2 header wins, the v1 body is the fallback. */
export function priceFrom402(
  headerValue: string | undefined,
  body: string,
): { version: 1 | 2; accept: AcceptLike & { atomic: string } } | { error: string } {
  if (headerValue !== undefined && headerValue.length > 0) {
    try {
      const required = decodePaymentRequiredHeader(headerValue);
      const accept = pickAccept(Array.isArray(required.accepts) ? required.accepts : [], 2);
      if (accept !== null) return { version: 2, accept };
    } catch {
      // fall through to the body: some servers send a malformed header next to a valid v1 body
    }
  }
  try {
    const parsed = JSON.parse(body) as { x402Version?: unknown; accepts?: unknown };
    if (Array.isArray(parsed.accepts)) {
      const version = parsed.x402Version === 2 ? 2 : 1;
      const accept = pickAccept(parsed.accepts as AcceptLike[], version);
      if (accept !== null) return { version, accept };
    }
  } catch {
    // not JSON
  }
  return { error: "the 402 answer carried no readable PAYMENT-REQUIRED header or v1 accepts[] amount" };
}

/** Checks the host and returns the one address to connect to, or why it is refused. */
export async function resolveSafely(
  hostname: string,
  opts: Pick<ProbeOptions, "allowHosts" | "resolve">,
): Promise<{ ok: true; address: ResolvedAddress } | { ok: false; reason: ProbeFailure; detail: string }> {
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  const allowed = (opts.allowHosts ?? []).some((h) => h.toLowerCase() === host.toLowerCase());
  let addresses: ResolvedAddress[];
  if (isIpLiteral(host)) {
    addresses = [{ address: host, family: host.includes(":") ? 6 : 4 }];
  } else {
    try {
      addresses = await (opts.resolve ?? defaultResolver)(host);
    } catch (err) {
      return {
        ok: false,
        reason: "unresolvable",
        detail: `cannot resolve ${host}: ${(err as Error).message}`,
      };
    }
    if (addresses.length === 0)
      return { ok: false, reason: "unresolvable", detail: `no addresses for ${host}` };
  }
  if (!allowed) {
    // Every address must be public: a name that also resolves somewhere private is refused.
    const bad: { address: string; cls: AddressClass }[] = [];
    for (const a of addresses) {
      const cls = classifyAddress(a.address);
      if (cls !== "public") bad.push({ address: a.address, cls });
    }
    if (bad.length > 0) {
      return {
        ok: false,
        reason: "refused_address",
        detail: `refused ${host}: ${bad.map((b) => `${b.address} is ${b.cls.replace("_", "-")}`).join(", ")}`,
      };
    }
  }
  return { ok: true, address: addresses[0] as ResolvedAddress };
}

/** Performs the probe. Never throws; every failure is a reason. */
export async function probeEndpoint(endpointUrl: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const timeoutMs = opts.timeoutMs ?? PROBE_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? PROBE_MAX_BYTES;
  const clock = opts.clock ?? (() => new Date());
  let url: URL;
  try {
    url = new URL(endpointUrl);
  } catch {
    return fail("unsupported_scheme", "not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail("unsupported_scheme", url.protocol);
  if (/(^|\/)(:[A-Za-z_]|%7B|\{)/i.test(url.pathname)) {
    return fail(
      "template_url",
      "the URL still contains path placeholders; there is nothing concrete to call",
    );
  }
  if (url.username !== "" || url.password !== "")
    return fail("unsupported_scheme", "URLs with credentials are not probed");

  const deadline = Date.now() + timeoutMs;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ProbeResult>((res) => {
    timer = setTimeout(() => {
      abort.abort();
      res(fail("timeout", `no complete answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  const work = (async (): Promise<ProbeResult> => {
    const resolved = await resolveSafely(url.hostname, opts);
    if (!resolved.ok) return fail(resolved.reason, resolved.detail);
    if (Date.now() >= deadline) return fail("timeout", "resolution used the whole time budget");
    return request(url, resolved.address, deadline, maxBytes, clock, abort.signal);
  })();
  if (opts.uniformFailureTiming === true) {
    const first = await Promise.race([work, timeout]);
    if (first.ok) {
      clearTimeout(timer);
      return first;
    }
    await timeout;
    return first;
  }
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function request(
  url: URL,
  pinned: ResolvedAddress,
  deadline: number,
  maxBytes: number,
  clock: () => Date,
  signal: AbortSignal,
): Promise<ProbeResult> {
  return new Promise((resolvePromise) => {
    let settled = false;
    const done = (r: ProbeResult) => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolvePromise(r);
    };
    // Connect to the checked address only; Host header and TLS SNI still use the hostname.
    const pinnedLookup: LookupFunction = (_host, options, cb) => {
      if ((options as { all?: boolean }).all) {
        (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
          { address: pinned.address, family: pinned.family },
        ]);
      } else cb(null, pinned.address, pinned.family);
    };
    const mod = url.protocol === "https:" ? https : http;
    const req = mod.request(url, {
      method: "GET",
      agent: false,
      signal,
      lookup: pinnedLookup,
      timeout: Math.max(1, deadline - Date.now()),
      maxHeaderSize: 32 * 1024,
      headers: { accept: "application/json", "user-agent": "pressure402-benchmark-probe/1" },
    });
    req.on("timeout", () => done(fail("timeout", "the endpoint did not answer in time")));
    req.on("error", (err) => done(fail("network_error", err.message)));
    req.on("response", (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        done(fail("redirect_not_followed", `answered ${status}; redirects are not followed`));
        return;
      }
      if (status !== 402) {
        done(fail("not_402", `answered ${status}, not 402 Payment Required`));
        return;
      }
      const declared = Number(res.headers["content-length"] ?? "0");
      if (declared > maxBytes) {
        done(fail("too_large", `declared body of ${declared} bytes exceeds ${maxBytes}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          done(fail("too_large", `body exceeds ${maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on("error", (err) => done(fail("network_error", err.message)));
      res.on("end", () => {
        if (settled) return;
        const header = res.headers["payment-required"];
        const parsed = priceFrom402(
          Array.isArray(header) ? header[0] : header,
          Buffer.concat(chunks).toString("utf8"),
        );
        if ("error" in parsed) {
          done(fail("no_price_in_402", parsed.error));
          return;
        }
        const network = toCaip2(parsed.accept.network);
        const asset = typeof parsed.accept.asset === "string" ? parsed.accept.asset : null;
        const decimals = usdcDecimals(network, asset);
        done({
          ok: true,
          observation: {
            url: url.toString(),
            status: 402,
            x402_version: parsed.version,
            amount_atomic: parsed.accept.atomic,
            usd: decimals === null ? null : atomicToUsd(parsed.accept.atomic, decimals),
            network,
            asset,
            pay_to: typeof parsed.accept.payTo === "string" ? parsed.accept.payTo : null,
            scheme: typeof parsed.accept.scheme === "string" ? parsed.accept.scheme : null,
            observed_at: clock().toISOString(),
            connected_address: pinned.address,
          },
        });
      });
    });
    req.end();
  });
}
