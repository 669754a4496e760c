// The local web's address book: which host and path answer with which page, from the search corpus and the home site.
import { buildCorpus, type CorpusDoc } from "../search/corpus.js";
import { HOME_SITE, esc, homeSitePage, htmlDocument, notFoundPage, type SitePage } from "./home-site.js";
import { writePdf } from "./pdf.js";

export { HOME_SITE, type SitePage } from "./home-site.js";

const HTML = "text/html; charset=utf-8";

const hostOf = (h: string) =>
  h
    .toLowerCase()
    .replace(/^www\./, "")
    .replace(/:\d+$/, "");
const pathKey = (p: string) => p.replace(/\/+$/, "") || "/";

export class LocalSite {
  private readonly byHostPath = new Map<string, CorpusDoc>();
  private readonly byHost = new Map<string, CorpusDoc[]>();
  private readonly titles = new Map<string, string>();

  constructor(readonly docs: CorpusDoc[] = buildCorpus()) {
    for (const d of docs) {
      const u = new URL(d.url);
      this.byHostPath.set(`${hostOf(u.hostname)}${pathKey(u.pathname)}`, d);
      this.byHost.set(hostOf(u.hostname), [...(this.byHost.get(hostOf(u.hostname)) ?? []), d]);
      this.titles.set(d.url, d.title);
    }
  }

  /** Hosts the local web answers for; any other host does not resolve. */
  knows(host: string): boolean {
    const h = hostOf(host);
    return h === HOME_SITE || this.byHost.has(h);
  }

  hosts(): string[] {
    return [HOME_SITE, ...this.byHost.keys()];
  }

  /** The page at `url`, a 404 page for an unknown path on a known host, undefined for an unknown host. */
  page(url: URL): SitePage | undefined {
    const host = hostOf(url.hostname);
    if (!this.knows(host)) return undefined;
    const path = pathKey(url.pathname);
    if (path === "/sitemap.xml") return this.sitemap(url.protocol, host);
    if (host === HOME_SITE) {
      const corpusLinks = this.docs
        .filter((d) => d.filetype === "html")
        .slice(0, 3)
        .map((d) => ({ url: d.url, title: d.title }));
      return homeSitePage(path, url.searchParams, corpusLinks) ?? notFoundPage(host, path);
    }
    if (path === "/") return this.siteIndex(host);
    const doc = this.byHostPath.get(`${host}${path}`);
    return doc ? this.docPage(doc) : notFoundPage(host, path);
  }

  private docPage(d: CorpusDoc): SitePage {
    if (d.filetype === "pdf")
      return { status: 200, contentType: "application/pdf", body: writePdf(d.title, [...d.paragraphs, `Published: ${d.publishedAt}`]) };
    // Office documents are served as HTML pages: the emulator has no office renderer (see the README).
    const related = d.links.map((l) => `<li><a href="${esc(l)}">${esc(this.titles.get(l) ?? l)}</a></li>`).join("");
    const main =
      `<article><h1>${esc(d.title)}</h1>${d.paragraphs.map((p) => `<p>${esc(p)}</p>`).join("")}` +
      `<h2>Details</h2><dl><dt>Published</dt><dd>${d.publishedAt}</dd><dt>Publisher</dt><dd>${esc(d.site)}</dd><dt>Topic</dt><dd>${esc(d.topic)}</dd></dl>` +
      `<h2>Related</h2><ul>${related}</ul></article>`;
    return {
      status: 200,
      contentType: HTML,
      body: htmlDocument({ title: d.title, description: d.description, main, nav: `<a href="/">${esc(d.site)}</a>` }),
    };
  }

  private siteIndex(host: string): SitePage {
    const docs = this.byHost.get(host) ?? [];
    const main = `<h1>${esc(host)}</h1><p>${docs.length} documents.</p><ul>${docs.map((d) => `<li><a href="${esc(d.url)}">${esc(d.title)}</a></li>`).join("")}</ul>`;
    return { status: 200, contentType: HTML, body: htmlDocument({ title: host, description: `Documents published by ${host}.`, main }) };
  }

  private sitemap(protocol: string, host: string): SitePage {
    const urls =
      host === HOME_SITE
        ? ["/", "/about", "/products", "/report.pdf"].map((p) => `${protocol}//${HOME_SITE}${p}`)
        : (this.byHost.get(host) ?? []).map((d) => d.url);
    const body = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.map((u) => `<url><loc>${esc(u)}</loc></url>`).join("")}</urlset>\n`;
    return { status: 200, contentType: "application/xml", body };
  }
}
