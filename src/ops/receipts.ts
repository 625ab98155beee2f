import { caip2OfV1, PAYMENT_NETWORKS } from "../chain/networks.js";
import { usdcFixed } from "../chain/usdc.js";

/**
 * Receipts export for accounting: pure functions from ledger rows to a report (rows with USD amounts, a CAIP-2
 * network, explorer links, pp_ref) and its totals by route and by UTC day. Money stays in atomic units (bigint) until
 * it is printed as a decimal string; nothing here is a float.
 */

/** A receipt as the ledger stores it (the columns this export reads, nothing more). */
export interface LedgerReceipt {
  id: string;
  route: string;
  x402Version: number;
  payer: string | null;
  amount: string;
  network: string;
  asset: string;
  payTo: string;
  transaction: string | null;
  status: string;
  createdAt: string;
  settledAt: string | null;
  ppRef: string | null;
}

/** Receipts that moved (settled) or are moving (pending: broadcast, awaiting confirmation) the buyer's money. */
export const BILLED_STATUSES = ["settled", "pending"] as const;

/** CAIP-2 id of a receipt's network, so v1 and v2 receipts of one chain group together; unknown names as written. */
export function caip2(network: string): string {
  return caip2OfV1(network) ?? network;
}

/** The network the service is paid on with this CAIP-2 id, if any. */
const paidNetwork = (id: string) => (Object.hasOwn(PAYMENT_NETWORKS, id) ? PAYMENT_NETWORKS[id] : undefined);

/** Explorer URL of a transaction, or "" when there is none to link to (no transaction, unknown chain, devnet). */
export function txUrl(network: string, transaction: string | null, links: boolean): string {
  const base = paidNetwork(network)?.explorerTx;
  if (!links || !base || !transaction || !/^0x[0-9a-fA-F]{64}$/.test(transaction)) return "";
  return `${base}${transaction}`;
}

/** Whether an amount is in USDC on a network the service is paid on (any other asset has no known USD value). */
export function isUsdc(network: string, asset: string): boolean {
  const usdc = paidNetwork(network)?.usdc.address;
  return usdc !== undefined && usdc.toLowerCase() === asset.toLowerCase();
}

/** Atomic USDC → a USD decimal string with all six places ("20000" → "0.020000"). */
export const usd = usdcFixed;

export interface ExportRow {
  receiptId: string;
  /** When the money moved (settled_at), else when the paid call began. ISO 8601, UTC. */
  time: string;
  day: string;
  route: string;
  x402Version: number;
  status: string;
  payer: string;
  payTo: string;
  amountAtomic: string;
  /** "unknown" when the asset is not a USDC this export knows. */
  amountUsd: string;
  network: string;
  asset: string;
  transaction: string;
  txUrl: string;
  ppRef: string;
}

export interface Total {
  key: string;
  calls: number;
  amountAtomic: string;
  amountUsd: string;
}

export interface ReceiptsReport {
  from: string | null;
  to: string | null;
  rows: ExportRow[];
  byRoute: Total[];
  byDay: Total[];
  total: Omit<Total, "key">;
}

export function toRow(r: LedgerReceipt, links: boolean): ExportRow {
  const network = caip2(r.network);
  const time = r.settledAt ?? r.createdAt;
  const atomic = BigInt(r.amount);
  return {
    receiptId: r.id,
    time,
    day: time.slice(0, 10),
    route: r.route,
    x402Version: r.x402Version,
    status: r.status,
    payer: r.payer ?? "",
    payTo: r.payTo,
    amountAtomic: atomic.toString(),
    amountUsd: isUsdc(network, r.asset) ? usd(atomic) : "unknown",
    network,
    asset: r.asset,
    transaction: r.transaction ?? "",
    txUrl: txUrl(network, r.transaction, links),
    ppRef: r.ppRef ?? "",
  };
}

