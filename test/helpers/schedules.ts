import type { UnlockStore } from "../../src/unlocks/data/snapshot.js";
import type { SchedulePiece, TokenRecord } from "../../src/unlocks/data/types.js";

/** A schedule piece: a 100-token team cliff on 2027-01-31 from official docs unless `p` says otherwise. */
export const piece = (p: Partial<SchedulePiece>): SchedulePiece => ({
  recipient: "Team",
  category: "team",
  kind: "cliff",
  start: "2027-01-31",
  end: null,
  amount_tokens: 100,
  steps: null,
  step_days: null,
  source_type: "official_docs",
  timing_precision: "day",
  source_url: null,
  ...p,
});

/** The store's first token renamed TST, with only `schedules`. */
export const testToken = (store: UnlockStore, schedules: SchedulePiece[]): TokenRecord => ({
  ...(store.tokens[0] as TokenRecord),
  symbol: "TST",
  schedules,
});
