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

/** x402 v1 network names → CAIP-2, so v1 and v2 receipts of one chain group together. */
const V1_NETWORKS: Record<string, string> = {
  base: "eip155:8453",
  "base-sepolia": "eip155:84532",
  ethereum: "eip155:1",
  polygon: "eip155:137",
  "polygon-amoy": "eip155:80002",
  avalanche: "eip155:43114",
  "avalanche-fuji": "eip155:43113",
};

export function caip2(network: string): string {
  return V1_NETWORKS[network] ?? network;
}

const EXPLORERS: Record<string, string> = {
  "eip155:8453": "https://basescan.org/tx/",
  "eip155:84532": "https://sepolia.basescan.org/tx/",
};

/** Explorer URL of a transaction, or "" when there is none to link to (no transaction, unknown chain, devnet). */
export function txUrl(network: string, transaction: string | null, links: boolean): string {
  const base = EXPLORERS[network];
  if (!links || !base || !transaction || !/^0x[0-9a-fA-F]{64}$/.test(transaction)) return "";
  return `${base}${transaction}`;
}

/** USDC contracts (6 decimals) by CAIP-2 network; an amount in any other asset has no known USD value. */
const USDC: Record<string, string> = {
  "eip155:8453": "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
  "eip155:84532": "0x036cbd53842c5426634e7929541ec2318f3dcf7e",
};
const USDC_DECIMALS = 6;

export function isUsdc(network: string, asset: string): boolean {
  return USDC[network] === asset.toLowerCase();
}

/** Atomic USDC → a USD decimal string with all six places ("20000" → "0.020000"). */
export function usd(atomic: bigint): string {
  const sign = atomic < 0n ? "-" : "";
  const abs = atomic < 0n ? -atomic : atomic;
  const unit = 10n ** BigInt(USDC_DECIMALS);
  return `${sign}${abs / unit}.${(abs % unit).toString().padStart(USDC_DECIMALS, "0")}`;
}

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
