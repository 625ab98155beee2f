/** Day numbers: whole days since 1970-01-01 UTC. All schedule arithmetic happens on these. */
const MS_PER_DAY = 86_400_000;
/** Memo capacity: ample for every schedule date of a 100k-event store; past it, results are computed each time. */
const MEMO_MAX = 100_000;

/**
 * `compute`, remembered for up to MEMO_MAX keys. Expanding and scoring a store's schedules asks for the same few
 * thousand dates and month steps again and again.
 */
function memoised<K, V>(compute: (key: K) => V): (key: K) => V {
  const known = new Map<K, V>();
  return (key) => {
    const hit = known.get(key);
    if (hit !== undefined) return hit;
    const value = compute(key);
    if (known.size < MEMO_MAX) known.set(key, value);
    return value;
  };
}

/** Day number of a `YYYY-MM-DD` date, NaN when it is not a real calendar date. */
export const parseDay: (iso: string) => number = memoised((iso: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(iso);
  if (!m) return Number.NaN;
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  // Reject dates such as 2024-02-31 that Date.UTC would silently roll over.
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d)
    return Number.NaN;
  return ms / MS_PER_DAY;
});

/** `YYYY-MM-DD` of a day number. */
export const formatDay: (day: number) => string = memoised((day: number) =>
  new Date(day * MS_PER_DAY).toISOString().slice(0, 10),
);

export function dayOf(date: Date): number {
  return Math.floor(date.getTime() / MS_PER_DAY);
}

function addMonthsUncached(day: number, months: number): number {
  const d = new Date(day * MS_PER_DAY);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + months;
  const dom = d.getUTCDate();
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  return Date.UTC(y, m, Math.min(dom, last)) / MS_PER_DAY;
}

/** One number per (whole day, |months| < 2048): the memo's key. */
const monthStep = memoised((key: number) => {
  const day = Math.floor(key / 4096);
  return addMonthsUncached(day, key - day * 4096 - 2048);
});

/** The same day-of-month `months` later, clamped to the month's last day (Jan 31 + 1 month = Feb 28/29). */
export function addMonths(day: number, months: number): number {
  return Number.isInteger(day) && Number.isInteger(months) && Math.abs(months) < 2048
    ? monthStep(day * 4096 + months + 2048)
    : addMonthsUncached(day, months);
}

/** First day of the calendar month containing `day`. */
export const monthStart: (day: number) => number = memoised((day: number) => {
  const d = new Date(day * MS_PER_DAY);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / MS_PER_DAY;
});

const DAY_S = 86_400;

/**
 * The UTC day of a unix time. 23:00 UTC is a local-midnight input meaning the next day (data/unlocks-wide/README.md,
 * trap 3); any other time falls inside its own day's candle.
 */
export function dayOfUnix(unix: number): number {
  const day = Math.floor(unix / DAY_S);
  return unix - day * DAY_S >= 23 * 3600 ? day + 1 : day;
}
