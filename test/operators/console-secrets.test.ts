// The console's Secrets page (issue 57) in a real Chromium (puppeteer-core) against the demo stack: a tenant adds,
// replaces and deletes (after a confirmation) its own secrets, the value typed into a password input; a refused form
// comes back with an error beside each field at fault, refilled but for the value; an admin picks a tenant and manages
// its secrets; a read-only operator reads the list and gets no form (a forged one is refused); another tenant's are
// 404; a form without the session's token is refused. The audit page says what each change did (name, hosts old → new).
// Every response body the browsers received is kept: none holds a value. With CONSOLE_SCREENSHOTS=docs the refused
// form goes to docs/console-secrets.png.
import type { HTTPResponse, Page } from "puppeteer-core";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsoleBrowser, startConsoleBrowser } from "../helpers/console-browser.js";

let harness: ConsoleBrowser;
const VALUES = Array.from({ length: 5 }, (_, i) => `sk-console-${i}-${randomBytes(12).toString("hex")}`);
/** Every body the browsers received (pages, redirects' targets, error pages), with its URL. */
const received: Array<{ url: string; body: string }> = [];

const watch = (page: Page) =>
  page.on("response", (res: HTTPResponse) => {
    // A redirect has no body to read; every other answer's is kept.
    if (res.status() >= 300 && res.status() < 400) return;
    res.text().then(
      (body) => received.push({ url: res.url(), body }),
      () => {},
    );
  });

const signIn = async (key: string) => {
  const page = await harness.signIn(key);
  watch(page);
  return page;
};

const admin = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${harness.base}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": harness.stack.tenants.ops!, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  received.push({ url: res.url, body: text });
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
};

/** Fills the Secrets form (clearing what a refused form refilled) and submits it; the answer to the POST. */
async function saveSecret(
  page: Page,
  s: {
    name: string;
    value: string;
    hosts: string;
    methods?: string[];
    paths?: string;
    header?: string;
    format?: string;
    images?: string;
  },
) {
  const set = async (name: string, value: string) => {
    await page.$eval(`#secret-form [name=${name}]`, (el) => void ((el as HTMLInputElement).value = ""));
    await page.type(`#secret-form [name=${name}]`, value);
  };
  await set("name", s.name);
  await set("value", s.value);
  await set("hosts", s.hosts);
  await set("paths", s.paths ?? "");
  if (s.header) await set("header", s.header);
  if (s.format !== undefined) await set("format", s.format);
  await set("images", s.images ?? "");
  for (const m of s.methods ?? []) await page.click(`#secret-form input[name=methods][value=${m}]`);
  const [answer] = await Promise.all([page.waitForNavigation(), page.click("[data-save-secret]")]);
  return answer!;
}

const rows = (page: Page) =>
  page.$$eval("[data-table=secrets] tbody tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => (td.textContent ?? "").replace(/\s+/g, " ").trim())),
  );

beforeAll(async () => {
  harness = await startConsoleBrowser("console-secrets", ["x402"]);
}, 180_000);

afterAll(async () => {
  await harness?.close();
});

