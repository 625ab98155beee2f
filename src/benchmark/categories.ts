import type { Category } from "./catalog/schema.js";

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

/**
 * Finer markets inside each category: like-for-like price comparisons (a 0.001 USD token price
 * is not a 25 USD NFT valuation). Keyword lists as literal as the category lists, so a
 * submarket is explained by the words that chose it.
 */
export const SUBMARKETS: Readonly<
  Record<Exclude<Category, "uncategorized">, readonly { id: string; keywords: readonly string[] }[]>
> = {
  data: [
    { id: "token_price", keywords: ["price", "prices", "ticker", "ohlc", "ohlcv", "candles", "candle"] },
    {
      id: "wallet_analytics",
      keywords: [
        "wallet",
        "wallets",
        "portfolio",
        "pnl",
        "balance",
        "balances",
        "holdings",
        "holders",
        "whale",
        "whales",
      ],
    },
    { id: "nft", keywords: ["nft", "nfts", "collection", "collections", "opensea"] },
    {
      id: "defi",
      keywords: [
        "defi",
        "yield",
        "yields",
        "vault",
        "vaults",
        "pool",
        "pools",
        "tvl",
        "lending",
        "dex",
        "liquidity",
        "swap",
      ],
    },
    {
      id: "token_risk",
      keywords: [
        "security",
        "risk",
        "audit",
        "rug",
        "honeypot",
        "scam",
        "safety",
        "scan",
        "scanner",
        "phishing",
      ],
    },
    {
      id: "social",
      keywords: [
        "twitter",
        "tweet",
        "tweets",
        "social",
        "farcaster",
        "followers",
        "influencer",
        "kol",
        "mentions",
      ],
    },
    {
      id: "traditional_markets",
      keywords: [
        "stock",
        "stocks",
        "fx",
        "forex",
        "equities",
        "equity",
        "econ",
        "economics",
        "inflation",
        "macro",
        "sec",
        "earnings",
      ],
    },
    {
      id: "prediction_markets",
      keywords: ["polymarket", "prediction", "predictions", "predict", "odds", "kalshi", "betting", "sports"],
    },
    { id: "news", keywords: ["news", "headlines", "articles"] },
    {
      id: "trading_signals",
      keywords: ["signal", "signals", "trading", "strategy", "alpha", "trade", "trades"],
    },
    {
      id: "weather_geo",
      keywords: ["weather", "forecast", "geo", "location", "maps", "places", "ip", "geocode"],
    },
  ],
  search: [
    { id: "web_search", keywords: ["search", "serp", "websearch", "google", "bing"] },
    {
      id: "crawl_scrape",
      keywords: ["crawl", "crawler", "scrape", "scraper", "scraping", "extract", "browse"],
    },
    { id: "research", keywords: ["research", "deep", "report", "reports"] },
  ],
  inference: [
    {
      id: "llm_completion",
      keywords: [
        "chat",
        "completion",
        "completions",
        "llm",
        "gpt",
        "claude",
        "gemini",
        "grok",
        "prompt",
        "ask",
      ],
    },
    {
      id: "text_tasks",
      keywords: [
        "summarize",
        "summarise",
        "summary",
        "translate",
        "translation",
        "classify",
        "sentiment",
        "nlp",
        "rewrite",
      ],
    },
    {
      id: "agent_analysis",
      keywords: ["agent", "agents", "analyze", "analyse", "analysis", "insights", "advisor"],
    },
  ],
  media: [
    {
      id: "image_generation",
      keywords: ["image", "images", "img", "picture", "art", "draw", "png", "jpg", "photo"],
    },
    { id: "video", keywords: ["video", "videos", "mp4", "clip", "clips"] },
    {
      id: "audio",
      keywords: ["audio", "tts", "speech", "voice", "music", "transcribe", "transcription", "mp3", "song"],
    },
    { id: "documents_render", keywords: ["screenshot", "qr", "render", "pdf", "svg", "thumbnail"] },
  ],
  infra: [
    {
      id: "chain_rpc",
      keywords: ["rpc", "node", "gas", "tx", "transaction", "transactions", "bridge", "deploy"],
    },
    { id: "storage", keywords: ["ipfs", "upload", "pin", "pinning", "storage", "file", "files"] },
    { id: "messaging", keywords: ["email", "mail", "sms", "notify", "webhook", "inbox", "message"] },
    { id: "compute", keywords: ["sandbox", "execute", "exec", "compute", "run", "code", "python"] },
  ],
};

/** The submarket of a category with the most keyword hits (path words count double), or null. */
export function submarketOf(
  category: Category,
  texts: { strong: readonly string[]; weak: readonly string[] },
): string | null {
  if (category === "uncategorized") return null;
  const strong = texts.strong.flatMap(words);
  const weak = texts.weak.flatMap(words);
  let best: string | null = null;
  let bestScore = 0;
  for (const sub of SUBMARKETS[category]) {
    const set = new Set(sub.keywords);
    const score = strong.filter((w) => set.has(w)).length * 2 + weak.filter((w) => set.has(w)).length;
    if (score > bestScore) {
      best = sub.id;
      bestScore = score;
    }
  }
  return best;
}

/** Words too common in listing descriptions ("AI agent API for …") to say anything about a category. */
export const DESCRIPTION_STOPWORDS: ReadonlySet<string> = new Set([
  "ai",
  "agent",
  "agents",
  "api",
  "data",
  "model",
  "models",
  "x402",
  "payment",
  "pay",
  "query",
  "find",
  "fetch",
  "run",
  "code",
  "send",
  "get",
  "returns",
  "access",
  "real",
  "time",
]);

/**
 * Category of a listing from its evidence: the facilitator's own label when it names a category,
 * else a keyword vote — path words 2, the label 2, tags 1, description words 1 (minus stopwords).
 */
export function categorize(evidence: {
  label: string | null;
  tags: readonly string[];
  pathWords: readonly string[];
  description: string | null;
}): Category {
  if (evidence.label !== null) {
    const l = evidence.label.toLowerCase();
    if ((CATEGORY_TIE_ORDER as readonly string[]).includes(l)) return l as Category;
  }
  const score = scoreKeywords(evidence.pathWords, 2);
  if (evidence.label !== null) scoreKeywords([evidence.label], 2, score);
  scoreKeywords(evidence.tags, 1, score);
  if (evidence.description !== null) {
    scoreKeywords(
      words(evidence.description).filter((w) => !DESCRIPTION_STOPWORDS.has(w)),
      1,
      score,
    );
  }
  return bestCategory(score) ?? "uncategorized";
}
