import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readShippedMarket } from "../../../scripts/market-files.js";
import { resourceKey } from "../../../src/benchmark/bazaar.js";
import type { CatalogSnapshot } from "../../../src/benchmark/catalog/schema.js";
import {
  CatalogValidationError,
  catalogFromSnapshot,
  defaultSnapshotPath,
  loadCatalog,
  repoRoot,
  validateSnapshot,
} from "../../../src/benchmark/catalog/snapshot.js";
import { toIsoUtc } from "../../../src/benchmark/compiled-catalog.js";
import {
  isTestnet,
  numberToDecimalString,
  toCaip2,
  usdcDecimals,
  usdToAtomic,
} from "../../../src/benchmark/money.js";
import { atomicToUsd } from "../../../src/chain/usdc.js";

const snapshotJson = (): Record<string, unknown> & { endpoints: Record<string, unknown>[] } =>
  JSON.parse(readFileSync(defaultSnapshotPath(), "utf8"));

describe("shipped market snapshot", () => {
  const catalog = loadCatalog();

  it("is exactly what the build makes from the compiled catalog and the shipped recordings (no ../shared)", () => {
    expect(JSON.parse(JSON.stringify(readShippedMarket()))).toEqual(snapshotJson());
  });

  it("holds at least 1,000 distinct paid mainnet endpoints from the Bazaar recordings, each with its provenance", () => {
    const listed = catalog.entries.filter((e) => e.source_id.startsWith("bazaar:"));
    const paidMainnet = listed.filter(
      (e) =>
        e.amount_atomic !== null &&
        BigInt(e.amount_atomic) > 0n &&
        e.network !== null &&
        !isTestnet(e.network),
    );
    const distinct = new Set(paidMainnet.map((e) => resourceKey(e.url)));
    expect(distinct.size).toBe(paidMainnet.length);
    expect(distinct.size).toBeGreaterThanOrEqual(1000);
    for (const e of listed) {
      const source = catalog.sourceById.get(e.source_id);
      expect(source?.kind).toBe("bazaar_recording");
      expect(e.source_url).toBe("https://api.cdp.coinbase.com/platform/v2/x402/discovery/resources");
      expect(source?.origin).toMatch(/^recording:cdp-bazaar-/);
      expect(e.observed_at).toMatch(/^202[56]-/);
    }
  });

  it("reports read, kept and dropped counts that add up, per source and overall", () => {
    const snap = snapshotJson() as unknown as CatalogSnapshot;
    let read = 0;
    let kept = 0;
    for (const s of snap.sources) {
      const dropped = Object.values(s.dropped).reduce((a, b) => a + b, 0);
      expect(s.read).toBe(s.kept + dropped);
      read += s.read;
      kept += s.kept;
    }
    const b = snap.build;
    expect([b.read, b.kept]).toEqual([read, kept]);
    expect(b.read - b.kept).toBe(Object.values(b.dropped).reduce((a, c) => a + c, 0));
    expect(b.kept - b.duplicates_merged).toBe(snap.endpoints.length);
    expect(b.dropped.testnet_only).toBeGreaterThan(0);
    expect(snap.sources.reduce((a, s) => a + s.entry_count, 0)).toBe(snap.endpoints.length);
  });

  it("names sources by public URL or recording, never by a path of this machine", () => {
    const text = readFileSync(defaultSnapshotPath(), "utf8");
    expect(text).not.toMatch(/\.\.\/|\/work\/|\/home\/|\/tmp\/|file:|shared\/data/);
    const snap = snapshotJson() as unknown as CatalogSnapshot;
    snap.sources[0] = {
      ...(snap.sources[0] as CatalogSnapshot["sources"][number]),
      origin: "../shared/x.json",
    };
    expect(() => validateSnapshot(snap, "test")).toThrowError("sources[0].origin");
  });

  it("keeps the compiled catalog's facts and derives atomic amounts exactly", () => {
    const compiled = JSON.parse(
      readFileSync(join(repoRoot(), "data", "x402-catalog", "catalog.json"), "utf8"),
    );
    const byUrl = new Map(
      catalog.entries.filter((e) => e.source_id === "x402-catalog").map((e) => [`${e.method} ${e.url}`, e]),
    );
    let seen = 0;
    for (const r of compiled.endpoints) {
      const e = byUrl.get(`${r.method} ${r.url}`);
      if (e === undefined) continue;
      seen++;
      expect([e.price_usd, e.network, e.pay_to, e.category]).toEqual([
        r.price_usd,
        r.network,
        r.pay_to,
        r.category,
      ]);
      if (r.amount_atomic !== null) expect(e.amount_atomic).toBe(r.amount_atomic);
      if (e.amount_basis === "derived_from_usd")
        expect(atomicToUsd(e.amount_atomic as string, 6)).toBe(e.price_usd);
    }
    expect(seen).toBe(catalog.sourceById.get("x402-catalog")?.entry_count);
  });
});

