import closeWithGrace from "close-with-grace";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.js";
import { loadCatalog } from "./benchmark/catalog/snapshot.js";
import { formatUsdc } from "./chain/usdc.js";
import { type Config, ConfigError, loadDotEnv, parseConfig } from "./config.js";
import type { Devnet, DevnetLaunch } from "./devnet/index.js";
import { validProofs } from "./discovery/documents.js";
import { openConfiguredLedger } from "./ledger/factory.js";
import { metricsListener } from "./observability/metrics.js";
import { PRICES } from "./operations/prices.js";
import {
  createFacilitatorClient,
  createFacilitatorGateway,
  facilitatorTarget,
} from "./payments/facilitator/gateway.js";
import { createSmartWalletCheck, type SmartWalletCheck } from "./payments/facilitator/smart-wallet.js";
import { type ChainReader, createChainReader } from "./payments/recovery/chain-reader.js";
import { listenProblem, preflight } from "./preflight.js";
import { liveUnlockData, loadServedSnapshot, servedReports } from "./refresh/boot.js";
import { createLiveBenchmark } from "./sources/bazaar/bazaar.js";
import { buildUnlockStore } from "./unlocks/data/snapshot.js";

/** The first line of an error, for one-line start-up reports (snapshot validation lists can be long). */
const firstLine = (err: unknown): string =>
  (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";

/** What the server needs from disk; a bad file is reported in well under a second (the devnet is stopped first). */
async function loadStores(config: Config) {
  const attempt = <T>(name: string, load: () => T): T => {
    try {
      return load();
    } catch (err) {
      throw new ConfigError(`${name}: ${firstLine(err)}; fix the file or point ${name} at a valid one`);
    }
  };
  let served: ReturnType<typeof loadServedSnapshot>;
  try {
    served = loadServedSnapshot(config);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EROFS" || code === "EPERM" || code === "ENOTDIR")
      throw new ConfigError(
        `DATA_DIR: cannot write ${config.data.dir} (${code}); point DATA_DIR at a writable directory (a volume in a container)`,
      );
    throw new ConfigError(
      `UNLOCKS_SNAPSHOT: ${firstLine(err)}; fix the file or point UNLOCKS_SNAPSHOT at a valid one`,
    );
  }
  // Anchored on the shipped reported circulating supply plus the live figures the refresh wrote to DATA_DIR.
  const unlocks = attempt("UNLOCKS_SNAPSHOT", () => buildUnlockStore(served.snapshot, servedReports(config)));
  const catalog = attempt("CATALOG_SNAPSHOT", () => loadCatalog(config.catalogSnapshot));
  let opened: Awaited<ReturnType<typeof openConfiguredLedger>>;
  try {
    opened = await openConfiguredLedger(config);
  } catch (err) {
    if (err instanceof ConfigError) throw err; // LEDGER_URL problems already name their variable
    throw new ConfigError(`LEDGER_PATH: ${firstLine(err)}; point LEDGER_PATH at a writable file`);
  }
  return { unlocks, catalog, ledger: opened.ledger, ledgerShared: opened.shared };
}
type Stores = Awaited<ReturnType<typeof loadStores>>;

/**
 * Process entry: config → pre-flight checks → (devnet launched when embedded) → stores → listen → (devnet ready) →
 * graceful shutdown. The embedded devnet comes up while the stores load and the app is built: an unpaid request's 402
 * needs neither the chain nor the buyers' balances, and the local facilitator holds paid ones until the chain is ready.
 * Resolves once the devnet is ready too; if it fails, everything opened is closed and the error is thrown.
 */
export async function start(config: Config) {
  const problems = await preflight(config);
  if (problems.length > 0) throw new ConfigError(problems);
  const devnet = config.facilitator.kind === "devnet" ? await launchEmbeddedDevnet(config) : undefined;
  let stores: Stores;
  try {
    stores = await loadStores(config);
  } catch (err) {
    await devnet?.stop();
    throw err;
  }
  let served: Served;
  try {
    served = await serve(config, stores, devnet);
  } catch (err) {
    await stores.ledger.close();
    await devnet?.stop();
    throw err;
  }
  if (!devnet) return { ...served, devnet: undefined };
  let running: Devnet;
  try {
    running = await devnet.ready;
  } catch (err) {
    await served.stop(); // the app, the ledger, then the devnet (already closed by its own failure)
    throw err;
  }
  // /ready answers from the cached health state: refreshed now, so it says ready as the banner appears.
  await served.app.observability.health.refresh();
  printDevnetHelp(served.address, running, config.payTo ?? running.payTo);
  return { ...served, devnet: running };
}

async function launchEmbeddedDevnet(config: Config): Promise<DevnetLaunch> {
  // Imported lazily: production images never load the devnet (anvil, solc) code path.
  const { launchDevnet } = await import("./devnet/index.js");
  return launchDevnet({
    host: "127.0.0.1",
    anvilPort: config.devnetAnvilPort || undefined,
    facilitatorPort: config.devnetFacilitatorPort || undefined,
  });
}

/** Reads the devnet's chain once it is up (the reconciler asks only about settlements it has records of). */
function deferredChainReader(devnet: DevnetLaunch): ChainReader {
  const reader = devnet.ready.then((running) => createChainReader(running.rpcUrl));
  reader.catch(() => {}); // the start-up reports the devnet's failure; lookups report their own
  return { lookup: async (query) => (await reader).lookup(query) };
}

/**
 * The smart-wallet chain check on the chain RPC (the devnet's, or CHAIN_RPC_URL). Without one, a signature that does
 * not recover to `from` goes to the facilitator under the per-payer limits only.
 */
function smartWalletOption(
  config: Config,
  devnet: DevnetLaunch | undefined,
): { smartWallet?: SmartWalletCheck } {
  if (devnet) {
    const check = devnet.ready.then((running) =>
      createSmartWalletCheck(running.rpcUrl, config.smartWalletCheck),
    );
    check.catch(() => {}); // the start-up reports the devnet's failure
    return { smartWallet: async (exact, domain) => (await check)(exact, domain) };
  }
  return config.chainRpcUrl
    ? { smartWallet: createSmartWalletCheck(config.chainRpcUrl, config.smartWalletCheck) }
    : {};
}

type Served = Awaited<ReturnType<typeof serve>>;

async function serve(config: Config, stores: Stores, devnet: DevnetLaunch | undefined) {
  const facilitator = config.facilitator;
  const facilitatorUrl = facilitator.kind === "devnet" ? devnet?.facilitatorUrl : facilitator.url;
  const payTo = config.payTo ?? devnet?.payTo;
  if (!payTo || !facilitatorUrl)
    throw new ConfigError(
      "PAY_TO: required when a facilitator is configured; set the Base address that receives USDC",
    );

  const client = createFacilitatorClient(facilitatorTarget(facilitator, facilitatorUrl));
  const { ledger, ledgerShared } = stores;
  const chain = devnet
    ? deferredChainReader(devnet)
    : config.chainRpcUrl
      ? createChainReader(config.chainRpcUrl)
      : undefined;
  let logTo: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void } | undefined;
  // The refresh runs in this process, off the request path: each instance refreshes on its own period (see README).
  const liveBenchmark = createLiveBenchmark(stores.catalog, {
    liveProbe: { enabled: config.benchmark.liveProbe, allowHosts: config.benchmark.probeAllowHosts },
  });
  const data = liveUnlockData(
    config,
    stores.unlocks,
    { log: { warn: (obj, msg) => logTo?.warn(obj, msg), info: (obj, msg) => logTo?.info(obj, msg) } },
    liveBenchmark,
  );
  const refresh = data.refresh;
  const app = await buildApp({
    config,
    unlocks: data.service,
    liveUnlocks: data.live,
    ...(refresh ? { freshness: refresh.freshness } : {}),
    benchmark: liveBenchmark.service,
    ledger,
    ledgerShared,
    gateway: createFacilitatorGateway(client, {
      ...config.circuit,
      ...smartWalletOption(config, devnet),
      smartWalletLane: config.smartWalletLane,
    }),
    chain,
    paymentsMaintenanceMs: config.reconcileIntervalMs,
    payTo,
    supported: () => client.getSupported(),
    // The kind only: FACILITATOR_URL may be an internal address, and GET / is public.
    facilitatorLabel: facilitator.kind === "url" ? "configured" : facilitator.kind,
  });
  logTo = app.log;
  const metricsApp = await metricsListener(app.observability.metrics);
  app.log.info(
    {
      network: config.network.caip2,
      facilitator:
        facilitator.kind === "devnet" ? "devnet" : `${facilitator.kind} ${originOf(facilitatorUrl)}`,
      ledger: config.ledgerUrl ? `postgres ${originOf(config.ledgerUrl)}` : `sqlite ${config.ledgerPath}`,
      payTo,
    },
    `payments on ${config.network.label} (${config.network.caip2}) to ${payTo}; facilitator: ${facilitator.kind === "devnet" ? "embedded devnet" : originOf(facilitatorUrl)}; ledger: ${config.ledgerUrl ? `PostgreSQL at ${originOf(config.ledgerUrl)}` : `SQLite at ${config.ledgerPath}`}`,
  );
  await checkOwnershipProofs(app, config, payTo);

  const stop = async () => {
    await refresh?.refresher.stop();
    await metricsApp.close();
    await app.close(); // waits for in-flight requests, so paid calls finish and settle first
    await ledger.close();
    await devnet?.stop();
  };
  let address: string;
  try {
    address = await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await metricsApp.close();
    await app.close();
    // The pre-flight probe found the port free; another process took it since.
    throw new ConfigError(listenProblem(err, config.host, config.port));
  }
  let metricsAddress: string | undefined;
  try {
    metricsAddress = await metricsApp.listen({ host: config.metricsHost, port: config.metricsPort });
    app.observability.reportMetricsListener({ ok: true, detail: "listening" });
  } catch (err) {
    // Public: no address or port, only that it is down and where to look.
    app.observability.reportMetricsListener({
      ok: false,
      detail:
        "not listening (METRICS_PORT could not be bound; see the log): this instance exports no metrics",
    });
    // Metrics are not worth refusing paid calls for (two instances on one host, a port taken): said loudly, not fatal.
    app.log.error(
      { err: (err as Error).message },
      `metrics listener could not listen on ${config.metricsHost}:${config.metricsPort}; set METRICS_PORT to a free port`,
    );
  }
  refresh?.refresher.start(config.data.refreshIntervalSeconds * 1000);
  return { app, address, metricsAddress, stop, refresher: refresh?.refresher, liveUnlocks: data.live };
}

