import { Type } from "typebox";
import { RECIPIENT_CATEGORIES } from "../unlocks/data/types.js";
import { defaultsOptional, PpRef } from "./common.js";

/** Answer shape: compact (figures, ids, short codes, prose once in `legend`) or full (plus every item's detail). */
/** No `default` keyword (absent means compact): every byte of the input schema rides in each 402's header. */
export const View = Type.Optional(
  Type.Enum(["compact", "full"], {
    description:
      "compact (default): figures, ids, codes, prose once in legend; full: plus each item's detail",
  }),
);

/** Most items one page of the upcoming list holds. */
export const MAX_UPCOMING_LIMIT = 500;
/** Items on a page when `limit` is absent (no `default` keyword: each byte of the schema rides in every 402). */
export const DEFAULT_UPCOMING_LIMIT = 100;
/** Most symbols one `tokens` filter takes. */
export const MAX_FILTER_TOKENS = 50;

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
      minUsd: Type.Optional(Type.Number({ minimum: 0, description: "Minimum amount_usd in the window" })),
      minPctCirculating: Type.Optional(
        Type.Number({ minimum: 0, maximum: 100, description: "Minimum pct_circulating in the window" }),
      ),
      tokens: Type.Optional(
        Type.String({
          maxLength: 1000,
          description: `Symbols, comma-separated, at most ${MAX_FILTER_TOKENS} (GET /v1/tokens)`,
        }),
      ),
      category: Type.Optional(Type.Enum([...RECIPIENT_CATEGORIES], { description: "Dominant recipient" })),
      type: Type.Optional(Type.Enum(["cliff", "step", "linear"], { description: "Release type" })),
      sort: Type.Optional(
        Type.Enum(["date", "usd", "pct_circulating", "risk"], {
          description:
            "date (default: first release day, then risk), or usd, pct_circulating, risk (largest first)",
        }),
      ),
      limit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: MAX_UPCOMING_LIMIT,
          description: `Items per page (default ${DEFAULT_UPCOMING_LIMIT})`,
        }),
      ),
      cursor: Type.Optional(
        Type.String({
          maxLength: 40,
          description: "next_cursor of the previous page (same query, same UTC day)",
        }),
      ),
      view: View,
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
      view: View,
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
      view: View,
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
      view: View,
    },
    { additionalProperties: false },
  ),
);
