// Search over the emulator's corpus: every filter changes the results the way its name says.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hono } from "hono";
import { createServer, type Server } from "node:http";
import { getRequestListener } from "@hono/node-server";
import { randomBytes } from "node:crypto";
import { SearchEngine, createWebRoutes, PAGE_SIZE, type WebSearchParams } from "../../emulator/search/index.js";
import type { EmulatorContext } from "../../emulator/types.js";

const engine = new SearchEngine();
let server: Server;
let origin = "";
const apiKey = `emu_${randomBytes(8).toString("hex")}`;

beforeAll(async () => {
  const ctx = {
    apiKey,
    controlOrigin: () => origin,
    storageOrigin: () => origin,
    runtimeOrigin: () => origin,
    tokenSecret: randomBytes(32),
    runtimeTokenTtlSeconds: 60,
    stateDir: "/tmp",
    log: () => {},
  } as EmulatorContext;
  const app = new Hono();
  app.route("/", createWebRoutes(ctx, engine));
  server = createServer(getRequestListener(app.fetch));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(() => r(null)));
});

/** Searches through the HTTP route, as the SDK does, and returns the results of the completed job. */
async function search(params: WebSearchParams) {
  const res = await fetch(`${origin}/api/web/search`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify(params),
  });
  expect(res.status).toBe(200);
  const body = await res.json();
  expect(body.status).toBe("completed");
  return body.data.results as Array<{ title: string; url: string; description: string }>;
}

/** Everything a page says (title + body), lower-cased, from the corpus itself. */
const textOf = (url: string) => {
  const d = engine.page(url)!;
  return [d.title, ...d.paragraphs].join(" ").toLowerCase();
};
const all = async (params: WebSearchParams) => {
  const out = [];
  for (let page = 1; page <= 10; page++) {
    const r = await search({ ...params, page });
    out.push(...r);
    if (r.length < PAGE_SIZE) break;
  }
  return out;
};

