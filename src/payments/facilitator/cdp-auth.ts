import { createPrivateKey, type KeyObject, randomBytes } from "node:crypto";
import { SignJWT } from "jose";

/**
 * Coinbase CDP facilitator authentication: a fresh short-lived JWT per request, signed with the API key secret
 * (Ed25519 as base64 of 64 bytes seed‖public key, or an EC P-256 key as PEM), as CDP documents for its REST APIs.
 * Written here (on `jose`) rather than pulling in @coinbase/cdp-sdk, which would bring a wallet SDK into a server that
 * only needs these few lines.
 */
export interface CdpKey {
  apiKeyId: string;
  apiKeySecret: string;
}

interface LoadedKey {
  key: KeyObject;
  alg: "EdDSA" | "ES256";
}

const b64url = (bytes: Buffer): string => bytes.toString("base64url");

export function loadCdpKey(secret: string): LoadedKey {
  const trimmed = secret.trim();
  if (trimmed.includes("BEGIN")) {
    return { key: createPrivateKey(trimmed.replace(/\\n/g, "\n")), alg: "ES256" };
  }
  const raw = Buffer.from(trimmed, "base64");
  if (raw.length !== 64)
    throw new Error("CDP_API_KEY_SECRET: expected an EC PEM key or base64 of a 64-byte Ed25519 key");
  const key = createPrivateKey({
    key: { kty: "OKP", crv: "Ed25519", d: b64url(raw.subarray(0, 32)), x: b64url(raw.subarray(32)) },
    format: "jwk",
  });
  return { key, alg: "EdDSA" };
}

/** One JWT for one request: `uris` binds it to the method, host and path it authorises. */
export async function cdpJwt(
  loaded: LoadedKey,
  apiKeyId: string,
  method: string,
  url: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<string> {
  const u = new URL(url);
  return new SignJWT({ uris: [`${method} ${u.host}${u.pathname}`] })
    .setProtectedHeader({
      alg: loaded.alg,
      kid: apiKeyId,
      typ: "JWT",
      nonce: randomBytes(16).toString("hex"),
    })
    .setIssuer("cdp")
    .setSubject(apiKeyId)
    .setNotBefore(nowSeconds)
    .setExpirationTime(nowSeconds + 120)
    .sign(loaded.key);
}

/** The `createAuthHeaders` shape @x402/core's HTTPFacilitatorClient expects: headers per facilitator path. */
export function cdpAuthHeaders(baseUrl: string, key: CdpKey) {
  const loaded = loadCdpKey(key.apiKeySecret);
  const base = baseUrl.replace(/\/+$/, "");
  return async () => {
    const bearer = async (method: string, path: string) => ({
      Authorization: `Bearer ${await cdpJwt(loaded, key.apiKeyId, method, `${base}/${path}`)}`,
    });
    return {
      verify: await bearer("POST", "verify"),
      settle: await bearer("POST", "settle"),
      supported: await bearer("GET", "supported"),
    };
  };
}
