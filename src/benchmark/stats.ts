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

/** ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; ~15 significant digits). */
function lnGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const z = x - 1;
  let a = c[0] as number;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += (c[i] as number) / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the incomplete beta function (modified Lentz). */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-14) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2)
    ? (front * betaContinuedFraction(x, a, b)) / a
    : 1 - (front * betaContinuedFraction(1 - x, b, a)) / b;
}

/**
 * Harrell–Davis quantile of an ascending array: a weighted mean of every order statistic with
 * Beta((n+1)p, (n+1)(1−p)) weights. Unlike an interpolated order statistic it does not jump
 * when one value enters or leaves a sparse tail, so one seller cannot move a market's p90 alone.
 */
export function harrellDavis(sorted: readonly number[], p: number): number | null {
  const n = sorted.length;
  if (n === 0) return null;
  if (p < 0 || p > 100) throw new RangeError(`percentile out of range: ${p}`);
  if (n === 1) return sorted[0] as number;
  const q = p / 100;
  if (q === 0) return sorted[0] as number;
  if (q === 1) return sorted[n - 1] as number;
  const a = (n + 1) * q;
  const b = (n + 1) * (1 - q);
  let prev = 0;
  let sum = 0;
  for (let i = 1; i <= n; i++) {
    const cur = incompleteBeta(i / n, a, b);
    sum += (cur - prev) * (sorted[i - 1] as number);
    prev = cur;
  }
  return sum;
}