function total(rows: ExportRow[]): Omit<Total, "key"> {
  const atomic = rows.reduce((sum, r) => sum + BigInt(r.amountAtomic), 0n);
  // A USD total is only honest when every amount in it is USDC.
  const allUsdc = rows.every((r) => r.amountUsd !== "unknown");
  return {
    calls: rows.length,
    amountAtomic: atomic.toString(),
    amountUsd: allUsdc ? usd(atomic) : "unknown",
  };
}

function totalsBy(rows: ExportRow[], key: (r: ExportRow) => string): Total[] {
  const groups = new Map<string, ExportRow[]>();
  for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  return [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, group]) => ({ key: k, ...total(group) }));
}

/** Rows whose day falls in [from, to] (inclusive, UTC; either bound optional), with their totals. */
export function buildReport(
  receipts: LedgerReceipt[],
  opts: { from?: string | undefined; to?: string | undefined; links: boolean },
): ReceiptsReport {
  const rows = receipts
    .filter((r) => (BILLED_STATUSES as readonly string[]).includes(r.status))
    .map((r) => toRow(r, opts.links))
    .filter((r) => (!opts.from || r.day >= opts.from) && (!opts.to || r.day <= opts.to))
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.receiptId < b.receiptId ? -1 : 1));
  return {
    from: opts.from ?? null,
    to: opts.to ?? null,
    rows,
    byRoute: totalsBy(rows, (r) => r.route),
    byDay: totalsBy(rows, (r) => r.day),
    total: total(rows),
  };
}

/** A calendar date YYYY-MM-DD that exists (2026-02-30 does not). */
export function isDay(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

export const CSV_COLUMNS = [
  "kind",
  "receipt_id",
  "time",
  "day",
  "route",
  "x402_version",
  "status",
  "payer",
  "pay_to",
  "amount_atomic",
  "amount_usd",
  "network",
  "asset",
  "transaction",
  "tx_url",
  "pp_ref",
  "calls",
] as const;

/**
 * One CSV field (RFC 4180 quoting). A text field a spreadsheet would run as a formula (=, +, -, @, tab, CR first) is
 * prefixed with a quote character (OWASP's CSV-injection advice); numbers and addresses never start with those.
 */
export function csvField(value: string | number): string {
  let text = String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * The report as one CSV table: a `receipt` line per receipt, then `total_route`, `total_day` and one `total` line, so
 * a spreadsheet or script filters on `kind` instead of parsing sections.
 */
export function toCsv(report: ReceiptsReport): string {
  type Line = Partial<Record<(typeof CSV_COLUMNS)[number], string | number>>;
  const lines: Line[] = [
    ...report.rows.map(
      (r): Line => ({
        kind: "receipt",
        receipt_id: r.receiptId,
        time: r.time,
        day: r.day,
        route: r.route,
        x402_version: r.x402Version,
        status: r.status,
        payer: r.payer,
        pay_to: r.payTo,
        amount_atomic: r.amountAtomic,
        amount_usd: r.amountUsd,
        network: r.network,
        asset: r.asset,
        transaction: r.transaction,
        tx_url: r.txUrl,
        pp_ref: r.ppRef,
        calls: 1,
      }),
    ),
    ...report.byRoute.map(
      (t): Line => ({
        kind: "total_route",
        route: t.key,
        amount_atomic: t.amountAtomic,
        amount_usd: t.amountUsd,
        calls: t.calls,
      }),
    ),
    ...report.byDay.map(
      (t): Line => ({
        kind: "total_day",
        day: t.key,
        amount_atomic: t.amountAtomic,
        amount_usd: t.amountUsd,
        calls: t.calls,
      }),
    ),
    {
      kind: "total",
      amount_atomic: report.total.amountAtomic,
      amount_usd: report.total.amountUsd,
      calls: report.total.calls,
    },
  ];
  const body = lines.map((line) => CSV_COLUMNS.map((c) => csvField(line[c] ?? "")).join(","));
  return `${[CSV_COLUMNS.join(","), ...body].join("\r\n")}\r\n`;
}
