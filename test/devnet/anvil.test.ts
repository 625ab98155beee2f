import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { resolveAnvilBinary, rpcChainId, startAnvil } from "../../src/devnet/anvil.js";

const chainId = rpcChainId;

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

describe("anvil", () => {
  it("resolves the binary shipped in the @foundry-rs/anvil npm package", () => {
    const binary = resolveAnvilBinary();
    expect(binary).toMatch(/@foundry-rs[/\\]anvil-[a-z0-9]+-[a-z0-9]+[/\\]bin[/\\]anvil(\.exe)?$/);
    expect(existsSync(binary)).toBe(true);
  });

  it("starts on a free port with chain id 8453 and stops (twice is harmless)", async () => {
    const a = await startAnvil();
    const b = await startAnvil();
    try {
      expect(a.port).not.toBe(b.port);
      expect(a.rpcUrl).toBe(`http://127.0.0.1:${a.port}`);
      expect(await chainId(a.rpcUrl)).toBe("0x2105");
    } finally {
      await a.stop();
      await a.stop();
      await b.stop();
    }
    expect(await chainId(a.rpcUrl)).toBeUndefined();
    expect(await chainId(b.rpcUrl)).toBeUndefined();
  });

  it("fails clearly when the port is taken", async () => {
    const a = await startAnvil();
    try {
      await expect(startAnvil({ port: a.port, startupTimeoutMs: 10_000 })).rejects.toThrow(/anvil/);
      expect(await chainId(a.rpcUrl)).toBe("0x2105");
    } finally {
      await a.stop();
    }
  });

  it("dies with its parent process, even when the parent is SIGKILLed", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/anvil-child.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", fixture], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const rpcUrl = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const line = out.split("\n").find((l) => l.startsWith("http://"));
          if (line) resolve(line.trim());
        });
        child.once("exit", (code) => reject(new Error(`fixture exited early (${code})`)));
      });
      expect(await chainId(rpcUrl)).toBe("0x2105");
      child.kill("SIGKILL");
      expect(await eventually(async () => (await chainId(rpcUrl)) === undefined, 10_000)).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
