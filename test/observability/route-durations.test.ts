import client from "prom-client";
import { describe, expect, it } from "vitest";
import { routeDurations } from "../../src/observability/metrics.js";

describe("the HTTP duration histogram", () => {
  it("exposes cumulative buckets, sum and count per method, route and status, as prom-client would", async () => {
    const registry = new client.Registry();
    const durations = routeDurations();
    registry.registerMetric(durations as unknown as client.Metric);
    durations.observe("GET", "/v1/unlocks/upcoming", 402, 0.004);
    durations.observe("GET", "/v1/unlocks/upcoming", 402, 0.02);
    durations.observe("GET", "/v1/unlocks/upcoming", 200, 12);
    const text = await registry.metrics();
    const at = (labels: string) => {
      const m = new RegExp(
        `^http_request_duration_seconds${labels.replace(/[{}+.]/g, "\\$&")} (\\S+)$`,
        "m",
      ).exec(text);
      return m ? Number(m[1]) : undefined;
    };
    const paidLabels = 'method="GET",route="/v1/unlocks/upcoming",status_code="402"';
    expect(text).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);
    expect(at(`_bucket{le="0.005",${paidLabels}}`)).toBe(1);
    expect(at(`_bucket{le="0.01",${paidLabels}}`)).toBe(1);
    expect(at(`_bucket{le="0.025",${paidLabels}}`)).toBe(2);
    expect(at(`_bucket{le="+Inf",${paidLabels}}`)).toBe(2);
    expect(at(`_sum{${paidLabels}}`)).toBeCloseTo(0.024, 10);
    expect(at(`_count{${paidLabels}}`)).toBe(2);
    const okLabels = 'method="GET",route="/v1/unlocks/upcoming",status_code="200"';
    expect(at(`_bucket{le="10",${okLabels}}`)).toBe(0);
    expect(at(`_bucket{le="+Inf",${okLabels}}`)).toBe(1);
    expect(at(`_count{${okLabels}}`)).toBe(1);
    durations.reset();
    expect(await registry.metrics()).not.toMatch(/_count\{/);
  });
});
