import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseJsonBytes, readJsonFile } from "../../src/files/json-file.js";
import { dataPath } from "../../src/files/paths.js";
import { readUnlockSnapshot, SnapshotValidationError } from "../../src/unlocks/data/snapshot.js";

/** What the plain path gives: the UTF-8 text, parsed. */
const plain = (bytes: Buffer): unknown => JSON.parse(bytes.toString("utf8"));
/** Same value, same key order. */
const same = (bytes: Buffer): void => {
  const got = parseJsonBytes(bytes);
  expect(got).toStrictEqual(plain(bytes));
  expect(JSON.stringify(got)).toBe(JSON.stringify(plain(bytes)));
};

describe("parseJsonBytes (latin1 parse, UTF-8 strings decoded after)", () => {
  it("gives what JSON.parse of the UTF-8 text gives, for 2-, 3- and 4-byte characters anywhere", () => {
    const value = {
      notes: "vesting — 25 % at TGE… then monthly",
      name: "Zürich ✓ 🚀",
      ascii: "plain",
      series: [1.5, null, 2, "é", { deep: ["ß", ["…", 3]] }],
      "clé—": { ключ: "значение", n: 1 },
      "2": "integer-like key first",
      last: ["😀"],
    };
    same(Buffer.from(JSON.stringify(value), "utf8"));
  });

  it("keeps key order when a non-ASCII key is renamed, nested in arrays too", () => {
    const bytes = Buffer.from('[{"a":1,"é":2,"z":3},{"x":{"ü":[{"ö":"ä"}]}}]', "utf8");
    same(bytes);
    expect(Object.keys((parseJsonBytes(bytes) as Record<string, unknown>[])[0] as object)).toEqual([
      "a",
      "é",
      "z",
    ]);
  });

  it("a \\u escape is decoded once, as the UTF-8 path does", () => {
    same(Buffer.from('{"a":"\\u00e9","b":"é","c":"\\u2014 —"}', "utf8"));
    expect(parseJsonBytes(Buffer.from('{"a":"\\u00e9"}', "utf8"))).toEqual({ a: "é" });
  });

  it("invalid UTF-8 becomes U+FFFD as in the UTF-8 path", () => {
    const bytes = Buffer.concat([
      Buffer.from('{"a":"x'),
      Buffer.from([0xe2, 0x80]), // a truncated 3-byte character
      Buffer.from('","b":"'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('"}'),
    ]);
    same(bytes);
  });

  it("scalars and ASCII-only documents", () => {
    for (const text of ['"é"', "12.5", "null", "true", "[]", "{}", '{"a":[1,2,{"b":"c"}]}'])
      same(Buffer.from(text, "utf8"));
  });

  it("bad JSON throws JSON.parse's own error for the UTF-8 text", () => {
    const bytes = Buffer.from('{"note":"—", "a": [1, 2,, 3]}', "utf8");
    let expected = "";
    try {
      plain(bytes);
    } catch (err) {
      expected = (err as Error).message;
    }
    expect(expected).not.toBe("");
    expect(() => parseJsonBytes(bytes)).toThrow(new SyntaxError(expected));
  });
});

describe("readJsonFile", () => {
  it("reads the shipped unlock snapshot (which has non-ASCII notes) exactly as the UTF-8 path", () => {
    const bytes = readFileSync(dataPath("unlocks.snapshot.json"));
    expect(bytes.some((b) => b > 0x7f)).toBe(true);
    const got = readJsonFile(dataPath("unlocks.snapshot.json"));
    expect(JSON.stringify(got)).toBe(JSON.stringify(plain(bytes)));
    expect(got).toStrictEqual(plain(bytes));
  });

  it("a file that is not JSON is reported as before by the snapshot loader", () => {
    const dir = mkdtempSync(join(tmpdir(), "p402-json-file-"));
    try {
      const path = join(dir, "bad.json");
      writeFileSync(path, '{"as_of": "2025-01-01", — }');
      expect(() => readUnlockSnapshot(path)).toThrow(SnapshotValidationError);
      expect(() => readUnlockSnapshot(path)).toThrow(/\(file\): not valid JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
