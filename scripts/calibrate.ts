/**
 * Calibration report over an unlock-history directory in the 6MV format:
 *   npm run calibrate -- ../shared/data/unlock-history-6mv [--json]
 */

import { parseArgs } from "node:util";
import { repoRoot as rootDir } from "../src/store/paths.js";
import { parseDay } from "../src/store/unlocks-dates.js";
import { buildUnlockStore, validateUnlockSnapshot } from "../src/store/unlocks-snapshot.js";
import { calibrate, formatReport } from "../src/unlocks/calibration.js";
import { import6mv, read6mvDir } from "../src/unlocks/import-6mv.js";
import { createUnlockService } from "../src/unlocks/service.js";

const repoRoot = `${rootDir()}/`;

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  const dir = positionals[0] ?? `${repoRoot}../shared/data/unlock-history-6mv`;
  const snap = validateUnlockSnapshot(import6mv(read6mvDir(dir)), dir);
  const store = buildUnlockStore(snap);
  const service = createUnlockService(store, () => new Date((parseDay(snap.as_of) + 1) * 86_400_000));
  const report = calibrate(store, service);
  if (values.json) console.log(JSON.stringify(report, null, 2));
  else console.log(formatReport(report));
}

main();
