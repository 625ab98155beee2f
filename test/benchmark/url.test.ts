import { describe, expect, it } from "vitest";
import { loadCatalog } from "../../src/benchmark/catalog/snapshot.js";
import { buildMarketIndex, matchEntries } from "../../src/benchmark/market-index.js";
import { classifySegment, normalizeUrl, templateFit } from "../../src/benchmark/url.js";

const index = buildMarketIndex(loadCatalog());
const match = (url: string) => matchEntries(index, normalizeUrl(url));

describe("normalizeUrl", () => {
  it("lower-cases scheme and host, drops default ports, trailing slashes and the query", () => {
    const n = normalizeUrl("HTTPS://API.Exa.AI:443/search/?q=x402#top");
    expect(n.normalized_url).toBe("https://api.exa.ai/search");
    expect(n.match_key).toBe("api.exa.ai/search");
    expect(normalizeUrl("http://x402.robtex.com:80/asquery").normalized_url).toBe(
      "http://x402.robtex.com/asquery",
    );
    expect(normalizeUrl("https://x402.robtex.com:8443/asquery").host).toBe("x402.robtex.com:8443");
    expect(normalizeUrl("https://api.ipintel.ai/x402/").normalized_url).toBe("https://api.ipintel.ai/x402");
  });

  it("collapses placeholders in all three spellings to one template", () => {
    const colon = normalizeUrl("https://goal402-x402.percha.workers.dev/matches/:id/predictions");
    const braces = normalizeUrl("https://goal402-x402.percha.workers.dev/matches/{id}/predictions");
    const encoded = normalizeUrl("https://goal402-x402.percha.workers.dev/matches/%7Bid%7D/predictions");
    const concrete = normalizeUrl("https://goal402-x402.percha.workers.dev/matches/1234567/predictions");
    expect(new Set([colon.match_key, braces.match_key, encoded.match_key, concrete.match_key]).size).toBe(1);
    expect(braces.normalized_url).toBe("https://goal402-x402.percha.workers.dev/matches/{id}/predictions");
    expect(colon.has_placeholders).toBe(true);
    expect(concrete.has_placeholders).toBe(false);
  });

  it("collapses 0x addresses, hashes, numbers, UUIDs and long base58/CID ids", () => {
    expect(classifySegment("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")).toBe("address");
    expect(classifySegment(`0x${"ab".repeat(32)}`)).toBe("address");
    expect(classifySegment("0x1234")).toBe("literal");
    expect(classifySegment("8453")).toBe("number");
    expect(classifySegment("123e4567-e89b-12d3-a456-426614174000")).toBe("uuid");
    expect(classifySegment("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")).toBe("opaque_id");
    expect(classifySegment("bafybeibflo5qiryeuupzuayowoi5qsillk3bij7yaizld2jvma3ah6cgdi")).toBe("opaque_id");
    expect(classifySegment("trending-altcoins")).toBe("literal");
    expect(classifySegment("getAccountInfo")).toBe("literal");
    expect(classifySegment("svc_f6a85cc2496845c8")).toBe("literal");
    expect(classifySegment("5s-720p")).toBe("literal");
  });

  it("fits literal segments exactly and wildcards anywhere", () => {
    expect(templateFit(["v2", "{}"], ["v2", "{}"])).toBe(1);
    expect(templateFit(["v2", "{}"], ["v2", "detailed"])).toBe(1);
    expect(templateFit(["v2", "detailed"], ["v2", "{}"])).toBeNull();
    expect(templateFit(["v2"], ["v2", "x"])).toBeNull();
  });
});

describe("matching real catalog URLs", () => {
  it("matches an exact catalog URL", () => {
    const m = match("https://api.exa.ai/search");
    expect(m.type).toBe("exact");
    expect(m.matches[0]?.entry.price_usd).toBe(0.007);
  });

  it("matches a concrete address against a {address} catalog template", () => {
    const m = match("https://api.vaults.fyi/v2/best-vault/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    expect(m.type).toBe("template");
    expect(m.matches[0]?.entry.url).toBe("https://api.vaults.fyi/v2/best-vault/{address}");
  });

  it("matches network + address templates and the %7B..%7D spelling", () => {
    const m = match("https://api.vaults.fyi/v2/vaults/%7Bnetwork%7D/%7Baddress%7D/performance");
    expect(m.matches[0]?.entry.url).toBe("https://api.vaults.fyi/v2/vaults/{network}/{address}/performance");
    const concrete = match(
      "https://api.vaults.fyi/v2/vaults/base/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    );
    expect(concrete.matches[0]?.entry.url).toBe("https://api.vaults.fyi/v2/vaults/{network}/{address}");
  });

  it("lets a catalog placeholder absorb a username and prefers the literal route when both fit", () => {
    const user = match("https://xspy.pro/api/v1/pro/twitter/vitalikbuterin/smart-followers");
    expect(user.matches[0]?.entry.url).toBe("https://xspy.pro/api/v1/pro/twitter/:username/smart-followers");
    const today = match("https://goal402-x402.percha.workers.dev/matches/today");
    expect(today.matches[0]?.entry.url).toBe("https://goal402-x402.percha.workers.dev/matches/today");
    const search = match("https://x.1x402.sh/api/search");
    expect(search.matches[0]?.entry.url).toBe("https://x.1x402.sh/api/search");
    const name = match("https://x.1x402.sh/api/jack");
    expect(name.matches[0]?.entry.url).toBe("https://x.1x402.sh/api/:name");
  });

  it("matches Solana slot/address templates and returns both methods of one route", () => {
    const m = match(
      "https://solanaindex.top/api/v1/x402/solana/token-balance/So11111111111111111111111111111111111111112/EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v/312345678",
    );
    expect(m.matches[0]?.entry.url).toBe(
      "https://solanaindex.top/api/v1/x402/solana/token-balance/:address/:token/:slot",
    );
    const both = match("https://stabletravel.dev/api/flights/search?origin=LIS");
    expect(both.matches.map((e) => e.entry.method).sort()).toEqual(["GET", "POST"]);
  });

  it("finds nothing for unknown hosts or paths", () => {
    expect(match("https://example.com/search").type).toBe("none");
    expect(match("https://api.exa.ai/contents").type).toBe("none");
  });
});
