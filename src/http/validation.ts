import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import type { FastifySchemaCompiler } from "fastify";

/*
 * Two Ajv instances instead of Fastify's one: query strings and headers arrive as text and are coerced, JSON bodies
 * are not (a body that sends "true" for a boolean is a client bug we report, not guess at). Fastify's default also
 * strips unknown properties (`removeAdditional`), where the contract says they are rejected.
 */
const common = { useDefaults: true, allErrors: true, removeAdditional: false, strict: false } as const;
const bodyAjv = new Ajv({ ...common, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: "array" });

const WHOLE = /^-?(0|[1-9][0-9]*)$/;
const BOOL = /^(true|false)$/;

interface PropertySchema {
  type?: string;
}

/** Ajv's number coercion takes "0x10", " 5" and "1e2"; a query integer must be written as one. */
function textShapeErrors(
  schema: { properties?: Record<string, PropertySchema> },
  value: unknown,
): ErrorObject[] {
  if (!schema.properties || typeof value !== "object" || value === null) return [];
  const errors: ErrorObject[] = [];
  for (const [key, raw] of Object.entries(value)) {
    const type = schema.properties[key]?.type;
    if (typeof raw !== "string") continue;
    if (type === "integer" && !WHOLE.test(raw))
      errors.push({
        keyword: "type",
        instancePath: `/${key}`,
        schemaPath: "",
        params: { type },
        message: "must be integer",
      });
    if (type === "boolean" && !BOOL.test(raw))
      errors.push({
        keyword: "type",
        instancePath: `/${key}`,
        schemaPath: "",
        params: { type },
        message: "must be boolean",
      });
  }
  return errors;
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  if (httpPart === "body") {
    const validate = bodyAjv.compile(schema);
    return (data: unknown) => (validate(data) ? { value: data } : { error: ajvError(validate) });
  }
  const validate = textAjv.compile(schema);
  return (data: unknown) => {
    const pre = httpPart === "querystring" ? textShapeErrors(schema, data) : [];
    if (pre.length > 0) return { error: validationError(pre) };
    return validate(data) ? { value: data } : { error: ajvError(validate) };
  };
};

function ajvError(validate: ValidateFunction): Error {
  return validationError(validate.errors ?? []);
}

function validationError(errors: ErrorObject[]): Error {
  return Object.assign(new Error("request validation failed"), { validation: errors });
}