describe("web search corpus", () => {
  it("holds a few hundred pages across many sites and every file type", () => {
    expect(engine.docs.length).toBeGreaterThanOrEqual(300);
    expect(new Set(engine.docs.map((d) => d.site)).size).toBeGreaterThanOrEqual(40);
    expect(new Set(engine.docs.map((d) => d.filetype))).toEqual(new Set(["pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "html"]));
  });
});

describe("web search", () => {
  it("ranks pages about the query first and answers the SDK's shape", async () => {
    const results = await search({ query: "sourdough starter" });
    expect(results.length).toBeGreaterThan(0);
    for (const r of results) expect(Object.keys(r).sort()).toEqual(["description", "title", "url"]);
    expect(textOf(results[0].url)).toContain("sourdough");
    const other = await search({ query: "kubernetes pods" });
    expect(other[0].url).not.toBe(results[0].url);
  });

  it("page: returns the next ten results, without overlap, and nothing past the end", async () => {
    const p1 = await search({ query: "energy" });
    const p2 = await search({ query: "energy", page: 2 });
    expect(p1).toHaveLength(PAGE_SIZE);
    expect(p2.length).toBeGreaterThan(0);
    expect(p2.map((r) => r.url).filter((u) => p1.some((r) => r.url === u))).toEqual([]);
    expect(await search({ query: "energy", page: 50 })).toEqual([]);
  });

  it("exactPhrase: keeps only pages with the words adjacent and in order", async () => {
    const loose = await all({ query: "solar panels" });
    const exact = await all({ query: "solar panels", filters: { exactPhrase: true } });
    expect(exact.length).toBeGreaterThan(0);
    for (const r of exact) expect(textOf(r.url)).toMatch(/solar panels/);
    expect(loose.some((r) => !/solar panels/.test(textOf(r.url)))).toBe(true);
    expect(exact.length).toBeLessThan(loose.length);
  });

  it("semanticPhrase: also finds pages that use related words instead of the query's", async () => {
    const literal = await all({ query: "automobile" });
    const semantic = await all({ query: "automobile", filters: { semanticPhrase: true } });
    for (const r of literal) expect(textOf(r.url)).toContain("automobile");
    expect(semantic.length).toBeGreaterThan(literal.length);
    const related = semantic.filter((r) => !textOf(r.url).includes("automobile"));
    expect(related.length).toBeGreaterThan(0);
    for (const r of related) expect(textOf(r.url)).toMatch(/\b(car|cars|vehicle|vehicles|ev)\b/);
  });

  it("excludeTerms: drops every page that mentions an excluded term", async () => {
    const base = await all({ query: "battery" });
    const filtered = await all({ query: "battery", filters: { excludeTerms: ["recycling", "cobalt"] } });
    expect(base.some((r) => textOf(r.url).includes("recycling"))).toBe(true);
    expect(filtered.length).toBeGreaterThan(0);
    for (const r of filtered) expect(textOf(r.url)).not.toMatch(/recycling|cobalt/);
  });

  it("boostTerms: moves pages mentioning a boost term up the ranking", async () => {
    const top = (rs: Array<{ url: string }>) => rs.slice(0, 5).filter((r) => textOf(r.url).includes("recycling")).length;
    const base = await search({ query: "electric" });
    const boosted = await search({ query: "electric", filters: { boostTerms: ["recycling"] } });
    expect(top(boosted)).toBeGreaterThan(top(base));
    expect(textOf(boosted[0].url)).toContain("recycling");
  });

  it("filetype: returns only documents of that type", async () => {
    for (const filetype of ["pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "html"] as const) {
      const query = engine.docs.find((d) => d.filetype === filetype)!.title.split(":")[0];
      const unfiltered = await all({ query });
      expect(unfiltered.some((r) => engine.page(r.url)!.filetype !== filetype)).toBe(true);
      const rs = await all({ query, filters: { filetype } });
      expect(rs.length, filetype).toBeGreaterThan(0);
      for (const r of rs) expect(engine.page(r.url)!.filetype).toBe(filetype);
    }
    const pdfs = await all({ query: "climate change", filters: { filetype: "pdf" } });
    for (const r of pdfs) expect(r.url).toMatch(/\.pdf$/);
  });

  it("site: keeps one site and its subdomains; excludeSite removes them", async () => {
    const wiki = await all({ query: "energy", filters: { site: "wikipedia.org" } });
    expect(wiki.length).toBeGreaterThan(0);
    for (const r of wiki) expect(new URL(r.url).hostname).toMatch(/(^|\.)wikipedia\.org$/);
    const base = await all({ query: "energy" });
    const noWiki = await all({ query: "energy", filters: { excludeSite: "wikipedia.org" } });
    expect(noWiki.length).toBe(base.length - wiki.length);
    for (const r of noWiki) expect(new URL(r.url).hostname).not.toMatch(/wikipedia\.org$/);
    const gov = await all({ query: "energy", filters: { site: "energy.gov/reports" } });
    for (const r of gov) expect(r.url).toMatch(/^https:\/\/energy\.gov\/reports\//);
  });

  it("intitle: keeps pages whose title contains the words; inurl: whose URL contains the text", async () => {
    const titled = await all({ query: "python", filters: { intitle: "type hints" } });
    expect(titled.length).toBeGreaterThan(0);
    for (const r of titled) expect(r.title.toLowerCase()).toContain("type hints");
    expect((await all({ query: "python" })).some((r) => !r.title.toLowerCase().includes("type hints"))).toBe(true);
    const inurl = await all({ query: "python", filters: { inurl: "/faq/" } });
    expect(inurl.length).toBeGreaterThan(0);
    for (const r of inurl) expect(r.url).toContain("/faq/");
  });

  it("location: prefers publishers from the requested country", async () => {
    const gbShare = (rs: Array<{ url: string }>) => rs.filter((r) => engine.page(r.url)!.country === "GB").length;
    const base = await search({ query: "climate" });
    const gb = await search({ query: "climate", location: { country: "GB" } });
    expect(gbShare(gb)).toBeGreaterThan(gbShare(base));
    expect(engine.page(gb[0].url)!.country).toBe("GB");
  });

  it("combines filters", async () => {
    const rs = await all({ query: "heart disease", filters: { site: "nih.gov", filetype: "pdf", excludeTerms: ["statins"] } });
    for (const r of rs) {
      expect(new URL(r.url).hostname).toBe("nih.gov");
      expect(r.url).toMatch(/\.pdf$/);
      expect(textOf(r.url)).not.toContain("statins");
    }
  });

  it("fails the job, with an error, for a query that cannot run", async () => {
    const res = await fetch(`${origin}/api/web/search`, {
      method: "POST",
      headers: { "x-api-key": apiKey },
      body: JSON.stringify({ query: "the and of" }),
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: "failed" });
    expect(body.error).toMatch(/no searchable terms/);
    expect(body.data).toBeUndefined();
  });

  it("rejects bad bodies with 400 naming the field, and requires the API key", async () => {
    const post = (body: unknown, headers: Record<string, string> = { "x-api-key": apiKey }) =>
      fetch(`${origin}/api/web/search`, { method: "POST", headers, body: JSON.stringify(body) });
    const bad = await post({ query: "x", page: "two" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "invalid_request", message: expect.stringContaining("page") });
    expect((await post({ query: "x", location: { city: "Paris" } })).status).toBe(400);
    expect((await post({ query: "x" }, {})).status).toBe(401);
    expect((await post({ query: "x" }, { authorization: `Bearer ${apiKey}` })).status).toBe(200);
  });
});

describe("web fetch", () => {
  const fetchPage = (body: unknown) =>
    fetch(`${origin}/api/web/fetch`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("returns a corpus page as markdown with metadata and links; html only when asked", async () => {
    const [hit] = await search({ query: "roman aqueducts" });
    const res = await fetchPage({ url: hit.url });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.status).toBe("completed");
    expect(body.data.metadata).toMatchObject({ title: hit.title, url: hit.url, sourceURL: hit.url, statusCode: 200 });
    expect(body.data.markdown).toContain(`# ${hit.title}`);
    expect(body.data.links.length).toBeGreaterThan(0);
    expect(body.data.html).toBeUndefined();
    const withHtml = await (await fetchPage({ url: hit.url, outputs: { formats: ["html", { type: "json" }] } })).json();
    expect(withHtml.data.html).toMatch(/^<!doctype html>/);
    expect(withHtml.data.json).toMatchObject({ title: hit.title });
    // every link points at another fetchable page
    const linked = await fetchPage({ url: body.data.links[0] });
    expect(linked.status).toBe(200);
  });

  it("fails the job with 404 for a URL outside the corpus", async () => {
    const res = await fetchPage({ url: "https://example.org/nothing-here" });
    expect(res.status).toBe(404);
    const body = await res.json();
    expect(body).toMatchObject({ status: "failed", code: "page_not_found" });
    expect(typeof body.jobId).toBe("string");
  });
});