describe("snapshot validation", () => {
  it("names the record index and field of a bad value", () => {
    const snap = snapshotJson();
    (snap.endpoints[7] as Record<string, unknown>).price_usd = "cheap";
    expect(() => validateSnapshot(snap, "test")).toThrowError(CatalogValidationError);
    try {
      validateSnapshot(snap, "test");
    } catch (err) {
      expect((err as Error).message).toContain("endpoints[7].price_usd");
      expect((err as Error).message).toContain("record 7");
    }
  });

  it("rejects missing fields, bad atomic strings, unknown sources and stray properties", () => {
    const cases: [(s: ReturnType<typeof snapshotJson>) => void, string][] = [
      [(s) => delete (s.endpoints[3] as Record<string, unknown>).source_url, "endpoints[3]"],
      [
        (s) => ((s.endpoints[4] as Record<string, unknown>).amount_atomic = "1.5"),
        "endpoints[4].amount_atomic",
      ],
      [(s) => ((s.endpoints[5] as Record<string, unknown>).source_id = "nowhere"), "endpoints[5].source_id"],
      [(s) => ((s.endpoints[6] as Record<string, unknown>).surprise = 1), "endpoints[6]"],
      [
        (s) => ((s.endpoints[8] as Record<string, unknown>).observed_at = "yesterday"),
        "endpoints[8].observed_at",
      ],
    ];
    for (const [mutate, expected] of cases) {
      const snap = snapshotJson();
      mutate(snap);
      expect(() => catalogFromSnapshot(snap)).toThrowError(expected);
    }
  });

  it("reports unreadable files as validation errors", () => {
    expect(() => loadCatalog(join(repoRoot(), "does-not-exist.json"))).toThrowError(CatalogValidationError);
  });
});

describe("money and timestamps", () => {
  it("converts USD prices to exact atomic strings or refuses", () => {
    expect(usdToAtomic(0.0012, 6)).toBe("1200");
    expect(usdToAtomic(5e-6, 6)).toBe("5");
    expect(usdToAtomic(3.6e-5, 6)).toBe("36");
    expect(usdToAtomic(0.005694, 6)).toBe("5694");
    expect(usdToAtomic(25, 6)).toBe("25000000");
    expect(usdToAtomic(1e-7, 6)).toBeNull();
    expect(usdToAtomic(0.1234567, 6)).toBeNull();
    expect(numberToDecimalString(5e-7)).toBe("0.0000005");
    expect(numberToDecimalString(1e21)).toBe("1000000000000000000000");
    expect(atomicToUsd("5694", 6)).toBe(0.005694);
  });

  it("knows USDC only where it is USDC", () => {
    expect(usdcDecimals("eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913")).toBe(6);
    expect(usdcDecimals("eip155:8453", "0x0000000000000000000000000000000000000001")).toBeNull();
    expect(usdcDecimals("eip155:196", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")).toBeNull();
    expect(toCaip2("base")).toBe("eip155:8453");
    expect(toCaip2("base-sepolia")).toBe("eip155:84532");
    expect(toCaip2("no-such-chain")).toBeNull();
  });

  it("reads the timestamp spellings found in listings as UTC", () => {
    expect(toIsoUtc("2026-06-03")).toBe("2026-06-03T00:00:00.000Z");
    expect(toIsoUtc("2026-05-11T07:02:30")).toBe("2026-05-11T07:02:30.000Z");
    expect(toIsoUtc("2026-05-11T00:56:48.476130+00:00")).toBe("2026-05-11T00:56:48.476Z");
    expect(toIsoUtc(1763600000)).toBe("2025-11-20T00:53:20.000Z");
    expect(toIsoUtc("not a date")).toBeNull();
  });
});
