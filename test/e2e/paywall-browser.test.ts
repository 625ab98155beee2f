import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { type TypedDataDefinition, toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PRICES } from "../../src/operations/prices.js";
import { useDevnetServer } from "../helpers/devnet-server.js";

/*
 * A person pays through the browser paywall: headless Chromium opens a paid GET, gets the @x402/paywall page, connects
 * an injected EIP-1193 wallet (an anvil key; typed data signed by viem on the test's side) and pays on the devnet.
 * The page's own chain reads (USDC balance, via the chain's public RPC URL) are answered by the devnet's anvil: every
 * https request of the page is intercepted, so the browser reaches nothing but 127.0.0.1.
 */
const CHROMIUM = "/usr/bin/chromium";
const OUT_DIR = fileURLToPath(new URL("../../test-output/", import.meta.url));
const CHAIN_ID_HEX = toHex(8453);

const srv = useDevnetServer("p402-paywall-", { MAX_EVENT_LOOP_DELAY_MS: "0" });
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: install it with \`apt-get update && apt-get install -y chromium\``,
    );
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

/** JSON-RPC to the devnet's anvil. */
async function anvil(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(srv.devnet().rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

/** eth_signTypedData_v4 sends integers as decimal strings; viem signs bigints. */
function typedDataFromJson(json: string): TypedDataDefinition {
  const data = JSON.parse(json) as {
    domain: Record<string, unknown>;
    types: Record<string, { name: string; type: string }[]>;
    primaryType: string;
    message: Record<string, unknown>;
  };
  const { EIP712Domain: _domainTypes, ...types } = data.types;
  const fields = types[data.primaryType] ?? [];
  const message = Object.fromEntries(
    Object.entries(data.message).map(([k, v]) => {
      const type = fields.find((f) => f.name === k)?.type ?? "";
      return [k, /^u?int\d*$/.test(type) ? BigInt(v as string) : v];
    }),
  );
  const domain = {
    ...data.domain,
    chainId: data.domain.chainId === undefined ? undefined : Number(data.domain.chainId),
  };
  return { domain, types, primaryType: data.primaryType, message } as unknown as TypedDataDefinition;
}

/**
 * A test wallet in the page: window.ethereum (EIP-1193, also announced by EIP-6963) whose requests are answered here.
 * It holds one anvil key, is on Base (8453), signs typed data with viem and passes chain reads to anvil.
 */
async function injectWallet(page: Page, privateKey: `0x${string}`, signed: string[]): Promise<void> {
  const account = privateKeyToAccount(privateKey);
  // Like a real wallet, it shares no account until the person approves the connection (eth_requestAccounts).
  let connected = false;
  await page.exposeFunction("__testWallet", async (method: string, params: unknown[]) => {
    switch (method) {
      case "eth_requestAccounts":
        connected = true;
        return [account.address];
      case "eth_accounts":
        return connected ? [account.address] : [];
      case "eth_chainId":
        return CHAIN_ID_HEX;
      case "net_version":
        return "8453";
      case "wallet_switchEthereumChain":
      case "wallet_addEthereumChain":
        return null;
      case "wallet_requestPermissions":
      case "wallet_getPermissions":
        return [{ parentCapability: "eth_accounts" }];
      case "eth_signTypedData_v4": {
        const [from, json] = params as [string, string];
        if (from.toLowerCase() !== account.address.toLowerCase()) throw new Error(`unknown account ${from}`);
        const signature = await account.signTypedData(typedDataFromJson(json));
        signed.push(JSON.parse(json).primaryType);
        return signature;
      }
      default:
        return anvil(method, params);
    }
  });
  // Plain JavaScript, run in the page before its own scripts. The wallet never emits events (its account and chain
  // do not change during the test), so listeners are accepted and ignored.
  await page.addInitScript(`
    const provider = {
      isMetaMask: true,
      request: ({ method, params }) => window.__testWallet(method, params ?? []),
      on: () => provider,
      removeListener: () => provider,
    };
    window.ethereum = provider;
    const info = {
      uuid: "00000000-0000-4000-8000-000000000402",
      name: "Test Wallet",
      icon: "data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>",
      rdns: "test.pressure402.wallet",
    };
    const announce = () =>
      window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: Object.freeze({ info, provider }) }));
    window.addEventListener("eip6963:requestProvider", announce);
    announce();
  `);
}

describe("the browser paywall on the devnet", () => {
  it("a person opens a paid GET, connects a wallet, signs, pays exactly the price and sees the result", async () => {
    const d = srv.devnet();
    const buyer = d.buyers[0]!;
    const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
    const signed: string[] = [];
    const outside: string[] = [];
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await injectWallet(page, buyer.privateKey, signed);
    // The page reads the USDC balance from the chain's public RPC: answered by anvil. Nothing else leaves the machine.
    await page.route(/^https?:\/\/(?!127\.0\.0\.1)/, async (route) => {
      const request = route.request();
      if (request.method() === "POST" && new URL(request.url()).hostname === "mainnet.base.org") {
        const calls = request.postDataJSON() as
          | { id: number; method: string; params: unknown[] }
          | { id: number; method: string; params: unknown[] }[];
        const one = async (c: { id: number; method: string; params: unknown[] }) => ({
          jsonrpc: "2.0",
          id: c.id,
          result: await anvil(c.method, c.params ?? []),
        });
        const body = Array.isArray(calls) ? await Promise.all(calls.map(one)) : await one(calls);
        return route.fulfill({ contentType: "application/json", body: JSON.stringify(body) });
      }
      outside.push(request.url());
      return route.abort();
    });

    const target = srv.url("/v1/unlocks/upcoming?days=30");
    const first = await page.goto(target);
    expect(first?.status()).toBe(402);
    expect(first?.headers()["content-type"]).toContain("text/html");
    // Price and description as the route states them.
    await page.waitForSelector("text=Payment Required", { timeout: 30_000 });
    const intro = await page.locator(".header").innerText();
    expect(intro).toContain("Upcoming token unlock events with modelled sell-pressure risk");
    expect(intro).toContain("$0.02");
    mkdirSync(OUT_DIR, { recursive: true });
    await page.screenshot({ path: `${OUT_DIR}paywall-402.png` });

    const [payToBefore, buyerBefore] = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer.address)]);
    // The person picks their wallet among those the page found (EIP-6963 announces it by name), then connects.
    const wallets = page.locator("select");
    await wallets.waitFor({ timeout: 30_000 });
    const options = await wallets.locator("option").allInnerTexts();
    expect(options).toContain("Test Wallet");
    await wallets.selectOption({ label: "Test Wallet" });
    await page
      .getByRole("button", { name: /^connect/i })
      .first()
      .click({ timeout: 30_000 });
    const pay = page.getByRole("button", { name: /^pay/i }).first();
    await pay.waitFor({ timeout: 30_000 });
    await page.screenshot({ path: `${OUT_DIR}paywall-connected.png` });
    await pay.click();

    // The paywall repeats the request with PAYMENT-SIGNATURE and shows the JSON answer (a blob: document).
    await page.waitForURL(/^blob:/, { timeout: 60_000 });
    const shown = JSON.parse(await page.locator("body").innerText()) as { days: number; unlocks: unknown[] };
    expect(shown.days).toBe(30);
    expect(Array.isArray(shown.unlocks)).toBe(true);
    await page.screenshot({ path: `${OUT_DIR}paywall-paid.png` });
    console.log(`paywall screenshots: ${OUT_DIR}paywall-{402,connected,paid}.png`);

    const [payToAfter, buyerAfter] = await Promise.all([d.balanceOf(d.payTo), d.balanceOf(buyer.address)]);
    console.log(
      `paywall in Chromium: buyer ${buyerBefore} -> ${buyerAfter} (${buyerAfter - buyerBefore}), payTo ${payToBefore} -> ${payToAfter} (+${payToAfter - payToBefore}) atomic USDC`,
    );
    expect(buyerBefore - buyerAfter).toBe(BigInt(PRICES.upcoming.amount));
    expect(payToAfter - payToBefore).toBe(BigInt(PRICES.upcoming.amount));
    expect(signed).toEqual(["TransferWithAuthorization"]);
    expect(errors).toEqual([]);
    // Blocked, not reached: what the page tried beyond the chain RPC (wallet SDK telemetry and the like).
    if (outside.length > 0)
      console.log(`paywall: ${outside.length} outside requests aborted, e.g. ${outside[0]}`);
    await page.close();
  }, 180_000);
});
