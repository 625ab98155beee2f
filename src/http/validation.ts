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

const NO_ERRORS: ErrorObject[] = [];

/**
 * Ajv's number coercion takes "0x10", " 5" and "1e2"; a query integer must be written as one. The check per schema is
 * built once: it reads only the integer and boolean properties (every request's query passes here).
 */
function textShapeCheck(schema: {
  properties?: Record<string, PropertySchema>;
}): (value: unknown) => ErrorObject[] {
  const checked = Object.entries(schema.properties ?? {}).flatMap(([key, p]) =>
    p?.type === "integer"
      ? [{ key, type: p.type, shape: WHOLE, message: "must be integer" }]
      : p?.type === "boolean"
        ? [{ key, type: p.type, shape: BOOL, message: "must be boolean" }]
        : [],
  );
  const byKey = new Map(checked.map((c) => [c.key, c]));
  const bad = (query: Record<string, unknown>, c: (typeof checked)[number]): boolean => {
    const raw = query[c.key];
    return typeof raw === "string" && Object.hasOwn(query, c.key) && !c.shape.test(raw);
  };
  return (value) => {
    if (checked.length === 0 || typeof value !== "object" || value === null) return NO_ERRORS;
    const query = value as Record<string, unknown>;
    let any = false;
    for (const c of checked) if (bad(query, c)) any = true;
    if (!any) return NO_ERRORS;
    // Reported in the query's own order, as its parameters were written.
    const errors: ErrorObject[] = [];
    for (const key of Object.keys(query)) {
      const c = byKey.get(key);
      if (c && bad(query, c))
        errors.push({
          keyword: "type",
          instancePath: `/${key}`,
          schemaPath: "",
          params: { type: c.type },
          message: c.message,
        });
    }
    return errors;
  };
}

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  if (httpPart === "body") {
    const validate = bodyAjv.compile(schema);
    return (data: unknown) => (validate(data) ? { value: data } : { error: ajvError(validate) });
  }
  const validate = textAjv.compile(schema);
  const shape = httpPart === "querystring" ? textShapeCheck(schema) : () => NO_ERRORS;
  return (data: unknown) => {
    const pre = shape(data);
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
