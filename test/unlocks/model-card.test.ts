import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCalibration, spliceDoc } from "../../scripts/calibrate.js";
import { repoRoot } from "../../src/files/paths.js";

// The committed model card and figures are what `npm run calibrate` gives from the shipped data (seeded bootstrap:
// deterministic). One run of the whole study: ~20 s of CPU, so the timeout is generous for a busy machine.
describe("docs/risk-model.md", () => {
  it("matches a fresh `npm run calibrate`, figures included", async () => {
    const out = await runCalibration();
    const doc = readFileSync(join(repoRoot(), "docs", "risk-model.md"), "utf8");
    expect(spliceDoc(doc, out.markdown)).toBe(doc);
    for (const [file, svg] of Object.entries(out.figures))
      expect(readFileSync(join(repoRoot(), "docs", file), "utf8"), file).toBe(svg);
    // The card states the figures the issue asks for.
    expect(out.markdown).toMatch(/\*\*\d+ events on \d+ tokens\*\*/);
    expect(out.markdown).toContain("Within 10 %");
    expect(out.markdown).toContain("event − baseline");
  }, 600_000);
});
