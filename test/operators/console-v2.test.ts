// The console's operator v2 features in a real Chromium (puppeteer-core) against the demo stack (gateway + emulator +
// local chain): sign-in by the one-time link `tollgate console link` prints; spend over time drawn as charts with the
// top spenders and routes; an admin creates, edits, disables and enables a tenant; keys rotated with a grace period,
// with created / last used / expired shown; the ledger's date range, paging and CSV export; live resources with running
// time and hold; the operator-readonly role sees everything and changes nothing; a tenant manages its own keys and
// keyless tokens; every action is in the audit log. With CONSOLE_SCREENSHOTS=docs the pages go to docs/console-*.png.
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import puppeteer, { type Browser, type BrowserContext, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevStack, type DevStack } from "../../src/cli/dev-stack.js";

const run = promisify(execFile);
let stack: DevStack;
let browser: Browser;
let profile: string;
let shots: string;
let base: string;
const logs: string[] = [];
const consoleUrl = (path = "") => `${base}/_tollgate/console${path}`;

beforeAll(async () => {
  stack = await startDevStack({ port: 0, logLevel: "error", logSink: (l) => logs.push(l), emulator: { modules: ["sandboxes", "x402"] } });
  base = stack.gateway.url;
  profile = await mkdtemp(join(tmpdir(), "tollgate-console2-chromium-"));
  shots = process.env.CONSOLE_SCREENSHOTS === "docs" ? join(import.meta.dirname, "../../docs") : join(profile, "shots");
  await mkdir(shots, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      `--user-data-dir=${join(profile, "user-data")}`,
    ],
  });
}, 180_000);

