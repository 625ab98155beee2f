import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import client from "prom-client";
import { registerFreshnessMetrics } from "../../src/observability/freshness.js";
import { type TestApp, testApp } from "../helpers/app.js";

/*
 * The shipped monitoring: deploy/prometheus/alerts.yml passes `promtool check rules` and its unit tests
 * (alerts.test.yml: each alert fires on the series that should fire it), and every metric the rules and the Grafana
 * dashboard query is one the service exports.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const RULES = join(ROOT, "deploy/prometheus/alerts.yml");
const DASHBOARD = join(ROOT, "deploy/grafana/pressure402.json");

/** promtool from PATH or Debian's package; scripts/test-prerequisites.sh installs it (`apt-get install prometheus`). */
function promtool(): string {
  const found = spawnSync("sh", ["-c", "command -v promtool"], { encoding: "utf8" }).stdout.trim();
  const path = found || ["/usr/bin/promtool", "/usr/local/bin/promtool"].find((p) => existsSync(p));
  if (!path)
    throw new Error(
      "promtool not found: install it (Debian: apt-get install -y prometheus; `npm test` does it as root via scripts/test-prerequisites.sh)",
    );
  return path;
}

/** Metric names a PromQL text uses (histogram suffixes folded onto the histogram's name). */
function metricNames(promql: string): Set<string> {
  const names = promql.match(/\b(pressure402_[a-z0-9_]+|http_request_duration_seconds[a-z_]*|up)\b/g) ?? [];
  return new Set(names.map((n) => n.replace(/_(bucket|count|sum)$/, "")));
}

/** Series the data refresh registers (absent from an app built without it); named in the rules all the same. */
const DATA_REFRESH = new Set([
  "pressure402_data_source_age_seconds",
  "pressure402_data_source_period_seconds",
  "pressure402_data_source_granularity_seconds",
  "pressure402_data_source_last_success_timestamp_seconds",
]);

