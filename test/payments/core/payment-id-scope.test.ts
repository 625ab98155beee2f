import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import type { FastifyInstance } from "fastify";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LedgerPort } from "../../../src/ledger/port.js";
import { openPostgresLedger } from "../../../src/ledger/postgres.js";
import { openSqliteLedger } from "../../../src/ledger/sqlite.js";
import { PRICES } from "../../../src/operations/prices.js";
import { requirementsV2 } from "../../../src/payments/terms/requirements.js";
import { appWith, TEST_PAY_TO, testConfig } from "../../helpers/app.js";
import { type FakeGateway, fakeGateway } from "../../helpers/fake-gateway.js";
import { startTestPostgres, type TestPostgres } from "../../helpers/postgres.js";
import { b64, signedV2Proof, TEST_BUYER_KEY, TEST_NETWORK, verifyBySignature } from "../../helpers/proofs.js";

/*
 * A payment-identifier id is one payer's: the same id from another payer is the extension's "same id, different
 * payload" (409 payment-identifier-reused), and that payer's proof is never settled. Whichever instance each payer
 * reaches: two apps on one ledger (a SQLite file, one PostgreSQL schema). The facilitator checks signatures for real.
 */
const PAYER = privateKeyToAccount(TEST_BUYER_KEY).address.toLowerCase();
/** Anvil's test account 2: another buyer, with a wallet of its own. */
const OTHER_KEY = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a" as const;
const OTHER = privateKeyToAccount(OTHER_KEY).address.toLowerCase();

let pgServer: TestPostgres | undefined;
const dirs: string[] = [];
beforeAll(async () => {
  pgServer = await startTestPostgres();
}, 120_000);
afterAll(async () => {
  await pgServer?.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store two instances share: each call opens one more instance's ledger on it. */
const stores: Record<string, () => Promise<() => Promise<LedgerPort>>> = {
  "SQLite file": async () => {
    const dir = mkdtempSync(join(tmpdir(), "payment-id-scope-"));
    dirs.push(dir);
    const path = join(dir, "ledger.sqlite");
    return async () => openSqliteLedger(path);
  },
  PostgreSQL: async () => {
    const url = await (pgServer as TestPostgres).freshSchema();
    return () => openPostgresLedger(url);
  },
};

interface Instance {
  app: FastifyInstance;
  gateway: FakeGateway;
  ledger: LedgerPort;
}

async function instance(open: () => Promise<LedgerPort>): Promise<Instance> {
  const gateway = fakeGateway();
  gateway.verifyResult = verifyBySignature;
  const ledger = await open();
  const app = await appWith({ config: testConfig(), gateway, ledger, ledgerShared: true });
  await app.ready();
  return { app, gateway, ledger };
}

const accepted = () =>
  requirementsV2(PRICES.upcoming, { network: TEST_NETWORK, payTo: TEST_PAY_TO, maxTimeoutSeconds: 60 });

const withId = <P extends object>(proof: P, id: string) => ({
  ...proof,
  extensions: { "payment-identifier": { info: { required: false, id } } },
});

const get = (i: Instance, query: string, proof: unknown) =>
  i.app.inject({
    method: "GET",
    url: `/v1/unlocks/upcoming?${query}`,
    headers: { "payment-signature": b64(proof) },
  });

describe.each(Object.keys(stores))("a payment-identifier id is one payer's (%s, two instances)", (store) => {
  let a: Instance;
  let b: Instance;
  beforeAll(async () => {
    const open = await (stores[store] as () => Promise<() => Promise<LedgerPort>>)();
    a = await instance(open);
    b = await instance(open);
  }, 60_000);
  afterAll(async () => {
    for (const i of [a, b]) {
      await i?.app.close();
      await i?.ledger.close();
    }
  });

  const settles = () => a.gateway.calls.settle + b.gateway.calls.settle;
  const receipts = async () => (await a.ledger.receipts()).map((r) => `${r.identity.payer} ${r.status}`);

  it("the same id from another payer, same request: 409 payment-identifier-reused, nothing charged", async () => {
    const id = generatePaymentId();
    expect((await get(a, "days=30", withId(await signedV2Proof(accepted()), id))).statusCode).toBe(200);
    const verifiesBefore = b.gateway.calls.verify;
    const other = await get(b, "days=30", withId(await signedV2Proof(accepted(), undefined, OTHER_KEY), id));
    expect(other.statusCode).toBe(409);
    expect(other.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(other.headers["cache-control"]).toBe("no-store");
    expect(other.json().type).toMatch(/payment-identifier-reused$/);
    expect(other.json().detail).toMatch(/nothing was charged/);
    // Refused once the facilitator verified it (a proof merely naming a payer learns nothing), never settled.
    expect(b.gateway.calls.verify).toBe(verifiesBefore + 1);
    expect(settles()).toBe(1);
    expect(await receipts()).toEqual([`${PAYER} settled`]);

    // The id's payer still gets its answer with it; the other payer buys with an id of its own.
    const retry = await get(a, "days=30", withId(await signedV2Proof(accepted()), id));
    expect(retry.statusCode).toBe(200);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    const own = await get(
      b,
      "days=30",
      withId(await signedV2Proof(accepted(), undefined, OTHER_KEY), generatePaymentId()),
    );
    expect(own.statusCode).toBe(200);
    expect(settles()).toBe(2);
    expect(await receipts()).toEqual([`${PAYER} settled`, `${OTHER} settled`]);
  });

  it("the same id from another payer for another request: 409 as well, nothing charged", async () => {
    const id = generatePaymentId();
    const before = settles();
    expect(
      (await get(b, "days=40", withId(await signedV2Proof(accepted(), undefined, OTHER_KEY), id))).statusCode,
    ).toBe(200);
    const other = await get(a, "days=41", withId(await signedV2Proof(accepted()), id));
    expect(other.statusCode).toBe(409);
    expect(other.json().type).toMatch(/payment-identifier-reused$/);
    expect(settles()).toBe(before + 1);
  });
});
