// Every job family through the gateway with the unmodified SDK against the emulator's real jobs: the SDK's startAndWait
// helpers work unchanged, each job belongs to the tenant that started it (another tenant gets 404 on every id route),
// and its credits are reserved before it runs and settled when it ends.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { statusOf } from "../helpers/sdk-status.js";

const SITE = "http://web.emulator.test";
const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];

let stack: SessionGateway;
let acme: Hyperbrowser;
let initech: Hyperbrowser;

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "acme", scopes: ALL },
      { id: "initech", scopes: ALL },
      { id: "ops", scopes: [...ALL, "admin"] },
    ],
    { modules: ["sessions", "jobs"] },
  );
  acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
  initech = new Hyperbrowser({ apiKey: stack.keys.initech!, baseUrl: stack.gateway.url });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

type Reader = { get(id: string): Promise<unknown>; getStatus(id: string): Promise<unknown>; stop?(id: string): Promise<unknown> };

/** Another tenant finds nothing under the job's id, on every route that names it. */
async function foreignGets404(svc: Reader, id: string) {
  expect(await statusOf(svc.get(id))).toBe(404);
  expect(await statusOf(svc.getStatus(id))).toBe(404);
  if (svc.stop) expect(await statusOf(svc.stop(id))).toBe(404);
}

describe.concurrent("job families through the gateway", () => {
  it("scrape: startAndWait returns the formats asked; another tenant gets 404", async () => {
    const job = await acme.scrape.startAndWait({ url: `${SITE}/about`, scrapeOptions: { formats: ["markdown", "links"] } });
    expect(job.status).toBe("completed");
    expect(job.data?.markdown).toContain("About");
    await foreignGets404(initech.scrape, job.jobId);
  });

  it("batch scrape: follows its URL list; another tenant gets 404", async () => {
    const job = await acme.scrape.batch.startAndWait({ urls: [`${SITE}/about`, `${SITE}/products`] });
    expect(job.status).toBe("completed");
    expect(job.totalScrapedPages).toBe(2);
    await foreignGets404(initech.scrape.batch, job.jobId);
  });

  it("crawl: follows its page limit; another tenant gets 404", async () => {
    const job = await acme.crawl.startAndWait({ url: `${SITE}/products`, maxPages: 2 });
    expect(job.status).toBe("completed");
    expect(job.totalCrawledPages).toBeLessThanOrEqual(2);
    await foreignGets404(initech.crawl, job.jobId);
  });

  it("extract: fills the schema; another tenant gets 404", async () => {
    const schema = { type: "object", properties: { title: { type: "string" } } };
    const job = await acme.extract.startAndWait({ urls: [`${SITE}/about`], schema });
    expect(job.status).toBe("completed");
    expect(job.data).toBeTruthy();
    await foreignGets404(initech.extract, job.jobId);
  });

  it("web fetch, batch fetch and crawl: work; another tenant gets 404 on the jobs", async () => {
    const page = await acme.web.fetch({ url: `${SITE}/about` });
    expect(page.status).toBe("completed");
    const batch = await acme.web.batchFetch.startAndWait({ urls: [`${SITE}/about`] });
    expect(batch.status).toBe("completed");
    await foreignGets404(initech.web.batchFetch, batch.jobId);
    const crawl = await acme.web.crawl.startAndWait({ url: `${SITE}/products`, crawlOptions: { maxPages: 2, ignoreSitemap: true } });
    expect(crawl.status).toBe("completed");
    await foreignGets404(initech.web.crawl, crawl.jobId);
  });

  const AGENTS = [
    "browserUse",
    "claudeComputerUse",
    "geminiComputerUse",
    "grokComputerUse",
    "metaComputerUse",
    "cua",
    "hyperAgent",
  ] as const;
  it.each(AGENTS)(
    "agent %s: startAndWait runs the task in a real session; another tenant gets 404 on get, status and stop",
    async (family) => {
      const svc = (
        acme.agents as unknown as Record<
          string,
          {
            startAndWait(p: unknown): Promise<{ jobId: string; status: string; error?: string | null; data?: { finalResult?: string } }>;
          } & Reader
        >
      )[family]!;
      const result = await svc.startAndWait({ task: `Open ${SITE}/about and tell me its title.`, maxSteps: 5 });
      // A failed task says why (its error), not only that it failed.
      expect({ status: result.status, error: result.error ?? undefined }).toEqual({ status: "completed", error: undefined });
      expect(result.data?.finalResult).toContain("About");
      await foreignGets404((initech.agents as unknown as Record<string, Reader>)[family]!, result.jobId);
    },
  );
});

describe("credits for jobs", () => {
  it("are in the tenant's ledger, settled once the jobs ended, and the other tenant spent nothing", async () => {
    const ledger = await (
      await fetch(`${stack.gateway.url}/_tollgate/admin/ledger?tenant=acme&kind=credits&limit=1000`, {
        headers: { "x-api-key": stack.keys.ops! },
      })
    ).json();
    const entries = ledger.entries as Array<{ route: string; state: string }>;
    const routes = new Set(entries.map((e) => e.route));
    for (const r of [
      "scrape.start",
      "scrape.batch.start",
      "crawl.start",
      "extract.start",
      "web.fetch",
      "web.batchFetch.start",
      "web.crawl.start",
      "task.browser-use.start",
    ]) {
      expect(routes.has(r), r).toBe(true);
    }
    // Every job was read to its end by startAndWait, so no reservation is left open.
    expect(entries.filter((e) => e.state === "reserved")).toEqual([]);
    const usage = await (await fetch(`${stack.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": stack.keys.initech! } })).json();
    expect(usage.daily.spent).toBe("0.00");
  });
});
