import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  CatalogValidationError,
  catalogFromSnapshot,
  defaultSnapshotPath,
  loadCatalog,
  repoRoot,
  validateSnapshot,
} from "../../src/store/catalog.js";
import { buildSnapshotFromCompiledCatalog, toIsoUtc } from "../../src/benchmark/compiled-catalog.js";
import {
  atomicToUsd,
  numberToDecimalString,
  toCaip2,
  usdcDecimals,
  usdToAtomic,
} from "../../src/benchmark/money.js";

const shared = join(repoRoot(), "..", "shared", "data", "x402-catalog", "catalog.json");
const snapshotJson = (): Record<string, unknown> & { endpoints: Record<string, unknown>[] } =>
  JSON.parse(readFileSync(defaultSnapshotPath(), "utf8"));

describe("shipped catalog snapshot", () => {
  it("loads and validates from the default path with provenance on every entry", () => {
    const catalog = loadCatalog();
    expect(catalog.entries.length).toBe(309);
    expect(catalog.generated_at).toBe("2026-11-22T00:00:00.000Z");
    const source = catalog.sourceById.get("x402-catalog");
    expect(source?.compiled_on).toBe("2026-11-22");
    expect(source?.method.length).toBeGreaterThan(100);
    for (const e of catalog.entries) {
      expect(e.source_id).toBe("x402-catalog");
      expect(e.compiled_on).toBe("2026-11-22");
      expect(e.source_url.length).toBeGreaterThan(0);
    }
    expect(catalog.byCategory.get("data")?.length).toBe(199);
    expect(catalog.byHost.get("api.vaults.fyi")?.length).toBe(14);
  });

  it.skipIf(!existsSync(shared))(
    "is exactly what scripts/build-catalog.ts builds from ../shared/data/x402-catalog",
    () => {
      const rebuilt = buildSnapshotFromCompiledCatalog(
        JSON.parse(readFileSync(shared, "utf8")),
        "../shared/data/x402-catalog/catalog.json",
      );
      expect(JSON.parse(JSON.stringify(rebuilt))).toEqual(snapshotJson());
    },
  );

  it("keeps every observed fact of the compiled catalog and derives atomic amounts exactly", () => {
    const raw = existsSync(shared) ? JSON.parse(readFileSync(shared, "utf8")) : null;
    const snap = snapshotJson();
    snap.endpoints.forEach((e, i) => {
      if (raw !== null) {
        const r = raw.endpoints[i];
        expect([e.url, e.method, e.price_usd, e.network, e.pay_to, e.category]).toEqual([
          r.url,
          r.method,
          r.price_usd,
          r.network,
          r.pay_to,
          r.category,
        ]);
        if (r.amount_atomic !== null) expect(e.amount_atomic).toBe(r.amount_atomic);
      }
      if (e.amount_basis === "derived_from_usd") {
        expect(atomicToUsd(e.amount_atomic as string, 6)).toBe(e.price_usd);
      }
    });
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
