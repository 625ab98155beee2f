import { Type } from "typebox";
import { CATEGORIES } from "../benchmark/catalog/schema.js";

export const BenchmarkBody = Type.Object(
  {
    endpoint_url: Type.String({
      minLength: 8,
      maxLength: 2048,
      // Absolute http(s) URL; placeholders such as :address, {id} or %7Bid%7D are allowed in the path.
      pattern: "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s/?#@]+[^\\s]*$",
      description: "Absolute http(s) URL of the x402 endpoint to benchmark; may contain path placeholders",
    }),
    category_hint: Type.Optional(
      Type.Enum([...CATEGORIES], { description: "Category label of the endpoint" }),
    ),
  },
  { additionalProperties: false },
);
