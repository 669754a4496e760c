// Full-text search and fetch over the emulator's corpus (minisearch), honouring every WebSearchParams filter.
import MiniSearch from "minisearch";
import { buildCorpus, type CorpusDoc } from "./corpus.js";
import type { FetchParams, WebSearchParams } from "./schema.js";

export const PAGE_SIZE = 10;

export interface WebSearchResult {
  title: string;
  url: string;
  description: string;
}

export type SearchOutcome = { ok: true; query: string; results: WebSearchResult[]; total: number } | { ok: false; error: string };

export type FetchOutcome = { ok: true; data: Record<string, unknown> } | { ok: false; status: number; error: string };

const STOPWORDS = new Set(
  "a an and are as at be by for from has have how in is it its of on or that the this to was were what when where which who why will with".split(
    " ",
  ),
);

/**
 * Synonym groups used by `semanticPhrase`: a semantic search also looks for related words, so "automobile"
 * finds pages that only say "car" or "vehicle". Multi-word entries expand to their words.
 */
const SYNONYMS: string[][] = [
  ["car", "cars", "automobile", "vehicle", "vehicles", "ev"],
  ["buy", "buyers", "purchase", "afford"],
  ["doctor", "physician", "clinician", "clinicians"],
  ["illness", "disease", "condition", "sickness"],
  ["heart attack", "myocardial infarction", "cardiac"],
  ["cheap", "cheaper", "cheapest", "affordable", "inexpensive"],
  ["house", "houses", "home", "homes", "dwelling", "dwellings", "residence"],
  ["job", "jobs", "employment", "career", "work"],
  ["kid", "kids", "child", "children"],
  ["study", "studies", "research", "researchers"],
  ["global warming", "climate change", "warming"],
  ["ai", "artificial intelligence", "machine learning", "neural network"],
  ["bug", "defect", "error"],
  ["fix", "patch", "repair"],
  ["money", "funding", "finance", "pay"],
  ["sun", "sunlight", "solar"],
  ["planet", "mars", "martian"],
  ["prices", "cost", "inflation"],
];

const normalize = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
const words = (s: string) => normalize(s).split(" ").filter(Boolean);

