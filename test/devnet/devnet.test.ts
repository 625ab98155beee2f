import {
  type Abi,
  createPublicClient,
  createWalletClient,
  domainSeparator,
  getContractAddress,
  type Hex,
  http,
  type PublicClient,
  parseSignature,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getDevnetContracts } from "../../src/devnet/artifacts.js";
import { devnetChain } from "../../src/devnet/deploy.js";
import { BASE_USDC_ADDRESS, type Devnet, startDevnet } from "../../src/devnet/index.js";
import { TRANSFER_WITH_AUTHORIZATION } from "../../src/payments/terms/signature.js";

const ANVIL_ACCOUNTS_1_TO_9 = [
  "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
  "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
  "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
  "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
  "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
  "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
  "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
];
const ANVIL_ACCOUNT_0 = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

const RECEIVE_TYPES = {
  ReceiveWithAuthorization: TRANSFER_WITH_AUTHORIZATION.TransferWithAuthorization,
} as const;
const CANCEL_TYPES = {
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

const DOMAIN = {
  name: "USD Coin",
  version: "2",
  chainId: 8453,
  verifyingContract: BASE_USDC_ADDRESS,
} as const;

function randomNonce(): Hex {
  return `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}`;
}

describe("startDevnet", () => {
  let devnet: Devnet;
  let client: PublicClient;
  let abi: Abi;

  beforeAll(async () => {
    devnet = await startDevnet();
    client = createPublicClient({ chain: devnetChain(devnet.rpcUrl), transport: http(devnet.rpcUrl) });
    abi = getDevnetContracts().TestUSDC.abi;
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  it("runs anvil on 127.0.0.1 with chain id 8453 and exposes the Base USDC address", async () => {
    expect(devnet.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(devnet.facilitatorUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(devnet.chainId).toBe(8453);
    expect(await client.getChainId()).toBe(8453);
    expect(devnet.usdc).toBe("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
  });

  it("funds anvil accounts 1..9 with exactly 1,000 USDC each and payTo with nothing", async () => {
    expect(devnet.buyers.map((b) => b.address)).toEqual(ANVIL_ACCOUNTS_1_TO_9);
    for (const buyer of devnet.buyers) {
      expect(privateKeyToAccount(buyer.privateKey).address).toBe(buyer.address);
      expect(await devnet.balanceOf(buyer.address)).toBe(1_000_000_000n);
    }
    expect(await devnet.balanceOf(ANVIL_ACCOUNT_0)).toBe(0n);
    expect([ANVIL_ACCOUNT_0, ...ANVIL_ACCOUNTS_1_TO_9]).not.toContain(devnet.payTo);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(0n);
    const supply = await client.readContract({ address: devnet.usdc, abi, functionName: "totalSupply" });
    expect(supply).toBe(9_000_000_000n);
  });

  it("answers name, symbol, version and decimals like USDC at the Base USDC address", async () => {
    const read = (functionName: string) => client.readContract({ address: devnet.usdc, abi, functionName });
    expect(await read("name")).toBe("USD Coin");
    expect(await read("symbol")).toBe("USDC");
    expect(await read("version")).toBe("2");
    expect(await read("decimals")).toBe(6);
  });

  it("computes its EIP-712 domain from the address it runs at, not the one it was deployed at", async () => {
    const separator = await client.readContract({
      address: devnet.usdc,
      abi,
      functionName: "DOMAIN_SEPARATOR",
    });
    expect(separator).toBe(domainSeparator({ domain: DOMAIN }));
    const domain = (await client.readContract({
      address: devnet.usdc,
      abi,
      functionName: "eip712Domain",
    })) as [Hex, string, string, bigint, string, Hex, bigint[]];
    expect(domain.slice(0, 5)).toEqual(["0x0f", "USD Coin", "2", 8453n, BASE_USDC_ADDRESS]);
    // The original deployment (account 0, nonce 0) still answers with its own address.
    const original = getContractAddress({ from: ANVIL_ACCOUNT_0, nonce: 0n });
    const originalSeparator = await client.readContract({
      address: original,
      abi,
      functionName: "DOMAIN_SEPARATOR",
    });
    expect(originalSeparator).toBe(domainSeparator({ domain: { ...DOMAIN, verifyingContract: original } }));
    expect(originalSeparator).not.toBe(separator);
  });

  describe("EIP-3009 on chain", () => {
    const now = () => BigInt(Math.floor(Date.now() / 1000));

    async function signed(
      primaryType: "TransferWithAuthorization" | "ReceiveWithAuthorization",
      from: number,
      to: `0x${string}`,
      value: bigint,
    ) {
      const account = privateKeyToAccount(devnet.buyers[from]!.privateKey);
      const message = {
        from: account.address,
        to,
        value,
        validAfter: now() - 60n,
        validBefore: now() + 600n,
        nonce: randomNonce(),
      };
      const signature =
        primaryType === "TransferWithAuthorization"
          ? await account.signTypedData({
              domain: DOMAIN,
              types: TRANSFER_WITH_AUTHORIZATION,
              primaryType,
              message,
            })
          : await account.signTypedData({ domain: DOMAIN, types: RECEIVE_TYPES, primaryType, message });
      const args = [
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
      ] as const;
      return { message, signature, args };
    }

    function walletOf(index: number) {
      return createWalletClient({
        account: privateKeyToAccount(devnet.buyers[index]!.privateKey),
        chain: devnetChain(devnet.rpcUrl),
        transport: http(devnet.rpcUrl),
      });
    }

    async function send(index: number, functionName: string, args: readonly unknown[]) {
      const hash = await walletOf(index).writeContract({ address: devnet.usdc, abi, functionName, args });
      return client.waitForTransactionReceipt({ hash });
    }

    it("accepts the bytes-signature form of transferWithAuthorization, submitted by anyone, once", async () => {
      const { message, signature, args } = await signed("TransferWithAuthorization", 2, devnet.payTo, 1234n);
      const before = await devnet.balanceOf(devnet.payTo);
      const receipt = await send(8, "transferWithAuthorization", [...args, signature]);
      expect(receipt.status).toBe("success");
      expect(await devnet.balanceOf(devnet.payTo)).toBe(before + 1234n);
      expect(
        await client.readContract({
          address: devnet.usdc,
          abi,
          functionName: "authorizationState",
          args: [message.from, message.nonce],
        }),
      ).toBe(true);
      await expect(
        client.simulateContract({
          address: devnet.usdc,
          abi,
          functionName: "transferWithAuthorization",
          args: [...args, signature],
          account: devnet.buyers[8]!.address,
        }),
      ).rejects.toThrow(/authorization is used or canceled/);
    });

    it("refuses a signature for different terms and a malleable (high-s) signature", async () => {
      const { signature, args } = await signed("TransferWithAuthorization", 3, devnet.payTo, 500n);
      const inflated = [args[0], args[1], 501n, args[3], args[4], args[5]] as const;
      await expect(
        client.simulateContract({
          address: devnet.usdc,
          abi,
          functionName: "transferWithAuthorization",
          args: [...inflated, signature],
          account: devnet.buyers[8]!.address,
        }),
      ).rejects.toThrow(/invalid signature/);
      const { r, s, yParity } = parseSignature(signature);
      const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
      const highS = `0x${(n - BigInt(s)).toString(16).padStart(64, "0")}` as Hex;
      await expect(
        client.simulateContract({
          address: devnet.usdc,
          abi,
          functionName: "transferWithAuthorization",
          args: [...args, yParity === 0 ? 28 : 27, r, highS],
          account: devnet.buyers[8]!.address,
        }),
      ).rejects.toThrow(/invalid signature/);
    });

    it("receiveWithAuthorization (v,r,s) only works when the payee submits it", async () => {
      const payee = devnet.buyers[5]!.address;
      const { signature, args } = await signed("ReceiveWithAuthorization", 4, payee, 777n);
      const { r, s, v } = parseSignature(signature);
      await expect(
        client.simulateContract({
          address: devnet.usdc,
          abi,
          functionName: "receiveWithAuthorization",
          args: [...args, Number(v), r, s],
          account: devnet.buyers[8]!.address,
        }),
      ).rejects.toThrow(/caller must be the payee/);
      const before = await devnet.balanceOf(payee);
      expect((await send(5, "receiveWithAuthorization", [...args, Number(v), r, s])).status).toBe("success");
      expect(await devnet.balanceOf(payee)).toBe(before + 777n);
    });

    it("cancelAuthorization burns a nonce so a signed transfer can no longer be used", async () => {
      const { message, signature, args } = await signed("TransferWithAuthorization", 6, devnet.payTo, 9n);
      const account = privateKeyToAccount(devnet.buyers[6]!.privateKey);
      const cancelSig = await account.signTypedData({
        domain: DOMAIN,
        types: CANCEL_TYPES,
        primaryType: "CancelAuthorization",
        message: { authorizer: account.address, nonce: message.nonce },
      });
      expect((await send(8, "cancelAuthorization", [account.address, message.nonce, cancelSig])).status).toBe(
        "success",
      );
      await expect(
        client.simulateContract({
          address: devnet.usdc,
          abi,
          functionName: "transferWithAuthorization",
          args: [...args, signature],
          account: devnet.buyers[8]!.address,
        }),
      ).rejects.toThrow(/authorization is used or canceled/);
    });

    it("refuses expired and not-yet-valid authorizations and transfers beyond the balance", async () => {
      const account = privateKeyToAccount(devnet.buyers[7]!.privateKey);
      const attempt = async (validAfter: bigint, validBefore: bigint, value: bigint) => {
        const message = {
          from: account.address,
          to: devnet.payTo,
          value,
          validAfter,
          validBefore,
          nonce: randomNonce(),
        };
        const signature = await account.signTypedData({
          domain: DOMAIN,
          types: TRANSFER_WITH_AUTHORIZATION,
          primaryType: "TransferWithAuthorization",
          message,
        });
        return client.simulateContract({
          address: devnet.usdc,
          abi,
          functionName: "transferWithAuthorization",
          args: [...Object.values(message), signature],
          account: devnet.buyers[8]!.address,
        });
      };
      await expect(attempt(0n, now() - 10n, 1n)).rejects.toThrow(/authorization is expired/);
      await expect(attempt(now() + 600n, now() + 1200n, 1n)).rejects.toThrow(
        /authorization is not yet valid/,
      );
      await expect(attempt(0n, now() + 600n, 1_000_000_001n)).rejects.toThrow(/exceeds balance/);
    });
  });
});
