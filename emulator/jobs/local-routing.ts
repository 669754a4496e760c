// Routes every request a browser page makes to the local web over loopback; a host it does not know fails to resolve.
import type { HTTPRequest, Page } from "puppeteer-core";
import { readPdfText, type LocalWeb } from "../web/index.js";
import { esc } from "../web/home-site.js";

/** What the page's main-frame documents really were, before the browser saw them (a PDF is shown as its text). */
export interface DocumentRecord {
  status: number;
  contentType: string;
  pdf?: { title?: string; lines: string[] };
}

export interface RoutedPage {
  documents: Map<string, DocumentRecord>;
  /** Aborts the loopback requests still in flight (the page is being closed). */
  abort(): void;
}

const PASS_THROUGH = /^(data|blob|about|chrome|devtools):/;

/** A PDF as the browser shows it: its text lines on a plain page, so every format can be captured from the DOM. */
function pdfViewer(url: string, pdf: { title?: string; lines: string[] }): string {
  const title = pdf.title ?? url;
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head><body><main><h1>${esc(title)}</h1>${pdf.lines
    .filter((l) => l !== pdf.title)
    .map((l) => `<p>${esc(l)}</p>`)
    .join("")}</main></body></html>`;
}

/**
 * Installs the interception on `page` once; each `begin()` starts a fresh record for the next use of the page (the
 * job browser reuses its pages) and aborts whatever the previous use still had in flight.
 */
export async function routeToLocalWeb(page: Page, web: LocalWeb): Promise<RoutedPage & { begin(): RoutedPage }> {
  let documents = new Map<string, DocumentRecord>();
  let controller = new AbortController();
  await page.setRequestInterception(true);
  const handle = async (req: HTTPRequest) => {
    const url = req.url();
    if (PASS_THROUGH.test(url)) return req.continue().catch(() => {});
    const [docs, signal] = [documents, controller.signal];
    const res = await web.fetch(url, { method: req.method() === "HEAD" ? "HEAD" : "GET", signal }).catch(() => undefined);
    if (signal.aborted) return req.abort("aborted").catch(() => {});
    if (!res) return req.abort("namenotresolved").catch(() => {});
    const contentType = res.headers["content-type"] ?? "application/octet-stream";
    const isDocument = req.isNavigationRequest() && req.frame() === page.mainFrame();
    if (isDocument && /^application\/pdf/.test(contentType)) {
      const pdf = readPdfText(res.body);
      docs.set(url, { status: res.status, contentType, pdf });
      return req.respond({ status: res.status, contentType: "text/html; charset=utf-8", body: pdfViewer(url, pdf) }).catch(() => {});
    }
    if (isDocument) docs.set(url, { status: res.status, contentType });
    return req.respond({ status: res.status, contentType, body: res.body }).catch(() => {});
  };
  page.on("request", (req) => void handle(req));
  const current = (): RoutedPage => ({ documents, abort: () => controller.abort() });
  return {
    ...current(),
    begin() {
      controller.abort();
      documents = new Map();
      controller = new AbortController();
      return current();
    },
  };
}