function hostMatches(host: string, url: string, spec: string): boolean {
  const [specHost, ...rest] = spec
    .toLowerCase()
    .replace(/^https?:\/\//, "")
    .split("/");
  const path = rest.length ? "/" + rest.join("/") : "";
  const hostOk = host === specHost || host.endsWith("." + specHost);
  return hostOk && (!path || new URL(url).pathname.toLowerCase().startsWith(path));
}

interface IndexedDoc {
  id: number;
  title: string;
  description: string;
  content: string;
  urlText: string;
}

export class SearchEngine {
  readonly docs: CorpusDoc[];
  private readonly byId = new Map<number, CorpusDoc>();
  private readonly byUrl = new Map<string, CorpusDoc>();
  private readonly text = new Map<number, { norm: string; words: Set<string> }>();
  private readonly index: MiniSearch<IndexedDoc>;

  constructor(docs: CorpusDoc[] = buildCorpus()) {
    this.docs = docs;
    this.index = new MiniSearch<IndexedDoc>({
      fields: ["title", "description", "content", "urlText"],
      processTerm: (term) => {
        const t = term.toLowerCase();
        return STOPWORDS.has(t) ? null : t;
      },
    });
    const rows: IndexedDoc[] = [];
    for (const d of docs) {
      this.byId.set(d.id, d);
      this.byUrl.set(canonicalUrl(d.url), d);
      const full = [d.title, ...d.paragraphs].join(" ");
      this.text.set(d.id, { norm: ` ${normalize(full)} `, words: new Set(words(full)) });
      rows.push({
        id: d.id,
        title: d.title,
        description: d.description,
        content: d.paragraphs.join("\n"),
        urlText: d.url.replace(/[/.:_-]+/g, " "),
      });
    }
    this.index.addAll(rows);
  }

  search(params: WebSearchParams): SearchOutcome {
    const f = params.filters ?? {};
    const terms = words(params.query).filter((w) => !STOPWORDS.has(w));
    if (terms.length === 0) return { ok: false, error: `Query "${params.query}" has no searchable terms` };
    const phrase = ` ${terms.join(" ")} `;
    const exclude = (f.excludeTerms ?? []).map(normalize).filter(Boolean);
    const boost = (f.boostTerms ?? []).map(normalize).filter(Boolean);
    const intitle = f.intitle ? normalize(f.intitle) : undefined;
    const inurl = f.inurl?.toLowerCase();
    const country = params.location?.country?.toUpperCase();

    let queryTerms = terms;
    if (f.semanticPhrase) {
      const expanded = new Set(terms);
      const joined = ` ${terms.join(" ")} `;
      for (const group of SYNONYMS) {
        if (group.some((g) => joined.includes(` ${g} `))) for (const g of group) for (const w of words(g)) expanded.add(w);
      }
      queryTerms = [...expanded];
    }
    const has = (id: number, t: string) => {
      const doc = this.text.get(id)!;
      return t.includes(" ") ? doc.norm.includes(` ${t} `) : doc.words.has(t);
    };
    const hits = this.index.search(queryTerms.join(" "), {
      combineWith: f.exactPhrase ? "AND" : "OR",
      prefix: f.semanticPhrase ? (t) => t.length >= 4 : false,
      fuzzy: f.semanticPhrase ? (t) => (t.length >= 5 ? 0.2 : false) : false,
      boost: { title: 3, description: 1.5, urlText: 1.2 },
      boostDocument: (id: number) => {
        let factor = 1;
        for (const t of boost) if (has(id, t)) factor *= 3;
        if (country && this.byId.get(id)!.country === country) factor *= 1.5;
        return factor;
      },
      filter: (r) => {
        const id = r.id as number;
        const d = this.byId.get(id)!;
        const host = d.site;
        if (f.exactPhrase && !this.text.get(id)!.norm.includes(phrase)) return false;
        if (exclude.some((t) => has(id, t))) return false;
        if (f.filetype && d.filetype !== f.filetype) return false;
        if (f.site && !hostMatches(host, d.url, f.site)) return false;
        if (f.excludeSite && hostMatches(host, d.url, f.excludeSite)) return false;
        if (intitle && !` ${normalize(d.title)} `.includes(` ${intitle} `)) return false;
        if (inurl && !d.url.toLowerCase().includes(inurl)) return false;
        return true;
      },
    });
    const page = params.page ?? 1;
    const slice = hits.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
    const focus = [...(f.exactPhrase ? [terms.join(" ")] : queryTerms), ...boost];
    return {
      ok: true,
      query: params.query,
      total: hits.length,
      results: slice.map((h) => {
        const d = this.byId.get(h.id as number)!;
        return { title: d.title, url: d.url, description: snippet(d, focus) };
      }),
    };
  }

  page(url: string): CorpusDoc | undefined {
    return this.byUrl.get(canonicalUrl(url));
  }

  fetch(params: FetchParams): FetchOutcome {
    const d = this.page(params.url);
    if (!d) return { ok: false, status: 404, error: `Failed to fetch ${params.url}: page not found (404)` };
    const formats = new Set((params.outputs?.formats ?? ["markdown"]).map((x) => (typeof x === "string" ? x : x.type)));
    const markdown = renderMarkdown(d);
    const data: Record<string, unknown> = {
      metadata: {
        title: d.title,
        description: d.description,
        url: d.url,
        sourceURL: params.url,
        statusCode: 200,
        contentType: CONTENT_TYPES[d.filetype],
        filetype: d.filetype,
        site: d.site,
        language: "en",
        publishedTime: d.publishedAt,
      },
      markdown,
      links: d.links,
    };
    if (formats.has("html")) data.html = renderHtml(d);
    if (formats.has("json"))
      data.json = { title: d.title, summary: d.description, publishedAt: d.publishedAt, site: d.site, links: d.links };
    return { ok: true, data };
  }
}

const CONTENT_TYPES: Record<CorpusDoc["filetype"], string> = {
  html: "text/html; charset=utf-8",
  pdf: "application/pdf",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ppt: "application/vnd.ms-powerpoint",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
};

function canonicalUrl(u: string): string {
  try {
    const url = new URL(u);
    return `${url.hostname.toLowerCase()}${url.pathname.replace(/\/+$/, "")}`;
  } catch {
    return u;
  }
}

/** A result description: the sentence that best matches the query, as search engines show it. */
function snippet(d: CorpusDoc, focus: string[]): string {
  const sentences = d.paragraphs.flatMap((p) => p.split(/(?<=[.!?])\s+/));
  let best = sentences[0] ?? d.description;
  let bestScore = -1;
  for (const s of sentences) {
    const n = ` ${normalize(s)} `;
    const score = focus.reduce((acc, t) => acc + (n.includes(` ${t} `) ? 2 : n.includes(t) ? 1 : 0), 0);
    if (score > bestScore) {
      best = s;
      bestScore = score;
    }
  }
  return best.length > 240 ? best.slice(0, 237) + "..." : best;
}

function renderMarkdown(d: CorpusDoc): string {
  return [`# ${d.title}`, "", ...d.paragraphs.flatMap((p) => [p, ""]), "## Related", "", ...d.links.map((l) => `- [${l}](${l})`), ""].join(
    "\n",
  );
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function renderHtml(d: CorpusDoc): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(d.title)}</title><meta name="description" content="${esc(d.description)}"></head><body><main><h1>${esc(d.title)}</h1>${d.paragraphs.map((p) => `<p>${esc(p)}</p>`).join("")}<h2>Related</h2><ul>${d.links.map((l) => `<li><a href="${esc(l)}">${esc(l)}</a></li>`).join("")}</ul></main></body></html>`;
}
