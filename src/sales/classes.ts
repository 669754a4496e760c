// The route classes [sales] prices, and the route-table rows (src/routing/table.ts) each one sells. A row not named
// here is never sold: its callers need a tenant key or a gateway token as before.
import type { SaleClass } from "../../config/sales-schema.js";
import { JOB_ROWS } from "./job-offer.js";

export const SOLD_ROWS: Readonly<Record<string, SaleClass>> = {
  "x402.web.search": "search",
  "web.search": "search",
  "x402.web.fetch": "fetch",
  "web.fetch": "fetch",
  "session.create": "session",
  "x402.session.create": "session",
  "sandbox.create": "sandbox",
  // Scrape, batch scrape, crawl, extract, web crawl, batch fetch and the agent tasks: sold by the credits they use.
  ...Object.fromEntries([...JOB_ROWS.keys()].map((name) => [name, "jobs" as const])),
};

/** What a class is described as in its 402 (the offer's `resource.description`). */
export const CLASS_DESCRIPTION: Readonly<Record<SaleClass, string>> = {
  search: "Web search through Tollgate",
  fetch: "Web fetch through Tollgate",
  session: "A browser session (CDP) through Tollgate",
  sandbox: "A sandbox (exec, files, terminals) through Tollgate",
  jobs: "A job (scrape, crawl, extract, agent task) through Tollgate, charged for the credits it uses",
};
