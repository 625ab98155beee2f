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
    /** Finer market inside the category (e.g. token_price), null when no keyword decided one. */
    submarket: Nullable(Type.String({ minLength: 1 })),
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
    kind: Type.Union([Type.Literal("compiled_catalog"), Type.Literal("bazaar_recording")]),
    compiled_on: Type.String({ format: "date" }),
    method: Type.String({ minLength: 1 }),
    /** A public URL or the name of a shipped recording; never a path of the machine that built it. */
    origin: Type.String({ minLength: 1, pattern: "^(https://|recording:|compilation:)" }),
    /** The facilitator's discovery URL the listing came from (Bazaar recordings only). */
    listing_url: Nullable(Type.String({ pattern: "^https://" })),
    entry_count: Type.Integer({ minimum: 0 }),
    /** Items read, kept (before de-duplication against other sources) and dropped by reason. */
    read: Type.Integer({ minimum: 0 }),
    kept: Type.Integer({ minimum: 0 }),
    dropped: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
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
    build: Type.Object(
      {
        read: Type.Integer({ minimum: 0 }),
        kept: Type.Integer({ minimum: 0 }),
        dropped: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
        duplicates_merged: Type.Integer({ minimum: 0 }),
        endpoints: Type.Integer({ minimum: 0 }),
        rule: Type.String({ minLength: 1 }),
      },
      { additionalProperties: false },
    ),
    endpoints: Type.Array(CatalogEntrySchema),
  },
  { additionalProperties: false },
);
export type CatalogSnapshot = Static<typeof CatalogSnapshotSchema>;
