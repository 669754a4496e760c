// Job bodies: scrape, batch scrape, crawl, extract, web search/fetch/batch fetch/crawl, and the seven agent tasks. From
// the SDKs' Start*Params (Node: dist/types/{scrape,crawl,extract,web/*,agents/*}.d.ts; Python: hyperbrowser/models/).
// Counts a reservation is computed from (urls, maxPages, maxLinks, maxSteps) are integers within range, never coerced.
import * as z from "zod";
import { count, fields, opaque, options, owned } from "./declare.js";
import { createSessionBody } from "./sessions.js";

/** Most units one request may ask for (pages, urls, steps): above it the request is refused rather than reserved. */
const MAX_UNITS = 10_000;

const url = z.string().min(1).max(8192);
const strings = z.array(z.string().max(4096)).max(1000);
const storageState = options({ localStorage: z.record(z.string(), z.string()), sessionStorage: z.record(z.string(), z.string()) });
const sessionOptions = createSessionBody;

const scrapeOptions = options({
  formats: strings,
  includeTags: strings,
  excludeTags: strings,
  onlyMainContent: z.boolean(),
  waitFor: count(0, 600_000),
  timeout: count(0, 600_000),
  waitUntil: z.string(),
  screenshotOptions: options({
    fullPage: z.boolean(),
    format: z.string(),
    cropToContent: z.boolean(),
    cropToContentMaxHeight: count(0, 100_000),
    cropToContentMinHeight: count(0, 100_000),
    waitFor: count(0, 600_000),
  }),
  storageState,
});

export const scrapeBody = fields({ url, sessionOptions: sessionOptions.nullish(), scrapeOptions: scrapeOptions.nullish() });

export const batchScrapeBody = fields({
  urls: z.array(url).min(1).max(MAX_UNITS),
  sessionOptions: sessionOptions.nullish(),
  scrapeOptions: scrapeOptions.nullish(),
});

export const crawlBody = fields({
  url,
  maxPages: count(1, MAX_UNITS).nullish(),
  followLinks: z.boolean().nullish(),
  ignoreSitemap: z.boolean().nullish(),
  excludePatterns: strings.nullish(),
  includePatterns: strings.nullish(),
  sessionOptions: sessionOptions.nullish(),
  scrapeOptions: scrapeOptions.nullish(),
});

/** An extract's URL ending in `/*` is crawled for up to `maxLinks` pages; the reservation counts them (../credits.ts). */
export const extractBody = fields({
  urls: z.array(url).min(1).max(MAX_UNITS),
  systemPrompt: z.string().max(100_000).nullish(),
  prompt: z.string().max(100_000).nullish(),
  // A JSON schema the SDK converted from zod: data the upstream reads, naming nothing.
  schema: opaque(),
  waitFor: count(0, 600_000).nullish(),
  sessionOptions: sessionOptions.nullish(),
  maxLinks: count(1, MAX_UNITS).nullish(),
});

export const webSearchBody = fields({
  query: z.string().min(1).max(2048),
  page: count(1, 1000).nullish(),
  maxAgeSeconds: count(0, 10 * 365 * 24 * 3600).nullish(),
  location: options({ country: z.string(), state: z.string(), city: z.string() }).nullish(),
  filters: options({
    exactPhrase: z.boolean(),
    semanticPhrase: z.boolean(),
    excludeTerms: strings,
    boostTerms: strings,
    filetype: z.string(),
    site: z.string(),
    excludeSite: z.string(),
    intitle: z.string(),
    inurl: z.string(),
  }).nullish(),
});

const screenshotOutput = {
  fullPage: z.boolean().nullish(),
  format: z.string().nullish(),
  cropToContent: z.boolean().nullish(),
  cropToContentMaxHeight: count(0, 100_000).nullish(),
  cropToContentMinHeight: count(0, 100_000).nullish(),
};
const outputFormat = z.union([
  z.enum(["markdown", "html", "links", "screenshot", "branding"]),
  z.discriminatedUnion("type", [
    fields({ type: z.literal("markdown") }),
    fields({ type: z.literal("html") }),
    fields({ type: z.literal("links") }),
    fields({ type: z.literal("branding") }),
    fields({ type: z.literal("screenshot"), ...screenshotOutput }),
    fields({ type: z.literal("json"), prompt: z.string().nullish(), schema: opaque() }),
  ]),
]);

