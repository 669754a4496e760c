// Breadth-first crawl of one site on the local web: sitemap first unless ignored, links when followed, within limits.
import type { LocalWeb } from "../web/index.js";
import type { CrawlLimits } from "./job-params.js";

export const DEFAULT_MAX_PAGES = 10;

/** A pattern is a regular expression when it looks like one (`^`, `$`, `(`, `\`), else a glob where `*` is anything. */
export function patternMatcher(pattern: string): RegExp {
  if (/[\^$()\\|]/.test(pattern)) return new RegExp(pattern);
  return new RegExp(
    "^" +
      pattern
        .split("*")
        .map((p) => p.replace(/[.+?{}[\]]/g, "\\$&"))
        .join(".*") +
      "$",
  );
}

const canonical = (u: string) => {
  const url = new URL(u);
  url.hash = "";
  return url.toString();
};

/** Whether `url` may be crawled: same host as the start, included by some include pattern, excluded by none. */
export function crawlFilter(start: string, limits: CrawlLimits): (url: string) => boolean {
  const host = new URL(start).host;
  const include = (limits.includePatterns ?? []).map(patternMatcher);
  const exclude = (limits.excludePatterns ?? []).map(patternMatcher);
  return (u) => {
    const url = new URL(u);
    if (url.host !== host || !/^https?:$/.test(url.protocol)) return false;
    const path = url.pathname + url.search;
    const test = (re: RegExp) => re.test(path) || re.test(url.toString());
    if (exclude.some(test)) return false;
    return include.length === 0 || include.some(test);
  };
}

async function sitemapUrls(web: LocalWeb, start: string, signal: AbortSignal): Promise<string[]> {
  const res = await web.fetch(new URL("/sitemap.xml", start).toString(), { signal }).catch(() => undefined);
  if (res?.status !== 200) return [];
  return [...res.body.toString("utf8").matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1].replace(/&amp;/g, "&"));
}

/**
 * Visits pages from `start` until `maxPages` have been visited or nothing is left. `visit` loads one page and returns
 * the links it found; the start page is always visited, whatever the patterns say.
 */
export async function crawlSite(opts: {
  web: LocalWeb;
  start: string;
  limits: CrawlLimits;
  signal: AbortSignal;
  visit(url: string): Promise<{ links?: string[] }>;
}): Promise<number> {
  const { limits, signal } = opts;
  const maxPages = limits.maxPages ?? DEFAULT_MAX_PAGES;
  const allowed = crawlFilter(opts.start, limits);
  const seen = new Set<string>([canonical(opts.start)]);
  const queue = [opts.start];
  const enqueue = (u: string) => {
    let c: string;
    try {
      c = canonical(u);
    } catch {
      return;
    }
    if (seen.has(c) || !allowed(c)) return;
    seen.add(c);
    queue.push(c);
  };
  if (!limits.ignoreSitemap) for (const u of await sitemapUrls(opts.web, opts.start, signal)) enqueue(u);
  let visited = 0;
  while (queue.length && visited < maxPages && !signal.aborted) {
    const url = queue.shift()!;
    visited++;
    const { links } = await opts.visit(url);
    if (limits.followLinks !== false) for (const l of links ?? []) enqueue(l);
  }
  return visited;
}
