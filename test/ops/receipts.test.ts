import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { openSqliteLedger } from "../../src/ledger/sqlite.js";
import { readLedgerReceipts } from "../../src/ops/ledger-reader.js";
import {
  BILLED_STATUSES,
  buildReport,
  caip2,
  csvField,
  isDay,
  type LedgerReceipt,
  toCsv,
  txUrl,
  usd,
} from "../../src/ops/receipts.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const TX = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

const receipt = (over: Partial<LedgerReceipt>): LedgerReceipt => ({
  id: "r",
  route: "GET /v1/unlocks/upcoming",
  x402Version: 2,
  payer: "0x00000000000000000000000000000000000000b0",
  amount: "20000",
  network: "eip155:8453",
  asset: USDC,
  payTo: "0x00000000000000000000000000000000000000aa",
  transaction: TX(1),
  status: "settled",
  createdAt: "2026-11-20T10:00:00.000Z",
  settledAt: "2026-11-20T10:00:01.000Z",
  ppRef: null,
  ...over,
});

describe("receipt fields", () => {
  it("normalises x402 v1 network names to CAIP-2", () => {
    expect(caip2("base")).toBe("eip155:8453");
    expect(caip2("base-sepolia")).toBe("eip155:84532");
    expect(caip2("eip155:8453")).toBe("eip155:8453");
    expect(caip2("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")).toBe("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp");
  });

  it("prints atomic USDC as a six-place USD decimal without floats", () => {
    expect(usd(20_000n)).toBe("0.020000");
    expect(usd(0n)).toBe("0.000000");
    expect(usd(1n)).toBe("0.000001");
    expect(usd(123_456_789_012_345_678_901n)).toBe("123456789012345.678901");
    expect(usd(-500_000n)).toBe("-0.500000");
  });

  it("links Base and Base Sepolia transactions to basescan, nothing else", () => {
    expect(txUrl("eip155:8453", TX(7), true)).toBe(`https://basescan.org/tx/${TX(7)}`);
    expect(txUrl("eip155:84532", TX(7), true)).toBe(`https://sepolia.basescan.org/tx/${TX(7)}`);
    expect(txUrl("eip155:8453", TX(7), false)).toBe("");
    expect(txUrl("eip155:1", TX(7), true)).toBe("");
    expect(txUrl("eip155:8453", null, true)).toBe("");
    expect(txUrl("eip155:8453", "0xnothex", true)).toBe("");
  });

  it("accepts only real calendar days", () => {
    expect(isDay("2026-11-22")).toBe(true);
    expect(isDay("2024-02-29")).toBe(true);
    expect(isDay("2026-02-29")).toBe(false);
    expect(isDay("2026-13-01")).toBe(false);
    expect(isDay("22/11/2026")).toBe(false);
    expect(isDay("2026-11-22T00:00:00Z")).toBe(false);
  });

  it("quotes CSV fields and defuses spreadsheet formulas", () => {
    expect(csvField("plain")).toBe("plain");
    expect(csvField("a,b")).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(csvField("-x")).toBe("'-x");
    expect(csvField(20000)).toBe("20000");
  });
});

