import { formatDay, parseDay } from "../../unlocks/data/dates.js";
import type { PriceSeries, SeriesSegment } from "../../unlocks/data/types.js";
import type { Candle } from "../../unlocks/market-history.js";

/**
 * Extends (or overwrites the overlapping tail of) a 00:00 UTC price series with freshly fetched daily
 * candles of the same venue: candle D becomes index D+1, as in the shipped files. A gap between the
 * old series and the new candles is filled with nulls, never with invented prices. New candles join the last segment
 * only when they come from the same endpoint: a shipped file and the live API are two segments, each with its own
 * URL and fetch time.
 */
export function mergeCandles(
  old: PriceSeries | null,
  candles: readonly Candle[],
  seg: Omit<SeriesSegment, "from" | "to" | "volume">,
): PriceSeries {
  if (candles.length === 0) {
    if (!old) throw new Error("no candles and no previous series");
    return old;
  }
  const firstNew = (candles[0] as Candle).day + 1;
  const lastNew = (candles[candles.length - 1] as Candle).day + 1;
  const start = old ? Math.min(parseDay(old.start), firstNew) : firstNew;
  const len = lastNew - start + 1;
  const close: (number | null)[] = new Array(len).fill(null);
  const volume: (number | null)[] = new Array(len).fill(null);
  if (old) {
    const o = parseDay(old.start);
    old.close.forEach((c, i) => {
      if (o + i < firstNew) {
        close[o + i - start] = c;
        volume[o + i - start] = old.volume_usd?.[i] ?? null;
      }
    });
  }
  for (const c of candles) {
    close[c.day + 1 - start] = c.close;
    volume[c.day + 1 - start] = c.volume;
  }
  const kept = (old?.segments ?? [])
    .filter((s) => parseDay(s.from) < firstNew)
    .map((s) => (parseDay(s.to) >= firstNew ? { ...s, to: formatDay(firstNew - 1) } : s));
  const last = kept[kept.length - 1];
  const segments: SeriesSegment[] =
    last &&
    last.venue === seg.venue &&
    last.instrument === seg.instrument &&
    last.source_url === seg.source_url &&
    parseDay(last.to) === firstNew - 1
      ? [
          ...kept.slice(0, -1),
          { ...last, to: formatDay(lastNew), ...(seg.fetched_at ? { fetched_at: seg.fetched_at } : {}) },
        ]
      : [...kept, { ...seg, from: formatDay(firstNew), to: formatDay(lastNew), volume: true }];
  // Series recorded alongside the closes keep their days; the new days are unknown (null), never carried forward.
  const aligned = (values: readonly (number | null)[] | undefined): (number | null)[] | undefined => {
    if (!values || !old) return undefined;
    const out: (number | null)[] = new Array(len).fill(null);
    const o = parseDay(old.start);
    values.forEach((v, i) => {
      if (o + i - start < len) out[o + i - start] = v;
    });
    return out;
  };
  const circulating = aligned(old?.circulating);
  const benchmarkClose = aligned(old?.benchmark_close);
  return {
    start: formatDay(start),
    close,
    volume_usd: volume,
    ...(circulating ? { circulating } : {}),
    ...(benchmarkClose ? { benchmark_close: benchmarkClose } : {}),
    source: old?.source ?? `${seg.venue} ${seg.instrument} daily candles`,
    source_url: old?.source_url ?? seg.source_url,
    synthetic: false,
    segments,
  };
}
