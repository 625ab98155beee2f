import { type DiscoveryExtension, declareDiscoveryExtension } from "@x402/extensions/bazaar";
import type { DiscoverableRoute } from "./catalog.js";

/**
 * The schema cut to `depth` levels of nesting, without `description` keywords: it travels in the PAYMENT-REQUIRED
 * header, which x402 v2 clients echo back inside PAYMENT-SIGNATURE, so it must stay a few kilobytes. Below the cut a
 * field keeps only its `type`; the OpenAPI document has the full schema.
 */
export function compactSchema(schema: unknown, depth = 2): unknown {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const s = schema as Record<string, unknown>;
  if (depth <= 0) return "type" in s ? { type: s.type } : {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(s)) {
    if (key === "description" || key === "examples") continue;
    if (key === "properties" && value && typeof value === "object")
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, field]) => [name, compactSchema(field, depth - 1)]),
      );
    else if (key === "items") out[key] = compactSchema(value, depth - 1);
    else if ((key === "anyOf" || key === "oneOf" || key === "allOf") && Array.isArray(value))
      out[key] = value.map((v) => compactSchema(v, depth));
    else out[key] = value;
  }
  return out;
}

/** A TypeBox schema as the plain JSON schema it serialises to (no hidden TypeBox keys). */
const plain = (schema: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(schema));

/**
 * The v2 Bazaar discovery extension of a paid route (`PaymentRequired.extensions.bazaar`), built with
 * @x402/extensions and completed with the HTTP method the way its resource-server extension does at request time.
 */
export function bazaarExtension(d: DiscoverableRoute): Record<string, DiscoveryExtension> {
  const full = declareBazaar(d, 2);
  return JSON.stringify(full).length <= HEADER_BUDGET ? full : declareBazaar(d, 1);
}

/**
 * Characters of JSON the extension may take: base64 adds a third, and the echo inside PAYMENT-SIGNATURE must stay
 * under common proxies' 8 KiB limit for one request header line (nginx's default large_client_header_buffers).
 */
export const HEADER_BUDGET = 4500;

function declareBazaar(d: DiscoverableRoute, depth: number): Record<string, DiscoveryExtension> {
  const input = plain(d.inputSchema);
  const inputSchema = {
    properties: input.properties,
    ...(input.required ? { required: input.required } : {}),
    additionalProperties: input.additionalProperties ?? false,
  };
  const output = {
    example: d.outputExample,
    schema: compactSchema(plain(d.outputSchema), depth) as Record<string, unknown>,
  };
  const declared =
    d.inputIn === "query"
      ? declareDiscoveryExtension({ input: d.inputExample, inputSchema, output })
      : declareDiscoveryExtension({ input: d.inputExample, inputSchema, bodyType: "json", output });
  const ext = declared.bazaar as DiscoveryExtension & {
    info: { input: Record<string, unknown> };
    schema: { properties: { input: { properties: Record<string, unknown> } } };
  };
  ext.info.input.method = d.method;
  ext.schema.properties.input.properties.method = { type: "string", enum: [d.method] };
  return { bazaar: ext };
}

/** One field of an x402 v1 `outputSchema.input` field map: its JSON schema plus `required`. */
function v1Fields(schema: Record<string, unknown>): Record<string, unknown> {
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.fromEntries(
    Object.entries(properties).map(([name, field]) => [name, { ...field, required: required.has(name) }]),
  );
}

/**
 * The x402 v1 `outputSchema` (v1 discovery): `input` says how to call the route (method, query or body fields),
 * `output` the JSON schema of the answer.
 */
export function v1OutputSchema(d: DiscoverableRoute): Record<string, unknown> {
  const fields = v1Fields(plain(d.inputSchema));
  return {
    input: {
      type: "http",
      method: d.method,
      discoverable: true,
      ...(d.inputIn === "query" ? { queryParams: fields } : { bodyType: "json", bodyFields: fields }),
    },
    output: compactSchema(plain(d.outputSchema)),
  };
}
