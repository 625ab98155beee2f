import { type DiscoveryExtension, declareDiscoveryExtension } from "@x402/extensions/bazaar";
import type { DiscoverableRoute, FieldMask } from "./catalog.js";

/**
 * The schema cut to `depth` levels of nesting, without `description` keywords, for the v1 `outputSchema` of the 402
 * body. Below the cut a field keeps only its `type`; the OpenAPI document has the full schema.
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

/** Input fields the Bazaar extension leaves to the OpenAPI document: the attribution tag and a next page's cursor. */
const FOLLOW_UP_FIELDS = new Set(["pp_ref", "cursor"]);

/** A TypeBox schema as the plain JSON schema it serialises to (no hidden TypeBox keys). */
const plain = (schema: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(schema));

/**
 * The fields of `value` a mask keeps, in the value's own order: every value shown is the real answer's, nothing is
 * filled in. An array keeps its first item, cut by the same mask.
 */
export function headline(value: unknown, mask: FieldMask): unknown {
  if (Array.isArray(value)) return value.slice(0, 1).map((item) => headline(item, mask));
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => mask[key] !== undefined)
      .map(([key, v]) => {
        const keep = mask[key] as true | FieldMask;
        return [key, keep === true ? v : headline(v, keep)];
      }),
  );
}

/**
 * The v2 Bazaar discovery extension of a paid route (`PaymentRequired.extensions.bazaar`), built with
 * @x402/extensions and completed with the HTTP method the way its resource-server extension does at request time.
 * It travels in PAYMENT-REQUIRED, which a 4 KiB proxy buffer must hold with the 402's other headers, and which x402
 * v2 clients echo inside PAYMENT-SIGNATURE: so it carries the input (its schema without descriptions, and an example)
 * and the answer's headline as the output example, and no output schema. The full output schemas and examples are in /openapi.json,
 * /.well-known/x402 and /llms.txt.
 */
export function bazaarExtension(d: DiscoverableRoute): Record<string, DiscoveryExtension> {
  // Every keyword that validates the input stays; its prose (`description`) is in the OpenAPI document. The
  // attribution tag and the next-page cursor are no part of a first call: left out (so other fields are allowed), they
  // keep the header within its buffer.
  const input = compactSchema(plain(d.inputSchema), Number.POSITIVE_INFINITY) as Record<string, unknown>;
  const all = input.properties as Record<string, unknown>;
  const properties = Object.fromEntries(Object.entries(all).filter(([k]) => !FOLLOW_UP_FIELDS.has(k)));
  const inputSchema = {
    properties,
    ...(input.required ? { required: input.required } : {}),
    additionalProperties:
      Object.keys(properties).length < Object.keys(all).length ? true : (input.additionalProperties ?? false),
  };
  const output = { example: headline(d.outputExample, d.outputHeadline) };
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

/**
 * One field of an x402 v1 `outputSchema.input` field map: its JSON schema (validating keywords; the prose is in the
 * OpenAPI document, so a 402 stays small enough to go out uncompressed) plus `required`.
 */
function v1Fields(schema: Record<string, unknown>): Record<string, unknown> {
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.fromEntries(
    Object.entries(properties).map(([name, field]) => [
      name,
      { ...(compactSchema(field, Number.POSITIVE_INFINITY) as object), required: required.has(name) },
    ]),
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
