import { Type } from "typebox";
import { defaultsOptional, PpRef } from "./common.js";

/** Request schemas of the four unlock routes, exactly as the contract states (bounds, defaults, no extra fields). */
export const UpcomingQuery = defaultsOptional(
  Type.Object(
    {
      days: Type.Integer({
        minimum: 1,
        maximum: 365,
        default: 30,
        description: "Forward-looking unlock window in days",
      }),
      minRisk: Type.Integer({
        minimum: 0,
        maximum: 100,
        default: 0,
        description: "Minimum modelled risk score (0–100)",
      }),
      pp_ref: Type.Optional(PpRef),
    },
    { additionalProperties: false },
  ),
);

const Token = Type.String({
  minLength: 1,
  maxLength: 64,
  description: "Token symbol (case-insensitive), e.g. ARB",
});
const EventId = Type.String({
  minLength: 1,
  maxLength: 128,
  description: "Unlock event id as returned by GET /v1/unlocks/upcoming",
});

export const UnlockRiskBody = defaultsOptional(
  Type.Object(
    {
      token: Token,
      unlock_event_id: EventId,
      includeEvidence: Type.Boolean({
        default: true,
        description: "Include one evidence record per model factor",
      }),
    },
    { additionalProperties: false },
  ),
);

export const RiskSummaryBody = defaultsOptional(
  Type.Object(
    {
      token: Token,
      lookbackDays: Type.Integer({
        minimum: 1,
        maximum: 365,
        default: 90,
        description: "Window length in days",
      }),
    },
    { additionalProperties: false },
  ),
);

export const BacktestBody = defaultsOptional(
  Type.Object(
    {
      token: Token,
      unlock_event_id: EventId,
      windowDays: Type.Integer({
        minimum: 1,
        maximum: 120,
        default: 14,
        description: "Reaction window in days",
      }),
    },
    { additionalProperties: false },
  ),
);
