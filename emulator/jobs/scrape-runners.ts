// The runners of scrape, batch scrape, crawl, extract, batch fetch and web crawl jobs, on the shared job browser.
import type { LocalWeb } from "../web/index.js";
import type { FetchParams } from "../search/schema.js";
import { crawlSite, DEFAULT_MAX_PAGES } from "./crawler.js";
import { extractWithSchema, extractWithoutSchema } from "./extract-rules.js";
import type { JobBrowser } from "./job-browser.js";
import type { CrawlLimits, ScrapeOptions } from "./job-params.js";
import type { Job } from "./job-store.js";
import type { CaptureOptions } from "./page-capture.js";
import { capturePageJob, type NavigationOptions } from "./page-job.js";
import { fromFetchOptions, fromScrapeOptions, pageRecord, withLinks, type PageRecord } from "./page-results.js";
import type { PageStructure } from "./page-structure.js";

export interface RunnerDeps {
  browser: JobBrowser;
  web: LocalWeb;
  /** Pages one batch job loads at once. */
  pagesPerJob?: number;
}

type ScrapeParams = { url: string; scrapeOptions?: ScrapeOptions };
type BatchParams = { urls: string[]; scrapeOptions?: ScrapeOptions };
type CrawlParams = CrawlLimits & { url: string; scrapeOptions?: ScrapeOptions };
type ExtractParams = { urls: string[]; schema?: Record<string, unknown>; prompt?: string; waitFor?: number; maxLinks?: number };
type BatchFetchParams = Omit<FetchParams, "url"> & { urls: string[] };
type WebCrawlParams = Omit<FetchParams, "url"> & { url: string; crawlOptions?: CrawlLimits };

export function scrapeRunner(deps: RunnerDeps) {
  return async (job: Job<ScrapeParams>) => {
    const { capture, nav } = fromScrapeOptions(job.params.scrapeOptions);
    const rec = pageRecord(await capturePageJob(deps.browser, job.params.url, capture, nav), capture.formats);
    if (rec.status === "failed") throw new Error(rec.error ?? "The page could not be scraped");
    const { url: _u, status: _s, error: _e, ...data } = rec;
    job.data = data;
  };
}

/** Loads `urls` a few at a time; each page goes pending → running → completed/failed in `job.pages`. */
async function runBatch(job: Job, deps: RunnerDeps, urls: string[], load: (url: string) => Promise<PageRecord>) {
  const pages: PageRecord[] = urls.map((url) => ({ url, status: "pending" }));
  job.pages = pages;
  let next = 0;
  const worker = async () => {
    while (next < urls.length && !job.signal.aborted) {
      const i = next++;
      pages[i] = { url: urls[i], status: "running" };
      pages[i] = await load(urls[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(deps.pagesPerJob ?? 2, urls.length) }, worker));
  if (!job.signal.aborted && pages.every((p) => p.status === "failed"))
    throw new Error(`All ${pages.length} pages failed; the first: ${pages[0].error}`);
}

export function batchScrapeRunner(deps: RunnerDeps) {
  return (job: Job<BatchParams>) => {
    const { capture, nav } = fromScrapeOptions(job.params.scrapeOptions);
    return runBatch(job, deps, job.params.urls, async (url) =>
      pageRecord(await capturePageJob(deps.browser, url, capture, nav), capture.formats),
    );
  };
}

export function batchFetchRunner(deps: RunnerDeps) {
  return (job: Job<BatchFetchParams>) => {
    const { capture, nav, json } = fromFetchOptions(job.params);
    return runBatch(job, deps, job.params.urls, async (url) =>
      pageRecord(await capturePageJob(deps.browser, url, capture, nav, !!json), capture.formats, json),
    );
  };
}

async function runCrawl(
  job: Job,
  deps: RunnerDeps,
  start: string,
  limits: CrawlLimits,
  capture: CaptureOptions,
  nav: NavigationOptions,
  json?: { schema?: Record<string, unknown> },
) {
  const pages: PageRecord[] = [];
  job.pages = pages;
  await crawlSite({
    web: deps.web,
    start,
    limits,
    signal: job.signal,
    visit: async (url) => {
      const outcome = await capturePageJob(deps.browser, url, withLinks(capture), nav, !!json);
      pages.push(pageRecord(outcome, capture.formats, json));
      return { links: outcome.ok ? outcome.links : [] };
    },
  });
  if (!job.signal.aborted && pages[0]?.status === "failed" && pages.length === 1)
    throw new Error(pages[0].error ?? "The start page could not be loaded");
}

export function crawlRunner(deps: RunnerDeps) {
  return (job: Job<CrawlParams>) => {
    const { capture, nav } = fromScrapeOptions(job.params.scrapeOptions);
    return runCrawl(job, deps, job.params.url, job.params, capture, nav);
  };
}

export function webCrawlRunner(deps: RunnerDeps) {
  return (job: Job<WebCrawlParams>) => {
    const { capture, nav, json } = fromFetchOptions(job.params);
    return runCrawl(job, deps, job.params.url, job.params.crawlOptions ?? {}, capture, nav, json);
  };
}

export function extractRunner(deps: RunnerDeps) {
  return async (job: Job<ExtractParams>) => {
    const docs: PageStructure[] = [];
    const errors: string[] = [];
    const capture: CaptureOptions = { formats: new Set(["links"]) };
    const nav = { waitFor: job.params.waitFor };
    const visit = async (url: string) => {
      const outcome = await capturePageJob(deps.browser, url, capture, nav, true);
      if (outcome.ok && outcome.structure) docs.push(outcome.structure);
      else if (!outcome.ok) errors.push(outcome.error);
      return { links: outcome.ok ? outcome.links : [] };
    };
    for (const url of job.params.urls) {
      if (job.signal.aborted) return;
      if (url.endsWith("/*")) {
        const start = url.slice(0, -1);
        await crawlSite({
          web: deps.web,
          start,
          limits: { maxPages: job.params.maxLinks ?? DEFAULT_MAX_PAGES, includePatterns: [`${new URL(start).pathname}*`] },
          signal: job.signal,
          visit,
        });
      } else await visit(url);
    }
    if (docs.length === 0) throw new Error(errors[0] ?? "No page could be loaded");
    job.data = job.params.schema ? extractWithSchema(job.params.schema, docs) : extractWithoutSchema(docs);
    job.metadata = { inputTokens: null, outputTokens: null, numPagesScraped: docs.length };
  };
}