afterAll(async () => {
  if (logs.length) console.error(logs.slice(-20).join("\n"));
  await browser?.close();
  await stack?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

function secrets(): string[] {
  return [
    stack.emulator.apiKey,
    ...Object.values(stack.tenants),
    new URL(stack.emulator.controlUrl).host,
    new URL(stack.emulator.runtimeUrl).host,
  ];
}
async function expectNothingSecret(page: Page, allowed: string[] = []) {
  const html = await page.content();
  for (const s of secrets()) if (!allowed.includes(s)) expect(html).not.toContain(s);
}

async function newPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  page.on("dialog", (d) => void d.accept());
  return page;
}
async function signIn(context: BrowserContext, key: string): Promise<Page> {
  const page = await newPage(context);
  await page.goto(consoleUrl("/login"));
  await page.type("#key", key);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  expect(new URL(page.url()).pathname).toBe("/_tollgate/console");
  return page;
}
/** Submits a form by clicking `selector` and waits for the page it answers with. */
async function submit(page: Page, selector: string) {
  const [answer] = await Promise.all([page.waitForNavigation(), page.click(selector)]);
  return answer!;
}
async function shoot(page: Page, name: string) {
  await page.screenshot({ path: join(shots, `console-${name}.png`), fullPage: true });
}
const text = (page: Page, selector: string) => page.$eval(selector, (el) => (el.textContent ?? "").trim());

const search = (key: string, query: string) =>
  fetch(`${base}/x402/web/search`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
const admin = async (method: string, path: string, body?: unknown) => {
  const r = await fetch(`${base}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": stack.tenants.ops, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, json: (await r.json()) as any };
};
const whoami = async (key: string) => (await fetch(`${base}/_tollgate/whoami`, { headers: { "x-api-key": key } })).status;
const auditActions = async (query = "") =>
  (await admin("GET", `/audit?limit=1000${query}`)).json.entries as Array<{ action: string; actor: string; target: string }>;

describe("console v2 in a real browser", () => {
  let ops: Page;

  it("signs an operator in with the one-time link `tollgate console link` prints; the link works once", async () => {
    const cli = await run(process.execPath, [
      "--import",
      "tsx",
      "src/cli/index.ts",
      "console",
      "link",
      "--gateway",
      base,
      "--admin-key",
      stack.tenants.ops,
    ]);
    const url = /https?:\/\/\S+/.exec(cli.stdout)![0];
    expect(url).not.toContain(stack.tenants.ops);
    ops = await newPage(browser.defaultBrowserContext());
    await ops.goto(url);
    expect(await text(ops, "[data-link-tenant]")).toBe("ops");
    await shoot(ops, "link");
    await submit(ops, "button[type=submit]");
    expect(new URL(ops.url()).pathname).toBe("/_tollgate/console");
    expect(await ops.$eval("[data-role]", (el) => el.getAttribute("data-role"))).toBe("admin");
    const cookie = (await browser.defaultBrowserContext().cookies()).find((c) => c.name === "tollgate_console")!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    // Used up: a second visit signs no one in.
    const again = await newPage(await browser.createBrowserContext());
    expect((await again.goto(url))!.status()).toBe(404);
    expect(await again.$("[data-link-tenant]")).toBeNull();
    await again.browserContext().close();
    const logins = (await auditActions("&action=console.login")).filter((e) => e.actor === "ops");
    expect(logins.length).toBeGreaterThan(0);
  });

  it("draws spend over time by kind and surface, with the top spenders and routes, fleet-wide and per tenant", async () => {
    // Two weeks of history written straight into the ledger (as the gateway's payment and credit steps would), so the
    // charts have days to draw; then today's real paid searches on top.
    const { ledger } = stack.gateway.gateway.services.stores;
    const routes = [
      ["scrape", "credits"],
      ["session.create", "credits"],
      ["sandbox.create", "credits"],
      ["web.fetch", "credits"],
      ["/x402/web/search", "x402"],
    ] as const;
    for (let day = 14; day >= 1; day--) {
      const at = Date.now() - day * 86_400_000;
      for (const [i, [route, kind]] of routes.entries()) {
        for (const tenant of ["acme", "initech"]) {
          if ((day + i + tenant.length) % 3 === 0) continue;
          const id = `history-${tenant}-${day}-${i}`;
          const amount = String(((day * 7 + i * 13 + tenant.length) % 9) * 1000 + 2000);
          const r = await ledger.reserve({ id, kind, tenant, route, fingerprint: id, amount }, {}, at);
          expect(r.ok).toBe(true);
          await ledger.commit(id, kind === "x402" ? `0x${"ab".repeat(32)}` : undefined, at);
        }
      }
    }
    for (const q of ["history one", "history two", "history three"]) expect((await search(stack.tenants.acme, q)).status).toBe(200);
    expect((await search(stack.tenants.initech, "history initech")).status).toBe(200);
    await ops.goto(consoleUrl());
    const today = new Date().toISOString().slice(0, 10);
    expect(await ops.$(`[data-chart="spend-by-kind"] [data-day="${today}"] rect[data-series="x402"]`)).not.toBeNull();
    expect(await ops.$(`[data-chart="spend-by-surface"] [data-day="${today}"] rect[data-series="search"]`)).not.toBeNull();
    expect(await ops.$$eval('[data-chart="spend-by-kind"] [data-day]', (els) => els.length)).toBe(30);
    const spenders = await ops.$$eval("[data-top-tenant]", (els) => els.map((e) => e.getAttribute("data-top-tenant")));
    expect(spenders[0]).toBe("acme");
    expect(spenders).toContain("initech");
    expect(await ops.$$eval("[data-top-route]", (els) => els.map((e) => e.getAttribute("data-top-route")))).toContain("x402.web.search");
    await shoot(ops, "spend");
    await ops.goto(consoleUrl("/tenants/initech"));
    expect(await ops.$(`[data-chart="spend-by-kind"] [data-day="${today}"] rect`)).not.toBeNull();
    expect(await ops.$("[data-top-tenant]")).toBeNull();
    await expectNothingSecret(ops);
  });

  let umbrellaKey: string;
  it("creates a tenant, edits its budget, rate limit, scopes and alert receivers, then disables and enables it", async () => {
    await ops.goto(consoleUrl());
    await ops.type("[data-new-tenant] input[name=id]", "umbrella");
    await ops.type('[data-new-tenant] input[name="budget.daily"]', "2.00");
    await ops.type('[data-new-tenant] input[name="quotas.requestsPerMinute"]', "30");
    await ops.type("[data-new-tenant] input[name=keyLabel]", "first");
    const created = await submit(ops, "[data-new-tenant] button[type=submit]");
    expect(created.status()).toBe(201);
    expect(await text(ops, "[data-created-tenant]")).toBe("umbrella");
    umbrellaKey = await text(ops, "#new-key");
    expect(await whoami(umbrellaKey)).toBe(200);
    expect((await admin("GET", "/tenants/umbrella")).json).toMatchObject({ budget: { daily: "2.00" }, quotas: { requestsPerMinute: 30 } });

    await ops.goto(consoleUrl("/tenants/umbrella"));
    const form = "[data-edit-tenant=umbrella]";
    await ops.click(`${form} input[name=scopes][value=sandboxes]`); // off
    for (const [name, value] of [
      ["budget.monthly", "20.00"],
      ["quotas.requestsPerMinute", "60"],
      ["alerts.thresholds", "50, 90"],
    ]) {
      await ops.$eval(`${form} input[name="${name}"]`, (el) => ((el as HTMLInputElement).value = ""));
      await ops.type(`${form} input[name="${name}"]`, value);
    }
    await ops.select(`${form} select[name=onExhausted]`, "stop");
    await ops.type(`${form} textarea[name="alerts.webhooks"]`, "https://alerts.example.com/tollgate");
    await shoot(ops, "tenant-edit");
    await submit(ops, `${form} [data-save]`);
    expect(await text(ops, ".notice")).toContain("Settings saved");
    expect((await admin("GET", "/tenants/umbrella")).json).toMatchObject({
      scopes: ["search", "sessions", "jobs", "agents"],
      budget: { daily: "2.00", monthly: "20.00" },
      quotas: { requestsPerMinute: 60 },
      onExhausted: "stop",
      alerts: { thresholds: [50, 90], webhooks: ["https://alerts.example.com/tollgate"] },
    });
    expect(await text(ops, "[data-settings]")).toContain("rate limit 60/min");

    // A threshold out of range is refused with the field named, and nothing changes.
    await ops.$eval(`${form} input[name="alerts.thresholds"]`, (el) => ((el as HTMLInputElement).value = "180"));
    const refused = await submit(ops, `${form} [data-save]`);
    expect(refused.status()).toBe(400);
    expect(await text(ops, "[data-form-error]")).toContain("alerts.thresholds.0");
    expect((await admin("GET", "/tenants/umbrella")).json.alerts.thresholds).toEqual([50, 90]);

    await submit(ops, "[data-toggle=disable]");
    expect(await ops.$eval("[data-enabled]", (el) => el.getAttribute("data-enabled"))).toBe("false");
    expect(await whoami(umbrellaKey)).toBe(401);
    await submit(ops, "[data-toggle=enable]");
    expect(await ops.$eval("[data-enabled]", (el) => el.getAttribute("data-enabled"))).toBe("true");
    expect(await whoami(umbrellaKey)).toBe(200);
    const actions = (await auditActions("&target=tenant:umbrella")).map((e) => e.action);
    for (const a of ["tenant.create", "tenant.update", "tenant.disable", "tenant.enable"]) expect(actions).toContain(a);
  });

  it("sets a tenant's named agent policies from its form (JSON), refusing a malformed one by its field", async () => {
    await ops.goto(consoleUrl("/tenants/umbrella"));
    const form = "[data-edit-tenant=umbrella]";
    const box = `${form} textarea[name=agentPolicies]`;
    const fill = (v: string) => ops.$eval(box, (el, v) => ((el as HTMLTextAreaElement).value = v), v);
    await fill('{"docs-only": {"domains": {"allow": ["docs.example.com"]}, "maxCrawlPages": 0}}');
    const refused = await submit(ops, `${form} [data-save]`);
    expect(refused.status()).toBe(400);
    expect(await text(ops, "[data-form-error]")).toContain("agentPolicies.docs-only.maxCrawlPages");
    await fill("{not json");
    expect((await submit(ops, `${form} [data-save]`)).status()).toBe(400);
    expect(await text(ops, "[data-form-error]")).toContain("agentPolicies: not JSON");
    expect((await admin("GET", "/tenants/umbrella")).json.agentPolicies).toBeUndefined();
    await fill('{"docs-only": {"domains": {"allow": ["docs.example.com"]}, "maxCrawlPages": 20}}');
    await submit(ops, `${form} [data-save]`);
    expect(await text(ops, ".notice")).toContain("Settings saved");
    expect((await admin("GET", "/tenants/umbrella")).json.agentPolicies).toEqual({
      "docs-only": { domains: { allow: ["docs.example.com"] }, maxCrawlPages: 20 },
    });
    const entry = (await auditActions("&target=tenant:umbrella")).find((e: any) => e.after?.agentPolicies) as any;
    expect(entry).toMatchObject({ action: "tenant.update", after: { agentPolicies: { "docs-only": { maxCrawlPages: 20 } } } });
  });

  it("shows a tenant the config file owns read-only, with the reason and the file; a forced Save is refused (409)", async () => {
    await ops.goto(consoleUrl("/tenants/acme"));
    const form = "[data-edit-tenant=acme]";
    const notice = await text(ops, `${form} [data-file-owned]`);
    expect(notice).toContain("owned by the gateway's config file");
    expect(notice).toContain("Edit it there");
    expect(notice).toContain("remove the tenant from that file");
    expect(await ops.$eval(`${form}`, (el) => el.getAttribute("data-owned-by"))).toBeTruthy();
    expect(await ops.$eval(`${form} input[name="budget.daily"]`, (el) => el.matches(":disabled"))).toBe(true);
    expect(await ops.$(`${form} [data-save]`)).toBeNull();
    // Disable stays: an operator's incident action.
    expect(await ops.$("[data-toggle=disable]")).not.toBeNull();
    await shoot(ops, "tenant-file-owned");
    // A Save forced past the page (the fieldset enabled, the form sent) is refused by the action, and says why.
    const before = (await admin("GET", "/tenants/acme")).json;
    const [answer] = await Promise.all([
      ops.waitForNavigation(),
      ops.$eval(form, (f) => {
        (f.querySelector("fieldset") as HTMLFieldSetElement).disabled = false;
        (f.querySelector('input[name="budget.daily"]') as HTMLInputElement).value = "99.00";
        (f as HTMLFormElement).submit();
      }),
    ]);
    expect(answer!.status()).toBe(409);
    expect(await text(ops, "[data-save-error]")).toContain("owned by the gateway's config file");
    expect((await admin("GET", "/tenants/acme")).json).toEqual(before);
  });

  it("rotates a key with a grace period, and shows created, last used and expired", async () => {
    const keyId = (await admin("GET", "/tenants/umbrella")).json.keys[0].id as string;
    await ops.goto(consoleUrl("/keys"));
    const row = `[data-table="keys"][data-tenant="umbrella"] [data-key="${keyId}"]`;
    expect(await text(ops, `${row} [data-created]`)).toMatch(/^\d{4}-\d{2}-\d{2} /);
    expect(await ops.$eval(`${row} [data-last-used]`, (el) => el.getAttribute("data-last-used"))).not.toBe("");
    await ops.select(`[data-rotate="${keyId}"] select[name=graceSeconds]`, "3600");
    const rotated = await submit(ops, `[data-rotate="${keyId}"] button[type=submit]`);
    expect(rotated.status()).toBe(201);
    const newKey = await text(ops, "#new-key");
    expect(await text(ops, "[data-issued]")).toContain("keeps working until");
    expect(await whoami(newKey)).toBe(200);
    expect(await whoami(umbrellaKey)).toBe(200); // in its grace hour
    await ops.goto(consoleUrl("/keys"));
    expect(await text(ops, `${row} [data-key-status]`)).toMatch(/expires in 59 min|expires in 1 h/);
    // Expired: the key is marked so, and no longer works.
    expect((await admin("POST", `/tenants/umbrella/keys/${keyId}/expire`, { expiresAt: "2020-01-01T00:00:00Z" })).status).toBe(200);
    await ops.reload();
    expect(await ops.$eval(`${row} [data-key-status]`, (el) => el.getAttribute("data-key-status"))).toBe("expired");
    expect(await ops.$(`[data-rotate="${keyId}"]`)).toBeNull();
    expect(await whoami(umbrellaKey)).toBe(401);
    await shoot(ops, "keys-rotation");
    umbrellaKey = newKey;
    expect((await auditActions("&action=key.rotate")).some((e) => e.target.startsWith("key:umbrella/"))).toBe(true);
  });

  it("pages the ledger, narrows it to a date range and exports it as CSV", async () => {
    await ops.goto(consoleUrl("/ledger?tenant=acme&limit=2"));
    const first = await ops.$$eval('[data-table="ledger"] tbody tr', (rows) => rows.map((r) => r.getAttribute("data-entry")));
    expect(first).toHaveLength(2);
    await submit(ops, "[data-page=next]");
    const second = await ops.$$eval('[data-table="ledger"] tbody tr', (rows) => rows.map((r) => r.getAttribute("data-entry")));
    expect(second.length).toBeGreaterThan(0);
    expect(second.some((id) => first.includes(id))).toBe(false);
    await submit(ops, "[data-page=prev]");
    expect(await ops.$$eval('[data-table="ledger"] tbody tr', (rows) => rows.map((r) => r.getAttribute("data-entry")))).toEqual(first);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const today = new Date().toISOString().slice(0, 10);
    await ops.goto(consoleUrl(`/ledger?tenant=acme&from=${tomorrow}`));
    expect(await ops.$('[data-table="ledger"]')).toBeNull();
    await ops.goto(consoleUrl(`/ledger?tenant=acme&from=${today}&to=${today}&limit=100`));
    const rows = await ops.$$eval('[data-table="ledger"] tbody tr', (r) => r.length);
    expect(rows).toBeGreaterThanOrEqual(3);
    const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10);
    await ops.goto(consoleUrl(`/ledger?tenant=acme&from=${weekAgo}&limit=12&offset=12`));
    expect(await ops.$("[data-page=next]")).not.toBeNull();
    await shoot(ops, "ledger-range");
    await ops.goto(consoleUrl(`/ledger?tenant=acme&from=${today}&to=${today}&limit=100`));
    const csvHref = await ops.$eval("[data-csv]", (a) => (a as HTMLAnchorElement).href);
    // The page's CSP allows no fetch: download it as the browser would, with the session cookie.
    const session = (await browser.defaultBrowserContext().cookies()).find((c) => c.name === "tollgate_console")!;
    const r = await fetch(csvHref, { headers: { cookie: `${session.name}=${session.value}` } });
    const csv = { type: r.headers.get("content-type"), disposition: r.headers.get("content-disposition"), body: await r.text() };
    expect(csv.type).toContain("text/csv");
    expect(csv.disposition).toMatch(/attachment; filename="tollgate-ledger-acme-/);
    const lines = csv.body.trim().split("\r\n");
    expect(lines[0]).toBe("createdAt,tenant,id,route,surface,kind,state,amountUsd,transaction,resource,reason");
    expect(lines.length - 1).toBe(rows);
    expect(lines.slice(1).every((l) => l.split(",")[1] === "acme")).toBe(true);
    for (const s of secrets()) expect(csv.body).not.toContain(s);
  });

  it("lists a live sandbox with its running time, hold and when the hold ends, and audits its Stop", async () => {
    const created = await fetch(`${base}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": stack.tenants.acme, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(created.status).toBe(200);
    const id = ((await created.json()) as { id: string }).id;
    await new Promise((r) => setTimeout(r, 1100));
    await ops.goto(consoleUrl("/resources"));
    const row = `[data-resource="sandbox:${id}"]`;
    expect(Number(await ops.$eval(`${row} [data-running]`, (el) => el.getAttribute("data-running")))).toBeGreaterThanOrEqual(1);
    expect(Number(await ops.$eval(`${row} [data-hold]`, (el) => el.getAttribute("data-hold")))).toBeGreaterThan(0);
    expect(await text(ops, `${row} [data-hold-ends]`)).toMatch(/^\d{4}-\d{2}-\d{2} /);
    await shoot(ops, "resources-hold");
    await submit(ops, `${row} button[data-stop]`);
    expect((await auditActions("&action=resource.stop")).map((e) => e.target)).toContain(`sandbox:acme/${id}`);
  });

  it("gives an operator-readonly key every page and no change: no forms, and a forged one is refused", async () => {
    const watcher = await admin("POST", "/tenants", { id: "watch", scopes: ["operator-readonly"] });
    expect(watcher.status).toBe(201);
    const context = await browser.createBrowserContext();
    try {
      const page = await signIn(context, watcher.json.key);
      expect(await page.$eval("[data-role]", (el) => el.getAttribute("data-role"))).toBe("readonly");
      for (const t of ["acme", "initech", "globex"]) expect(await page.$(`[data-tenant="${t}"]`)).not.toBeNull();
      for (const path of ["", "/tenants/acme", "/keys", "/ledger", "/resources", "/audit"]) {
        expect((await page.goto(consoleUrl(path)))!.status(), path).toBe(200);
        // The only form that posts is Sign out.
        expect(await page.$$eval("form[method=post]", (f) => f.map((x) => x.getAttribute("action"))), path).toEqual([
          "/_tollgate/console/logout",
        ]);
        await expectNothingSecret(page);
      }
      await page.goto(consoleUrl("/tenants/acme"));
      await shoot(page, "readonly");
      const [answer] = await Promise.all([
        page.waitForNavigation(),
        page.evaluate((action) => {
          const form = document.createElement("form");
          form.method = "post";
          form.action = action;
          form.append(document.querySelector("input[name=_csrf]")!.cloneNode());
          document.body.append(form);
          form.submit();
        }, consoleUrl("/tenants/acme/disable")),
      ]);
      expect(answer!.status()).toBe(403);
      expect((await admin("GET", "/tenants/acme")).json.enabled).toBe(true);
    } finally {
      await context.close();
    }
  });

  it("lets a tenant manage its own keys and keyless tokens, and nobody else's", async () => {
    const context = await browser.createBrowserContext();
    try {
      const page = await signIn(context, stack.tenants.initech);
      await page.goto(consoleUrl("/keys"));
      expect(await page.$$eval('[data-table="keys"]', (t) => t.map((x) => x.getAttribute("data-tenant")))).toEqual(["initech"]);
      await page.type('[data-create-key="initech"] input[name=label]', "laptop");
      expect((await submit(page, '[data-create-key="initech"] button[type=submit]')).status()).toBe(201);
      const own = await text(page, "#new-key");
      expect(await whoami(own)).toBe(200);
      const ownId = await page.$eval("[data-issued]", (el) => el.getAttribute("data-issued"));
      await page.goto(consoleUrl("/keys"));
      expect((await submit(page, `[data-rotate="${ownId}"] button[type=submit]`)).status()).toBe(201);
      expect(await whoami(own)).toBe(401); // no grace chosen: it stopped at once
      // Another tenant's key form is 404 to it, however it is forged.
      const acmeKey = (await admin("GET", "/tenants/acme")).json.keys[0].id;
      const [forged] = await Promise.all([
        page.waitForNavigation(),
        page.evaluate(
          (action) => {
            const form = document.createElement("form");
            form.method = "post";
            form.action = action;
            form.append(document.querySelector("input[name=_csrf]")!.cloneNode());
            document.body.append(form);
            form.submit();
          },
          consoleUrl(`/tenants/acme/keys/${acmeKey}/revoke`),
        ),
      ]);
      expect(forged!.status()).toBe(404);
      expect((await admin("GET", "/tenants/acme")).json.keys.map((k: { id: string }) => k.id)).toContain(acmeKey);

      // Keyless tokens: mint a capped search token, use it, revoke it.
      await page.goto(consoleUrl("/tokens"));
      await page.select("[data-mint] select[name=target]", "search");
      await page.type("[data-mint] input[name=cap]", "0.05");
      expect((await submit(page, "[data-mint] button[type=submit]")).status()).toBe(201);
      const token = await text(page, "#new-token");
      const jti = await page.$eval("[data-issued]", (el) => el.getAttribute("data-issued"));
      expect((await search(token, "keyless from the console")).status).toBe(200);
      await page.goto(consoleUrl("/tokens"));
      expect(await page.$(`[data-token="${jti}"]`)).not.toBeNull();
      await shoot(page, "tokens");
      await submit(page, `[data-revoke-token="${jti}"]`);
      expect(await text(page, ".notice")).toContain(jti!);
      expect((await search(token, "keyless after revoke")).status).toBe(401);
      // Its usage: only itself.
      await page.goto(consoleUrl());
      expect(await page.content()).not.toMatch(/acme|globex|umbrella/);
      expect(await page.$(`[data-chart="spend-by-kind"]`)).not.toBeNull();
      const audit = await auditActions("&target=tenant:initech");
      expect(audit.map((e) => e.action)).toEqual(
        expect.arrayContaining(["token.mint", "token.revoke", "key.create", "key.rotate", "console.login"]),
      );
      expect(audit.filter((e) => e.action === "token.mint").every((e) => e.actor === "initech")).toBe(true);
    } finally {
      await context.close();
    }
  });

  it("filters the audit page by action and day", async () => {
    await ops.goto(consoleUrl("/audit?action=tenant."));
    const actions = await ops.$$eval('[data-table="audit"] td:nth-child(3) code', (els) => els.map((e) => e.textContent));
    expect(actions.length).toBeGreaterThan(0);
    expect(actions.every((a) => a!.startsWith("tenant."))).toBe(true);
    // A tenant.update row says what changed (issue 54), never a key's hash.
    const details = await ops.$$eval('[data-table="audit"] tr', (rows) =>
      rows
        .filter((r) => r.querySelector("td:nth-child(3) code")?.textContent === "tenant.update")
        .map((r) => r.querySelector("td:nth-child(5)")!.textContent ?? ""),
    );
    expect(details.length).toBeGreaterThan(0);
    expect(details.every((d) => d.length > 0 && d !== "no change")).toBe(true);
    expect(details.join("\n")).not.toContain("sha256:");
    await shoot(ops, "audit-filter");
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    await ops.goto(consoleUrl(`/audit?since=${tomorrow}`));
    expect(await ops.$("[data-audit-log] [data-table=audit]")).toBeNull();
    expect(await text(ops, "[data-audit-log]")).toBe("Nothing recorded.");
  });
});
