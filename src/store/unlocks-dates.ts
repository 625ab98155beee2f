/** Day numbers: whole days since 1970-01-01 UTC. All schedule arithmetic happens on these. */
const MS_PER_DAY = 86_400_000;
/** Memo capacity: ample for every schedule date of a 100k-event store; past it, results are computed each time. */
const MEMO_MAX = 100_000;

const parsed = new Map<string, number>();

/** Day number of a `YYYY-MM-DD` date, NaN when it is not a real calendar date. Memoised: schedules repeat dates. */
export function parseDay(iso: string): number {
  const hit = parsed.get(iso);
  if (hit !== undefined) return hit;
  const day = parseDayUncached(iso);
  if (parsed.size < MEMO_MAX) parsed.set(iso, day);
  return day;
}

function parseDayUncached(iso: string): number {
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
}

const formatted = new Map<number, string>();

/** `YYYY-MM-DD` of a day number. Memoised like parseDay: every event and market figure formats a few dates. */
export function formatDay(day: number): string {
  const hit = formatted.get(day);
  if (hit !== undefined) return hit;
  const iso = new Date(day * MS_PER_DAY).toISOString().slice(0, 10);
  if (formatted.size < MEMO_MAX) formatted.set(day, iso);
  return iso;
}

export function dayOf(date: Date): number {
  return Math.floor(date.getTime() / MS_PER_DAY);
}

const monthsLater = new Map<number, number>();
const monthStarts = new Map<number, number>();

/** The same day-of-month `months` later, clamped to the month's last day (Jan 31 + 1 month = Feb 28/29). */
export function addMonths(day: number, months: number): number {
  // Memoised (like parseDay): expanding a store's schedules asks for the same few thousand month steps again and again.
  const key =
    Number.isInteger(day) && Number.isInteger(months) && Math.abs(months) < 2048
      ? day * 4096 + months + 2048
      : null;
  const hit = key === null ? undefined : monthsLater.get(key);
  if (hit !== undefined) return hit;
  const d = new Date(day * MS_PER_DAY);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth() + months;
  const dom = d.getUTCDate();
  const last = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const out = Date.UTC(y, m, Math.min(dom, last)) / MS_PER_DAY;
  if (key !== null && monthsLater.size < MEMO_MAX) monthsLater.set(key, out);
  return out;
}

/** First day of the calendar month containing `day`. */
export function monthStart(day: number): number {
  const hit = monthStarts.get(day);
  if (hit !== undefined) return hit;
  const d = new Date(day * MS_PER_DAY);
  const out = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / MS_PER_DAY;
  if (monthStarts.size < MEMO_MAX) monthStarts.set(day, out);
  return out;
}
