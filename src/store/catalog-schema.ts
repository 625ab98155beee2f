import { type Static, Type } from "typebox";

/** The benchmark's category labels; "uncategorized" is a real value, not a missing one. */
export const CATEGORIES = ["data", "search", "inference", "media", "infra", "uncategorized"] as const;
export type Category = (typeof CATEGORIES)[number];

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) =>
  Type.Union([schema, Type.Null()]);

export const CategorySchema = Type.Enum([...CATEGORIES]);

export const CatalogEntrySchema = Type.Object(
  {
    url: Type.String({ minLength: 8, pattern: "^https?://" }),
    method: Type.Union([
      Type.Literal("GET"),
      Type.Literal("POST"),
      Type.Literal("PUT"),
      Type.Literal("PATCH"),
      Type.Literal("DELETE"),
    ]),
    price_usd: Nullable(Type.Number({ minimum: 0 })),
    amount_atomic: Nullable(Type.String({ pattern: "^[0-9]+$" })),
    amount_basis: Nullable(Type.Union([Type.Literal("observed"), Type.Literal("derived_from_usd")])),
    network: Nullable(Type.String({ minLength: 1 })),
    asset: Nullable(Type.String({ minLength: 1 })),
    pay_to: Nullable(Type.String({ minLength: 1 })),
    x402_version: Nullable(Type.Union([Type.Literal(1), Type.Literal(2)])),
    service: Type.String({ minLength: 1 }),
    category: CategorySchema,
    tags: Type.Array(Type.String({ minLength: 1 })),
    observed_at: Nullable(Type.String({ format: "date-time" })),
    calls_30d: Nullable(Type.Integer({ minimum: 0 })),
    unique_payers_30d: Nullable(Type.Integer({ minimum: 0 })),
    source_url: Type.String({ minLength: 1 }),
    source_id: Type.String({ minLength: 1 }),
    compiled_on: Type.String({ format: "date" }),
  },
  { additionalProperties: false },
);
export type CatalogEntry = Static<typeof CatalogEntrySchema>;

export const CatalogSourceSchema = Type.Object(
  {
    id: Type.String({ minLength: 1 }),
    kind: Type.Union([Type.Literal("compiled_catalog"), Type.Literal("bazaar_discovery")]),
    compiled_on: Type.String({ format: "date" }),
    method: Type.String({ minLength: 1 }),
    origin: Type.String({ minLength: 1 }),
    entry_count: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type CatalogSource = Static<typeof CatalogSourceSchema>;

export const CatalogSnapshotSchema = Type.Object(
  {
    schema_version: Type.Literal(1),
    generated_at: Type.String({ format: "date-time" }),
    synthetic: Type.Literal(false),
    sources: Type.Array(CatalogSourceSchema, { minItems: 1 }),
    endpoints: Type.Array(CatalogEntrySchema),
  },
  { additionalProperties: false },
);
export type CatalogSnapshot = Static<typeof CatalogSnapshotSchema>;
