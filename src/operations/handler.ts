import type { FastifyRequest } from "fastify";
import type { PaidRoute } from "../payments/core/core.js";
import type { OperationKey } from "./table.js";

/**
 * What runs a paid operation, whatever carries the call (its HTTP route or its MCP tool): the terms the payment core
 * charges, the refusals known before any payment is asked, and the paid answer. `request` is the HTTP request the
 * call arrived in (the route's, or the MCP endpoint's): the unlock data generation is pinned to it.
 */
export interface PaidHandler<Input> {
  price: PaidRoute;
  /** Throws an HttpProblem for a call that must be refused before the 402 (unknown token, nothing to measure, cap). */
  check(input: Input, request: FastifyRequest): void | Promise<void>;
  answer(input: Input, request: FastifyRequest): unknown;
}

/** Every paid operation's handler, by its key in the table of paid operations. */
export type PaidHandlers = { readonly [K in OperationKey]: PaidHandler<never> };