/** scheme://host:port of a URL, never its credentials or path (a facilitator URL may carry a token in its path). */
function originOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(unparsable URL)";
  }
}

/**
 * OWNERSHIP_PROOF entries that do not verify for PUBLIC_BASE_URL and PAY_TO are never published; said loudly at
 * start-up, since indexers then list the service as unverified.
 */
async function checkOwnershipProofs(
  app: FastifyInstance,
  config: Config,
  payTo: `0x${string}`,
): Promise<void> {
  if (config.ownershipProofs.length === 0) return;
  if (!config.publicBaseUrl) {
    app.log.warn(
      "OWNERSHIP_PROOF is set without PUBLIC_BASE_URL: each proof is checked per request origin, and published only where it verifies",
    );
    return;
  }
  const valid = await validProofs(config.publicBaseUrl, payTo, config.ownershipProofs);
  const wrong = config.ownershipProofs.filter((p) => !valid.includes(p));
  for (const proof of wrong)
    app.log.error(
      { proof: `${proof.slice(0, 10)}…` },
      `OWNERSHIP_PROOF: a proof does not verify as PAY_TO's (${payTo}) signature of ${config.publicBaseUrl}; it is not published. Sign exactly that origin with the PAY_TO key: PAY_TO_PRIVATE_KEY=0x… PUBLIC_BASE_URL=${config.publicBaseUrl} npm run ownership-proof`,
    );
}

