import { Compile } from "typebox/compile";
import { readJsonFile } from "../../files/json-file.js";
import { dataPath } from "../../files/paths.js";
import { EMPTY_REPORTS, loadReportedCirculating, type ReportIndex } from "../circulating-reported.js";
import { parseDay } from "./dates.js";
import { type PriceSeries, type SeriesSegment, type TokenRecord, UnlockSnapshot } from "./types.js";

export type { TokenRecord, UnlockSnapshot } from "./types.js";

/**
 * Daily values: element i is day startDay + i. The store's series are Float64Arrays with NaN where the snapshot has
 * null (8 bytes a value, off the JS heap); plain arrays (null where missing) are accepted too, for series built by
 * hand. Read them through seriesAt, which answers null for both.
 */
export type SeriesValues = Float64Array | readonly (number | null)[];

/** A daily series with its start resolved to a day number, for O(1) lookups. */
export interface DailySeries {
  readonly startDay: number;
  readonly close: SeriesValues;
  readonly volume: SeriesValues | null;
  readonly circulating: SeriesValues | null;
  readonly benchmarkClose: SeriesValues | null;
  readonly source: string;
  readonly sourceUrl: string | null;
  readonly synthetic: boolean;
  readonly segments: readonly SeriesSegment[];
}

export interface UnlockStore {
  readonly snapshot: UnlockSnapshot;
  readonly asOfDay: number;
  readonly tokens: readonly TokenRecord[];
  /** Keyed by lower-case symbol: token lookups are case-insensitive. */
  readonly tokenBySymbol: ReadonlyMap<string, TokenRecord>;
  readonly pricesBySymbol: ReadonlyMap<string, DailySeries>;
  readonly benchmark: { readonly symbol: string; readonly name: string; readonly series: DailySeries };
  /** Reported circulating supply per lower-case symbol (what circulating supply is anchored on); may be empty. */
  readonly reports: ReportIndex;
}

export class SnapshotValidationError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(
      `invalid unlock snapshot ${source}:\n  ${problems.slice(0, 20).join("\n  ")}${problems.length > 20 ? `\n  … and ${problems.length - 20} more` : ""}`,
    );
    this.name = "SnapshotValidationError";
  }
}

const checker = Compile(UnlockSnapshot);

/** Turns a JSON pointer such as /tokens/3/schedules/2/start into `tokens[3] (ARB).schedules[2].start`. */
function describePointer(raw: unknown, pointer: string): string {
  const parts = pointer.split("/").slice(1);
  let out = "";
  let node: unknown = raw;
  for (const part of parts) {
    const isIndex = /^\d+$/.test(part);
    out += isIndex ? `[${part}]` : out === "" ? part : `.${part}`;
    node = node !== null && typeof node === "object" ? (node as Record<string, unknown>)[part] : undefined;
    if (isIndex && node !== null && typeof node === "object") {
      const sym = (node as Record<string, unknown>).symbol;
      if (typeof sym === "string") out += ` (${sym})`;
    }
  }
  return out === "" ? "(root)" : out;
}

function seriesProblems(s: PriceSeries, where: string): string[] {
  const problems: string[] = [];
  if (Number.isNaN(parseDay(s.start))) problems.push(`${where}.start: not a calendar date (${s.start})`);
  if (s.volume_usd !== null && s.volume_usd.length !== s.close.length)
    problems.push(
      `${where}.volume_usd: length ${s.volume_usd.length} differs from close length ${s.close.length}`,
    );
  if (s.circulating !== undefined && s.circulating.length !== s.close.length)
    problems.push(
      `${where}.circulating: length ${s.circulating.length} differs from close length ${s.close.length}`,
    );
  if (s.benchmark_close !== undefined && s.benchmark_close.length !== s.close.length)
    problems.push(
      `${where}.benchmark_close: length ${s.benchmark_close.length} differs from close length ${s.close.length}`,
    );
  return problems;
}

function tokenProblems(t: TokenRecord, i: number): string[] {
  const at = `tokens[${i}] (${t.symbol})`;
  const problems: string[] = [];
  for (const [field, v] of [
    ["supply.as_of", t.supply.as_of],
    ["market.as_of", t.market.as_of],
  ] as const) {
    if (Number.isNaN(parseDay(v))) problems.push(`${at}.${field}: not a calendar date (${v})`);
  }
  t.schedules.forEach((p, j) => {
    const w = `${at}.schedules[${j}]`;
    const start = parseDay(p.start);
    const end = p.end === null ? Number.NaN : parseDay(p.end);
    if (Number.isNaN(start)) problems.push(`${w}.start: not a calendar date (${p.start})`);
    if (p.end !== null && Number.isNaN(end)) problems.push(`${w}.end: not a calendar date (${p.end})`);
    if (p.kind === "linear" && !(end > start))
      problems.push(`${w}.end: a linear piece needs an end after its start`);
    if (p.kind === "step") {
      if (p.steps === null) problems.push(`${w}.steps: a step piece needs a number of steps`);
      if (p.step_days === null) problems.push(`${w}.step_days: a step piece needs step_days`);
      if (!(end >= start)) problems.push(`${w}.end: a step piece needs an end on or after its start`);
    }
  });
  if (t.prices !== null) problems.push(...seriesProblems(t.prices, `${at}.prices`));
  return problems;
}

