// Extract jobs (the rule-based schema filler) and web fetch / batch fetch / crawl, driven by the unmodified SDK.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { HyperbrowserError } from "@hyperbrowser/sdk";
import { livingGroupMembers } from "../../emulator/sessions/browser-process.js";
import { SITE, startJobsEmulator, type JobsEmulator } from "./jobs-harness.js";

let h: JobsEmulator;
beforeAll(async () => {
  h = await startJobsEmulator();
});
afterAll(async () => {
  await h?.close();
});

describe.concurrent("extract", () => {
  it("fills a JSON schema from a page's facts, contact lines and lists, in the schema's types", async () => {
    const schema = {
      type: "object",
      properties: {
        company: { type: "string" },
        founded: { type: "integer" },
        headquarters: { type: "string" },
        employees: { type: "number" },
        email: { type: "string" },
        phone: { type: "string" },
        values: { type: "array", items: { type: "string" } },
        ceo: { type: "string" },
      },
      required: ["company"],
    };
    const job = await h.client.extract.startAndWait({ urls: [`${SITE}/about`], schema });
    expect(job.status).toBe("completed");
    expect(job.data).toEqual({
      company: "Emulator Outfitters",
      founded: 1998,
      headquarters: "Lisbon, Portugal",
      employees: 240,
      email: "hello@web.emulator.test",
      phone: "+351 21 000 0000",
      values: ["Repair before replace", "Honest sizing", "Lifetime warranty"],
      ceo: null,
    });
    expect(job.metadata).toMatchObject({ numPagesScraped: 1 });
  });

  it("turns a table into an array of objects, from a zod schema the SDK converts", async () => {
    const schema = z.object({
      products: z.array(
        z.object({
          name: z.string(),
          price: z.number(),
          category: z.enum(["Footwear", "Outerwear", "Cooking", "Lighting"]),
          inStock: z.boolean(),
        }),
      ),
    });
    const job = await h.client.extract.startAndWait({ urls: [`${SITE}/products`], schema });
    expect((job.data as any).products).toEqual([
      { name: "Trail Runner Shoe", price: 129, category: "Footwear", inStock: true },
      { name: "Summit Rain Jacket", price: 219.5, category: "Outerwear", inStock: true },
      { name: "Compact Camp Stove", price: 59.95, category: "Cooking", inStock: false },
      { name: "Ridge Headlamp", price: 34, category: "Lighting", inStock: true },
    ]);
  });

  it("reads several pages (a trailing /* crawls up to maxLinks) into one object per page", async () => {
    const schema = {
      type: "object",
      properties: {
        items: {
          type: "array",
          items: { type: "object", properties: { title: { type: "string" }, price: { type: "number" }, url: { type: "string" } } },
        },
      },
    };
    const job = await h.client.extract.startAndWait({ urls: [`${SITE}/products/trail-runner`, `${SITE}/products/headlamp`], schema });
    expect((job.data as any).items).toEqual([
      { title: "Trail Runner Shoe", price: 129, url: `${SITE}/products/trail-runner` },
      { title: "Ridge Headlamp", price: 34, url: `${SITE}/products/headlamp` },
    ]);
    const crawled = await h.client.extract.startAndWait({ urls: [`${SITE}/products/*`], maxLinks: 3, prompt: "List the products" });
    expect(crawled.metadata).toMatchObject({ numPagesScraped: 3 });
    expect((crawled.data as any).pages.map((p: { title: string }) => p.title)).toEqual([
      "Products",
      "Trail Runner Shoe",
      "Summit Rain Jacket",
    ]);
  });

  it("fails when no page could be loaded, and refuses a body with neither schema nor prompt", async () => {
    const job = await h.client.extract.startAndWait({ urls: ["https://example.com/"], prompt: "anything" });
    expect(job).toMatchObject({ status: "failed", error: expect.stringContaining("could not be resolved") });
    expect(await h.api("POST", "/api/extract", { urls: [`${SITE}/`] })).toMatchObject({
      status: 400,
      body: { message: expect.stringContaining("schema or prompt") },
    });
  });
});

describe.concurrent("web fetch, batch fetch and crawl", () => {
  it("fetch loads the page in the browser and returns the formats asked, json filled from its schema", async () => {
    const res = await h.client.web.fetch({
      url: `${SITE}/about`,
      outputs: {
        formats: [
          "markdown",
          "links",
          { type: "screenshot" },
          { type: "json", schema: z.object({ company: z.string(), founded: z.number() }) },
        ],
      },
    });
    expect(res.status).toBe("completed");
    expect(res.jobId).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.data!.markdown).toContain("# About Emulator Outfitters");
    expect(res.data!.links).toContain(`${SITE}/products`);
    expect(res.data!.screenshot!.length).toBeGreaterThan(1000);
    expect(res.data!.json).toEqual({ company: "Emulator Outfitters", founded: 1998 });
    expect(res.data!.html).toBeUndefined();
  });

  it("fetch of a missing page or an outside host is a failed job with 404 page_not_found", async () => {
    for (const url of [`${SITE}/nothing-here`, "https://example.org/"]) {
      const err = await h.client.web.fetch({ url }).catch((e) => e);
      expect(err).toBeInstanceOf(HyperbrowserError);
      expect(err).toMatchObject({ statusCode: 404, code: "page_not_found" });
      expect(err.details).toMatchObject({ status: "failed" });
    }
  });

  it("batch fetch returns every page with totalPages, paged by batchSize", async () => {
    const urls = [`${SITE}/`, `${SITE}/about`, `${SITE}/report.pdf`];
    const job = await h.client.web.batchFetch.startAndWait({ urls, outputs: { formats: ["html"] } });
    expect(job).toMatchObject({ status: "completed", totalPages: 3 });
    // A page that failed says why (its error), not only that it did.
    expect(job.data!.map((p) => (p.status === "completed" ? p.status : `${p.status}: ${p.error}`))).toEqual([
      "completed",
      "completed",
      "completed",
    ]);
    expect(job.data![2].html).toContain("Revenue: 12.4 million euros");
    expect(job.data![0].markdown).toBeUndefined();
    const batch = await h.client.web.batchFetch.get(job.jobId, { page: 1, batchSize: 2 });
    expect(batch).toMatchObject({ totalPages: 3, totalPageBatches: 2, currentPageBatch: 1, batchSize: 2 });
    expect((await h.api("GET", "/api/web/batch-fetch/unknown/status")).status).toBe(404);
  });

  it("web crawl follows crawlOptions", async () => {
    const job = await h.client.web.crawl.startAndWait({ url: `${SITE}/products`, crawlOptions: { maxPages: 2, ignoreSitemap: true } });
    // A failed crawl says why (the job's error, each page's), not only that it failed.
    const why = { error: job.error, pages: job.data?.map((p) => `${p.url} ${p.status}${p.error ? `: ${p.error}` : ""}`) };
    expect({ status: job.status, totalPages: job.totalPages, why }).toMatchObject({ status: "completed", totalPages: 2 });
    expect(job.data!.map((p) => p.url)).toEqual([`${SITE}/products`, `${SITE}/`]);
    expect((await h.api("GET", "/api/web/crawl/unknown")).status).toBe(404);
  });
});

describe("closing", () => {
  it("close() ends the shared job browser and the local web", async () => {
    const pid = await h.jobs.browser.pid();
    expect(pid).toBeGreaterThan(0);
    const origin = h.jobs.web.origin;
    await h.close();
    expect(await livingGroupMembers(pid!)).toEqual([]);
    await expect(fetch(origin)).rejects.toThrow();
  });
});