function printDevnetHelp(address: string, devnet: Devnet, payTo: `0x${string}`): void {
  const lines = [
    "",
    `pressure402 is listening on ${address} (embedded devnet: anvil chain 8453 at ${devnet.rpcUrl})`,
    `  payments go to ${payTo}${payTo === devnet.payTo ? "" : " (PAY_TO)"}; the local facilitator is ${devnet.facilitatorUrl}`,
    `  buyers: anvil test accounts 1–9, each funded with 1,000 test USDC (e.g. ${devnet.buyers[0]?.address})`,
    "",
    "Pay for a call from another terminal:",
    `  BASE_URL=${address} npm run pay -- GET '/v1/unlocks/upcoming?days=30'`,
    `  BASE_URL=${address} npm run pay -- POST /v1/benchmark/endpoint '{"endpoint_url":"https://2s.io/api/crypto/token-price"}'`,
    "",
    `Prices: ${Object.values(PRICES)
      .map((p) => `${p.route} ${formatUsdc(p.amount)} USD`)
      .join("; ")}`,
    `OpenAPI: ${address}/openapi.json`,
    "",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

/**
 * Runs the service as a process: reads .env and the environment, starts, and stops gracefully on a signal. Resolves
 * true once the service is up; a start that fails ends the process with status 1.
 */
export async function main(): Promise<boolean> {
  const fail = (lines: string[]): never => {
    for (const line of lines) process.stderr.write(`pressure402: ${line}\n`);
    process.exit(1);
  };
  let config!: Config;
  try {
    loadDotEnv();
    config = parseConfig();
  } catch (err) {
    fail(err instanceof ConfigError ? err.problems : [firstLine(err)]);
  }
  try {
    const { app, stop } = await start(config);
    closeWithGrace({ delay: config.requestTimeoutMs + 5000 }, async ({ signal, err }) => {
      if (err) app.log.error({ err }, "shutting down after an error");
      else app.log.info({ signal }, "shutting down");
      await stop();
    });
    return true;
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.problems);
    // Unexpected: one line by default; the stack only when asked for (LOG_LEVEL=debug or trace).
    const verbose = config.logLevel === "debug" || config.logLevel === "trace";
    return fail([`failed to start: ${verbose && err instanceof Error ? err.stack : firstLine(err)}`]);
  }
}

const isMain =
  import.meta.url === `file://${process.argv[1]}` ||
  process.argv[1]?.endsWith("/server.ts") ||
  process.argv[1]?.endsWith("/server.js");
if (isMain) void main();
