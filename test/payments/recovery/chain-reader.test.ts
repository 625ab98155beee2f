import type { PublicClient } from "viem";
import { describe, expect, it } from "vitest";
import {
  blocksAround,
  ChainLookupDeferred,
  chainReaderFor,
} from "../../../src/payments/recovery/chain-reader.js";

const q = {
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  payer: "0x000000000000000000000000000000000000b0b0",
  nonce: `0x${"ab".repeat(32)}`,
  payTo: "0x00000000000000000000000000000000000000aa",
  amount: "20000",
  since: new Date("2026-11-22T12:00:00Z"),
  now: new Date("2026-11-22T12:00:10Z"),
};

describe("a lookup the chain cannot answer", () => {
  it("is not repeated per request: requests get deferred without an RPC call; the reconciler asks again", async () => {
    let reads = 0;
    let now = 0;
    const client = {
      readContract: async () => {
        reads += 1;
        throw new Error("rpc down");
      },
    } as unknown as PublicClient;
    const chain = chainReaderFor(client, { deferAfterFailureMs: 30_000, clock: () => now });
    await expect(chain.lookup(q)).rejects.toThrow("rpc down");
    for (let i = 0; i < 50; i++) await expect(chain.lookup(q)).rejects.toBeInstanceOf(ChainLookupDeferred);
    expect(reads).toBe(1);
    await expect(chain.lookup({ ...q, origin: "reconciler" })).rejects.toThrow("rpc down");
    expect(reads).toBe(2);
    now = 30_001; // once the reconciler's period has passed, a request may ask again
    await expect(chain.lookup(q)).rejects.toThrow("rpc down");
    expect(reads).toBe(3);
  });

  it("concurrent retries of one authorization share one lookup", async () => {
    let reads = 0;
    let answer: (v: boolean) => void = () => {};
    const client = {
      readContract: () => {
        reads += 1;
        return new Promise<boolean>((r) => (answer = r));
      },
    } as unknown as PublicClient;
    const chain = chainReaderFor(client);
    const all = Promise.all(Array.from({ length: 20 }, () => chain.lookup(q)));
    answer(false);
    expect(await all).toEqual(Array.from({ length: 20 }, () => ({ kind: "unused", expired: false })));
    expect(reads).toBe(1);
  });
});

describe("blocksAround (time → block, by interpolation from the head)", () => {
  /** A chain of `height` blocks, 2 s apart, with a 30 s gap at block 1,000 (a halt): counts header reads. */
  function chainOf(height: bigint) {
    const ts = (n: bigint) => 1_000_000n + n * 2n + (n >= 1000n ? 30n : 0n);
    const reads: bigint[] = [];
    const client = {
      getBlock: async ({ blockNumber }: { blockNumber: bigint }) => {
        reads.push(blockNumber);
        return { number: blockNumber, timestamp: ts(blockNumber) };
      },
    };
    return { client, reads, ts, latest: { number: height, timestamp: ts(height) } };
  }

  it("brackets a time within a few header reads and never reads far below it", async () => {
    const c = chainOf(20_000n);
    const t = c.ts(19_850n) + 1n;
    const { atOrBefore, atOrAfter } = await blocksAround(c.client as never, t, c.latest, 2);
    expect(c.ts(atOrBefore)).toBeLessThanOrEqual(t);
    expect(c.ts(atOrAfter)).toBeGreaterThanOrEqual(t);
    expect(atOrAfter - atOrBefore).toBeLessThanOrEqual(64n);
    expect(c.reads.length).toBeLessThanOrEqual(3);
    for (const r of c.reads) expect(r).toBeGreaterThanOrEqual(19_700n);
  });

  it("still brackets correctly when the assumed block time is wrong (a halt, slower blocks)", async () => {
    const c = chainOf(20_000n);
    const t = c.ts(900n);
    const { atOrBefore, atOrAfter } = await blocksAround(c.client as never, t, c.latest, 1);
    expect(c.ts(atOrBefore)).toBeLessThanOrEqual(t);
    expect(c.ts(atOrAfter)).toBeGreaterThanOrEqual(t);
    expect(c.reads.length).toBeLessThanOrEqual(8);
  });

  it("a time at or after the head is the head; before genesis is block 0", async () => {
    const c = chainOf(100n);
    expect(await blocksAround(c.client as never, c.latest.timestamp + 5n, c.latest, 2)).toEqual({
      atOrBefore: 100n,
      atOrAfter: 100n,
    });
    expect((await blocksAround(c.client as never, 0n, c.latest, 2)).atOrBefore).toBe(0n);
  });
});
