import { readFileSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { OPENAPI_PATH } from "../../scripts/openapi.js";
import { PRICES } from "../../src/operations/prices.js";
import { requirementsV2 } from "../../src/payments/terms/requirements.js";
import seed from "../fixtures/contract/seed-enums.json" with { type: "json" };
import { TEST_PAY_TO, type TestApp, testApp } from "../helpers/app.js";
import { b64, TEST_NETWORK, v2Proof } from "../helpers/proofs.js";

/*
 * Every enumeration the contract states (test/fixtures/contract/seed-enums.json, copied from the seed with its
 * wording) against the committed OpenAPI document and against what the running app answers.
 */
type Schema = { enum?: unknown[]; const?: unknown; anyOf?: Schema[]; properties?: Record<string, Schema> };
const doc = JSON.parse(readFileSync(OPENAPI_PATH, "utf8"));
const benchmarkOp = doc.paths["/v1/benchmark/endpoint"].post;
const responseSchema: Schema = benchmarkOp.responses["200"].content["application/json"].schema;
const requestSchema: Schema = benchmarkOp.requestBody.content["application/json"].schema;

/** The values a schema allows: `enum`, `const`, or the union of its `anyOf` branches (null excluded: "unknown" is a value). */
function allowed(schema: Schema | undefined): unknown[] {
  if (!schema) throw new Error("no schema");
  if (schema.enum) return schema.enum;
  if ("const" in schema) return [schema.const];
  if (schema.anyOf) return schema.anyOf.flatMap(allowed);
  throw new Error(`not an enumeration: ${JSON.stringify(schema)}`);
}

const enumOf = (name: keyof typeof seed.enums) => [...seed.enums[name].values].sort();
const route = responseSchema.properties?.route;

describe("the contract's enumerations in the OpenAPI document", () => {
  it("route descriptor: method and confidence take exactly the contract's values", () => {
    expect(allowed(route?.properties?.method).sort()).toEqual(enumOf("benchmark route descriptor: method"));
    expect(allowed(route?.properties?.confidence).sort()).toEqual(
      enumOf("benchmark route descriptor: confidence"),
    );
  });

  it("benchmark request: category_hint takes exactly the contract's values", () => {
    expect(allowed(requestSchema.properties?.category_hint).sort()).toEqual(
      enumOf("benchmark request: category_hint"),
    );
  });
});

describe("the contract's enumerations in live answers", () => {
  const open: TestApp[] = [];
  afterAll(async () => {
    for (const t of open) await t.close();
  });
  const terms = { payTo: TEST_PAY_TO, maxTimeoutSeconds: 300, network: TEST_NETWORK };
  const pay = () => ({ "payment-signature": b64(v2Proof(requirementsV2(PRICES.benchmark, terms))) });
  async function benchmark(t: TestApp, body: Record<string, unknown>, paid = true) {
    return t.app.inject({
      method: "POST",
      url: "/v1/benchmark/endpoint",
      headers: { "content-type": "application/json", ...(paid ? pay() : {}) },
      payload: JSON.stringify(body),
    });
  }

  it("route.confidence: high, low and unknown are each answered, and nothing else (medium is a grade, not a label)", async () => {
    // On the suite's date (2026-11-22) the shipped market is months old, so nothing is high; on 2026-03-20 it is fresh.
    const now = await testApp();
    const march = await testApp({}, () => new Date("2026-03-20T00:00:00Z"));
    open.push(now, march);
    const cases = [
      { t: now, url: "https://2s.io/api/crypto/token-price", label: "low", grade: "medium" },
      { t: now, url: "https://2s.io/api/predict/market", label: "low", grade: "low" },
      {
        t: now,
        url: "https://unknown-seller.example/v1/weather/forecast",
        label: "unknown",
        grade: "unknown",
      },
      { t: march, url: "https://agents.allium.so/api/v1/developer/wallet/pnl", label: "high", grade: "high" },
    ];
    const seen = new Set<string>();
    for (const c of cases) {
      const res = await benchmark(c.t, { endpoint_url: c.url });
      expect(res.statusCode, res.body).toBe(200);
      const r = res.json().route as {
        method: string;
        confidence: string;
        confidence_detail: { grade: string };
      };
      expect({ url: c.url, label: r.confidence, grade: r.confidence_detail.grade }).toEqual({
        url: c.url,
        label: c.label,
        grade: c.grade,
      });
      expect(seed.enums["benchmark route descriptor: method"].values).toContain(r.method);
      seen.add(r.confidence);
    }
    expect([...seen].sort()).toEqual(enumOf("benchmark route descriptor: confidence"));
  });

  it("category_hint: every contract value is taken (402, the price), any other is refused before it (400)", async () => {
    const t = await testApp();
    open.push(t);
    for (const hint of seed.enums["benchmark request: category_hint"].values) {
      const res = await benchmark(
        t,
        { endpoint_url: "https://2s.io/api/crypto/token-price", category_hint: hint },
        false,
      );
      expect(res.statusCode, hint).toBe(402);
    }
    const wrong = await benchmark(
      t,
      { endpoint_url: "https://2s.io/api/crypto/token-price", category_hint: "medium" },
      false,
    );
    expect(wrong.statusCode).toBe(400);
    expect(wrong.headers["payment-required"]).toBeUndefined();
  });
});
