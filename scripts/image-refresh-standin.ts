/**
 * For scripts/image.sh: a Binance USDⓈ-M stand-in on 127.0.0.1 serving the shipped real candles, and the shipped
 * unlock snapshot as if built HELD_BACK days earlier (written to OUT_DIR/earlier.snapshot.json), so that a container
 * started on the earlier snapshot must refresh to show the later closes. Prints one line
 * `STANDIN {"url","snapshot","earlierLast","shippedLast"}`, then serves until SIGTERM.
 *
 *   node --import tsx scripts/image-refresh-standin.ts OUT_DIR
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { formatDay, parseDay } from "../src/unlocks/data/dates.js";
import { defaultSnapshotPath, readUnlockSnapshot } from "../src/unlocks/data/snapshot.js";
import { asIfEarlier, binanceStandIn } from "../test/helpers/market-standin.js";

const HELD_BACK = 21;

const outDir = process.argv[2];
if (!outDir) {
  console.error("usage: image-refresh-standin.ts OUT_DIR");
  process.exit(2);
}
const full = readUnlockSnapshot(defaultSnapshotPath());
const earlier = asIfEarlier(full, HELD_BACK);
const snapshot = join(outDir, "earlier.snapshot.json");
writeFileSync(snapshot, JSON.stringify(earlier));
/** The last closed candle's day: close[i] is the price at 00:00 UTC of day start + i, the close of the day before. */
const lastOf = (s: typeof full) => {
  const p = s.benchmark.prices;
  return formatDay(parseDay(p.start) + p.close.length - 2);
};
const shippedLast = lastOf(full);
// The container runs on the real clock, long past these days: only closed candles are served.
const standIn = await binanceStandIn(full, shippedLast, { openCandle: false });
console.log(
  `STANDIN ${JSON.stringify({ url: standIn.url, snapshot, earlierLast: lastOf(earlier), shippedLast })}`,
);
const stop = () => void standIn.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
