import { rmSync } from "node:fs";
import { afterAll, afterEach } from "vitest";
import type { FaultFacilitator, HttpApp } from "./fault-facilitator.js";

/** What the running test started: put here, it is closed after the test (the app first, then the facilitator). */
export interface FaultStack {
  fac: FaultFacilitator | undefined;
  http: HttpApp | undefined;
  /** Temp folders removed once the file's tests are done. */
  dirs: string[];
}

export function useFaultStack(): FaultStack {
  const stack: FaultStack = { fac: undefined, http: undefined, dirs: [] };
  afterEach(async () => {
    await stack.http?.close();
    await stack.fac?.close();
    stack.http = undefined;
    stack.fac = undefined;
  });
  afterAll(() => {
    for (const d of stack.dirs) rmSync(d, { recursive: true, force: true });
  });
  return stack;
}
