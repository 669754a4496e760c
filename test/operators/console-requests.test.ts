// The console's Requests page and its rough edges, in a real Chromium (puppeteer-core) against the demo stack (gateway
// + emulator + local chain): an operator searches a tenant's requests by status and route, sees the error codes and
// spend, exports CSV and JSON; a malformed search is named at the top of the page; a tenant sees only its own. Also:
// the keys page pages through tenants, a refused save is shown at the top of the page (in view), and a key rotation's
// audit line states the grace it gave. With CONSOLE_SCREENSHOTS=docs the Requests page goes to docs/console-requests.png.
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
  harness = await startConsoleBrowser("console-requests", ["sandboxes", "x402"]);
  ({ stack, shots, base } = harness);
}, 180_000);

afterAll(async () => {
  await harness?.close();
});

const consoleUrl = (path = "") => harness.consoleUrl(path);
const signIn = (key: string) => harness.signIn(key, { acceptDialogs: true });
const texts = (page: Page, selector: string) => page.$$eval(selector, (els) => els.map((el) => (el.textContent ?? "").trim()));
/** Whether the element is in the viewport as the page opened (no scrolling). */
const inView = (page: Page, selector: string) =>
  page.$eval(selector, (el) => {
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;
  });
/** GETs a console URL with the page's session cookie, as the browser's download would (the page's CSP allows no fetch). */
async function download(page: Page, url: string) {
  const cookies = (await page.cookies(url)).map((c) => `${c.name}=${c.value}`).join("; ");
  return fetch(url, { headers: { cookie: cookies } });
}
const api = (path: string, key: string, init: RequestInit = {}) =>
  fetch(`${base}${path}`, { ...init, headers: { "x-api-key": key, "content-type": "application/json", ...(init.headers ?? {}) } });

describe("the console's Requests page (Chromium)", () => {
  let ops: Page;

  beforeAll(async () => {
    const { acme, globex } = stack.tenants;
    for (const q of ["ev charging", "solar panels"])
      await (await api("/x402/web/search", acme!, { method: "POST", body: JSON.stringify({ query: q }) })).arrayBuffer();
    await (await api("/api/not-fronted", acme!)).arrayBuffer(); // 404 route_not_fronted
    await (await api("/api/sandbox", globex!, { method: "POST", body: "{}" })).arrayBuffer(); // globex: search only → 403
    await (await api("/_tollgate/usage", globex!)).arrayBuffer();
    ops = await signIn(stack.tenants.ops!);
  }, 60_000);

  it("searches a tenant's requests by status and route, with error codes, latency and spend", async () => {
    await ops.goto(consoleUrl("/requests"));
    expect(await texts(ops, "header nav a")).toContain("Requests");
    // Every tenant's by default (a loaded machine: the last record may still be on its way; bounded wait).
    let all = await ops.$$eval("[data-request]", (rows) => rows.length);
    for (let i = 0; i < 60 && all < 5; i++) {
      await new Promise((r) => setTimeout(r, 250));
      await ops.reload();
      all = await ops.$$eval("[data-request]", (rows) => rows.length);
    }
    expect(all).toBeGreaterThanOrEqual(5);
    await ops.select("select[name=tenant]", "acme");
    await ops.type("input[name=status]", "ok");
    await Promise.all([ops.waitForNavigation(), ops.click("[data-request-filters] button[type=submit]")]);
    expect(await texts(ops, "[data-status]")).toEqual(["200", "200"]);
    const spend = await texts(ops, "[data-request] td:nth-child(7)");
    expect(spend.every((s) => /^\$0\.\d+$/.test(s))).toBe(true);

    await ops.goto(consoleUrl("/requests?status=4xx"));
    const codes = await texts(ops, "[data-request] td:nth-child(8)");
    expect(codes).toEqual(expect.arrayContaining(["route_not_fronted", "missing_scope"]));
    await ops.goto(consoleUrl("/requests?tenant=globex&route=sandbox"));
    expect(await texts(ops, "[data-status]")).toEqual(["403"]);
    await ops.goto(consoleUrl("/requests?status=error"));
    expect(await texts(ops, "[data-status]")).toEqual(["403", "404"]);
    await ops.goto(consoleUrl("/requests"));
    await ops.screenshot({ path: join(shots, "console-requests.png"), fullPage: true });
    // Nothing secret on the page.
    const html = await ops.content();
    for (const s of [stack.emulator.apiKey, ...Object.values(stack.tenants)]) expect(html).not.toContain(s);
  });

  it("exports the search on screen as CSV and JSON", async () => {
    await ops.goto(consoleUrl("/requests?tenant=acme&status=ok"));
    const csvHref = await ops.$eval("[data-export=csv]", (a) => (a as HTMLAnchorElement).href);
    const jsonHref = await ops.$eval("[data-export=json]", (a) => (a as HTMLAnchorElement).href);
    const csvAnswer = await download(ops, csvHref);
    expect(csvAnswer.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csvAnswer.headers.get("content-disposition")).toBe('attachment; filename="tollgate-requests-acme.csv"');
    const csv = await csvAnswer.text();
    const json = await (await download(ops, jsonHref)).json();
    const lines = csv.trimEnd().split("\r\n");
    expect(lines[0]).toBe("time,tenant,id,method,route,path,status,durationMs,upstreamMs,spendUsd,heldUsd,code,traceId,cache");
    expect(lines).toHaveLength(3);
    expect((json as { requests: Array<{ tenant: string; status: number }> }).requests.map((r) => [r.tenant, r.status])).toEqual([
      ["acme", 200],
      ["acme", 200],
    ]);
  });

  it("names a malformed search at the top of the page, in view", async () => {
    const r = await ops.goto(consoleUrl("/requests?status=teapot"));
    expect(r!.status()).toBe(400);
    expect(await texts(ops, "[data-error]")).toEqual([expect.stringContaining("status:")]);
    expect(await inView(ops, "[data-error]")).toBe(true);
  });

  it("names every malformed field of a search, not only the first (issue 54)", async () => {
    const r = await ops.goto(consoleUrl("/requests?status=teapot&method=P0ST&from=yesterday&limit=0"));
    expect(r!.status()).toBe(400);
    const [shown] = await texts(ops, "[data-error]");
    for (const field of ["status:", "method:", "from:", "limit:"]) expect(shown).toContain(field);
  });

  it("shows a tenant its own requests only, with no tenant choice", async () => {
    const acme = await signIn(stack.tenants.acme!);
    await acme.goto(consoleUrl("/requests"));
    expect(await acme.$("select[name=tenant]")).toBeNull();
    expect(await texts(acme, "[data-status]")).not.toContain("403"); // globex's refusal is not acme's
    const json = await (await download(acme, consoleUrl("/requests?tenant=globex&format=json"))).json();
    expect((json as { requests: Array<{ tenant: string }> }).requests.every((x) => x.tenant === "acme")).toBe(true);
    await acme.browserContext().close();
  });
});

