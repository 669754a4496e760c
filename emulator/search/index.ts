// Web search and fetch jobs over the local corpus, and the free API-key routes `/api/web/search|fetch`.
import { Hono } from "hono";
import { randomUUID } from "node:crypto";
import type { EmulatorContext } from "../types.js";
import { requireApiKey } from "../auth.js";
import type { SearchEngine } from "./engine.js";
import { describeIssues, fetchParams, webSearchParams, type FetchParams, type WebSearchParams } from "./schema.js";

export { SearchEngine, PAGE_SIZE } from "./engine.js";
export { buildCorpus, type CorpusDoc, type Filetype } from "./corpus.js";
export { webSearchParams, fetchParams, describeIssues, type WebSearchParams, type FetchParams } from "./schema.js";

/** A finished job as the upstream returns it; `httpStatus` is what the route answers with. */
export interface JobResult {
  httpStatus: 200 | 404;
  body: Record<string, unknown>;
  /** False when the job failed: nothing was delivered, so nothing is charged. */
  delivered: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

export function parseSearch(body: unknown): Parsed<WebSearchParams> {
  const r = webSearchParams.safeParse(body);
  return r.success ? { ok: true, value: r.data } : { ok: false, message: describeIssues(r.error) };
}

export function parseFetch(body: unknown): Parsed<FetchParams> {
  const r = fetchParams.safeParse(body);
  return r.success ? { ok: true, value: r.data } : { ok: false, message: describeIssues(r.error) };
}

export function runSearchJob(engine: SearchEngine, params: WebSearchParams): JobResult {
  const jobId = randomUUID();
  const out = engine.search(params);
  if (!out.ok) return { httpStatus: 200, delivered: false, body: { jobId, status: "failed", error: out.error } };
  return { httpStatus: 200, delivered: true, body: { jobId, status: "completed", data: { query: out.query, results: out.results } } };
}

export function runFetchJob(engine: SearchEngine, params: FetchParams): JobResult {
  const jobId = randomUUID();
  const out = engine.fetch(params);
  if (!out.ok) return { httpStatus: 404, delivered: false, body: { jobId, status: "failed", error: out.error, code: "page_not_found" } };
  return { httpStatus: 200, delivered: true, body: { jobId, status: "completed", data: out.data } };
}

/** Reads a JSON body; an absent body reads as `{}` and bad JSON as a 400 the caller can fix. */
export async function readJsonBody(req: Request): Promise<Parsed<unknown>> {
  const text = await req.text();
  if (!text.trim()) return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, message: "Request body is not valid JSON" };
  }
}

/** `POST /api/web/search` and `POST /api/web/fetch`, authenticated with the API key, charged to the team's credits. */
export function createWebRoutes(ctx: EmulatorContext, engine: SearchEngine): Hono {
  const app = new Hono();
  app.use("/api/web/*", requireApiKey(ctx));
  app.post("/api/web/search", async (c) => {
    const body = await readJsonBody(c.req.raw);
    if (!body.ok) return c.json({ message: body.message, code: "invalid_json" }, 400);
    const params = parseSearch(body.value);
    if (!params.ok) return c.json({ message: params.message, code: "invalid_request" }, 400);
    const job = runSearchJob(engine, params.value);
    if (job.delivered) ctx.credits?.charge(ctx.credits.schedule.search);
    return c.json(job.body, job.httpStatus);
  });
  app.post("/api/web/fetch", async (c) => {
    const body = await readJsonBody(c.req.raw);
    if (!body.ok) return c.json({ message: body.message, code: "invalid_json" }, 400);
    const params = parseFetch(body.value);
    if (!params.ok) return c.json({ message: params.message, code: "invalid_request" }, 400);
    const job = runFetchJob(engine, params.value);
    if (job.delivered) ctx.credits?.charge(ctx.credits.schedule.fetchPage);
    return c.json(job.body, job.httpStatus);
  });
  return app;
}
