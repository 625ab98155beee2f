import closeWithGrace from "close-with-grace";
import { buildApp } from "./app.js";
import { createBenchmarkService } from "./benchmark/service.js";
import { type Config, ConfigError, parseConfig } from "./config.js";
import type { Devnet } from "./devnet/index.js";
import {
  createFacilitatorClient,
  createFacilitatorGateway,
  facilitatorTarget,
} from "./payments/facilitator.js";
import { createChainReconciler } from "./payments/reconcile.js";
import { formatUsdc } from "./payments/requirements.js";
import { PRICES } from "./routes/prices.js";
import { loadCatalog } from "./store/catalog.js";
import { openLedger } from "./store/ledger.js";
import { loadUnlockStore } from "./store/unlocks-snapshot.js";
import { createUnlockService } from "./unlocks/service.js";

/** Process entry: config → (devnet when embedded) → listen → graceful shutdown. */
export async function start(config: Config) {
  let devnet: Devnet | undefined;
  let facilitatorUrl: string;
  let payTo = config.payTo;
  if (config.facilitator.kind === "devnet") {
    // Imported lazily: production images never load the devnet (anvil, solc) code path.
    const { startDevnet } = await import("./devnet/index.js");
    devnet = await startDevnet({ host: "127.0.0.1", anvilPort: config.devnetAnvilPort || undefined });
    facilitatorUrl = devnet.facilitatorUrl;
    payTo ??= devnet.payTo;
  } else {
    facilitatorUrl = config.facilitator.url;
  }
  try {
    return await serve(config, facilitatorUrl, payTo, devnet);
  } catch (err) {
    await devnet?.stop();
    throw err;
  }
}

async function serve(
  config: Config,
  facilitatorUrl: string,
  payTo: `0x${string}` | undefined,
  devnet: Devnet | undefined,
) {
  if (!payTo) throw new ConfigError("PAY_TO is required when a facilitator is configured");

  const facilitator = config.facilitator;
  const client = createFacilitatorClient(facilitatorTarget(facilitator, facilitatorUrl));
  const ledger = openLedger(config.ledgerPath);
  const rpcUrl = devnet?.rpcUrl ?? config.chainRpcUrl;
  const app = await buildApp({
    config,
    unlocks: createUnlockService(loadUnlockStore(config.unlocksSnapshot)),
    benchmark: createBenchmarkService(loadCatalog(config.catalogSnapshot), {
      liveProbe: { enabled: config.benchmark.liveProbe, allowHosts: config.benchmark.probeAllowHosts },
    }),
    ledger,
    gateway: createFacilitatorGateway(client, config.circuit),
    reconciler: rpcUrl ? createChainReconciler(rpcUrl) : undefined,
    payTo,
    supported: () => client.getSupported(),
    facilitatorLabel:
      facilitator.kind === "cdp"
        ? `cdp (${facilitatorUrl})`
        : facilitator.kind === "devnet"
          ? `devnet (${facilitatorUrl})`
          : facilitatorUrl,
  });

  const stop = async () => {
    await app.close(); // waits for in-flight requests, so paid calls finish and settle first
    ledger.close();
    await devnet?.stop();
  };
  const address = await app.listen({ host: config.host, port: config.port });
  if (devnet) printDevnetHelp(address, devnet);
  return { app, address, devnet, stop };
}

function printDevnetHelp(address: string, devnet: Devnet): void {
  const lines = [
    "",
    `pressure402 is listening on ${address} (embedded devnet: anvil chain 8453 at ${devnet.rpcUrl})`,
    `  payments go to ${devnet.payTo}; the local facilitator is ${devnet.facilitatorUrl}`,
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

const isMain =
  import.meta.url === `file://${process.argv[1]}` ||
  process.argv[1]?.endsWith("/server.ts") ||
  process.argv[1]?.endsWith("/server.js");
if (isMain) {
  let config: Config;
  try {
    config = parseConfig();
  } catch (err) {
    process.stderr.write(`pressure402: ${(err as Error).message}\n`);
    process.exit(1);
  }
  start(config)
    .then(({ app, stop }) => {
      closeWithGrace({ delay: config.requestTimeoutMs + 5000 }, async ({ signal, err }) => {
        if (err) app.log.error({ err }, "shutting down after an error");
        else app.log.info({ signal }, "shutting down");
        await stop();
      });
    })
    .catch((err: unknown) => {
      const message =
        err instanceof ConfigError
          ? err.message
          : err instanceof Error
            ? (err.stack ?? err.message)
            : String(err);
      process.stderr.write(`pressure402: failed to start: ${message}\n`);
      process.exit(1);
    });
}
