// The local web alone: which host and path answer what, over a real loopback socket, and the PDF it serves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import { LocalSite, readPdfText, startLocalWeb, type LocalWeb } from "../../emulator/web/index.js";

let web: LocalWeb;
const site = new LocalSite();
beforeAll(async () => {
  web = await startLocalWeb(site);
});
afterAll(async () => {
  await web?.close();
});

/** A plain HTTP request to the server naming `host`, as a browser mapped to it would send. */
function get(host: string, path: string): Promise<{ status: number; type?: string; body: Buffer }> {
  const { port } = new URL(web.origin);
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, type: res.headers["content-type"], body: Buffer.concat(chunks) }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the local web", () => {
  it("serves every corpus document at its own host and path, HTML with links to its siblings", async () => {
    const doc = site.docs.find((d) => d.filetype === "html")!;
    const url = new URL(doc.url);
    const res = await get(url.host, url.pathname);
    expect(res.status).toBe(200);
    const html = res.body.toString();
    expect(html).toContain(`<title>${doc.title.replace(/&/g, "&amp;").replace(/'/g, "'")}</title>`);
    for (const link of doc.links) expect(html).toContain(`href="${link}"`);
    expect((await get(`www.${url.host}`, url.pathname)).status).toBe(200);
  });

  it("serves corpus PDFs as real PDFs whose text reads back", async () => {
    const doc = site.docs.find((d) => d.filetype === "pdf")!;
    const url = new URL(doc.url);
    const res = await get(url.host, url.pathname);
    expect(res.type).toBe("application/pdf");
    expect(res.body.subarray(0, 8).toString()).toBe("%PDF-1.4");
    const text = readPdfText(res.body);
    expect(text.title).toBe(doc.title);
    expect(text.lines.join(" ")).toContain(doc.paragraphs[0].split(" ").slice(0, 6).join(" "));
  });

  it("answers 404 pages for unknown paths on known hosts, and refuses hosts it does not know", async () => {
    expect((await get("web.emulator.test", "/nope")).status).toBe(404);
    expect((await get("energy.gov", "/nope")).status).toBe(404);
    expect((await get("example.com", "/")).status).toBe(421);
    expect(await web.fetch("https://example.com/")).toBeUndefined();
    expect(await web.fetch("ftp://web.emulator.test/")).toBeUndefined();
  });

  it("has a slow page that waits as long as asked, a sitemap per host and a site index", async () => {
    const started = Date.now();
    expect((await get("web.emulator.test", "/slow?ms=400")).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    const sitemap = (await get("web.emulator.test", "/sitemap.xml")).body.toString();
    expect(sitemap).toContain("<loc>http://web.emulator.test/about</loc>");
    const host = new URL(site.docs[0].url).host;
    const index = (await web.fetch(`https://${host}/`))!;
    expect(index.status).toBe(200);
    expect(index.body.toString()).toContain(`href="${site.docs.find((d) => new URL(d.url).host === host)!.url}"`);
  });

  it("closes at once even with a slow page in flight", async () => {
    const other = await startLocalWeb(site);
    const inFlight = other.fetch("http://web.emulator.test/slow?ms=30000").then(
      () => "answered",
      () => "cut off",
    );
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await inFlight).toBe("cut off");
  });
});
