import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import openapiTS, { astToString } from "openapi-typescript";
import { describe, expect, it } from "vitest";
import { OPENAPI_PATH } from "../../scripts/openapi.js";
import { PAID_OPERATIONS } from "../../src/operations/table.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const OUT_DIR = fileURLToPath(new URL("./.generated/", import.meta.url));
const doc = () => readFileSync(OPENAPI_PATH, "utf8");

interface ReadmeCall {
  method: "GET" | "POST";
  path: string;
  query: Record<string, string | number | boolean>;
  body?: unknown;
}

/** Every `npm run pay -- METHOD PATH ['JSON']` call in the README: the calls a newcomer copies first. */
function readmeCalls(readme: string): ReadmeCall[] {
  const calls: ReadmeCall[] = [];
  for (const m of readme.matchAll(/npm run pay -- (GET|POST) '?([^'\s]+)'?(?: '(\{[^']*\})')?/g)) {
    const [, method, target, json] = m;
    const url = new URL(target as string, "http://x");
    const query = Object.fromEntries(
      [...url.searchParams].map(([k, v]) => [
        k,
        /^\d+$/.test(v) ? Number(v) : v === "true" || v === "false" ? v === "true" : v,
      ]),
    );
    calls.push({
      method: method as "GET" | "POST",
      path: url.pathname,
      query,
      ...(json ? { body: JSON.parse(json) } : {}),
    });
  }
  return calls;
}

function typedCalls(calls: ReadmeCall[]): string {
  const lines = [
    "type Query<P extends keyof paths> = NonNullable<paths[P]['get'] extends { parameters: { query?: infer Q } } ? Q : never>;",
    "type Body<P extends keyof paths> = paths[P]['post'] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;",
  ];
  calls.forEach((c, i) => {
    lines.push(
      c.method === "GET"
        ? `export const call${i}: Query<${JSON.stringify(c.path)}> = ${JSON.stringify(c.query)};`
        : `export const call${i}: Body<${JSON.stringify(c.path)}> = ${JSON.stringify(c.body)};`,
    );
  });
  // Controls: the generated types are strict enough to refuse what the server refuses.
  lines.push(
    "// @ts-expect-error token is required",
    'export const bad1: Body<"/v1/unlock-risk"> = { unlock_event_id: "x" };',
    "// @ts-expect-error days is an integer, not a string",
    'export const bad2: Query<"/v1/unlocks/upcoming"> = { days: "30" };',
    "// @ts-expect-error sort is one of date, usd, pct_circulating, risk",
    'export const bad3: Query<"/v1/unlocks/upcoming"> = { sort: "size" };',
    "// @ts-expect-error view is compact or full",
    'export const bad4: Body<"/v1/token/risk-summary"> = { token: "ARB", view: "tiny" };',
  );
  return lines.join("\n");
}

describe("the OpenAPI document, as a generator and a linter read it", () => {
  it("passes Redocly's recommended rules with no error or warning", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: doc(), absoluteRef: OPENAPI_PATH, config });
    expect(
      problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`),
    ).toEqual([]);
  });

  it("generates a typed client (openapi-typescript) that compiles the README's calls", async () => {
    const calls = readmeCalls(readFileSync(`${ROOT}README.md`, "utf8"));
    // The README's quick start: one call per paid route at least, some leaning on defaults.
    expect(new Set(calls.map((c) => c.path)).size).toBeGreaterThanOrEqual(4);
    const types = astToString(await openapiTS(JSON.parse(doc())));
    mkdirSync(OUT_DIR, { recursive: true });
    const file = `${OUT_DIR}readme-calls.ts`;
    writeFileSync(file, `${types}\n${typedCalls(calls)}\n`);
    const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
    const run = spawnSync(
      process.execPath,
      [tsc, "--noEmit", "--strict", "--target", "es2022", "--module", "esnext", "--skipLibCheck", file],
      { encoding: "utf8", timeout: 120_000 },
    );
    expect(run.stdout + run.stderr).toBe("");
    expect(run.status).toBe(0);
  }, 150_000);

  it("declares problem responses as application/problem+json and every paid operation's payment", () => {
    const d = JSON.parse(doc());
    const ops = Object.values(d.paths as Record<string, Record<string, Record<string, unknown>>>).flatMap(
      (p) => Object.values(p),
    );
    for (const op of ops) {
      expect(op.operationId).toMatch(/^[a-zA-Z][a-zA-Z0-9]*$/);
      expect(op.security).toBeDefined();
      // 402 carries x402 requirements, and /ready's 503 is its readiness report (what a probe reads), not a problem.
      for (const [status, response] of Object.entries(op.responses as Record<string, { content?: object }>))
        if (
          Number(status) >= 400 &&
          status !== "402" &&
          !(op.operationId === "readiness" && status === "503")
        )
          expect(Object.keys(response.content ?? {})).toEqual(["application/problem+json"]);
    }
    const paid = ops.filter((op) => op["x-payment-info"]);
    // Exactly the operations of the table carry a price.
    expect(paid.map((op) => op.operationId).sort()).toEqual(
      PAID_OPERATIONS.map((op) => op.operationId).sort(),
    );
    for (const op of paid) {
      expect(op["x-payment-info"]).toMatchObject({
        price: { mode: "fixed", currency: "USD", amount: expect.stringMatching(/^\d+(\.\d+)?$/) },
        protocols: [{ x402: expect.any(Object) }],
      });
      expect(Object.keys(op.responses as object)).toEqual(
        expect.arrayContaining(["200", "400", "402", "409", "422", "429", "500", "502", "503"]),
      );
    }
    expect(d.info["x-guidance"]).toMatch(/PAYMENT-SIGNATURE/);
    expect(d.servers).toHaveLength(1);
    // Paid operations need no credential (the proof answers the 402) and never an API key.
    for (const op of paid) expect(op.security).toEqual([{}]);
    expect(d.components.securitySchemes).toBeUndefined();
    const upcoming = d.paths["/v1/unlocks/upcoming"].get.parameters;
    for (const name of ["days", "minRisk"])
      expect(upcoming.find((p: { name: string }) => p.name === name).required).toBe(false);
    for (const [path, field] of [
      ["/v1/unlock-risk", "includeEvidence"],
      ["/v1/token/risk-summary", "lookbackDays"],
      ["/v1/unlock/backtest", "windowDays"],
    ] as const)
      expect(d.paths[path].post.requestBody.content["application/json"].schema.required).not.toContain(field);
  });
});
