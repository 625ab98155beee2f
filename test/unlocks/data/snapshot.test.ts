import { describe, expect, it } from "vitest";
import {
  defaultSnapshotPath,
  loadUnlockStore,
  SnapshotValidationError,
  validateUnlockSnapshot,
} from "../../../src/unlocks/data/snapshot.js";
import type { UnlockSnapshot } from "../../../src/unlocks/data/types.js";

const shipped = loadUnlockStore().snapshot;
const clone = (): UnlockSnapshot => structuredClone(shipped);

function problemsOf(raw: unknown): string[] {
  try {
    validateUnlockSnapshot(raw, "test");
  } catch (err) {
    expect(err).toBeInstanceOf(SnapshotValidationError);
    return [...(err as SnapshotValidationError).problems];
  }
  throw new Error("expected the snapshot to be rejected");
}

describe("unlock snapshot", () => {
  it("ships the 46 curated schedules and 109 wide-set tokens with real market series and nothing generated", () => {
    expect(shipped.tokens).toHaveLength(155);
    expect(shipped.tokens.filter((t) => t.schedule_set === "curated")).toHaveLength(46);
    expect(shipped.tokens.filter((t) => t.schedule_set === "wide")).toHaveLength(109);
    expect(shipped.as_of).toBe("2026-11-22");
    expect(shipped.synthetic).toBe(false);
    expect(shipped.generator).toBeNull();
    expect(shipped.tokens.every((t) => !t.market.synthetic && t.prices?.synthetic === false)).toBe(true);
    // No real depth or circulating-supply series exists: unknown, never generated.
    expect(
      shipped.tokens.every((t) => t.market.depth_2pct_usd === null && t.supply.circulating === null),
    ).toBe(true);
    const curated = shipped.tokens.filter((t) => t.schedule_set === "curated");
    // 505 compiled pieces, less the 32 of emission sections (reward and incentive pools), never scored as vesting.
    expect(curated.reduce((n, t) => n + t.schedules.length, 0)).toBe(473);
    const arb = shipped.tokens.find((t) => t.symbol === "ARB")!;
    expect(arb.sources[0]).toContain("emissions-adapters");
    expect(arb.defillama_slug).toBe("arbitrum");
  });

  it("resolves the default path from the module, not the working directory", () => {
    const cwd = process.cwd();
    try {
      process.chdir("/");
      expect(defaultSnapshotPath()).toMatch(/\/data\/unlocks\.snapshot\.json$/);
      expect(loadUnlockStore().tokens.length).toBe(155);
    } finally {
      process.chdir(cwd);
    }
  });

  it("names the record and the field of a schema violation", () => {
    const bad = clone();
    bad.tokens[0]!.schedules[1]!.start = "16/04/2024";
    expect(problemsOf(bad)).toContainEqual(
      expect.stringMatching(/^tokens\[0\] \(ARB\)\.schedules\[1\]\.start: /),
    );
  });

  it("rejects impossible dates, linear pieces without an end, and duplicate symbols", () => {
    const bad = clone();
    bad.tokens[1]!.schedules[0]!.start = "2024-02-31";
    const lin = bad.tokens[0]!.schedules.findIndex((p) => p.kind === "linear");
    bad.tokens[0]!.schedules[lin]!.end = null;
    bad.tokens[2]!.symbol = bad.tokens[0]!.symbol.toLowerCase();
    const problems = problemsOf(bad);
    expect(problems).toContainEqual(
      `tokens[1] (${bad.tokens[1]!.symbol}).schedules[0].start: not a calendar date (2024-02-31)`,
    );
    expect(problems).toContainEqual(
      `tokens[0] (ARB).schedules[${lin}].end: a linear piece needs an end after its start`,
    );
    expect(problems).toContainEqual("tokens[2] (arb).symbol: duplicate of tokens[0]");
  });

  it("rejects a price series whose volume length differs from its closes", () => {
    const bad = clone();
    bad.tokens[3]!.prices!.volume_usd!.pop();
    expect(problemsOf(bad).join("\n")).toMatch(/tokens\[3\] \(\w+\)\.prices\.volume_usd: length/);
  });

  it("rejects missing fields with their path", () => {
    const bad = clone() as unknown as { tokens: Record<string, unknown>[] };
    delete (bad.tokens[4]!.market as Record<string, unknown>).price_usd;
    expect(problemsOf(bad).join("\n")).toMatch(/tokens\[4\] \(\w+\)\.market: .*price_usd/);
  });
});
