import type { Category } from "../store/catalog-schema.js";

/**
 * Keyword evidence for each category. Used to infer a category from a URL (host and path words)
 * and from free-form tags or a facilitator's own category label. The lists are deliberately
 * short and literal so an inference can be explained by the words that triggered it.
 */
export const CATEGORY_KEYWORDS: Readonly<Record<Exclude<Category, "uncategorized">, readonly string[]>> = {
  search: [
    "search",
    "serp",
    "websearch",
    "research",
    "discover",
    "discovery",
    "perplexity",
    "exa",
    "find",
    "query",
    "crawl",
    "synthesise",
    "synthesize",
  ],
  inference: [
    "llm",
    "gpt",
    "chat",
    "completion",
    "completions",
    "summarize",
    "summarise",
    "summary",
    "summarization",
    "translate",
    "translation",
    "sentiment",
    "inference",
    "ai",
    "model",
    "models",
    "embed",
    "embeddings",
    "prompt",
    "grok",
    "gemini",
    "claude",
    "vision",
    "agent",
    "agents",
    "classify",
    "nlp",
  ],
  media: [
    "image",
    "images",
    "video",
    "videos",
    "audio",
    "tts",
    "speech",
    "voice",
    "qr",
    "screenshot",
    "png",
    "jpg",
    "svg",
    "mp3",
    "mp4",
    "music",
    "transcribe",
    "transcription",
    "media",
    "render",
    "thumbnail",
  ],
  infra: [
    "rpc",
    "sandbox",
    "execute",
    "exec",
    "compute",
    "ipfs",
    "upload",
    "pin",
    "pinning",
    "email",
    "send",
    "notify",
    "webhook",
    "relay",
    "proxy",
    "gateway",
    "deploy",
    "register",
    "storage",
    "health",
    "uuid",
    "timestamp",
    "slugify",
    "cache",
    "fetch",
    "validate",
    "preflight",
    "inbox",
    "code",
    "run",
  ],
  data: [
    "data",
    "price",
    "prices",
    "quote",
    "quotes",
    "weather",
    "forecast",
    "token",
    "tokens",
    "stock",
    "stocks",
    "crypto",
    "market",
    "markets",
    "news",
    "odds",
    "geo",
    "ip",
    "whois",
    "dns",
    "enrich",
    "vault",
    "vaults",
    "defi",
    "flights",
    "hotels",
    "travel",
    "wallet",
    "pnl",
    "balance",
    "yield",
    "onchain",
    "nft",
    "sports",
    "fx",
    "rates",
    "analytics",
    "stats",
    "security",
    "risk",
    "lookup",
  ],
};

/** Priority when two categories score the same: the larger, more generic market first. */
export const CATEGORY_TIE_ORDER: readonly Exclude<Category, "uncategorized">[] = [
  "data",
  "search",
  "inference",
  "media",
  "infra",
];

const KEYWORD_TO_CATEGORY: ReadonlyMap<string, Exclude<Category, "uncategorized">[]> = (() => {
  const map = new Map<string, Exclude<Category, "uncategorized">[]>();
  for (const cat of CATEGORY_TIE_ORDER) {
    for (const word of CATEGORY_KEYWORDS[cat]) {
      const list = map.get(word) ?? [];
      list.push(cat);
      map.set(word, list);
    }
  }
  return map;
})();

/** Lower-case words of a URL part or tag: split on anything that is not a letter or digit. */
export function words(text: string): string[] {
  return text
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
}

export interface KeywordScore {
  scores: Record<Exclude<Category, "uncategorized">, number>;
  hits: string[];
}

/** Adds `weight` to each category whose keyword list contains a word of `texts`. */
export function scoreKeywords(texts: readonly string[], weight: number, into?: KeywordScore): KeywordScore {
  const acc: KeywordScore = into ?? {
    scores: { data: 0, search: 0, inference: 0, media: 0, infra: 0 },
    hits: [],
  };
  for (const text of texts) {
    for (const w of words(text)) {
      const cats = KEYWORD_TO_CATEGORY.get(w);
      if (cats === undefined) continue;
      for (const c of cats) acc.scores[c] += weight;
      if (!acc.hits.includes(w)) acc.hits.push(w);
    }
  }
  return acc;
}

/** The best-scoring category, or null when nothing scored. Ties follow CATEGORY_TIE_ORDER. */
export function bestCategory(score: KeywordScore): Exclude<Category, "uncategorized"> | null {
  let best: Exclude<Category, "uncategorized"> | null = null;
  let bestScore = 0;
  for (const c of CATEGORY_TIE_ORDER) {
    if (score.scores[c] > bestScore) {
      best = c;
      bestScore = score.scores[c];
    }
  }
  return best;
}

/** Maps a facilitator's free-form category label plus tags onto the benchmark's categories. */
export function categoryFromLabels(label: string | null, tags: readonly string[]): Category {
  if (label !== null) {
    const l = label.toLowerCase();
    if ((CATEGORY_TIE_ORDER as readonly string[]).includes(l)) return l as Category;
  }
  const score = scoreKeywords(label === null ? [] : [label], 2);
  scoreKeywords(tags, 1, score);
  return bestCategory(score) ?? "uncategorized";
}
