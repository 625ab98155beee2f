import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Static, Type } from "typebox";
import { Value } from "typebox/value";
import { BASE_MAINNET, BASE_SEPOLIA, PAYMENT_NETWORKS, type PaymentNetwork } from "./chain/networks.js";
import { SECRET_KEY_PATTERN } from "./ledger/secrets.js";

/** The embedded SQLite ledger when LEDGER_PATH is unset (the operator commands read the same file). */
export const DEFAULT_LEDGER_PATH = "var/ledger.sqlite";

/** The network paid on when NETWORK is unset: the one place it is chosen by default (the operator commands too). */
export const DEFAULT_NETWORK = BASE_MAINNET.caip2;

/**
 * Environment schema. Every variable here is listed in `.env.example` and in the README's configuration table
 * (a test keeps the three in step). Values arrive as strings; `parseConfig` coerces them and names the variable
 * that is wrong.
 */
export const EnvSchema = Type.Object({
  NODE_ENV: Type.Enum(["development", "production", "test"], { default: "development" }),
  HOST: Type.String({ default: "127.0.0.1", minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  LOG_LEVEL: Type.Enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], { default: "info" }),
  TRUST_PROXY: Type.String({ default: "false", pattern: "^(true|false|[0-9]+|[0-9a-fA-F.:/,\\s]+)$" }),
  PUBLIC_BASE_URL: Type.Optional(Type.String({ pattern: "^https?://[^\\s]+$" })),
  FACILITATOR_URL: Type.Optional(Type.String({ pattern: "^https?://[^\\s]+$" })),
  FACILITATOR_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 120_000 }),
  CDP_API_KEY_ID: Type.Optional(Type.String({ minLength: 1 })),
  CDP_API_KEY_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  CDP_API_KEY_SECRET_FILE: Type.Optional(Type.String({ minLength: 1 })),
  CHAIN_RPC_URL: Type.Optional(Type.String({ pattern: "^https?://[^\\s]+$" })),
  NETWORK: Type.Enum(Object.keys(PAYMENT_NETWORKS), { default: DEFAULT_NETWORK }),
  PAY_TO: Type.Optional(Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" })),
  OWNERSHIP_PROOF: Type.Optional(Type.String({ pattern: "^0x[0-9a-fA-F]{130}(,0x[0-9a-fA-F]{130})*$" })),
  CONTACT_EMAIL: Type.Optional(Type.String({ pattern: "^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$", maxLength: 254 })),
  CONTACT_URL: Type.Optional(Type.String({ pattern: "^https?://[^\\s]+$" })),
  PAYMENT_TIMEOUT_SECONDS: Type.Integer({ default: 300, minimum: 10, maximum: 3600 }),
  LEDGER_PATH: Type.String({ default: DEFAULT_LEDGER_PATH, minLength: 1 }),
  RECONCILE_INTERVAL_MS: Type.Integer({ default: 30_000, minimum: 100, maximum: 3_600_000 }),
  LEDGER_URL: Type.Optional(Type.String({ pattern: "^postgres(ql)?://[^\\s]+$" })),
  LEDGER_SECRET_KEY: Type.Optional(Type.String({ pattern: SECRET_KEY_PATTERN })),
  IDEMPOTENCY_TTL_SECONDS: Type.Integer({ default: 86_400, minimum: 1, maximum: 2_592_000 }),
  PAID_REREAD_SECONDS: Type.Integer({ default: 3600, minimum: 0, maximum: 2_592_000 }),
  CIRCUIT_FAILURE_THRESHOLD: Type.Integer({ default: 5, minimum: 1, maximum: 1000 }),
  CIRCUIT_COOLDOWN_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
  SMART_WALLET_CHECK_TIMEOUT_MS: Type.Integer({ default: 750, minimum: 50, maximum: 10_000 }),
  SMART_WALLET_GAS_CAP: Type.Integer({ default: 1_000_000, minimum: 50_000, maximum: 30_000_000 }),
  SMART_WALLET_VERIFY_MAX_IN_FLIGHT: Type.Integer({ default: 8, minimum: 1, maximum: 1000 }),
  SMART_WALLET_VERIFY_PER_CONTRACT: Type.Integer({ default: 2, minimum: 1, maximum: 1000 }),
  SMART_WALLET_VERIFY_PER_SENDER: Type.Integer({ default: 2, minimum: 1, maximum: 1000 }),
  BODY_LIMIT_BYTES: Type.Integer({ default: 16_384, minimum: 1024, maximum: 1_048_576 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ default: 30_000, minimum: 1000, maximum: 600_000 }),
  RATE_LIMIT_MAX: Type.Integer({ default: 300, minimum: 1 }),
  RATE_LIMIT_WINDOW_MS: Type.Integer({ default: 60_000, minimum: 1000 }),
  CLIENT_MAX_IN_FLIGHT: Type.Integer({ default: 8, minimum: 1 }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ default: 1000, minimum: 0 }),
  HEALTH_REFRESH_MS: Type.Integer({ default: 5000, minimum: 100, maximum: 600_000 }),
  METRICS_HOST: Type.String({ default: "127.0.0.1", minLength: 1 }),
  METRICS_PORT: Type.Integer({ default: 9464, minimum: 0, maximum: 65535 }),
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16, pattern: "^[\\x21-\\x7e]+$" })),
  UNLOCKS_SNAPSHOT: Type.Optional(Type.String({ minLength: 1 })),
  CATALOG_SNAPSHOT: Type.Optional(Type.String({ minLength: 1 })),
  BENCHMARK_PHASE: Type.Enum(["provisional", "full"], { default: "provisional" }),
  BENCHMARK_PROVISIONAL_CAP: Type.Integer({ default: 500, minimum: 0 }),
  BENCHMARK_LIVE_PROBE: Type.Boolean({ default: false }),
  BENCHMARK_PROBE_ALLOW_HOSTS: Type.String({ default: "" }),
  DATA_DIR: Type.String({ default: "var/data", minLength: 1 }),
  REFRESH_INTERVAL_SECONDS: Type.Integer({ default: 3600, minimum: 0, maximum: 604_800 }),
  BINANCE_FUTURES_BASE_URL: Type.String({
    default: "https://fapi.binance.com",
    pattern: "^https?://[^\\s]+$",
  }),
  BYBIT_BASE_URL: Type.String({ default: "https://api.bybit.com", pattern: "^https?://[^\\s]+$" }),
  COINGECKO_BASE_URL: Type.String({
    default: "https://api.coingecko.com/api/v3",
    pattern: "^https?://[^\\s]+$",
  }),
  COINGECKO_API_KEY: Type.Optional(Type.String({ minLength: 1 })),
  BAZAAR_DISCOVERY_URL: Type.String({
    default: "https://api.cdp.coinbase.com/platform/v2/x402/discovery/resources",
    pattern: "^https?://[^\\s]+$",
  }),
  DEFILLAMA_BASE_URL: Type.String({
    default: "https://defillama-datasets.llama.fi",
    pattern: "^https?://[^\\s]+$",
  }),
  DEVNET_ANVIL_PORT: Type.Integer({ default: 0, minimum: 0, maximum: 65535 }),
  DEVNET_FACILITATOR_PORT: Type.Integer({ default: 0, minimum: 0, maximum: 65535 }),
  ANVIL_BIN: Type.Optional(Type.String({ minLength: 1 })),
});

