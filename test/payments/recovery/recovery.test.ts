import { describe, expect, it } from "vitest";
import type { Incarnation } from "../../../src/ledger/port.js";
import { deadIncarnations } from "../../../src/payments/recovery/recovery.js";

describe("deadIncarnations", () => {
  const now = new Date("2026-11-22T12:00:00.000Z");
  const inc = (id: string, heartbeatAgoMs: number, over: Partial<Incarnation> = {}): Incarnation => ({
    id,
    startedAt: "2026-11-22T00:00:00.000Z",
    heartbeatAt: new Date(now.getTime() - heartbeatAgoMs).toISOString(),
    endedAt: null,
    ...over,
  });
  const shared = { singleInstance: false, staleMs: 60_000 };

  it("trusts the ledger's liveness over the heartbeat when it has one (PostgreSQL)", () => {
    const all = [
      inc("self", 0, { alive: true }),
      inc("killed-just-now", 10, { alive: false }), // fresh heartbeat, connection gone: dead
      inc("slow-but-connected", 3_600_000, { alive: true }), // stale heartbeat, still connected: alive
      inc("ended", 10, { alive: false, endedAt: now.toISOString() }), // stopped cleanly: nothing to release
    ];
    expect(deadIncarnations(all, "self", now, shared)).toEqual(["killed-just-now"]);
  });

  it("without liveness, judges by the heartbeat when shared, and every other one is dead when alone", () => {
    const all = [inc("self", 0), inc("fresh", 59_999), inc("stale", 60_001)];
    expect(deadIncarnations(all, "self", now, shared)).toEqual(["stale"]);
    expect(deadIncarnations(all, "self", now, { ...shared, singleInstance: true })).toEqual([
      "fresh",
      "stale",
    ]);
  });
});