describe("the console's Secrets page", () => {
  it("lets a tenant add, replace and delete its own secrets, each field's error beside it", async () => {
    const page = await signIn(harness.stack.tenants.acme!);
    await Promise.all([page.waitForNavigation(), page.click('header nav a[href="/_tollgate/console/secrets"]')]);
    expect(await page.$eval("h1", (h) => h.textContent)).toBe("Secrets");
    expect(await page.$eval("#secret-form [name=value]", (el) => (el as HTMLInputElement).type)).toBe("password");
    expect(await page.$("[data-secrets-tenant]")).toBeNull(); // a tenant picks no tenant: it sees its own

    const made = await saveSecret(page, {
      name: "OPENAI",
      value: VALUES[0]!,
      hosts: "api.openai.com, eu.api.openai.com",
      methods: ["POST"],
      paths: "/v1/",
      images: "node",
    });
    expect(made.status()).toBe(200);
    expect(page.url()).toContain("/secrets?tenant=acme&saved=OPENAI");
    expect(await page.$eval("[data-notice]", (n) => n.textContent)).toContain("Saved secret OPENAI");
    const [row] = await rows(page);
    expect(row!.slice(0, 6)).toEqual([
      "OPENAI",
      "api.openai.com, eu.api.openai.com",
      "POST",
      "/v1/",
      "authorization: Bearer {}",
      "all · images node",
    ]);
    expect(row![7]).toBe("never");
    // The form is empty again; the value went to the vault only.
    expect(await page.$eval("#secret-form [name=value]", (el) => (el as HTMLInputElement).value)).toBe("");
    expect((await harness.stack.gateway.gateway.services.vault.valueFor("acme", "OPENAI"))?.value).toBe(VALUES[0]);

    // A refused form: each field at fault says why, the others are kept, the value is to be typed again.
    const refused = await saveSecret(page, {
      name: "9LIVES",
      value: VALUES[1]!,
      hosts: "https://api.example.com/v1",
      paths: "v1",
      format: "Bearer",
    });
    expect(refused.status()).toBe(400);
    const errors = Object.fromEntries(
      await page.$$eval("[data-field-error]", (els) => els.map((e) => [e.getAttribute("data-field-error"), e.textContent])),
    );
    expect(Object.keys(errors).sort()).toEqual(["format", "hosts", "name", "paths"]);
    expect(errors.hosts).toContain('"https://api.example.com/v1": expected a host or host:port');
    expect(errors.format).toContain('"{}" exactly once');
    expect(errors.paths).toContain('"v1": expected a path prefix');
    expect(errors.name).toContain("environment variable");
    expect(await page.$eval("[data-save-error]", (n) => n.textContent)).toContain("Not saved.");
    expect(await page.$eval("#secret-form [name=hosts]", (el) => (el as HTMLInputElement).value)).toBe("https://api.example.com/v1");
    expect(await page.$eval("#secret-form [name=hosts]", (el) => el.getAttribute("aria-invalid"))).toBe("true");
    expect(await page.$eval("#secret-form [name=value]", (el) => (el as HTMLInputElement).value)).toBe("");
    expect(await harness.stack.gateway.gateway.services.vault.describe("acme", "9LIVES")).toBeUndefined();
    await page.screenshot({ path: join(harness.shots, "console-secrets.png"), fullPage: true });

    // Replaced: new hosts, new value.
    const replaced = await saveSecret(page, { name: "OPENAI", value: VALUES[2]!, hosts: "api.openai.com", paths: "", format: "Bearer {}" });
    expect(replaced.status()).toBe(200);
    const [after] = await rows(page);
    expect(after!.slice(0, 4)).toEqual(["OPENAI", "api.openai.com", "any", "any"]);
    expect(after![6]).toContain("v2");
    expect((await harness.stack.gateway.gateway.services.vault.valueFor("acme", "OPENAI"))?.value).toBe(VALUES[2]);

    // Delete asks first: dismissed, nothing happens; accepted, it is gone.
    const answers = [false, true];
    const asked: string[] = [];
    page.on("dialog", (d) => {
      asked.push(d.message());
      void (answers.shift() ? d.accept() : d.dismiss());
    });
    await page.click('[data-delete="OPENAI"]');
    await new Promise((r) => setTimeout(r, 300));
    expect(await page.$('[data-secret="OPENAI"]')).not.toBeNull();
    await Promise.all([page.waitForNavigation(), page.click('[data-delete="OPENAI"]')]);
    expect(asked).toEqual([
      "Delete secret OPENAI of acme? Its placeholders stop working at once.",
      "Delete secret OPENAI of acme? Its placeholders stop working at once.",
    ]);
    expect(await page.$('[data-secret="OPENAI"]')).toBeNull();
    expect(await page.$eval("[data-notice]", (n) => n.textContent)).toContain("Deleted secret OPENAI");
    expect(await harness.stack.gateway.gateway.services.vault.describe("acme", "OPENAI")).toBeUndefined();

    // The audit page says what each change did: the name, the hosts old → new; never a value.
    await page.goto(harness.consoleUrl("/audit"));
    const details = await page.$$eval("[data-table=audit] tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => (td.textContent ?? "").trim())),
    );
    const byAction = (a: string) => details.filter((d) => d[2] === a).map((d) => d[4]);
    expect(byAction("secret.create")).toContain(
      "OPENAI created: hosts api.openai.com, eu.api.openai.com; methods POST; paths /v1/; header authorization: Bearer {}",
    );
    expect(byAction("secret.update")).toContain(
      "OPENAI: hosts api.openai.com, eu.api.openai.com → api.openai.com; methods POST → any; paths /v1/ → any; value written (version 1 → 2)",
    );
    expect(byAction("secret.delete")[0]).toMatch(/^OPENAI deleted \(was hosts api\.openai\.com;/);
    await page.browserContext().close();
  }, 180_000);

  it("lets an admin pick a tenant and manage its secrets; a read-only operator reads them and changes nothing", async () => {
    const page = await signIn(harness.stack.tenants.ops!);
    await page.goto(harness.consoleUrl("/secrets"));
    expect(await page.$("#secret-form")).toBeNull(); // no tenant picked yet
    await page.select("[data-secrets-tenant] select", "initech");
    await Promise.all([page.waitForNavigation(), page.click("[data-secrets-tenant] button")]);
    expect(await page.$eval("h1", (h) => h.textContent)).toBe("Secrets of initech");
    expect(
      (await saveSecret(page, { name: "GITHUB", value: VALUES[3]!, hosts: "api.github.com", methods: ["GET", "POST"] })).status(),
    ).toBe(200);
    expect((await admin("GET", "/secrets/initech/GITHUB")).json).toMatchObject({ hosts: ["api.github.com"], methods: ["GET", "POST"] });
    await page.browserContext().close();

    const watcher = await admin("POST", "/tenants", { id: "watch", scopes: ["operator-readonly"] });
    expect(watcher.status).toBe(201);
    const ro = await signIn(watcher.json.key);
    await ro.goto(harness.consoleUrl("/secrets?tenant=initech"));
    expect((await rows(ro)).map((r) => r[0])).toEqual(["GITHUB"]);
    // The only form that posts is Sign out.
    expect(await ro.$$eval("form[method=post]", (f) => f.map((x) => x.getAttribute("action")))).toEqual(["/_tollgate/console/logout"]);
    const forged = await forge(ro, harness.consoleUrl("/tenants/initech/secrets/GITHUB/delete"), true);
    expect(forged.status()).toBe(403);
    expect((await admin("GET", "/secrets/initech/GITHUB")).status).toBe(200);
    await ro.browserContext().close();
  }, 180_000);

  it("keeps a tenant to its own secrets and refuses a form without the session's token", async () => {
    await admin("PUT", "/secrets/initech/STRIPE", { value: VALUES[4], hosts: ["api.stripe.com"] });
    const page = await signIn(harness.stack.tenants.acme!);
    await page.goto(harness.consoleUrl("/secrets?tenant=initech"));
    expect(await page.$eval("h1", (h) => h.textContent)).toBe("Secrets"); // its own, whatever ?tenant= says
    expect(await page.content()).not.toContain("STRIPE");
    expect((await forge(page, harness.consoleUrl("/tenants/initech/secrets/STRIPE/delete"), true)).status()).toBe(404);
    await page.goto(harness.consoleUrl("/secrets"));
    expect((await forge(page, harness.consoleUrl("/tenants/acme/secrets"), false)).status()).toBe(403);
    expect((await admin("GET", "/secrets/initech/STRIPE")).status).toBe(200);
    await page.browserContext().close();
  }, 120_000);

  it("sent no value back in any response body the browsers received", () => {
    expect(received.length).toBeGreaterThan(10);
    expect(received.some((r) => r.body.includes("GITHUB"))).toBe(true);
    for (const r of received) for (const v of VALUES) expect(r.body.includes(v), r.url).toBe(false);
  });
});

/** Posts a form built in the page (with the session's form token when `token`); the answer. */
async function forge(page: Page, action: string, token: boolean) {
  const [answer] = await Promise.all([
    page.waitForNavigation(),
    page.evaluate(
      (action, token) => {
        const form = document.createElement("form");
        form.method = "post";
        form.action = action;
        if (token) form.append(document.querySelector("input[name=_csrf]")!.cloneNode());
        const f = document.createElement("input");
        f.name = "name";
        f.value = "FORGED";
        form.append(f);
        document.body.append(form);
        form.submit();
      },
      action,
      token,
    ),
  ]);
  return answer!;
}