/** How to fix a variable whose value does not fit its schema, where the schema alone does not say it plainly. */
const FIX: Partial<Record<keyof Env, string>> = {
  TRUST_PROXY: "set true, false, a hop count, or comma-separated proxy IPs/CIDRs",
  PUBLIC_BASE_URL: "set an http(s) origin such as https://api.example.com",
  FACILITATOR_URL: "set an http(s) URL such as https://x402.org/facilitator, or unset it for the devnet",
  CHAIN_RPC_URL: "set an http(s) JSON-RPC URL such as https://mainnet.base.org",
  PAY_TO: "set a 0x-prefixed address of 40 hex digits",
  NETWORK: `set ${BASE_MAINNET.caip2} (Base mainnet, real USDC) or ${BASE_SEPOLIA.caip2} (Base Sepolia, test USDC, for a rehearsal)`,
  LEDGER_URL:
    "set a postgres:// or postgresql:// URL (PostgreSQL is the only shared ledger), or unset it for the SQLite file at LEDGER_PATH",
  LEDGER_SECRET_KEY:
    "set 64 to 128 hex digits (openssl rand -hex 32), the same on every instance sharing the ledger, or unset it for the SQLite key file beside LEDGER_PATH",
  CONTACT_EMAIL: "set an email address such as api@example.com",
  CONTACT_URL: "set an http(s) URL such as https://example.com/support",
  DATA_DIR: "set a writable directory (a volume in a container); the refreshed data and its state live there",
  REFRESH_INTERVAL_SECONDS:
    "set the market-data period in seconds (3600 = hourly), or 0 to turn refreshing off",
  BINANCE_FUTURES_BASE_URL: "set an http(s) origin such as https://fapi.binance.com",
  BYBIT_BASE_URL: "set an http(s) origin such as https://api.bybit.com",
  COINGECKO_BASE_URL: "set an http(s) URL such as https://api.coingecko.com/api/v3",
  BAZAAR_DISCOVERY_URL: "set the http(s) URL of a facilitator's discovery/resources listing",
  DEFILLAMA_BASE_URL: "set an http(s) origin such as https://defillama-datasets.llama.fi",
  METRICS_TOKEN: "set at least 16 visible ASCII characters (e.g. openssl rand -hex 24), or unset it",
};

