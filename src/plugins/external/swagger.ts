import swagger, { type SwaggerOptions } from "@fastify/swagger";
import type { Config } from "../../config.js";
import { openapiDocument } from "../../discovery/openapi.js";

/** The OpenAPI 3.1 document, generated from the routes' schemas. */
export const autoConfig = (config: Config, version: string): SwaggerOptions => ({
  // Components are named by their $id ("Problem") instead of def-N.
  refResolver: {
    buildLocalReference: (json, _base, _fragment, i) =>
      typeof json.$id === "string" ? json.$id : `def-${i}`,
  },
  openapi: openapiDocument({
    version,
    publicBaseUrl: config.publicBaseUrl,
    contact: config.contact,
    network: config.network,
  }),
});

export default swagger;
