import { startDevnet } from "../src/devnet/index.js";

/*
 * Runs the embedded devnet alone (anvil chain 8453 + test USDC + local facilitator) on 127.0.0.1, for a server that
 * runs elsewhere, e.g. the production image in scripts/image.sh. Prints one `DEVNET {json}` line when ready and stops
 * on SIGINT/SIGTERM.
 */
// Pinnable ports (0 or unset: any free one), so a server started elsewhere can be configured before the devnet is up.
const port = (name: string) => {
  const v = Number(process.env[name] ?? "0");
  return Number.isInteger(v) && v > 0 && v < 65536 ? v : undefined;
};
const devnet = await startDevnet({
  host: "127.0.0.1",
  anvilPort: port("DEVNET_ANVIL_PORT"),
  facilitatorPort: port("DEVNET_FACILITATOR_PORT"),
});
process.stdout.write(
  `DEVNET ${JSON.stringify({
    rpcUrl: devnet.rpcUrl,
    facilitatorUrl: devnet.facilitatorUrl,
    payTo: devnet.payTo,
    buyer: devnet.buyers[0]?.address,
  })}\n`,
);
const stop = async () => {
  await devnet.stop();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
