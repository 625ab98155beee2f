import { describe, expect, it } from "vitest";
import { type PaidCall, receiptProblems, type Transfer } from "../../scripts/image-check.js";
import type { ExportRow } from "../../src/ops/receipts.js";

/* The comparison scripts/image.sh relies on: the receipts export against the paid calls and the chain's transfers. */
const PAY_TO = "0x00000000000000000000000000000000000000AA";
const BUYER = "0x00000000000000000000000000000000000000BB";
const tx = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

const calls: PaidCall[] = [
  { route: "GET /v1/unlocks/upcoming", price: 20_000n, transaction: tx(1), payer: BUYER, delta: 20_000n },
  { route: "POST /v1/benchmark/endpoint", price: 50_000n, transaction: tx(2), payer: BUYER, delta: 50_000n },
];
const row = (call: PaidCall, over: Partial<ExportRow> = {}): ExportRow => ({
  receiptId: `r${call.transaction.slice(-1)}`,
  time: "2026-11-24T12:00:00.000Z",
  day: "2026-11-24",
  route: call.route,
  x402Version: 2,
  status: "settled",
  payer: call.payer.toLowerCase(),
  payTo: PAY_TO.toLowerCase(),
  amountAtomic: call.price.toString(),
  amountUsd: "",
  network: "eip155:8453",
  asset: "",
  transaction: call.transaction,
  txUrl: "",
  ppRef: "",
  ...over,
});
const transfers = (value = (c: PaidCall) => c.price) =>
  new Map<string, Transfer[]>(
    calls.map((c) => [c.transaction, [{ from: BUYER, to: PAY_TO, value: value(c) }]]),
  );
const report = (rows: ExportRow[]) => ({
  rows,
  total: {
    calls: rows.length,
    amountAtomic: rows.reduce((s, r) => s + BigInt(r.amountAtomic), 0n).toString(),
    amountUsd: "",
  },
});

describe("receiptProblems", () => {
  it("accepts an export that bills each paid call once, as the chain moved it", () => {
    expect(receiptProblems(report(calls.map((c) => row(c))), calls, transfers(), PAY_TO, 70_000n)).toEqual(
      [],
    );
  });

  it("names a missing receipt, a receipt for no call, a wrong amount and a total other than the chain's gain", () => {
    const [a, b] = calls as [PaidCall, PaidCall];
    expect(receiptProblems(report([row(a)]), calls, transfers(), PAY_TO, 70_000n)).toEqual([
      `POST /v1/benchmark/endpoint: 0 receipts for transaction ${tx(2)} (expected 1)`,
      "export total: 1 calls, paid 2",
      "export total 20000 ≠ PAY_TO's on-chain gain 70000",
    ]);
    const stranger = row({ ...a, transaction: tx(9) }, { receiptId: "r9" });
    expect(
      receiptProblems(report([row(a), row(b), stranger]), calls, transfers(), PAY_TO, 70_000n),
    ).toContain(`receipt r9 (GET /v1/unlocks/upcoming, ${tx(9)}) is for no paid call`);
    const problems = receiptProblems(
      report([row(a), row(b, { amountAtomic: "5000", status: "pending" })]),
      calls,
      transfers(),
      PAY_TO,
      70_000n,
    );
    expect(problems).toContain("POST /v1/benchmark/endpoint: receipt amount 5000, price 50000");
    expect(problems).toContain("POST /v1/benchmark/endpoint: receipt status pending, expected settled");
  });

  it("names a transaction whose on-chain USDC Transfer does not match its receipt", () => {
    const rows = calls.map((c) => row(c));
    const short = transfers((c) => (c.price === 50_000n ? 49_999n : c.price));
    expect(receiptProblems(report(rows), calls, short, PAY_TO, 70_000n)).toEqual([
      `POST /v1/benchmark/endpoint: transaction ${tx(2)} has 0 matching USDC Transfers on chain`,
    ]);
  });
});
