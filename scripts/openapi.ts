/**
 * `npm run openapi`: writes openapi/openapi.json from the same TypeBox schemas the server validates with.
 * A test regenerates it and fails when the committed file differs.
 */
import { fileURLToPath } from "node:url";
import { buildApp } from "../src/app.js";
import { loadCatalog } from "../src/benchmark/catalog/snapshot.js";
import { createBenchmarkService } from "../src/benchmark/service.js";
import { parseConfig } from "../src/config.js";
import { writeFileAtomic } from "../src/files/atomic-write.js";
import { openLedger } from "../src/ledger/embedded.js";
import { createFacilitatorGateway } from "../src/payments/facilitator/gateway.js";
import { loadUnlockStore } from "../src/unlocks/data/snapshot.js";
import { createUnlockService } from "../src/unlocks/service.js";

export const OPENAPI_PATH = fileURLToPath(new URL("../openapi/openapi.json", import.meta.url));

const unreachable = async (): Promise<never> => {
  throw new Error("the OpenAPI export never calls the facilitator");
};

/** The document as the server serves it at GET /openapi.json, with default configuration. */
export async function generateOpenApi(): Promise<string> {
  const config = parseConfig({ NODE_ENV: "test", LOG_LEVEL: "silent" });
  const ledger = openLedger(":memory:");
  const app = await buildApp({
    config,
    unlocks: createUnlockService(loadUnlockStore()),
    benchmark: createBenchmarkService(loadCatalog()),
    ledger,
    gateway: createFacilitatorGateway(
      { verify: unreachable, settle: unreachable, getSupported: unreachable },
      config.circuit,
    ),
    payTo: "0x0000000000000000000000000000000000000000",
    facilitatorLabel: "none",
    logger: false,
  });
  await app.ready();
  const doc = `${JSON.stringify(app.swagger(), null, 2)}\n`;
  await app.close();
  await ledger.close();
  return doc;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  generateOpenApi()
    .then((doc) => {
      writeFileAtomic(OPENAPI_PATH, doc);
      process.stdout.write(`wrote ${OPENAPI_PATH} (${doc.length} bytes)\n`);
    })
    .catch((err: unknown) => {
      process.stderr.write(`openapi: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
