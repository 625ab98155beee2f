/** Order statistics over USD prices (analytical numbers, never charged amounts). */

/** Linear-interpolated percentile (Hyndman–Fan type 7, as in numpy's default) of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  if (p < 0 || p > 100) throw new RangeError(`percentile out of range: ${p}`);
  const h = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (h - lo) * (b - a);
}

/**
 * Mid-rank percentile of `value` among `sorted`: the share priced strictly below plus half the
 * share priced the same, in percent. 0 = cheaper than all, 100 = dearer than all.
 */
export function percentileRank(sorted: readonly number[], value: number): number | null {
  if (sorted.length === 0) return null;
  let below = 0;
  let equal = 0;
  for (const x of sorted) {
    if (x < value) below++;
    else if (x === value) equal++;
  }
  return ((below + equal / 2) / sorted.length) * 100;
}

/** Rounds a USD statistic to the 6 decimals a USDC amount can carry. */
export function roundUsd(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

export function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
