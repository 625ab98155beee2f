/**
 * What the live probe would refuse, decided before any payment request: an endpoint_url whose
 * host is a non-public address (loopback, private, link-local, metadata, …), a local-only name,
 * or that carries user info. The route answers these with 400, so nobody pays for a refusal.
 */
import { classifyAddress, isIpLiteral } from "./ip-guard.js";
import { type Resolver, resolveSafely } from "./live-probe.js";

export interface Refusal {
  /** Short reason for the problem document; never an address the caller did not send. */
  detail: string;
}

/** Names that only ever mean this machine or its private network. */
const LOCAL_SUFFIXES = [".localhost", ".local", ".internal", ".home.arpa", ".lan"];

/** "an ipv4-mapped", "an unspecified", "a unique-local": the article follows the sound the class name starts with. */
const withArticle = (word: string) => `${/^(?:[aeio]|un(?!i))/i.test(word) ? "an" : "a"} ${word}`;

/** Syntactic check of the URL alone (no DNS): user info, local names, non-public IP literals. */
export function refuseByUrl(endpointUrl: string, allowHosts: readonly string[] = []): Refusal | null {
  let url: URL;
  try {
    url = new URL(endpointUrl);
  } catch {
    return null; // not a URL at all: the route's URL check answers that
  }
  if (url.username !== "" || url.password !== "")
    return { detail: "must not carry user info (user:password@)" };
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const lower = host.toLowerCase().replace(/\.$/, "");
  if (allowHosts.some((h) => h.toLowerCase() === lower)) return null;
  if (
    lower === "localhost" ||
    LOCAL_SUFFIXES.some((s) => lower.endsWith(s)) ||
    (!lower.includes(".") && !isIpLiteral(lower))
  ) {
    return { detail: "must name a public host, not a local or single-label name" };
  }
  if (isIpLiteral(lower)) {
    const cls = classifyAddress(lower);
    if (cls !== "public")
      return { detail: `must not point at ${withArticle(cls.replaceAll("_", "-"))} address` };
  }
  return null;
}

/**
 * The probe's own address check, run ahead of the payment when the probe is going to run:
 * a name that resolves to any non-public address is refused. Unresolvable names are not
 * refused here (the paid answer then says no price was observed).
 */
export async function refuseByDns(
  endpointUrl: string,
  opts: { allowHosts?: readonly string[]; resolve?: Resolver },
): Promise<Refusal | null> {
  const url = new URL(endpointUrl);
  const r = await resolveSafely(url.hostname, opts);
  if (!r.ok && r.reason === "refused_address") {
    return { detail: "must not resolve to a private, loopback, link-local or otherwise non-public address" };
  }
  return null;
}
