import { type TObject, Type } from "typebox";

export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: "URI identifying the problem type" }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    instance: Type.String({ description: "Path of the request that failed" }),
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          in: Type.Enum(["body", "query", "header", "params"]),
          pointer: Type.String({ description: "JSON pointer to the invalid field within its part" }),
          detail: Type.String(),
        }),
      ),
    ),
  },
  {
    $id: "Problem",
    additionalProperties: true,
    description: "RFC 9457 problem details (application/problem+json)",
  },
);

/** Opaque attribution tag: recorded with the paid call, never echoed. */
export const PpRef = Type.String({
  pattern: "^[A-Za-z0-9._:-]{1,128}$",
  maxLength: 128,
  description: "Opaque reference tag for attribution; recorded with the paid call, never echoed",
});

const IdempotencyKey = Type.String({
  pattern: "^[\\x21-\\x7E]{1,255}$",
  description:
    "1–255 visible ASCII characters. With the same proof and the same request, the stored response is replayed " +
    "without a second settlement; with a different request: 422; while the first call runs: 409.",
});
const PaymentSignature = Type.String({ description: "x402 v2 payment payload, base64 JSON" });
const XPayment = Type.String({ description: "x402 v1 payment payload, base64 JSON (unlock routes only)" });

/** Payment headers of the four unlock routes (v2 and v1 proofs). Header names are lower-case as Fastify sees them. */
export const UnlockPaymentHeaders = Type.Object(
  {
    "payment-signature": Type.Optional(PaymentSignature),
    "x-payment": Type.Optional(XPayment),
    "idempotency-key": Type.Optional(IdempotencyKey),
  },
  { additionalProperties: true },
);

/** The benchmark route shows only PAYMENT-SIGNATURE (v2). */
export const BenchmarkPaymentHeaders = Type.Object(
  {
    "payment-signature": Type.Optional(PaymentSignature),
    "idempotency-key": Type.Optional(IdempotencyKey),
  },
  { additionalProperties: true },
);

export const PaidQuery = Type.Object({ pp_ref: Type.Optional(PpRef) }, { additionalProperties: false });

/**
 * A field with a default is optional on the wire (the OpenAPI document and generated clients must not demand it) but
 * always present after validation, because Ajv fills defaults in. So the JSON schema drops it from `required` while the
 * static type keeps it: handlers read `request.query.days` as a number.
 */
export function defaultsOptional<T extends TObject>(schema: T): T {
  const properties = schema.properties as Record<string, { default?: unknown }>;
  const required = (schema.required ?? []).filter((key) => properties[key]?.default === undefined);
  const clone = Object.create(Object.getPrototypeOf(schema), Object.getOwnPropertyDescriptors(schema)) as T;
  const writable = clone as unknown as { required?: string[] };
  if (required.length > 0) writable.required = required;
  else delete writable.required;
  return clone;
}
