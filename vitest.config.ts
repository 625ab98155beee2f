import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    // e2e suites start anvil + a server each; two cores, so keep files from oversubscribing the machine.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Servers the tests start (in process or as child processes, which inherit this) never reach the public data
    // sources: the refresh loop is off unless a test turns it on against its own loopback stand-ins.
    env: { REFRESH_INTERVAL_SECONDS: "0" },
    // Fails a test file that looked up or connected to anything but loopback.
    setupFiles: ["test/setup/loopback-only.ts"],
  },
});