/** Validates a parsed snapshot; every problem names the record and the field. */
export function validateUnlockSnapshot(raw: unknown, source = "(memory)"): UnlockSnapshot {
  if (!checker.Check(raw)) {
    const problems = [...checker.Errors(raw)].map(
      (e) => `${describePointer(raw, e.instancePath)}: ${e.message}`,
    );
    throw new SnapshotValidationError(source, problems);
  }
  const snap = raw as UnlockSnapshot;
  const problems: string[] = [];
  if (Number.isNaN(parseDay(snap.as_of))) problems.push(`as_of: not a calendar date (${snap.as_of})`);
  problems.push(...seriesProblems(snap.benchmark.prices, "benchmark.prices"));
  const seen = new Map<string, number>();
  snap.tokens.forEach((t, i) => {
    const key = t.symbol.toLowerCase();
    const prev = seen.get(key);
    if (prev !== undefined) problems.push(`tokens[${i}] (${t.symbol}).symbol: duplicate of tokens[${prev}]`);
    seen.set(key, i);
    problems.push(...tokenProblems(t, i));
  });
  if (problems.length > 0) throw new SnapshotValidationError(source, problems);
  return snap;
}

/**
 * A snapshot series as a Float64Array, NaN for null. Read with for…of rather than values[i]: an indexed load site that
 * has seen arrays holding null (elements of any kind) turns each array of doubles it then reads into one of objects
 * (V8 generalises the elements kind), boxing every value into a 16-byte HeapNumber; seriesAt over the parsed arrays
 * did that to nearly every series of the store while the event index was built (1.7 million HeapNumbers, 27 MB, for
 * the 100k-event store).
 */
export function toSeriesValues(values: readonly (number | null)[]): Float64Array {
  const out = new Float64Array(values.length);
  let i = 0;
  for (const v of values) out[i++] = v ?? Number.NaN;
  return out;
}

const toSeriesOrNull = (values: readonly (number | null)[] | null | undefined): Float64Array | null =>
  values === null || values === undefined ? null : toSeriesValues(values);

export function toDailySeries(s: PriceSeries): DailySeries {
  return {
    startDay: parseDay(s.start),
    close: toSeriesValues(s.close),
    volume: toSeriesOrNull(s.volume_usd),
    circulating: toSeriesOrNull(s.circulating),
    benchmarkClose: toSeriesOrNull(s.benchmark_close),
    source: s.source,
    sourceUrl: s.source_url,
    synthetic: s.synthetic,
    segments: s.segments ?? [],
  };
}

/** Builds the in-memory indexes over a validated snapshot; `reports` anchor circulating supply (none by default). */
export function buildUnlockStore(
  snapshot: UnlockSnapshot,
  reports: ReportIndex = EMPTY_REPORTS,
): UnlockStore {
  const tokenBySymbol = new Map<string, TokenRecord>();
  const pricesBySymbol = new Map<string, DailySeries>();
  for (const t of snapshot.tokens) {
    tokenBySymbol.set(t.symbol.toLowerCase(), t);
    if (t.prices !== null) pricesBySymbol.set(t.symbol.toLowerCase(), toDailySeries(t.prices));
  }
  return {
    snapshot,
    asOfDay: parseDay(snapshot.as_of),
    tokens: snapshot.tokens,
    tokenBySymbol,
    pricesBySymbol,
    benchmark: {
      symbol: snapshot.benchmark.symbol,
      name: snapshot.benchmark.name,
      series: toDailySeries(snapshot.benchmark.prices),
    },
    reports,
  };
}

/** The shipped snapshot; found relative to this module so the working directory does not matter. */
export function defaultSnapshotPath(): string {
  return dataPath("unlocks.snapshot.json");
}

function parsed(parse: () => unknown, source: string): UnlockSnapshot {
  let raw: unknown;
  try {
    raw = parse();
  } catch (err) {
    throw new SnapshotValidationError(source, [`(file): not valid JSON (${(err as Error).message})`]);
  }
  return validateUnlockSnapshot(raw, source);
}

export function parseUnlockSnapshot(text: string, source: string): UnlockSnapshot {
  return parsed(() => JSON.parse(text), source);
}

/** Reads and validates a snapshot file (parsed with half the transient memory: see readJsonFile). */
export function readUnlockSnapshot(path: string): UnlockSnapshot {
  return parsed(() => readJsonFile(path), path);
}

/**
 * Loads, validates and indexes a snapshot, with the shipped reported circulating supply (data/circulating-reported/)
 * unless `reports` is given. A bad snapshot throws, naming record and field.
 */
export function loadUnlockStore(path: string = defaultSnapshotPath(), reports?: ReportIndex): UnlockStore {
  return buildUnlockStore(readUnlockSnapshot(path), reports ?? loadReportedCirculating());
}

/** Value of a daily series on `day`, or null outside its range or where missing (null or NaN). */
export function seriesAt(values: SeriesValues | null, startDay: number, day: number): number | null {
  if (values === null) return null;
  const i = day - startDay;
  if (i < 0 || i >= values.length) return null;
  const v = values[i];
  return v === undefined || v === null || Number.isNaN(v) ? null : v;
}
