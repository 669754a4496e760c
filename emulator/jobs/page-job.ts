// One page of a job: open it in the job browser, wait as asked, capture the formats; failures become a failed page.
import type { Page } from "puppeteer-core";
import type { JobBrowser } from "./job-browser.js";
import type { RoutedPage } from "./local-routing.js";
import { capturePage, type CaptureOptions, type CapturedPage } from "./page-capture.js";
import { readStructure, type PageStructure } from "./page-structure.js";

export interface NavigationOptions {
  waitUntil?: "load" | "domcontentloaded" | "networkidle";
  /** Navigation timeout; the default is 15 s. */
  timeoutMs?: number;
  /** Extra wait after load, in ms. */
  waitFor?: number;
}

export type PageOutcome =
  | ({ ok: true; url: string; structure?: PageStructure } & CapturedPage)
  | { ok: false; url: string; error: string; metadata?: Record<string, unknown> };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Navigates `page` to `url`; the document record, or an error message a client can read. */
export async function navigate(
  page: Page,
  routed: RoutedPage,
  url: string,
  nav: NavigationOptions = {},
): Promise<{ ok: true; status: number; contentType: string; pdf?: unknown } | { ok: false; error: string; status?: number }> {
  const waitUntil = nav.waitUntil === "networkidle" ? "networkidle0" : (nav.waitUntil ?? "load");
  try {
    await page.goto(url, { waitUntil, timeout: Math.min(nav.timeoutMs ?? 15_000, 60_000) });
  } catch (err) {
    const msg = (err as Error).message ?? String(err);
    if (/ERR_NAME_NOT_RESOLVED/.test(msg))
      return { ok: false, error: `Failed to load ${url}: the host could not be resolved (the emulator reaches only its local web)` };
    if (/timeout/i.test(msg))
      return { ok: false, error: `Failed to load ${url}: navigation timed out after ${nav.timeoutMs ?? 15_000} ms` };
    return { ok: false, error: `Failed to load ${url}: ${msg.split("\n")[0]}` };
  }
  if (nav.waitFor) await sleep(Math.min(nav.waitFor, 30_000));
  const doc = routed.documents.get(page.url()) ?? routed.documents.get(url);
  if (!doc) return { ok: false, error: `Failed to load ${url}: no document was received` };
  if (doc.status >= 400) return { ok: false, status: doc.status, error: `Failed to load ${url}: the server answered ${doc.status}` };
  return { ok: true, ...doc };
}

/** Loads and captures one URL in a fresh page of the shared job browser. */
export function capturePageJob(
  browser: JobBrowser,
  url: string,
  capture: CaptureOptions,
  nav: NavigationOptions = {},
  withStructure = false,
): Promise<PageOutcome> {
  return browser
    .withPage(async (page, routed) => {
      const loaded = await navigate(page, routed, url, nav);
      if (!loaded.ok)
        return {
          ok: false as const,
          url,
          error: loaded.error,
          metadata: loaded.status ? { sourceURL: url, statusCode: loaded.status } : undefined,
        };
      const doc = routed.documents.get(page.url()) ?? routed.documents.get(url)!;
      const captured = await capturePage(page, url, doc, capture);
      const structure = withStructure ? await readStructure(page) : undefined;
      return { ok: true as const, url, ...captured, structure };
    })
    .catch((err): PageOutcome => ({ ok: false, url, error: `Failed to load ${url}: ${(err as Error).message}` }));
}
