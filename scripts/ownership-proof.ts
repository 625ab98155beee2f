/**
 * `npm run ownership-proof`: prints the OWNERSHIP_PROOF for /.well-known/x402, the EIP-191 signature of the public
 * origin by the PAY_TO key. Run it offline where the key lives; the server only ever gets the signature, and publishes
 * it only if it verifies against PAY_TO.
 * Env: PAY_TO_PRIVATE_KEY (0x + 64 hex), PUBLIC_BASE_URL (the origin clients use, e.g. https://api.example.com).
 */
import { privateKeyToAccount } from "viem/accounts";

async function main() {
  const key = process.env.PAY_TO_PRIVATE_KEY;
  const origin = process.env.PUBLIC_BASE_URL?.replace(/\/+$/, "");
  if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key) || !origin || !/^https?:\/\/[^\s/]+$/.test(origin)) {
    process.stderr.write(
      "usage: PAY_TO_PRIVATE_KEY=0x<64 hex> PUBLIC_BASE_URL=https://your.origin npm run ownership-proof\n",
    );
    process.exit(2);
  }
  const account = privateKeyToAccount(key as `0x${string}`);
  const signature = await account.signMessage({ message: origin });
  process.stdout.write(`# PAY_TO=${account.address}\nOWNERSHIP_PROOF=${signature}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`ownership-proof: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
