// The job surfaces on the control plane: /api/scrape, /api/crawl, /api/extract, /api/task/<agent>, /api/web/*.
import { Hono, type Context } from "hono";
import type * as z from "zod";
import type { EmulatorContext } from "../types.js";
import { requireApiKey } from "../auth.js";
import { describeIssues, fetchParams, readJsonBody } from "../search/index.js";
import { AGENT_FAMILIES } from "./agent-steps.js";
import {
  pageQuery,
  startBatchFetch,
  startBatchScrape,
  startCrawl,
  startExtract,
  startScrape,
  startTask,
  startWebCrawl,
} from "./job-params.js";
import type { JobKind, JobRunner, JobStore } from "./job-store.js";
import { pagedView, singleView, taskView } from "./job-views.js";
import type { Job } from "./job-store.js";

export interface JobRunners {
  scrape: JobRunner<any>;
  batchScrape: JobRunner<any>;
  crawl: JobRunner<any>;
  extract: JobRunner<any>;
  batchFetch: JobRunner<any>;
  webCrawl: JobRunner<any>;
  task(family: (typeof AGENT_FAMILIES)[number]): JobRunner<any>;
  /** Runs one web fetch to the end (the surface answers synchronously). */
  fetchNow(params: z.infer<typeof fetchParams>): Promise<{ httpStatus: 200 | 404; body: Record<string, unknown> }>;
  /** Whether a session id names an active session (agents may run in one). */
  sessionActive(id: string): boolean;
}

const notFound = (c: Context, what: string) => c.json({ message: `${what} not found`, code: "not_found" }, 404);

async function parseBody<S extends z.ZodType>(
  c: Context,
  schema: S,
): Promise<{ ok: true; value: z.infer<S> } | { ok: false; res: Response }> {
  const body = await readJsonBody(c.req.raw);
  if (!body.ok) return { ok: false, res: c.json({ message: body.message, code: "invalid_json" }, 400) };
  const parsed = schema.safeParse(body.value);
  if (!parsed.success) return { ok: false, res: c.json({ message: describeIssues(parsed.error), code: "invalid_request" }, 400) };
  return { ok: true, value: parsed.data };
}

export function jobRoutes(ctx: EmulatorContext, store: JobStore, runners: JobRunners): Hono {
  const app = new Hono();
  for (const prefix of [
    "/api/scrape",
    "/api/crawl",
    "/api/extract",
    "/api/task",
    "/api/web/fetch",
    "/api/web/batch-fetch",
    "/api/web/crawl",
  ]) {
    app.use(prefix, requireApiKey(ctx));
    app.use(`${prefix}/*`, requireApiKey(ctx));
  }

  /** POST start, GET detail, GET status for one job family. */
  const surface = (
    base: string,
    kind: JobKind,
    what: string,
    schema: z.ZodType,
    runner: JobRunner<any>,
    view: (job: Job, c: Context) => Response | Record<string, unknown>,
  ) => {
    app.post(base, async (c) => {
      const params = await parseBody(c, schema);
      if (!params.ok) return params.res;
      const job = store.start(kind, params.value, runner);
      return c.json({ jobId: job.id, ...(kind.startsWith("task/") ? { liveUrl: null } : {}) });
    });
    app.get(`${base}/:id/status`, (c) => {
      const job = store.get(kind, c.req.param("id"));
      return job ? c.json({ status: job.status }) : notFound(c, what);
    });
    app.get(`${base}/:id`, (c) => {
      const job = store.get(kind, c.req.param("id"));
      if (!job) return notFound(c, what);
      const v = view(job, c);
      return v instanceof Response ? v : c.json(v);
    });
  };

  const paged = (field: string) => (job: Job, c: Context) => {
    const q = pageQuery.safeParse(c.req.query());
    if (!q.success) return c.json({ message: describeIssues(q.error), code: "invalid_request" }, 400);
    return pagedView(job, field, q.data.page, q.data.batchSize);
  };

  // Batch routes first: `/api/scrape/batch` must not read as a scrape job with id "batch".
  surface("/api/scrape/batch", "batch-scrape", "Batch scrape job", startBatchScrape, runners.batchScrape, paged("totalScrapedPages"));
  surface("/api/scrape", "scrape", "Scrape job", startScrape, runners.scrape, singleView);
  surface("/api/crawl", "crawl", "Crawl job", startCrawl, runners.crawl, paged("totalCrawledPages"));
  surface("/api/extract", "extract", "Extract job", startExtract, runners.extract, singleView);
  surface("/api/web/batch-fetch", "web-batch-fetch", "Batch fetch job", startBatchFetch, runners.batchFetch, paged("totalPages"));
  surface("/api/web/crawl", "web-crawl", "Web crawl job", startWebCrawl, runners.webCrawl, paged("totalPages"));

  for (const family of AGENT_FAMILIES) {
    const base = `/api/task/${family}`;
    const kind: JobKind = `task/${family}`;
    surface(
      base,
      kind,
      "Task",
      startTask.refine((p) => !p.sessionId || runners.sessionActive(p.sessionId), {
        message: "sessionId: no active session with this id",
        path: ["sessionId"],
      }),
      runners.task(family),
      taskView,
    );
    app.put(`${base}/:id/stop`, (c) => (store.stop(kind, c.req.param("id")) ? c.json({ success: true }) : notFound(c, "Task")));
  }

  app.post("/api/web/fetch", async (c) => {
    const params = await parseBody(c, fetchParams);
    if (!params.ok) return params.res;
    const out = await runners.fetchNow(params.value);
    if (out.body.status === "completed") ctx.credits?.charge(ctx.credits.schedule.fetchPage);
    return c.json(out.body, out.httpStatus);
  });
  return app;
}
