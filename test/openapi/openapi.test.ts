import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateOpenApi, OPENAPI_PATH } from "../../scripts/openapi.js";

describe("openapi/openapi.json", () => {
  it("is what the code generates (run `npm run openapi` after changing a schema)", async () => {
    const generated = await generateOpenApi();
    expect(readFileSync(OPENAPI_PATH, "utf8")).toBe(generated);
  });

  it("is OpenAPI 3.1.0, version 1.0.0, and documents payment on every paid operation", async () => {
    const doc = JSON.parse(await generateOpenApi());
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("1.0.0");
    const paid = [
      ["get", "/v1/unlocks/upcoming", "0.02", true],
      ["post", "/v1/unlock-risk", "0.1", true],
      ["post", "/v1/token/risk-summary", "0.25", true],
      ["post", "/v1/unlock/backtest", "0.5", true],
      ["post", "/v1/benchmark/endpoint", "0.05", false],
    ] as const;
    for (const [method, path, usd, v1] of paid) {
      const op = doc.paths[path][method];
      expect(op["x-payment-info"]).toMatchObject({
        protocol: "x402",
        network: "eip155:8453",
        asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        price: { amount: usd, currency: "USD" },
      });
      const headers = op.parameters
        .filter((p: { in: string }) => p.in === "header")
        .map((p: { name: string }) => p.name);
      expect(headers).toContain("payment-signature");
      expect(headers).toContain("idempotency-key");
      expect(headers.includes("x-payment")).toBe(v1);
      expect(
        op.parameters.some((p: { name: string; in: string }) => p.name === "pp_ref" && p.in === "query"),
      ).toBe(true);
      expect(op.responses["402"].headers["PAYMENT-REQUIRED"]).toBeDefined();
      expect(op.responses["200"].headers["PAYMENT-RESPONSE"]).toBeDefined();
    }
    expect(doc.paths["/v1/benchmark/endpoint"].post["x-provisional"]).toBe(true);
    const upcoming = doc.paths["/v1/unlocks/upcoming"].get.parameters;
    expect(upcoming.find((p: { name: string }) => p.name === "days").schema).toMatchObject({
      minimum: 1,
      maximum: 365,
      default: 30,
    });
  });

  it("closes every 200 object (evidence records stay free-form) and requires what is always sent", async () => {
    const doc = JSON.parse(await generateOpenApi());
    const open: string[] = [];
    const walk = (schema: Record<string, unknown>, where: string) => {
      if (schema.type === "object" && schema.properties) {
        const evidence = where.endsWith("evidence[]");
        if (!evidence && schema.additionalProperties !== false) open.push(where);
        for (const [k, v] of Object.entries(schema.properties as Record<string, Record<string, unknown>>))
          walk(v, `${where}.${k}`);
      }
      if (schema.items) walk(schema.items as Record<string, unknown>, `${where}[]`);
      for (const alt of (schema.anyOf ?? schema.oneOf ?? []) as Record<string, unknown>[]) walk(alt, where);
    };
    type Operation = { responses: Record<string, { content?: Record<string, { schema: never }> }> };
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Operation>>))
      for (const [method, op] of Object.entries(ops)) {
        const schema = op.responses["200"]?.content?.["application/json"]?.schema;
        if (schema) walk(schema, `${method.toUpperCase()} ${path}`);
      }
    expect(open).toEqual([]);
    const backtest =
      doc.paths["/v1/unlock/backtest"].post.responses["200"].content["application/json"].schema;
    expect(backtest.required).toEqual(
      expect.arrayContaining(["token", "unlock_event_id", "windowDays", "reactions"]),
    );
    const risk = doc.paths["/v1/unlock-risk"].post.responses["200"].content["application/json"].schema;
    expect(risk.required).toEqual(
      expect.arrayContaining(["token", "unlock_event_id", "risk_score", "codes", "legend"]),
    );
    expect(risk.required).not.toContain("evidence"); // includeEvidence: false leaves it out
    expect(risk.required).not.toContain("size_band"); // view=full only
    expect(risk.properties.risk_level).toBeUndefined(); // renamed: a band of a ranking, not a risk forecast
    const upcoming = doc.paths["/v1/unlocks/upcoming"].get;
    const params = (upcoming.parameters as { name: string }[]).map((p) => p.name);
    expect(params).toEqual(
      expect.arrayContaining([
        "minUsd",
        "minPctCirculating",
        "tokens",
        "category",
        "type",
        "sort",
        "limit",
        "cursor",
        "view",
      ]),
    );
    const summary =
      doc.paths["/v1/token/risk-summary"].post.responses["200"].content["application/json"].schema;
    expect(summary.required).not.toContain("maxRiskScore"); // absent when the window has no events
  });

  it("declares the 404 problem of /problems/{slug}", async () => {
    const doc = JSON.parse(await generateOpenApi());
    const notFound = doc.paths["/problems/{slug}"].get.responses["404"];
    expect(notFound.content["application/problem+json"].schema).toEqual({
      $ref: "#/components/schemas/Problem",
    });
  });
});
