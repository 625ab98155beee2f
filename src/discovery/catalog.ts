import { PAID_OPERATIONS, type PaidOperation } from "../operations/table.js";

export type { FieldMask } from "../operations/table.js";

/**
 * What an agent or a Bazaar needs to know about each paid route: the table of paid operations, whose TypeBox schemas
 * validate requests and describe responses, with an input example and a real output example (see
 * scripts/discovery-examples.ts). Listed in the order an agent would usually call them.
 */
export type DiscoverableRoute = PaidOperation;

export const DISCOVERABLE: readonly DiscoverableRoute[] = PAID_OPERATIONS;

export function discoverable(route: string): DiscoverableRoute {
  const found = DISCOVERABLE.find((d) => d.route === route);
  if (!found) throw new Error(`no discovery entry for ${route}`);
  return found;
}
