// Turns job options into capture settings and page outcomes into the page records the SDK types describe.
import type { FetchParams } from "../search/schema.js";
import { extractWithSchema } from "./extract-rules.js";
import type { ScrapeOptions } from "./job-params.js";
import type { CaptureFormat, CaptureOptions } from "./page-capture.js";
import type { NavigationOptions, PageOutcome } from "./page-job.js";

export interface PageRecord {
  url: string;
  status: "pending" | "running" | "completed" | "failed";
  error?: string | null;
  metadata?: Record<string, unknown>;
  markdown?: string;
  html?: string;
  links?: string[];
  screenshot?: string;
  json?: unknown;
}

/** scrape / batch scrape / crawl: `scrapeOptions` → what to capture and how to navigate. */
export function fromScrapeOptions(o: ScrapeOptions = {}): { capture: CaptureOptions; nav: NavigationOptions } {
  return {
    capture: {
      formats: new Set<CaptureFormat>(o.formats?.length ? o.formats : ["markdown"]),
      onlyMainContent: o.onlyMainContent,
      includeTags: o.includeTags,
      excludeTags: o.excludeTags,
      screenshot: o.screenshotOptions,
    },
    nav: { waitUntil: o.waitUntil, timeoutMs: o.timeout, waitFor: o.waitFor },
  };
}

/** web fetch / batch fetch / web crawl: `outputs`, `navigation`; a json format carries its schema. */
export function fromFetchOptions(p: Omit<FetchParams, "url">): {
  capture: CaptureOptions;
  nav: NavigationOptions;
  json?: { schema?: Record<string, unknown> };
} {
  const formats = new Set<CaptureFormat>();
  let json: { schema?: Record<string, unknown> } | undefined;
  let screenshot: CaptureOptions["screenshot"];
  for (const f of p.outputs?.formats ?? ["markdown"]) {
    const type = typeof f === "string" ? f : f.type;
    if (type === "json")
      json = { schema: typeof f === "object" ? ((f as { schema?: Record<string, unknown> }).schema ?? undefined) : undefined };
    else if (type === "markdown" || type === "html" || type === "links" || type === "screenshot") formats.add(type);
    if (type === "screenshot" && typeof f === "object") screenshot = f as CaptureOptions["screenshot"];
  }
  if (formats.size === 0 && !json) formats.add("markdown");
  return {
    capture: {
      formats,
      includeTags: p.outputs?.includeSelectors,
      excludeTags: p.outputs?.excludeSelectors,
      onlyMainContent: p.outputs?.sanitize !== "none",
      screenshot,
    },
    nav: { waitUntil: p.navigation?.waitUntil, timeoutMs: p.navigation?.timeoutMs, waitFor: p.navigation?.waitFor },
    json,
  };
}

/** The page record clients see; links are dropped unless asked for (crawls capture them to follow them). */
export function pageRecord(outcome: PageOutcome, formats: Set<CaptureFormat>, json?: { schema?: Record<string, unknown> }): PageRecord {
  if (!outcome.ok)
    return { url: outcome.url, status: "failed", error: outcome.error, ...(outcome.metadata ? { metadata: outcome.metadata } : {}) };
  const rec: PageRecord = { url: outcome.url, status: "completed", error: null, metadata: outcome.metadata };
  if (outcome.markdown !== undefined && formats.has("markdown")) rec.markdown = outcome.markdown;
  if (outcome.html !== undefined && formats.has("html")) rec.html = outcome.html;
  if (outcome.links !== undefined && formats.has("links")) rec.links = outcome.links;
  if (outcome.screenshot !== undefined) rec.screenshot = outcome.screenshot;
  if (json && outcome.structure) {
    rec.json = (
      json.schema
        ? extractWithSchema(json.schema, [outcome.structure])
        : { title: outcome.structure.headings[0] ?? outcome.structure.title, description: outcome.structure.description ?? null }
    ) as Record<string, unknown>;
  }
  return rec;
}

/** Capture settings that also collect links (for crawling) while keeping what the client asked for. */
export const withLinks = (c: CaptureOptions): CaptureOptions => ({ ...c, formats: new Set([...c.formats, "links"]) });
