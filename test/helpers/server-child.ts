import { parseConfig } from "../../src/config.js";
import { start } from "../../src/server.js";

// The production entry point (start) as a child process a test can SIGKILL, pointed at a facilitator and chain the test
// owns (so both outlive the process). Prints the same ready line as the devnet server.
const { address } = await start(parseConfig(process.env));
process.stdout.write(`pressure402 is listening on ${address}\n`);