/** What a web fetch, batch fetch or web crawl shares: outputs, browser (with a profile), navigation, cache. */
const fetchShared = {
  stealth: z.string().nullish(),
  outputs: options({
    formats: z.array(outputFormat).max(20),
    sanitize: z.string(),
    includeSelectors: strings,
    excludeSelectors: strings,
    storageState,
  }).nullish(),
  browser: options({
    screen: fields({ width: count(1, 10_000), height: count(1, 10_000) }),
    profileId: owned("profile"),
    solveCaptchas: z.boolean(),
    location: options({ country: z.string(), state: z.string(), city: z.string() }),
  }).nullish(),
  navigation: options({ waitUntil: z.string(), timeoutMs: count(0, 600_000), waitFor: count(0, 600_000) }).nullish(),
  cache: options({ maxAgeSeconds: count(0, 10 * 365 * 24 * 3600) }).nullish(),
};

export const webFetchBody = fields({ url, ...fetchShared });

export const batchFetchBody = fields({ urls: z.array(url).min(1).max(MAX_UNITS), ...fetchShared });

export const webCrawlBody = fields({
  url,
  ...fetchShared,
  crawlOptions: options({
    maxPages: count(1, MAX_UNITS),
    ignoreSitemap: z.boolean(),
    followLinks: z.boolean(),
    excludePatterns: strings,
    includePatterns: strings,
  }).nullish(),
});

/**
 * What every agent task takes. `sessionId` runs the task in one of the caller's live sessions; `keepBrowserOpen`
 * without one makes the gateway create the session first (a session of the caller's, claimed, metered and listed:
 * ../nested.ts), so no browser outlives a task unowned.
 */
const taskShared = {
  task: z.string().min(1).max(100_000),
  llm: z.string().nullish(),
  sessionId: owned("session").nullish(),
  maxSteps: count(1, MAX_UNITS).nullish(),
  keepBrowserOpen: z.boolean().nullish(),
  sessionOptions: sessionOptions.nullish(),
  useCustomApiKeys: z.boolean().nullish(),
};
const keys = (...names: string[]) => options(Object.fromEntries(names.map((n) => [n, z.string()]))).nullish();
const computerUse = { maxFailures: count(1, 1000).nullish(), useComputerAction: z.boolean().nullish() };

export const taskBodies = {
  "browser-use": fields({
    ...taskShared,
    version: z.string().nullish(),
    validateOutput: z.boolean().nullish(),
    useVision: z.boolean().nullish(),
    useVisionForPlanner: z.boolean().nullish(),
    maxActionsPerStep: count(1, 1000).nullish(),
    maxInputTokens: count(1, 10_000_000).nullish(),
    plannerLlm: z.string().nullish(),
    pageExtractionLlm: z.string().nullish(),
    plannerInterval: count(1, 1000).nullish(),
    maxFailures: count(1, 1000).nullish(),
    // Data the agent reads: its first actions, secrets it may type, extra context, an output schema.
    initialActions: z.array(opaque()).max(100).nullish(),
    sensitiveData: z.record(z.string(), z.string()).nullish(),
    messageContext: z.string().nullish(),
    outputModelSchema: opaque(),
    apiKeys: keys("openai", "anthropic", "google"),
  }),
  "claude-computer-use": fields({ ...taskShared, ...computerUse, reasoningEffort: z.string().nullish(), apiKeys: keys("anthropic") }),
  "gemini-computer-use": fields({ ...taskShared, ...computerUse, apiKeys: keys("google") }),
  "grok-computer-use": fields({ ...taskShared, ...computerUse, reasoningEffort: z.string().nullish(), apiKeys: keys("xai") }),
  "meta-computer-use": fields({ ...taskShared, ...computerUse, reasoningEffort: z.string().nullish(), apiKeys: keys("meta") }),
  cua: fields({
    ...taskShared,
    ...computerUse,
    reasoningEffort: z.string().nullish(),
    apiKeys: keys("openai"),
    baseUrls: keys("openai"),
  }),
  "hyper-agent": fields({
    ...taskShared,
    version: z.string().nullish(),
    enableVisualMode: z.boolean().nullish(),
    apiKeys: keys("openai", "anthropic", "google"),
  }),
} as const;