export type Env = Static<typeof EnvSchema>;

export type FacilitatorConfig =
  | { kind: "url"; url: string; timeoutMs: number }
  | { kind: "cdp"; url: string; timeoutMs: number; apiKeyId: string; apiKeySecret: string }
  | { kind: "devnet"; timeoutMs: number };

export interface Config {
  env: Env["NODE_ENV"];
  host: string;
  port: number;
  logLevel: Env["LOG_LEVEL"];
  /** Fastify trustProxy: whether client IPs (rate limiting, logs) come from X-Forwarded-For, and from which hops. */
  trustProxy: boolean | number | string[];
  publicBaseUrl: string | undefined;
  facilitator: FacilitatorConfig;
  /** The chain and USDC every 402 asks for (NETWORK); the embedded devnet is always Base mainnet's chain id. */
  network: PaymentNetwork;
  payTo: `0x${string}` | undefined;
  /** Base JSON-RPC endpoint for reconciling settlements whose outcome was lost (optional; the devnet sets its own). */
  chainRpcUrl: string | undefined;
  /** EIP-191 signatures of the public origin by the PAY_TO key, published in /.well-known/x402 (see scripts/ownership-proof.ts). */
  ownershipProofs: `0x${string}`[];
  /** Who answers for the API: the OpenAPI `info.contact` (agent wallets and directories show it). */
  contact: { email?: string; url?: string };
  paymentTimeoutSeconds: number;
  ledgerPath: string;
  /** `postgres://…`: the ledger lives in PostgreSQL (several instances may share it); unset: SQLite at ledgerPath. */
  ledgerUrl: string | undefined;
  /**
   * Hex key the ledger's secrets are hashed under (LEDGER_SECRET_KEY); required with ledgerUrl. Unset with SQLite:
   * the key file beside the ledger (`<LEDGER_PATH>.key`).
   */
  ledgerSecretKey: string | undefined;
  /** Period of the payments maintenance pass: heartbeat, dead-instance release, lost-settlement reconciler, purge. */
  reconcileIntervalMs: number;
  idempotencyTtlSeconds: number;
  /** How long a payer's fresh proof re-reads, unsettled, the answer it bought for the same request (0: never). */
  paidRereadSeconds: number;
  circuit: { failureThreshold: number; cooldownMs: number };
  /** The chain check of smart-wallet signatures before the facilitator (needs CHAIN_RPC_URL or the devnet). */
  smartWalletCheck: { timeoutMs: number; gasCap: bigint };
  /** Facilitator verifies of proofs not signed by an EOA: in flight at most, per contract, per sender. */
  smartWalletLane: { maxInFlight: number; perContract: number; perSender: number };
  bodyLimit: number;
  requestTimeoutMs: number;
  rateLimit: { max: number; windowMs: number };
  /** Requests of one client address being answered at once; past it, 429. */
  clientMaxInFlight: number;
  maxEventLoopDelayMs: number;
  /** Period of the background health refresh behind /ready (facilitator /supported + a ledger write). */
  healthRefreshMs: number;
  /** The metrics listener (GET /metrics), apart from the public port; loopback by default. */
  metricsHost: string;
  metricsPort: number;
  /** When set, GET /metrics is also served on the public port, to `Authorization: Bearer <token>` only. */
  metricsToken: string | undefined;
  unlocksSnapshot: string | undefined;
  catalogSnapshot: string | undefined;
  benchmark: {
    phase: Env["BENCHMARK_PHASE"];
    provisionalCap: number;
    liveProbe: boolean;
    probeAllowHosts: string[];
  };
  /** Where refreshed data lives (seeded from the shipped snapshots on first start) and how often it is refreshed. */
  data: {
    dir: string;
    /** Market-data period in seconds; slower sources run at multiples of it; 0 = no refresh. */
    refreshIntervalSeconds: number;
    binanceBaseUrl: string;
    bybitBaseUrl: string;
    coingeckoBaseUrl: string;
    coingeckoApiKey: string | undefined;
    defillamaBaseUrl: string;
    bazaarDiscoveryUrl: string;
  };
  devnetAnvilPort: number;
  /** The devnet facilitator's port (0: any free one), so a server elsewhere can be pointed at it ahead of time. */
  devnetFacilitatorPort: number;
  /** anvil binary for the devnet; unset: the npm package's (devnet/anvil.ts also reads it from the environment). */
  anvilBin: string | undefined;
}

