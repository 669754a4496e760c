// Captures a loaded page in the formats a job asks for: metadata, cleaned HTML, markdown (turndown), links, screenshot.
/// <reference path="./turndown-plugin-gfm.d.ts" />
import type { Page } from "puppeteer-core";
import TurndownService from "turndown";
import { gfm } from "turndown-plugin-gfm";
import type { DocumentRecord } from "./local-routing.js";
import { definePageHelpers } from "./page-structure.js";

export type CaptureFormat = "markdown" | "html" | "links" | "screenshot";

export interface CaptureOptions {
  formats: Set<CaptureFormat>;
  /** Keep the page's main content only (main/article, without nav, header, footer, aside). Default true. */
  onlyMainContent?: boolean;
  /** CSS selectors: keep only these elements. */
  includeTags?: string[];
  /** CSS selectors: drop these elements. */
  excludeTags?: string[];
  screenshot?: { fullPage?: boolean; format?: "png" | "jpeg" | "webp" };
}

export interface CapturedPage {
  metadata: Record<string, unknown>;
  markdown?: string;
  html?: string;
  links?: string[];
  screenshot?: string;
}

const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
turndown.use(gfm);
turndown.remove(["script", "style", "noscript"]);

/** Runs in the page: the HTML the formats are made from, after the content options are applied. */
function contentHtml(opts: { onlyMainContent: boolean; includeTags: string[]; excludeTags: string[] }): string {
  const root = document.body.cloneNode(true) as HTMLElement;
  for (const el of Array.from(root.querySelectorAll("script, style, noscript, template"))) el.remove();
  for (const sel of opts.excludeTags) for (const el of Array.from(root.querySelectorAll(sel))) el.remove();
  // Links and images made absolute, as a client reading the content away from the page needs them.
  for (const a of Array.from(root.querySelectorAll("a[href]"))) a.setAttribute("href", (a as HTMLAnchorElement).href);
  for (const img of Array.from(root.querySelectorAll("img[src]"))) img.setAttribute("src", (img as HTMLImageElement).src);
  if (opts.includeTags.length)
    return opts.includeTags.flatMap((sel) => Array.from(root.querySelectorAll(sel)).map((el) => el.outerHTML)).join("\n");
  if (opts.onlyMainContent) {
    for (const el of Array.from(root.querySelectorAll("nav, header, footer, aside"))) el.remove();
    const main = root.querySelector("main, article, [role=main]");
    if (main) return main.outerHTML;
  }
  return root.innerHTML;
}

function pageMeta(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of Array.from(document.querySelectorAll("meta[name][content], meta[property][content]"))) {
    out[m.getAttribute("name") ?? m.getAttribute("property")!] = m.getAttribute("content")!;
  }
  const lang = document.documentElement.lang;
  if (lang) out.language = lang;
  out.title = document.title;
  return out;
}

function pageLinks(): string[] {
  return Array.from(
    new Set(
      Array.from(document.querySelectorAll("a[href]"))
        .map((a) => (a as HTMLAnchorElement).href)
        .filter((h) => /^https?:/.test(h)),
    ),
  );
}

export async function capturePage(page: Page, sourceURL: string, doc: DocumentRecord, opts: CaptureOptions): Promise<CapturedPage> {
  await definePageHelpers(page);
  const meta = await page.evaluate(pageMeta);
  const out: CapturedPage = {
    metadata: { ...meta, sourceURL, url: page.url(), statusCode: doc.status, contentType: doc.contentType.split(";")[0] },
  };
  const content = {
    onlyMainContent: opts.onlyMainContent ?? true,
    includeTags: opts.includeTags ?? [],
    excludeTags: opts.excludeTags ?? [],
  };
  if (opts.formats.has("html") || opts.formats.has("markdown")) {
    const html = await page.evaluate(contentHtml, content);
    if (opts.formats.has("html")) out.html = html;
    if (opts.formats.has("markdown")) out.markdown = turndown.turndown(html).trim();
  }
  if (opts.formats.has("links")) out.links = await page.evaluate(pageLinks);
  if (opts.formats.has("screenshot")) {
    const type = opts.screenshot?.format ?? "png";
    out.screenshot = (await page.screenshot({ encoding: "base64", type, fullPage: opts.screenshot?.fullPage ?? false })) as string;
  }
  return out;
}
