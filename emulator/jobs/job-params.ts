// Request bodies of the job surfaces (the SDK's Start*Params), checked before a job is created; unknown keys pass.
import * as z from "zod";
import { fetchParams } from "../search/schema.js";

const url = z
  .string()
  .trim()
  .url("expected an absolute http(s) URL")
  .refine((u) => /^https?:\/\//i.test(u), "expected an http(s) URL");

export const MAX_BATCH_URLS = 100;
export const MAX_CRAWL_PAGES = 100;

const screenshotOptions = z.object({ fullPage: z.boolean().optional(), format: z.enum(["png", "jpeg", "webp"]).optional() }).loose();

export const scrapeOptions = z
  .object({
    formats: z
      .array(z.enum(["markdown", "html", "links", "screenshot"]))
      .max(4)
      .optional(),
    includeTags: z.array(z.string()).optional(),
    excludeTags: z.array(z.string()).optional(),
    onlyMainContent: z.boolean().optional(),
    waitFor: z.number().min(0).max(30_000).optional(),
    timeout: z.number().positive().max(60_000).optional(),
    waitUntil: z.enum(["load", "domcontentloaded", "networkidle"]).optional(),
    screenshotOptions: screenshotOptions.optional(),
  })
  .loose();
export type ScrapeOptions = z.infer<typeof scrapeOptions>;

const session = z.record(z.string(), z.unknown()).optional();

export const startScrape = z.object({ url, sessionOptions: session, scrapeOptions: scrapeOptions.optional() }).loose();
export const startBatchScrape = z
  .object({
    urls: z.array(url).min(1, "urls must not be empty").max(MAX_BATCH_URLS, `at most ${MAX_BATCH_URLS} urls per batch`),
    sessionOptions: session,
    scrapeOptions: scrapeOptions.optional(),
  })
  .loose();

const crawlLimits = {
  maxPages: z.int().min(1).max(MAX_CRAWL_PAGES).optional(),
  followLinks: z.boolean().optional(),
  ignoreSitemap: z.boolean().optional(),
  excludePatterns: z.array(z.string().max(500)).max(50).optional(),
  includePatterns: z.array(z.string().max(500)).max(50).optional(),
};
export const startCrawl = z.object({ url, ...crawlLimits, sessionOptions: session, scrapeOptions: scrapeOptions.optional() }).loose();
export type CrawlLimits = {
  maxPages?: number;
  followLinks?: boolean;
  ignoreSitemap?: boolean;
  excludePatterns?: string[];
  includePatterns?: string[];
};

export const startExtract = z
  .object({
    // A URL may end in `/*`: the site below it is crawled for up to maxLinks pages.
    urls: z
      .array(
        z
          .string()
          .trim()
          .refine((u) => /^https?:\/\/\S+$/i.test(u), "expected an http(s) URL"),
      )
      .min(1)
      .max(MAX_BATCH_URLS),
    systemPrompt: z.string().optional(),
    prompt: z.string().optional(),
    schema: z.record(z.string(), z.unknown()).optional(),
    waitFor: z.number().min(0).max(30_000).optional(),
    sessionOptions: session,
    maxLinks: z.int().min(1).max(MAX_CRAWL_PAGES).optional(),
  })
  .loose()
  .refine((p) => p.schema || p.prompt, { message: "either schema or prompt must be provided" });

const fetchShared = fetchParams.omit({ url: true });
export const startBatchFetch = fetchShared.extend({ urls: z.array(url).min(1).max(MAX_BATCH_URLS) });
export const startWebCrawl = fetchShared.extend({ url, crawlOptions: z.object(crawlLimits).loose().optional() });

export const startTask = z
  .object({
    task: z.string().trim().min(1, "task must not be empty").max(20_000),
    sessionId: z.string().optional(),
    maxSteps: z.int().min(1).max(100).optional(),
    keepBrowserOpen: z.boolean().optional(),
    sessionOptions: session,
    version: z.string().optional(),
    llm: z.string().optional(),
    outputModelSchema: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
export type StartTask = z.infer<typeof startTask>;

export const pageQuery = z.object({
  page: z.coerce.number().int().min(1).optional(),
  batchSize: z.coerce.number().int().min(1).max(100).optional(),
});
