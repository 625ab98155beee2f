import { describe, expect, it } from "vitest";
import {
  BUYER_ACCOUNT_INDEXES,
  deriveDevnetKey,
  devnetKey,
  FACILITATOR_ACCOUNT_INDEX,
  PAY_TO_ACCOUNT_INDEX,
} from "../../src/devnet/constants.js";

describe("devnet keys", () => {
  it("the written-out keys are the ones anvil's default mnemonic derives, for every account the devnet uses", () => {
    const used = [FACILITATOR_ACCOUNT_INDEX, ...BUYER_ACCOUNT_INDEXES, PAY_TO_ACCOUNT_INDEX];
    for (const index of used) expect(devnetKey(index), `account ${index}`).toEqual(deriveDevnetKey(index));
  });

  it("derives accounts past the written-out ones", () => {
    expect(devnetKey(PAY_TO_ACCOUNT_INDEX + 1)).toEqual(deriveDevnetKey(PAY_TO_ACCOUNT_INDEX + 1));
    expect(devnetKey(0).address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"); // anvil's banner shows it
  });
});
