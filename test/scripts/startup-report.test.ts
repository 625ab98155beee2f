import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServerProcess } from "../../scripts/server-process.js";
import { freePort } from "../../src/devnet/ports.js";
import { TEST_PAY_TO } from "../helpers/app.js";
import { type FaultFacilitator, startFaultFacilitator } from "../helpers/fault-facilitator.js";

/*
 * What the server says about itself as it starts: the network, facilitator and ledger it uses, a wrong OWNERSHIP_PROOF
 * (loudly: it is not published), and on the devnet the PAY_TO that really receives the payments and a pinned
 * facilitator port.
 */
const dir = mkdtempSync(join(tmpdir(), "p402-startup-"));
let fac: FaultFacilitator;
const running: ServerProcess[] = [];
beforeAll(async () => {
  fac = await startFaultFacilitator();
});
afterAll(async () => {
  for (const p of running) await p.stop();
  await fac.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the start-up report", () => {
  it("names the network, the facilitator's origin and the ledger, and refuses a wrong OWNERSHIP_PROOF loudly", async () => {
    const p = await startServerProcess({
      LOG_LEVEL: "info",
      METRICS_PORT: "0",
      FACILITATOR_URL: `${fac.url}/secret-path-token`,
      PAY_TO: TEST_PAY_TO,
      PUBLIC_BASE_URL: "https://api.example.com",
      LEDGER_PATH: join(dir, "a.sqlite"),
      OWNERSHIP_PROOF: `0x${"ab".repeat(65)}`,
    });
    running.push(p);
    const lines = p
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    const report = lines.find((l) => l.msg.startsWith("payments on "));
    expect(report?.msg).toBe(
      `payments on Base (eip155:8453) to ${TEST_PAY_TO}; facilitator: ${fac.url}; ledger: SQLite at ${join(dir, "a.sqlite")}`,
    );
    expect(p.output()).not.toContain("secret-path-token");
    const proof = lines.find((l) => l.msg.startsWith("OWNERSHIP_PROOF:"));
    expect(proof?.level).toBe(50);
    expect(proof?.msg).toContain("does not verify");
    expect(proof?.msg).toContain("https://api.example.com");
  }, 60_000);

  it("on the devnet: the banner names PAY_TO when it is set, and the facilitator listens on the pinned port", async () => {
    const port = await freePort();
    const p = await startServerProcess(
      {
        METRICS_PORT: "0",
        PAY_TO: TEST_PAY_TO,
        LEDGER_PATH: join(dir, "b.sqlite"),
        DEVNET_FACILITATOR_PORT: String(port),
      },
      120_000,
    );
    running.push(p);
    // The banner comes once the chain is up, after the listening line.
    for (let i = 0; i < 600 && !p.output().includes("payments go to"); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(p.output()).toContain(
      `payments go to ${TEST_PAY_TO} (PAY_TO); the local facilitator is http://127.0.0.1:${port}`,
    );
  }, 150_000);
});