describe("buildReport", () => {
  const receipts = [
    receipt({ id: "a", network: "base", x402Version: 1, ppRef: "camp-1" }),
    receipt({ id: "b", route: "POST /v1/unlock-risk", amount: "100000", transaction: TX(2) }),
    receipt({
      id: "c",
      amount: "20000",
      createdAt: "2026-11-21T23:59:59.000Z",
      settledAt: "2026-11-22T00:00:01.000Z",
      transaction: TX(3),
    }),
    receipt({ id: "d", status: "pending", transaction: TX(4), settledAt: "2026-11-22T08:00:00.000Z" }),
    receipt({ id: "e", status: "failed", transaction: null, settledAt: null }),
    receipt({ id: "f", status: "unknown", transaction: null, settledAt: null }),
    receipt({ id: "g", status: "settling", transaction: null, settledAt: null }),
  ];

  it("exports billed receipts (settled, pending) with one CAIP-2 network and totals by route and day", () => {
    const report = buildReport(receipts, { links: true });
    expect(report.rows.map((r) => r.receiptId)).toEqual(["a", "b", "c", "d"]);
    expect(new Set(report.rows.map((r) => r.network))).toEqual(new Set(["eip155:8453"]));
    expect(report.rows[0]).toMatchObject({
      amountAtomic: "20000",
      amountUsd: "0.020000",
      txUrl: `https://basescan.org/tx/${TX(1)}`,
      ppRef: "camp-1",
      day: "2026-11-20",
    });
    // The day is when the money moved, in UTC.
    expect(report.rows[2]?.day).toBe("2026-11-22");
    expect(report.byRoute).toEqual([
      { key: "GET /v1/unlocks/upcoming", calls: 3, amountAtomic: "60000", amountUsd: "0.060000" },
      { key: "POST /v1/unlock-risk", calls: 1, amountAtomic: "100000", amountUsd: "0.100000" },
    ]);
    expect(report.byDay).toEqual([
      { key: "2026-11-20", calls: 2, amountAtomic: "120000", amountUsd: "0.120000" },
      { key: "2026-11-22", calls: 2, amountAtomic: "40000", amountUsd: "0.040000" },
    ]);
    expect(report.total).toEqual({ calls: 4, amountAtomic: "160000", amountUsd: "0.160000" });
  });

  it("filters by UTC day, both bounds inclusive", () => {
    const report = buildReport(receipts, { from: "2026-11-21", to: "2026-11-22", links: true });
    expect(report.rows.map((r) => r.receiptId)).toEqual(["c", "d"]);
    expect(buildReport(receipts, { to: "2026-11-20", links: true }).total.calls).toBe(2);
    expect(buildReport(receipts, { from: "2026-12-01", links: true }).total).toEqual({
      calls: 0,
      amountAtomic: "0",
      amountUsd: "0.000000",
    });
  });

  it("says unknown for an amount in an asset it cannot value, and keeps links off when asked", () => {
    const report = buildReport([receipt({ asset: "0x0000000000000000000000000000000000000001" })], {
      links: false,
    });
    expect(report.rows[0]).toMatchObject({ amountUsd: "unknown", txUrl: "" });
    expect(report.total.amountUsd).toBe("unknown");
  });

  it("writes one CSV table whose kind column separates receipts from totals", () => {
    const csv = toCsv(buildReport(receipts, { links: true }));
    const lines = csv.trimEnd().split("\r\n");
    expect(lines[0]).toBe(
      "kind,receipt_id,time,day,route,x402_version,status,payer,pay_to,amount_atomic,amount_usd,network,asset,transaction,tx_url,pp_ref,calls",
    );
    expect(lines.filter((l) => l.startsWith("receipt,"))).toHaveLength(4);
    expect(lines.filter((l) => l.startsWith("total_route,"))).toHaveLength(2);
    expect(lines.filter((l) => l.startsWith("total_day,"))).toHaveLength(2);
    expect(lines.at(-1)).toBe("total,,,,,,,,,160000,0.160000,,,,,,4");
    for (const l of lines) expect(l.split(",")).toHaveLength(17);
  });
});

describe("reading the SQLite ledger", () => {
  const dir = mkdtempSync(join(tmpdir(), "p402-receipts-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads billed receipts (settled and pending) through the ledger port, not refused ones", async () => {
    const ledger = openSqliteLedger(join(dir, "ledger.sqlite"));
    const at = new Date("2026-11-20T10:00:00Z");
    const claim = async (nonce: string) => {
      const res = await ledger.claimAuthorization({
        identity: {
          network: "base",
          asset: USDC,
          payer: "0x00000000000000000000000000000000000000b0",
          nonce,
        },
        route: "GET /v1/unlocks/upcoming",
        requestFingerprint: "rf",
        x402Version: 1,
        amount: "20000",
        payTo: "0x00000000000000000000000000000000000000aa",
        ppRef: "tag.1",
        incarnation: "i1",
        lockTtlMs: 60_000,
        now: at,
      });
      if (res.kind !== "claimed") throw new Error(`claim: ${res.kind}`);
      return res.receipt.id;
    };
    try {
      const settled = await claim(TX(1));
      expect(await ledger.beginSettlement(settled, "i1", at)).toBe(true);
      await ledger.recordSettlement(settled, { status: "settled", transaction: TX(9), now: at });
      const failed = await claim(TX(2));
      await ledger.recordFailure(failed, { status: "failed", error: "insufficient_funds", now: at });
      const rows = await readLedgerReceipts(ledger, BILLED_STATUSES);
      expect(rows).toEqual([
        expect.objectContaining({
          id: settled,
          network: "eip155:8453",
          x402Version: 1,
          amount: "20000",
          transaction: TX(9),
          ppRef: "tag.1",
          settledAt: "2026-11-20T10:00:00.000Z",
        }),
      ]);
    } finally {
      await ledger.close();
    }
  });
});

describe("npm run receipts (argument errors)", () => {
  const run = promisify(execFile);
  it.each([
    [["--from", "2026-02-30"], /--from "2026-02-30" is not a date; use YYYY-MM-DD/],
    [["--from", "2026-11-22", "--to", "2026-11-01"], /--from 2026-11-22 is after --to 2026-11-01/],
    [["--bogus"], /Unknown option '--bogus'/],
  ])("%j exits 2 naming the problem", async (args, message) => {
    const err = await run(process.execPath, ["--import", "tsx", "scripts/receipts.ts", ...args], {
      cwd: ROOT,
    }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).toBe(2);
    expect(err?.stderr).toMatch(message);
  });
});
