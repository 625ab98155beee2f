import { generateKeyPairSync } from "node:crypto";
import { decodeProtectedHeader, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { cdpAuthHeaders, cdpJwt, loadCdpKey } from "../../../src/payments/facilitator/cdp-auth.js";

function ed25519Secret() {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const raw = Buffer.concat([
    Buffer.from(jwk.d as string, "base64url"),
    Buffer.from(jwk.x as string, "base64url"),
  ]);
  return { secret: raw.toString("base64"), publicKey };
}

describe("CDP facilitator JWT", () => {
  it("signs an Ed25519 JWT bound to method, host and path, verifiable with the public key", async () => {
    const { secret, publicKey } = ed25519Secret();
    const token = await cdpJwt(
      loadCdpKey(secret),
      "key-123",
      "POST",
      "https://api.cdp.coinbase.com/platform/v2/x402/settle",
      1_700_000_000,
    );
    const header = decodeProtectedHeader(token);
    expect(header).toMatchObject({ alg: "EdDSA", kid: "key-123", typ: "JWT" });
    expect(header.nonce).toMatch(/^[0-9a-f]{32}$/);
    const { payload } = await jwtVerify(token, publicKey, { currentDate: new Date(1_700_000_010_000) });
    expect(payload).toMatchObject({
      iss: "cdp",
      sub: "key-123",
      nbf: 1_700_000_000,
      exp: 1_700_000_120,
      uris: ["POST api.cdp.coinbase.com/platform/v2/x402/settle"],
    });
  });

  it("signs ES256 with an EC PEM key", async () => {
    const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const pem = privateKey.export({ format: "pem", type: "sec1" }).toString();
    const token = await cdpJwt(loadCdpKey(pem), "k", "GET", "https://x.test/platform/v2/x402/supported");
    expect(decodeProtectedHeader(token).alg).toBe("ES256");
    await expect(jwtVerify(token, publicKey)).resolves.toBeTruthy();
  });

  it("gives headers per facilitator path, each a fresh bearer token", async () => {
    const { secret } = ed25519Secret();
    const headers = await cdpAuthHeaders("https://api.cdp.coinbase.com/platform/v2/x402", {
      apiKeyId: "k",
      apiKeySecret: secret,
    })();
    expect(Object.keys(headers).sort()).toEqual(["settle", "supported", "verify"]);
    expect(headers.verify.Authorization).toMatch(/^Bearer ey/);
    expect(headers.verify.Authorization).not.toBe(headers.settle.Authorization);
  });

  it("rejects a secret of the wrong form", () => {
    expect(() => loadCdpKey("dG9vIHNob3J0")).toThrow(/Ed25519/);
  });
});