export const CDP_FACILITATOR_URL = "https://api.cdp.coinbase.com/platform/v2/x402";

/**
 * A start-up problem the operator can fix. Each entry of `problems` is one line that names the variable and says
 * what to set; the message is those lines.
 */
export class ConfigError extends Error {
  override name = "ConfigError";
  readonly problems: string[];
  constructor(problems: string | string[]) {
    const list = Array.isArray(problems) ? problems : [problems];
    super(list.join("\n"));
    this.problems = list;
  }
}

/**
 * Loads `.env` (or `path`) into process.env when the file exists. Node's loader never overrides a variable that is
 * already set, so the real environment wins over the file.
 */
export function loadDotEnv(path = ".env"): string | undefined {
  const file = resolve(path);
  if (!existsSync(file)) return undefined;
  try {
    process.loadEnvFile(file);
  } catch (err) {
    throw new ConfigError(
      `.env: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"}); fix its permissions or remove it`,
    );
  }
  return file;
}

/** One line for one variable that fails the schema: what was given and what to set instead. */
function describeInvalid(key: string, given: unknown): string {
  const schema = EnvSchema.properties[key as keyof Env] as {
    enum?: string[];
    type?: string;
    minimum?: number;
    maximum?: number;
  };
  const got = `got ${JSON.stringify(given ?? null)}`;
  const range =
    schema.minimum !== undefined && schema.maximum !== undefined
      ? ` from ${schema.minimum} to ${schema.maximum}`
      : schema.minimum !== undefined
        ? ` of at least ${schema.minimum}`
        : "";
  const fix =
    FIX[key as keyof Env] ??
    (schema.enum
      ? `set one of: ${schema.enum.join(", ")}`
      : schema.type === "boolean"
        ? "set true or false"
        : schema.type === "integer"
          ? `set a whole number${range}`
          : "set a non-empty value");
  return `${key}: invalid value (${got}); ${fix}`;
}

/** Reads a secret from VAR or from the file named by VAR_FILE (Docker/Kubernetes secrets), never both. */
function secret(env: Record<string, string | undefined>, name: string): string | undefined {
  const direct = env[name];
  const file = env[`${name}_FILE`];
  if (direct && file) throw new ConfigError(`${name}_FILE: ${name} is also set; set only one of them`);
  if (file) {
    try {
      return readFileSync(file, "utf8").trim();
    } catch (err) {
      throw new ConfigError(
        `${name}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? "error"}); point it at a readable file`,
      );
    }
  }
  return direct;
}

function parseTrustProxy(value: string): boolean | number | string[] {
  if (value === "true") return true;
  if (value === "false") return false;
  if (/^[0-9]+$/.test(value)) return Number(value);
  return value
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
}

/**
 * What the schema's patterns cannot say about URLs: each must parse (`http://[bad` does not), and PUBLIC_BASE_URL must
 * be an origin only (scheme, host, optional port): the 402's resource URL is that origin plus the request's path, so
 * a path or query there would be silently doubled or dropped.
 */
function urlShapeProblems(env: Env): string[] {
  const problems: string[] = [];
  for (const name of ["PUBLIC_BASE_URL", "FACILITATOR_URL", "CHAIN_RPC_URL", "CONTACT_URL"] as const) {
    const value = env[name];
    if (value === undefined) continue;
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      problems.push(`${name}: not a valid URL (got ${JSON.stringify(hidePassword(value))}); ${FIX[name]}`);
      continue;
    }
    if (name === "PUBLIC_BASE_URL" && (url.pathname.replace(/\/+$/, "") !== "" || url.search || url.hash))
      problems.push(
        `PUBLIC_BASE_URL: must be an origin without a path, query or fragment (got ${JSON.stringify(value)}); set only the scheme, host and port, such as ${url.origin}`,
      );
  }
  return problems;
}