describe("the console's rough edges (Chromium)", () => {
  let ops: Page;
  beforeAll(async () => {
    ops = await signIn(stack.tenants.ops!);
  });

  it("pages the keys page by tenant, with a tenant filter", async () => {
    for (let i = 0; i < 9; i++) {
      const r = await api("/_tollgate/admin/tenants", stack.tenants.ops!, {
        method: "POST",
        body: JSON.stringify({ id: `paged${i}`, scopes: ["search"] }),
      });
      expect(r.status).toBe(201);
    }
    await ops.goto(consoleUrl("/keys"));
    expect(await ops.$$eval("main section h2", (h) => h.length)).toBe(10);
    expect(await texts(ops, "[data-keys-paging]")).toEqual([expect.stringContaining("Tenants 1–10 of 13")]);
    await Promise.all([ops.waitForNavigation(), ops.click("[data-page=next]")]);
    expect(await ops.$$eval("main section h2", (h) => h.length)).toBe(3);
    await ops.select("[data-keys-filter] select[name=tenant]", "globex");
    await Promise.all([ops.waitForNavigation(), ops.click("[data-keys-filter] button[type=submit]")]);
    expect(await texts(ops, "main section h2")).toEqual(["globex"]);
  });

  it("shows a refused save at the top of the page, in view, naming the field", async () => {
    await ops.goto(consoleUrl("/tenants/paged0"));
    const form = "[data-edit-tenant=paged0]";
    await ops.$eval(`${form} input[name="alerts.thresholds"]`, (el) => ((el as HTMLInputElement).value = "180"));
    const [answer] = await Promise.all([ops.waitForNavigation(), ops.click(`${form} [data-save]`)]);
    expect(answer!.status()).toBe(400);
    expect(await texts(ops, "[data-save-error]")).toEqual([expect.stringContaining("alerts.thresholds.0")]);
    expect(await inView(ops, "[data-save-error]")).toBe(true);
  });

  it("states the grace a key rotation gave in its audit line", async () => {
    const t = (await (await api("/_tollgate/admin/tenants/paged1", stack.tenants.ops!)).json()) as { keys: Array<{ id: string }> };
    const first = t.keys[0]!.id;
    const rotated = await api(`/_tollgate/admin/tenants/paged1/keys/${first}/rotate`, stack.tenants.ops!, {
      method: "POST",
      body: JSON.stringify({ graceSeconds: 3600 }),
    });
    expect(rotated.status).toBe(201);
    const { id: second } = (await rotated.json()) as { id: string };
    const now = await api(`/_tollgate/admin/tenants/paged1/keys/${second}/rotate`, stack.tenants.ops!, {
      method: "POST",
      body: JSON.stringify({ graceSeconds: 0 }),
    });
    expect(now.status).toBe(201);
    await ops.goto(consoleUrl("/audit?action=key.rotate"));
    const lines = await texts(ops, "[data-audit-log] [data-seq] td.muted");
    expect(lines[0]).toBe("old key stopped at once (no grace)");
    expect(lines[1]).toMatch(/^old key kept 1 h more, until \d{4}-\d{2}-\d{2}T/);
  });
});
