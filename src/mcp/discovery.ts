import { type DiscoveryExtension, declareDiscoveryExtension } from "@x402/extensions/bazaar";
import anyAscii from "any-ascii";
import { headline } from "../discovery/bazaar.js";
import { discoverable } from "../discovery/catalog.js";
import type { PaidTool } from "./tools.js";

/**
 * The Bazaar discovery extension of a tool as an MCP tool (`info.input.type: "mcp"`, `toolName`, the tool's own input
 * schema, transport `streamable-http`), built with @x402/extensions. A Bazaar catalogues an MCP tool by the pair
 * (`resource.url`, `toolName`), so the tool's PaymentRequired names the MCP endpoint as its resource.
 *
 * A client echoes the extension inside its payment, which the adapter hands to the route as PAYMENT-SIGNATURE: like
 * the HTTP routes' PaymentRequired, it shows the answer's headline fields as the output example (the full one is in
 * the OpenAPI document).
 */
function build(tool: PaidTool): Record<string, DiscoveryExtension> {
  const d = discoverable(`${tool.method} ${tool.path}`);
  const declared = {
    toolName: tool.name,
    description: d.answers,
    transport: "streamable-http",
    inputSchema: tool.inputSchema,
    example: d.inputExample,
  };
  return declareDiscoveryExtension({
    ...declared,
    output: { example: headline(d.outputExample, d.outputHeadline) },
  });
}

/**
 * The value with every string transliterated to ASCII ("0–100" → "0-100", "USDⓈ-M" → "USDS-M"). What a client echoes
 * in its payment must be: Cloudflare's `withX402Client` encodes the payment with `btoa`, which throws on any
 * character above U+00FF, and the payment core decodes base64 as UTF-8, which only ASCII survives unchanged both ways.
 */
export function ascii<T>(value: T): T {
  if (typeof value === "string") return anyAscii(value) as T;
  if (Array.isArray(value)) return value.map(ascii) as T;
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, ascii(v)])) as T;
  return value;
}

const built = new Map<string, Record<string, DiscoveryExtension>>();

/** The tool's `extensions.bazaar`, in ASCII (built once per tool: the schemas and examples never change at run time). */
export function mcpBazaar(tool: PaidTool): Record<string, DiscoveryExtension> {
  let ext = built.get(tool.name);
  if (!ext) {
    ext = ascii(build(tool));
    built.set(tool.name, ext);
  }
  return ext;
}