/** A connection string's password never reaches a log line, even in an error about that string. */
const hidePassword = (value: string | undefined) => value?.replace(/(\/\/[^/:@\s]*:)[^@\s]*@/, "$1***@");

export function parseConfig(source: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = source[key];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  // The secret itself is read below (possibly from a file) and never enters the validated record.
  delete raw.CDP_API_KEY_SECRET;
  // "1.5" or "3000abc" would otherwise be coerced into a number before the schema sees them.
  const notWhole = Object.entries(raw)
    .filter(
      ([key, value]) =>
        (EnvSchema.properties[key as keyof Env] as { type?: string }).type === "integer" &&
        !/^-?\d+$/.test(String(value)),
    )
    .map(([key, value]) => describeInvalid(key, value));
  if (notWhole.length > 0) throw new ConfigError(notWhole);
  const withDefaults = Value.Default(EnvSchema, Value.Convert(EnvSchema, raw)) as Record<string, unknown>;
  const errors = [...Value.Errors(EnvSchema, withDefaults)];
  if (errors.length > 0) {
    const names = errors.map(
      (e) =>
        e.instancePath.replace(/^\//, "") ||
        String((e.params as { requiredProperties?: string[] }).requiredProperties ?? ""),
    );
    throw new ConfigError(
      [...new Set(names)].map((name) =>
        describeInvalid(
          name,
          name === "METRICS_TOKEN" || name === "COINGECKO_API_KEY" || name === "LEDGER_SECRET_KEY"
            ? "(hidden)"
            : hidePassword(source[name]),
        ),
      ),
    );
  }
  const env = withDefaults as Env;
  const urlProblems = urlShapeProblems(env);
  if (urlProblems.length > 0) throw new ConfigError(urlProblems);
  const apiKeySecret = secret(source, "CDP_API_KEY_SECRET");
  const timeoutMs = env.FACILITATOR_TIMEOUT_MS;

  let facilitator: FacilitatorConfig;
  if (env.CDP_API_KEY_ID || apiKeySecret) {
    if (!env.CDP_API_KEY_ID || !apiKeySecret)
      throw new ConfigError(
        `${env.CDP_API_KEY_ID ? "CDP_API_KEY_SECRET" : "CDP_API_KEY_ID"}: missing; CDP_API_KEY_ID and CDP_API_KEY_SECRET (or CDP_API_KEY_SECRET_FILE) must be set together`,
      );
    facilitator = {
      kind: "cdp",
      url: env.FACILITATOR_URL ?? CDP_FACILITATOR_URL,
      timeoutMs,
      apiKeyId: env.CDP_API_KEY_ID,
      apiKeySecret,
    };
  } else if (env.FACILITATOR_URL) {
    facilitator = { kind: "url", url: env.FACILITATOR_URL, timeoutMs };
  } else {
    facilitator = { kind: "devnet", timeoutMs };
  }

  const network = PAYMENT_NETWORKS[env.NETWORK] as PaymentNetwork;
  if (facilitator.kind === "devnet" && network.caip2 !== BASE_MAINNET.caip2)
    throw new ConfigError(
      `NETWORK=${env.NETWORK}: the embedded devnet runs as Base mainnet (chain id 8453, USDC at its mainnet address); set FACILITATOR_URL to a facilitator that settles ${network.label} (https://x402.org/facilitator for the public testnet one), or unset NETWORK`,
    );

  if (env.LEDGER_URL && !env.LEDGER_SECRET_KEY)
    throw new ConfigError(
      "LEDGER_SECRET_KEY: required with LEDGER_URL; set 64 hex digits (openssl rand -hex 32), the same on every instance sharing the ledger, so that each can check the secrets the others stored (the ledger keeps only their keyed digests)",
    );

  if (env.NODE_ENV === "production") {
    const missing: string[] = [];
    if (facilitator.kind === "devnet")
      missing.push(
        "FACILITATOR_URL: required when NODE_ENV=production; set an x402 facilitator URL (or CDP_API_KEY_ID + CDP_API_KEY_SECRET for the CDP facilitator)",
      );
    if (!env.PAY_TO)
      missing.push("PAY_TO: required when NODE_ENV=production; set the Base address that receives USDC");
    if (!env.PUBLIC_BASE_URL)
      missing.push(
        "PUBLIC_BASE_URL: required when NODE_ENV=production (the 402 resource URL never comes from the Host header); set the public origin buyers call, such as https://api.example.com",
      );
    if (missing.length > 0) throw new ConfigError(missing);
  }

  return {
    env: env.NODE_ENV,
    host: env.HOST,
    port: env.PORT,
    logLevel: env.LOG_LEVEL,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    publicBaseUrl: env.PUBLIC_BASE_URL?.replace(/\/+$/, ""),
    facilitator,
    network,
    payTo: env.PAY_TO as `0x${string}` | undefined,
    chainRpcUrl: env.CHAIN_RPC_URL,
    ownershipProofs: (env.OWNERSHIP_PROOF?.split(",") ?? []) as `0x${string}`[],
    contact: {
      ...(env.CONTACT_EMAIL ? { email: env.CONTACT_EMAIL } : {}),
      ...(env.CONTACT_URL ? { url: env.CONTACT_URL } : {}),
    },
    paymentTimeoutSeconds: env.PAYMENT_TIMEOUT_SECONDS,
    ledgerPath: env.LEDGER_PATH,
    ledgerUrl: env.LEDGER_URL,
    ledgerSecretKey: env.LEDGER_SECRET_KEY,
    reconcileIntervalMs: env.RECONCILE_INTERVAL_MS,
    idempotencyTtlSeconds: env.IDEMPOTENCY_TTL_SECONDS,
    paidRereadSeconds: env.PAID_REREAD_SECONDS,
    circuit: { failureThreshold: env.CIRCUIT_FAILURE_THRESHOLD, cooldownMs: env.CIRCUIT_COOLDOWN_MS },
    smartWalletCheck: {
      timeoutMs: env.SMART_WALLET_CHECK_TIMEOUT_MS,
      gasCap: BigInt(env.SMART_WALLET_GAS_CAP),
    },
    smartWalletLane: {
      maxInFlight: env.SMART_WALLET_VERIFY_MAX_IN_FLIGHT,
      perContract: env.SMART_WALLET_VERIFY_PER_CONTRACT,
      perSender: env.SMART_WALLET_VERIFY_PER_SENDER,
    },
    bodyLimit: env.BODY_LIMIT_BYTES,
    requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
    rateLimit: { max: env.RATE_LIMIT_MAX, windowMs: env.RATE_LIMIT_WINDOW_MS },
    clientMaxInFlight: env.CLIENT_MAX_IN_FLIGHT,
    maxEventLoopDelayMs: env.MAX_EVENT_LOOP_DELAY_MS,
    healthRefreshMs: env.HEALTH_REFRESH_MS,
    metricsHost: env.METRICS_HOST,
    metricsPort: env.METRICS_PORT,
    metricsToken: env.METRICS_TOKEN,
    unlocksSnapshot: env.UNLOCKS_SNAPSHOT,
    catalogSnapshot: env.CATALOG_SNAPSHOT,
    benchmark: {
      phase: env.BENCHMARK_PHASE,
      provisionalCap: env.BENCHMARK_PROVISIONAL_CAP,
      liveProbe: env.BENCHMARK_LIVE_PROBE,
      probeAllowHosts: env.BENCHMARK_PROBE_ALLOW_HOSTS.split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    },
    data: {
      dir: env.DATA_DIR,
      refreshIntervalSeconds: env.REFRESH_INTERVAL_SECONDS,
      binanceBaseUrl: env.BINANCE_FUTURES_BASE_URL,
      bybitBaseUrl: env.BYBIT_BASE_URL,
      coingeckoBaseUrl: env.COINGECKO_BASE_URL,
      coingeckoApiKey: env.COINGECKO_API_KEY,
      defillamaBaseUrl: env.DEFILLAMA_BASE_URL,
      bazaarDiscoveryUrl: env.BAZAAR_DISCOVERY_URL,
    },
    devnetAnvilPort: env.DEVNET_ANVIL_PORT,
    devnetFacilitatorPort: env.DEVNET_FACILITATOR_PORT,
    anvilBin: env.ANVIL_BIN,
  };
}