describe("deploy/prometheus/alerts.yml", () => {
  it("passes promtool check rules", () => {
    const out = execFileSync(promtool(), ["check", "rules", RULES], { encoding: "utf8" });
    expect(out).toMatch(/SUCCESS: 9 rules found/);
  });

  it("passes its promtool unit tests (each alert fires when it should, not before)", () => {
    const run = spawnSync(promtool(), ["test", "rules", "alerts.test.yml"], {
      cwd: join(ROOT, "deploy/prometheus"),
      encoding: "utf8",
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("SUCCESS");
  });

  it("the README's data-source rules are the shipped ones, word for word", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const shipped = readFileSync(RULES, "utf8");
    /** Each rule's alert name, expression and `for`, from `- alert:` to its `for:` line. */
    const rulesIn = (text: string) =>
      new Map(
        [...text.matchAll(/- alert: (Pressure402DataSource\w+)\n([\s\S]*?)\n\s*for: (\S+)/g)].map((m) => [
          m[1] as string,
          `${(m[2] as string)
            .split("\n")
            .filter((l) => !l.trim().startsWith("#"))
            .map((l) => l.trim())
            .join(" ")} for ${m[3]}`,
        ]),
      );
    const fromReadme = rulesIn(readme);
    expect([...fromReadme.keys()].sort()).toEqual([
      "Pressure402DataSourceNeverRefreshed",
      "Pressure402DataSourceStale",
    ]);
    const fromShipped = rulesIn(shipped);
    for (const [name, rule] of fromReadme) expect(rule, name).toBe(fromShipped.get(name));
  });

  it("covers what operators are paged for", () => {
    const rules = readFileSync(RULES, "utf8");
    for (const alert of [
      "Pressure402FacilitatorErrors",
      "Pressure402CircuitOpen",
      "Pressure402ReceiptsStuckSettling",
      "Pressure402DataSourceStale",
      "Pressure402DataSourceNeverRefreshed",
      "Pressure402NoPaidCalls",
      "Pressure402ServerErrors",
    ])
      expect(rules).toContain(`alert: ${alert}`);
  });
});

describe("the rules and the dashboard query metrics the service exports", () => {
  let t: TestApp;
  let exported: Set<string>;
  beforeAll(async () => {
    t = await testApp();
    // One request of each kind so that every lazily created series exists.
    await t.app.inject({ url: "/health" });
    await t.app.inject({ url: "/no-such-path" });
    t.app.observability.metrics.observer.facilitatorCall({ operation: "verify", seconds: 0.01, ok: true });
    t.app.observability.metrics.observer.paymentOutcome({
      route: "GET /v1/unlocks/upcoming",
      x402Version: 2,
      outcome: "settled",
      amount: "20000",
    });
    t.app.observability.metrics.observer.reconcilerBacklog(0);
    const text = await t.app.observability.metrics.scrape();
    exported = new Set(
      text
        .split("\n")
        .filter((l) => l.startsWith("# TYPE "))
        .map((l) => l.split(" ")[2] as string),
    );
  });
  afterAll(() => t.close());

  it("the data-refresh series the rules name are exported by a refreshing service", async () => {
    const registry = new client.Registry();
    const at = "2026-11-26T10:00:00.000Z";
    registerFreshnessMetrics(
      registry,
      {
        intervalSeconds: 3600,
        sources: () => [
          {
            source: "binance",
            last_attempt: at,
            last_success: at,
            data_as_of: "2026-11-25",
            last_error: null,
            updated: 1,
            failed: 0,
            retry_not_before: null,
          },
        ],
        circulating: () => new Map(),
      },
      () => new Date("2026-11-26T12:00:00.000Z"),
    );
    const text = await registry.metrics();
    for (const name of DATA_REFRESH) expect(text).toContain(`# TYPE ${name} gauge`);
    // The candle of 2026-11-25 is current to 2026-11-26 00:00 UTC: 12 hours before the scrape.
    expect(text).toMatch(/pressure402_data_source_age_seconds\{source="binance"\} 43200/);
    expect(text).toMatch(/pressure402_data_source_granularity_seconds\{source="binance"\} 86400/);
  });

  it("the age exists from the start, from the served data's as-of, before any refresh succeeds", async () => {
    const registry = new client.Registry();
    const never = (source: "binance" | "coingecko") => ({
      source,
      last_attempt: "2026-11-26T11:00:00.000Z",
      last_success: null,
      data_as_of: null,
      last_error: "1 of 1 failed, previous data kept: ARB (unreachable)",
      updated: 0,
      failed: 1,
      retry_not_before: null,
    });
    registerFreshnessMetrics(
      registry,
      {
        intervalSeconds: 3600,
        sources: () => [never("binance"), never("coingecko")],
        circulating: () => new Map(),
      },
      () => new Date("2026-11-26T12:00:00.000Z"),
      () => ({ binance: "2026-03-18" }),
    );
    const text = await registry.metrics();
    // 2026-03-19 00:00 UTC to 2026-11-26 12:00 UTC: 252.5 days.
    expect(text).toMatch(/pressure402_data_source_age_seconds\{source="binance"\} 21816000\n/);
    // No data at all from coingecko: no age (the never-refreshed rule covers it), and no success timestamp.
    expect(text).not.toMatch(/pressure402_data_source_age_seconds\{source="coingecko"\}/);
    expect(text).not.toMatch(/pressure402_data_source_last_success_timestamp_seconds\{/);
  });

  it("alerts.yml", () => {
    const used = metricNames(readFileSync(RULES, "utf8"));
    expect(used.size).toBeGreaterThan(5);
    for (const name of used) if (name !== "up" && !DATA_REFRESH.has(name)) expect(exported).toContain(name);
  });

  it("deploy/grafana/pressure402.json", () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, "utf8")) as {
      uid: string;
      panels: { title: string; targets: { expr: string }[] }[];
    };
    expect(dashboard.uid).toBe("pressure402");
    const ids = new Set<string>();
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets) for (const n of metricNames(target.expr)) ids.add(n);
    }
    for (const name of ids) if (!DATA_REFRESH.has(name)) expect(exported, name).toContain(name);
  });
});
