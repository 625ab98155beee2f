import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { fetchPayingV1, payingFetch } from "../../scripts/buyer.js";
import { CSV_COLUMNS, usd } from "../../src/ops/receipts.js";
import { jsonInit, useDevnetServer } from "../helpers/devnet-server.js";

/*
 * The accounting export against real money movement: paid calls on the embedded devnet (v2 and v1, several routes,
 * a pp_ref, one refused call that must not be billed), then `npm run receipts -- --csv` on the server's ledger. Its
 * total must equal what PAY_TO gained on chain, and the /metrics counters must have moved by the same calls.
 */
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAX = 1_000_000n;
const srv = useDevnetServer("p402-receipts-e2e-");
const { devnet, url, metricsUrl } = srv;

async function receiptsCsv(args: string[]): Promise<Record<string, string>[]> {
  const env: Record<string, string | undefined> = { ...process.env, LEDGER_PATH: srv.ledgerPath };
  delete env.FACILITATOR_URL;
  delete env.CDP_API_KEY_ID;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "scripts/receipts.ts", "--csv", ...args],
    { cwd: ROOT, env },
  );
  const [header, ...lines] = stdout.trimEnd().split("\r\n");
  expect(header).toBe(CSV_COLUMNS.join(","));
  // No field in this export contains a comma or a quote (routes, hex, ISO times, pp_ref), so a split suffices.
  return lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [CSV_COLUMNS[i] as string, v])));
}

describe("npm run receipts on the devnet", () => {
  it("CSV totals equal PAY_TO's on-chain USDC balance change; metrics count the same calls", async () => {
    const d = devnet();
    const before = await d.balanceOf(d.payTo);
    const [b1, b2] = [d.buyers[4]!, d.buyers[5]!];
    const v2 = payingFetch(b1.privateKey, MAX);

    const calls = [
      await v2(url("/v1/unlocks/upcoming?days=30&pp_ref=acct.test")),
      await v2(url("/v1/token/risk-summary"), jsonInit({ token: "ARB" })),
      await v2(
        url("/v1/benchmark/endpoint"),
        jsonInit({ endpoint_url: "https://2s.io/api/crypto/token-price" }),
      ),
      (await fetchPayingV1(url("/v1/unlocks/upcoming?days=7"), { method: "GET" }, b2.privateKey, MAX))
        .response,
    ];
    for (const res of calls) expect(res.status, await res.clone().text()).toBe(200);
    // Refused before payment (unknown token): no receipt, no money.
    const refused = await v2(url("/v1/token/risk-summary"), jsonInit({ token: "NOPE-NOT-A-TOKEN" }));
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(refused.status).not.toBe(402);

    const gained = (await d.balanceOf(d.payTo)) - before;
    expect(gained).toBe(20_000n + 250_000n + 50_000n + 20_000n);

    const rows = await receiptsCsv([]);
    const receipts = rows.filter((r) => r.kind === "receipt");
    expect(receipts).toHaveLength(4);
    const total = rows.find((r) => r.kind === "total");
    expect(total?.amount_atomic).toBe(gained.toString());
    expect(total?.amount_usd).toBe(usd(gained));
    expect(total?.calls).toBe("4");
    const sum = (kind: string) =>
      rows.filter((r) => r.kind === kind).reduce((s, r) => s + BigInt(r.amount_atomic ?? "0"), 0n);
    expect(sum("total_route")).toBe(gained);
    expect(sum("total_day")).toBe(gained);
    expect(sum("receipt")).toBe(gained);

    // One network for v1 and v2 alike; devnet transactions get no explorer link.
    expect(new Set(receipts.map((r) => r.network))).toEqual(new Set(["eip155:8453"]));
    expect(receipts.map((r) => r.x402_version).sort()).toEqual(["1", "2", "2", "2"]);
    for (const r of receipts) {
      expect(r.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(r.tx_url).toBe("");
      expect(r.status).toBe("settled");
    }
    expect(receipts.find((r) => r.pp_ref === "acct.test")?.route).toBe("GET /v1/unlocks/upcoming");

    // A date range holding today (and tomorrow, in case the run straddles midnight UTC) has them all; a past one none.
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const inRange = await receiptsCsv(["--from", today, "--to", tomorrow]);
    expect(inRange.find((r) => r.kind === "total")?.amount_atomic).toBe(gained.toString());
    const past = await receiptsCsv(["--from", "2020-01-01", "--to", "2020-01-31"]);
    expect(past.find((r) => r.kind === "total")).toMatchObject({ amount_atomic: "0", calls: "0" });

    const metrics = await (await fetch(metricsUrl("/metrics"))).text();
    const series = (route: string, version: string) =>
      Number(
        new RegExp(
          `^pressure402_payments_total\\{route="${route}",x402_version="${version}",outcome="settled"\\} (\\d+)$`,
          "m",
        ).exec(metrics)?.[1] ?? "0",
      );
    expect(series("GET /v1/unlocks/upcoming", "2")).toBe(1);
    expect(series("GET /v1/unlocks/upcoming", "1")).toBe(1);
    expect(series("POST /v1/token/risk-summary", "2")).toBe(1);
    expect(series("POST /v1/benchmark/endpoint", "2")).toBe(1);
    const revenue = [...metrics.matchAll(/^pressure402_revenue_usdc_atomic_total\{[^}]*\} (\d+)$/gm)].reduce(
      (s, m) => s + BigInt(m[1] ?? "0"),
      0n,
    );
    expect(revenue).toBe(gained);
  }, 120_000);
});
