import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startServerProcess } from "../../scripts/server-process.js";
import { rpcChainId } from "../../src/devnet/anvil.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const rpcAnswers = async (url: string) => (await rpcChainId(url)) === "0x2105";

describe("the server process (what `npm start` runs)", () => {
  it("starts the devnet, prints how to pay, answers 402, and stops the chain on SIGTERM", async () => {
    // No load shedding: on a loaded machine it would turn the 402 into 503 overloaded (tested on its own).
    const server = await startServerProcess({
      LOG_LEVEL: "warn",
      LEDGER_PATH: ":memory:",
      MAX_EVENT_LOOP_DELAY_MS: "0",
    });
    try {
      const out = server.output();
      expect(out).toContain("npm run pay -- GET '/v1/unlocks/upcoming?days=30'");
      const rpc = /anvil chain 8453 at (http:\/\/\S+)\)/.exec(out)?.[1];
      expect(rpc).toBeDefined();
      expect(await rpcAnswers(rpc as string)).toBe(true);
      const res = await fetch(`${server.url}/v1/unlocks/upcoming`);
      expect(res.status).toBe(402);
      expect(await server.stop("SIGTERM")).toBe(0);
      expect(await rpcAnswers(rpc as string)).toBe(false);
    } finally {
      await server.stop("SIGKILL");
    }
  });

  it("refuses to start in production without a facilitator and payTo, naming both", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: "production",
        FACILITATOR_URL: "",
        PAY_TO: "",
        CDP_API_KEY_ID: "",
        CDP_API_KEY_SECRET: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(err).toMatch(/FACILITATOR_URL/);
    expect(err).toMatch(/PAY_TO/);
  });
});
