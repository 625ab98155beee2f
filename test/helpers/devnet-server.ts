import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { parseConfig } from "../../src/config.js";
import { start } from "../../src/server.js";

export type StartedServer = Awaited<ReturnType<typeof start>>;
export type EmbeddedDevnet = NonNullable<StartedServer["devnet"]>;

export interface DevnetServer {
  readonly server: StartedServer;
  readonly ledgerPath: string;
  devnet(): EmbeddedDevnet;
  url(path: string): string;
  /** A path on the metrics listener (loopback, its own port). */
  metricsUrl(path: string): string;
}

/**
 * The real server on its embedded devnet (no FACILITATOR_URL) with a fresh SQLite ledger in a temp folder: started
 * before the file's tests, stopped after them (after-hooks run in reverse, so the file's own cleanup runs first).
 */
export function useDevnetServer(
  tmpPrefix: string,
  env: Record<string, string> | (() => Record<string, string>) = {},
): DevnetServer {
  let server: StartedServer | undefined;
  let dir: string | undefined;
  let ledgerPath = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), tmpPrefix));
    ledgerPath = join(dir, "ledger.sqlite");
    server = await start(
      parseConfig({
        NODE_ENV: "test",
        PORT: "0",
        LOG_LEVEL: "silent",
        LEDGER_PATH: ledgerPath,
        // The shipped data, never refreshed: a test server talks to loopback only.
        REFRESH_INTERVAL_SECONDS: "0",
        // Test servers run side by side: each takes a free port for its metrics listener, not the shared 9464.
        METRICS_PORT: "0",
        // A function is read when the server starts: after the file's earlier before-hooks (a port they chose).
        ...(typeof env === "function" ? env() : env),
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const started = (): StartedServer => {
    if (!server) throw new Error("the server has not started");
    return server;
  };
  return {
    get server() {
      return started();
    },
    get ledgerPath() {
      return ledgerPath;
    },
    devnet: () => {
      const devnet = started().devnet;
      if (!devnet) throw new Error("expected the embedded devnet");
      return devnet;
    },
    url: (path) => `${started().address}${path}`,
    metricsUrl: (path) => {
      const address = started().metricsAddress;
      if (!address) throw new Error("the metrics listener is not listening");
      return `${address}${path}`;
    },
  };
}

/** A POST with a JSON body. */
export const jsonInit = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
