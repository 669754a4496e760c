// The operator console in a real Chromium (puppeteer-core) against the demo stack (gateway + emulator + local chain):
// an admin signs in, creates a key and uses it, watches a paid search raise the tenant's spend and stops a sandbox with
// the Stop button; a tenant signed in sees no other tenant; forms refuse a foreign Origin or a missing token; nothing
// secret reaches a page. With CONSOLE_SCREENSHOTS=docs the main pages are photographed into docs/console-*.png.
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer, { type Browser, type BrowserContext, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevStack, type DevStack } from "../../src/cli/dev-stack.js";

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
  profile = await mkdtemp(join(tmpdir(), "tollgate-console-chromium-"));
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

/** Every secret of the stack: none may appear in any page. */
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

async function signIn(context: BrowserContext, key: string): Promise<Page> {
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  page.on("dialog", (d) => void d.accept());
  await page.goto(consoleUrl());
  expect(new URL(page.url()).pathname).toBe("/_tollgate/console/login");
  await page.type("#key", key);
  await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
  expect(new URL(page.url()).pathname).toBe("/_tollgate/console");
  return page;
}

async function shoot(page: Page, name: string) {
  await page.screenshot({ path: join(shots, `console-${name}.png`), fullPage: true });
}

const text = (page: Page, selector: string) => page.$eval(selector, (el) => (el.textContent ?? "").trim());

