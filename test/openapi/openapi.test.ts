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
});
