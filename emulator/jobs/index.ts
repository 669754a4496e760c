// The jobs half of the emulator: scrape, crawl, extract, agent tasks and web fetch/crawl, run for real on the local web.
import { randomUUID } from "node:crypto";
import type { EmulatorContext, EmulatorModule } from "../types.js";
import type { BrowserSessions } from "../sessions/session-service.js";
import { SearchEngine } from "../search/engine.js";
import type { FetchParams } from "../search/schema.js";
import { LocalSite, startLocalWeb, type LocalWeb } from "../web/index.js";
import { JobBrowser } from "./job-browser.js";
import { JobStore, type Job } from "./job-store.js";
import type { CreditSchedule } from "../credits.js";
import { capturePageJob } from "./page-job.js";
import { fromFetchOptions, pageRecord } from "./page-results.js";
import { jobRoutes } from "./routes.js";
import { agentRunner } from "./scripted-agent.js";
import { batchFetchRunner, batchScrapeRunner, crawlRunner, extractRunner, scrapeRunner, webCrawlRunner } from "./scrape-runners.js";

export { JobStore, type Job, type JobKind, type JobStatus } from "./job-store.js";
export { AGENT_FAMILIES, type AgentFamily } from "./agent-steps.js";
export { extractWithSchema } from "./extract-rules.js";
export { HOME_SITE } from "../web/index.js";

export interface JobsModuleOptions {
  sessions: BrowserSessions;
  /** Share the search index with the x402 module; a new one over the same corpus otherwise. */
  engine?: SearchEngine;
  /** Jobs running at once (the rest wait as `pending`); default 3. */
  maxRunningJobs?: number;
  /** Pages open at once in the shared job browser; default 4. */
  maxPages?: number;
}

export type JobsModule = EmulatorModule & { store: JobStore; web: LocalWeb; browser: JobBrowser };

async function fetchNow(browser: JobBrowser, params: FetchParams) {
  const { capture, nav, json } = fromFetchOptions(params);
  const rec = pageRecord(await capturePageJob(browser, params.url, capture, nav, !!json), capture.formats, json);
  const jobId = randomUUID();
  if (rec.status === "failed") {
    const missing = rec.metadata?.statusCode === 404 || /could not be resolved/.test(rec.error ?? "");
    return {
      httpStatus: missing ? (404 as const) : (200 as const),
      body: { jobId, status: "failed", error: rec.error, ...(missing ? { code: "page_not_found" } : {}) },
    };
  }
  const { url: _u, status: _s, error: _e, ...data } = rec;
  return { httpStatus: 200 as const, body: { jobId, status: "completed", data } };
}

/** What a finished job costs by the schedule: the pages it loaded or the steps it ran; a failed job costs nothing. */
export function jobCredits(job: Job, s: CreditSchedule): number {
  if (job.status === "failed") return 0;
  const loaded = job.pages.filter((p) => (p as { status?: string })?.status === "completed").length;
  const meta = job.metadata ?? {};
  switch (job.kind) {
    case "scrape":
      return job.data !== undefined ? s.scrapePage : 0;
    case "batch-scrape":
    case "crawl":
      return loaded * s.scrapePage;
    case "extract":
      return Number(meta.numPagesScraped ?? 0) * s.extractPage;
    case "web-batch-fetch":
    case "web-crawl":
      return loaded * s.fetchPage;
    default:
      return Number(meta.numTaskStepsCompleted ?? 0) * s.agentStep;
  }
}

export async function createJobsModule(ctx: EmulatorContext, opts: JobsModuleOptions): Promise<JobsModule> {
  const engine = opts.engine ?? new SearchEngine();
  const web = await startLocalWeb(new LocalSite(engine.docs));
  const browser = new JobBrowser(ctx, web, { maxPages: opts.maxPages });
  const meter = ctx.credits;
  const store = new JobStore({
    maxRunningJobs: opts.maxRunningJobs,
    onFinish: meter && ((job) => meter.charge(jobCredits(job, meter.schedule), job.id)),
  });
  const deps = { browser, web };
  const agentDeps = { sessions: opts.sessions, web, engine };
  const control = jobRoutes(ctx, store, {
    scrape: scrapeRunner(deps),
    batchScrape: batchScrapeRunner(deps),
    crawl: crawlRunner(deps),
    extract: extractRunner(deps),
    batchFetch: batchFetchRunner(deps),
    webCrawl: webCrawlRunner(deps),
    task: (family) => agentRunner(family, agentDeps),
    fetchNow: (params) => fetchNow(browser, params),
    sessionActive: (id) => opts.sessions.record(id)?.status === "active",
  });
  ctx.log("jobs.ready", { localWeb: web.origin });
  return {
    name: "jobs",
    control,
    store,
    web,
    browser,
    async close() {
      await store.close();
      await browser.close();
      await web.close();
    },
  };
}
