// The console's Config drift page (docs/config-as-code.md), in a real Chromium (puppeteer-core) against the demo stack
// (gateway + emulator + local chain): the fleet's own state is exported and applied as the file, then admin API edits
// since to tenants the admin API owns (a budget, a quota, a tenant the file does not name) show as drift, field by field, to an operator; a tenant
// is not shown the page. With CONSOLE_SCREENSHOTS=docs the page goes to docs/console-drift.png.
import { join } from "node:path";
import type { Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DevStack } from "../../src/cli/dev-stack.js";
import { type ConsoleBrowser, startConsoleBrowser } from "../helpers/console-browser.js";

let harness: ConsoleBrowser;
let stack: DevStack;
let shots: string;
let base: string;

beforeAll(async () => {
  harness = await startConsoleBrowser("console-drift", ["x402"]);
  ({ stack, shots, base } = harness);
}, 180_000);

afterAll(async () => {
  await harness?.close();
});

const consoleUrl = (path = "") => harness.consoleUrl(path);
const signIn = (key: string) => harness.signIn(key);
const texts = (page: Page, selector: string) => page.$$eval(selector, (els) => els.map((el) => (el.textContent ?? "").trim()));
const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": stack.tenants.ops!, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};

describe("the console's Config drift page (Chromium)", () => {
  it("shows an operator each tenant edited since the last apply, field by field, and what the file does not name", async () => {
    // Two tenants the admin API owns (the gateway's own config file owns acme and the demo's others: those refuse
    // edits, so they never drift). Then the live state, exported and applied as the file: in sync.
    expect((await call("POST", "/_tollgate/admin/tenants", { id: "umbrella", budget: { daily: "5.00" } })).status).toBe(201);
    expect((await call("POST", "/_tollgate/admin/tenants", { id: "wayne", quotas: { maxSandboxes: 2 } })).status).toBe(201);
    const exported = await call("GET", "/_tollgate/admin/config/export?format=json");
    expect(exported.status).toBe(200);
    const applied = await call("POST", "/_tollgate/admin/config/apply", { document: exported.json });
    expect(applied.status, JSON.stringify(applied.json)).toBe(200);
    const ops = await signIn(stack.tenants.ops!);
    await ops.goto(consoleUrl("/config"));
    expect(await ops.$eval("[data-drift]", (el) => el.getAttribute("data-drift"))).toBe("in-sync");

    // Admin edits since: a budget and a quota differ from the file; a tenant made since is not in it.
    // (The budget is PUT whole and PATCH sets `quotas` whole: the others are carried over as they are.)
    const umbrella = (await call("GET", "/_tollgate/admin/tenants/umbrella")).json;
    const wayne = (await call("GET", "/_tollgate/admin/tenants/wayne")).json;
    expect((await call("PUT", "/_tollgate/admin/tenants/umbrella/budget", { ...umbrella.budget, daily: "12.50" })).status).toBe(200);
    const quotas = { ...wayne.quotas, maxSandboxes: 9 };
    expect((await call("PATCH", "/_tollgate/admin/tenants/wayne", { quotas })).status).toBe(200);
    // The file's own acme refuses the same edit (one owner per tenant), so it does not drift.
    expect((await call("PUT", "/_tollgate/admin/tenants/acme/budget", { daily: "12.50" })).status).toBe(409);
    expect((await call("POST", "/_tollgate/admin/tenants", { id: "hooli", scopes: ["search"] })).status).toBe(201);

    const res = await ops.goto(consoleUrl("/config"));
    expect(res!.status()).toBe(200);
    expect(await ops.$eval("[data-drift]", (el) => el.getAttribute("data-drift"))).toBe("drift");
    expect(await ops.$eval("[data-against]", (el) => el.getAttribute("data-against"))).toBe("last-apply");
    const rows = await ops.$$eval("[data-drift-tenant]", (els) =>
      els.map((el) => [el.getAttribute("data-drift-tenant"), el.getAttribute("data-action"), el.children[2]?.textContent?.trim()]),
    );
    expect(rows).toEqual(
      expect.arrayContaining([
        ["umbrella", "update", "budget.daily"],
        ["wayne", "update", "quotas.maxSandboxes"],
      ]),
    );
    expect(await texts(ops, "[data-not-in-file]")).toEqual([expect.stringContaining("hooli")]);
    expect(await texts(ops, "header nav a")).toContain("Config drift");
    await ops.screenshot({ path: join(shots, "console-drift.png"), fullPage: true });
    // Nothing secret on the page: no key, no key hash, not the upstream's key.
    const html = await ops.content();
    expect(html).not.toContain("sha256:");
    for (const s of [stack.emulator.apiKey, ...Object.values(stack.tenants)]) expect(html).not.toContain(s);
    await ops.browserContext().close();
  }, 120_000);

  it("is not a tenant's page", async () => {
    const acme = await signIn(stack.tenants.acme!);
    const res = await acme.goto(consoleUrl("/config"));
    expect(res!.status()).toBe(404);
    await acme.browserContext().close();
  });
});