function search(key: string, query: string) {
  return fetch(`${base}/x402/web/search`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
}

describe("the console in a real browser", () => {
  let admin: Page;
  let sandboxId: string;

  it("signs an admin in with a key into an HttpOnly, SameSite=Strict session cookie that holds no key", async () => {
    const login = await browser.newPage();
    await login.setViewport({ width: 1280, height: 700 });
    await login.goto(consoleUrl("/login"));
    await shoot(login, "login");
    await login.close();
    admin = await signIn(browser.defaultBrowserContext(), stack.tenants.ops);
    const cookies = await browser.defaultBrowserContext().cookies();
    const session = cookies.find((c) => c.name === "tollgate_console")!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/_tollgate/console" });
    expect(session.value).not.toContain(stack.tenants.ops);
    expect(await admin.evaluate(() => document.cookie)).toBe("");
    const headers = (await admin.goto(consoleUrl()))!.headers();
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["cache-control"]).toBe("no-store");
    for (const t of ["acme", "initech", "globex"]) expect(await admin.$(`[data-tenant="${t}"]`)).not.toBeNull();
    await expectNothingSecret(admin);
  });

  it("creates a key for a tenant, shows it once, and the key works at once", async () => {
    await admin.goto(consoleUrl("/keys"));
    await admin.type('[data-create-key="acme"] input[name=label]', "from-the-console");
    await Promise.all([admin.waitForNavigation(), admin.click('[data-create-key="acme"] button[type=submit]')]);
    const key = await text(admin, "#new-key");
    expect(key).toMatch(/^tg_/);
    const keyId = await admin.$eval("[data-issued]", (el) => el.getAttribute("data-issued"));
    const whoami = await fetch(`${base}/_tollgate/whoami`, { headers: { "x-api-key": key } });
    expect(whoami.status).toBe(200);
    expect(((await whoami.json()) as { tenant?: string; id?: string }).tenant ?? "").toContain("acme");
    // Shown once: the keys page lists it by id only.
    await admin.goto(consoleUrl("/keys"));
    expect(await admin.content()).not.toContain(key);
    expect(await admin.$(`[data-table="keys"][data-tenant="acme"] [data-key="${keyId}"]`)).not.toBeNull();
    await expectNothingSecret(admin);

    // Use it: a paid search raises acme's spend on the tenant page, and a repeat is a cache hit that saves money.
    await admin.goto(consoleUrl("/tenants/acme"));
    const before = Number(await text(admin, '[data-spent="daily"]'));
    const paid = await search(key, "console spend rises");
    expect(paid.status).toBe(200);
    expect((await search(key, "console spend rises")).status).toBe(200);
    await admin.reload();
    const after = Number(await text(admin, '[data-spent="daily"]'));
    expect(after).toBeGreaterThan(before);
    await admin.goto(consoleUrl());
    expect(Number((await text(admin, '[data-stat="saved"] b')).replace("$", ""))).toBeGreaterThan(0);
    await admin.goto(consoleUrl("/ledger?tenant=acme&surface=search"));
    expect(await admin.$$eval('[data-table="ledger"] tbody tr', (rows) => rows.length)).toBeGreaterThan(0);
  });

  it("lists a live sandbox and stops it with the Stop button, upstream too", async () => {
    const created = await fetch(`${base}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": stack.tenants.acme, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(created.status).toBe(200);
    sandboxId = ((await created.json()) as { id: string }).id;
    await admin.goto(consoleUrl("/resources"));
    const row = `[data-resource="sandbox:${sandboxId}"]`;
    expect(await admin.$eval(`${row} [data-status]`, (el) => el.getAttribute("data-status"))).toBe("active");
    await admin.goto(consoleUrl("/resources"));
    await Promise.all([admin.waitForNavigation(), admin.click(`${row} button[data-stop]`)]);
    expect(await text(admin, ".notice")).toContain(sandboxId);
    expect(await admin.$eval(`${row} [data-status]`, (el) => el.getAttribute("data-status"))).not.toBe("active");
    expect(await admin.$(`${row} button[data-stop]`)).toBeNull();
    const upstream = await fetch(`${stack.emulator.controlUrl}/api/sandbox/${sandboxId}`, {
      headers: { "x-api-key": stack.emulator.apiKey },
    });
    expect(((await upstream.json()) as { status: string }).status).toBe("closed");
    await admin.goto(consoleUrl("/audit"));
    expect(await admin.$$eval('[data-table="audit"] code', (els) => els.map((e) => e.textContent))).toContain("key.create");
    await expectNothingSecret(admin);
  });

  it("refuses a form another origin's page submits with the admin's cookie, even with the right token", async () => {
    // 127.0.0.1 on another port is another origin but the same site: SameSite=Strict sends the cookie, the origin check refuses.
    await admin.goto(consoleUrl("/keys"));
    const token = await admin.$eval("input[name=_csrf]", (el) => (el as HTMLInputElement).value);
    const target = consoleUrl("/tenants/globex/keys");
    const evil: Server = createServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(
        `<form method="post" action="${target}"><input name="_csrf" value="${token}"><input name="label" value="cross-site"></form><script>document.forms[0].submit()</script>`,
      );
    });
    await new Promise<void>((r) => evil.listen(0, "127.0.0.1", r));
    try {
      const page = await browser.newPage();
      const answered = page.waitForResponse((r) => r.url() === target);
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      expect((await answered).status()).toBe(403);
      await page.close();
    } finally {
      evil.close();
    }
    await admin.goto(consoleUrl("/keys"));
    expect(await admin.content()).not.toContain("cross-site");
  });

  it("lists the alert raised when a tenant's budget runs out", async () => {
    // globex may spend $0.05 a day; searches at $0.005 exhaust it within ten.
    let refused = 0;
    for (let i = 0; i < 20 && refused === 0; i++) {
      const r = await search(stack.tenants.globex, `globex budget ${i}`);
      if (r.status === 402) refused++;
      else expect(r.status).toBe(200);
    }
    expect(refused).toBe(1);
    await admin.goto(consoleUrl("/audit"));
    const deadline = Date.now() + 5000;
    let actions: Array<string | null> = [];
    while (Date.now() < deadline) {
      actions = await admin.$$eval('[data-table="audit"] code', (els) => els.map((e) => e.textContent));
      if (actions.includes("alert.budget.exhausted")) break;
      await new Promise((r) => setTimeout(r, 200));
      await admin.reload();
    }
    expect(actions).toContain("alert.budget.exhausted");
    expect(await admin.content()).toContain("tenant:globex");
  });

  it("photographs the main pages", async () => {
    // Some traffic first, so the pages have something to show: initech searches, acme holds a sandbox and a session.
    for (const q of ["initech one", "initech two", "initech one"]) expect((await search(stack.tenants.initech, q)).status).toBe(200);
    const sandbox = await fetch(`${base}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": stack.tenants.acme, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(sandbox.status).toBe(200);
    const session = await fetch(`${base}/api/session`, {
      method: "POST",
      headers: { "x-api-key": stack.tenants.acme, "content-type": "application/json" },
      body: "{}",
    });
    expect(session.status).toBe(200);
    for (const [name, path] of [
      ["overview", ""],
      ["tenant", "/tenants/acme"],
      ["ledger", "/ledger"],
      ["resources", "/resources"],
      ["keys", "/keys"],
      ["audit", "/audit"],
    ]) {
      await admin.goto(consoleUrl(path));
      await expectNothingSecret(admin);
      await shoot(admin, name);
    }
  });

  it("shows a tenant signed in only itself: other tenants are absent or 404", async () => {
    const other = await fetch(`${base}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": stack.tenants.acme, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    const acmeSandbox = ((await other.json()) as { id: string }).id;
    // An admin acts on initech: the tenant sees the change, by "admin", not by the admin tenant's id.
    const byAdmin = await fetch(`${base}/_tollgate/admin/tenants/initech/keys`, {
      method: "POST",
      headers: { "x-api-key": stack.tenants.ops, "content-type": "application/json" },
      body: JSON.stringify({ label: "by-admin" }),
    });
    expect(byAdmin.status).toBe(201);
    const context = await browser.createBrowserContext();
    try {
      const page = await signIn(context, stack.tenants.initech);
      for (const path of ["", "/ledger", "/resources", "/keys", "/audit", "/tenants/initech", "/ledger?tenant=acme"]) {
        await page.goto(consoleUrl(path));
        const html = await page.content();
        expect(html, path).not.toMatch(/acme|globex|>ops</);
        expect(html).not.toContain(acmeSandbox);
        await expectNothingSecret(page);
      }
      await page.goto(consoleUrl("/audit"));
      expect(await page.content()).toContain("key:initech/");
      expect(await page.$$eval('[data-table="audit"] td:nth-child(2)', (tds) => tds.map((td) => td.textContent))).toContain("admin");
      expect(await page.$("[data-revoke]")).toBeNull();
      expect(await page.$("[data-create-key]")).toBeNull();
      expect((await page.goto(consoleUrl("/tenants/acme")))!.status()).toBe(404);
      // Forging the Stop form for acme's sandbox from the tenant's own page: 404, and it keeps running.
      const [answer] = await Promise.all([
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
          consoleUrl(`/resources/sandbox/${acmeSandbox}/stop`),
        ),
      ]);
      const status = answer!.status();
      expect(status).toBe(404);
      const upstream = await fetch(`${stack.emulator.controlUrl}/api/sandbox/${acmeSandbox}`, {
        headers: { "x-api-key": stack.emulator.apiKey },
      });
      expect(((await upstream.json()) as { status: string }).status).toBe("active");
    } finally {
      await context.close();
    }
  });
});

describe("the console's forms", () => {
  /** Signs in over HTTP and returns the session cookie and the form token from a page. */
  async function session(key: string) {
    const r = await fetch(consoleUrl("/login"), {
      method: "POST",
      redirect: "manual",
      headers: { origin: base, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key }),
    });
    expect(r.status).toBe(303);
    const setCookie = r.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    expect(setCookie).not.toContain(key);
    const cookie = setCookie.split(";")[0]!;
    const page = await (await fetch(consoleUrl("/keys"), { headers: { cookie } })).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    return { cookie, token };
  }

  const post = (path: string, headers: Record<string, string>, body: Record<string, string>) =>
    fetch(consoleUrl(path), {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(body),
    });

  it("refuses a form without the session's token, or with a foreign Origin, and creates nothing", async () => {
    const { cookie, token } = await session(stack.tenants.ops);
    const noToken = await post("/tenants/globex/keys", { cookie, origin: base }, { label: "forged" });
    expect(noToken.status).toBe(403);
    expect(await noToken.text()).toContain("token");
    const wrongToken = await post(
      "/tenants/globex/keys",
      { cookie, origin: base },
      { label: "forged", _csrf: token.replace(/.$/, (ch) => (ch === "A" ? "B" : "A")) },
    );
    expect(wrongToken.status).toBe(403);
    const foreign = await post("/tenants/globex/keys", { cookie, origin: "http://evil.example" }, { label: "forged", _csrf: token });
    expect(foreign.status).toBe(403);
    const foreignLogin = await post("/login", { origin: "http://evil.example" }, { key: stack.tenants.ops });
    expect(foreignLogin.status).toBe(403);
    const keys = await (await fetch(consoleUrl("/keys"), { headers: { cookie } })).text();
    expect(keys).not.toContain("forged");
    const ok = await post("/tenants/globex/keys", { cookie, origin: base }, { label: "genuine", _csrf: token });
    expect(ok.status).toBe(201);
  });

  it("answers a wrong key, a signed-out post and an unknown page with pages, never a 500", async () => {
    const bad = await post("/login", { origin: base }, { key: "tg_not_a_key" });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("content-type")).toContain("text/html");
    expect(await bad.text()).toContain("Invalid API key");
    expect((await post("/logout", { origin: base }, {})).status).toBe(401);
    expect((await fetch(consoleUrl("/ledger"), { redirect: "manual" })).status).toBe(303);
    const { cookie } = await session(stack.tenants.globex);
    const unknown = await fetch(consoleUrl("/nowhere"), { headers: { cookie } });
    expect(unknown.status).toBe(404);
    const foreignStop = await post("/resources/sandbox/..%2F..%2Fapi/stop", { cookie, origin: base }, {});
    expect(foreignStop.status).toBeLessThan(500);
    const garbled = await fetch(consoleUrl("/logout"), {
      method: "POST",
      headers: { cookie, origin: base, "content-type": "multipart/form-data; boundary=x" },
      body: "--y\r\nnot a form",
    });
    expect(garbled.status).toBe(400);
    expect(garbled.headers.get("content-type")).toContain("text/html");
  });

  it("ends a session when its key is revoked", async () => {
    const { cookie, token } = await session(stack.tenants.ops);
    const created = await post("/tenants/globex/keys", { cookie, origin: base }, { label: "short-lived", _csrf: token });
    const html = await created.text();
    const key = /id="new-key">([^<]+)</.exec(html)![1]!.trim();
    const keyId = /data-issued="([0-9a-f]{16})"/.exec(html)![1]!;
    const globex = await session(key);
    expect((await fetch(consoleUrl("/keys"), { headers: { cookie: globex.cookie }, redirect: "manual" })).status).toBe(200);
    const revoked = await post(`/tenants/globex/keys/${keyId}/revoke`, { cookie, origin: base }, { _csrf: token });
    expect(revoked.status).toBe(303);
    expect((await fetch(consoleUrl("/keys"), { headers: { cookie: globex.cookie }, redirect: "manual" })).status).toBe(303);
  });
});
