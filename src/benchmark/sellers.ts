/**
 * Who sells an endpoint, for one vote per service. A service is a connected group of listings
 * that share an origin host or a payTo address: the same host is one seller however many wallets
 * it routes to (a marketplace host counts once), and one wallet behind several hosts is one seller
 * (subdomains, preview deployments). The service is named after its host with the most listings.
 */
import type { CatalogEntry } from "./catalog/schema.js";

function hostOf(url: string): string {
  return new URL(url).host.toLowerCase().replace(/^www\./, "");
}

/** EVM addresses compare case-insensitively; other chains' addresses are case-sensitive. */
function payToKey(payTo: string | null): string | null {
  if (payTo === null || payTo.length === 0) return null;
  return /^0x[0-9a-fA-F]{40}$/.test(payTo) ? payTo.toLowerCase() : payTo;
}

/** Service id of every entry, by index. Deterministic for the same entries in the same order. */
export function serviceIds(entries: readonly Pick<CatalogEntry, "url" | "pay_to">[]): string[] {
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    let root = x;
    while (parent.get(root) !== root) root = parent.get(root) as string;
    let cur = x;
    while (cur !== root) {
      const next = parent.get(cur) as string;
      parent.set(cur, root);
      cur = next;
    }
    return root;
  };
  const node = (x: string) => {
    if (!parent.has(x)) parent.set(x, x);
    return x;
  };
  const union = (a: string, b: string) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent.set(ra < rb ? rb : ra, ra < rb ? ra : rb);
  };
  const hosts = entries.map((e) => hostOf(e.url));
  entries.forEach((e, i) => {
    const h = node(`host:${hosts[i]}`);
    const p = payToKey(e.pay_to);
    if (p !== null) union(h, node(`payto:${p}`));
  });
  // Name each group after its host with the most listings (then alphabetically).
  const counts = new Map<string, Map<string, number>>();
  hosts.forEach((h) => {
    const root = find(`host:${h}`);
    const m = counts.get(root) ?? new Map<string, number>();
    m.set(h, (m.get(h) ?? 0) + 1);
    counts.set(root, m);
  });
  const names = new Map<string, string>();
  for (const [root, m] of counts) {
    const best = [...m].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0] as [string, number];
    names.set(root, best[0]);
  }
  return hosts.map((h) => names.get(find(`host:${h}`)) as string);
}

/** The service an unlisted URL would belong to: its host's group, or the host itself. */
export function serviceOfHost(url: string, known: ReadonlyMap<string, string>): string {
  const h = hostOf(url);
  return known.get(h) ?? h;
}

export { hostOf as serviceHost };
