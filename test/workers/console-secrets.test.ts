// The console's Secrets page inside workerd, on Durable Objects (issue 57): a tenant signed in with its key adds a
// secret through the page's form (its session's form token, the console's own origin), replaces it, sees it listed with
// its rules, and deletes it; a form without the token is refused; no answer holds the value.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";

const bindings = env as unknown as Record<string, unknown>;
const origin = "https://gateway.test";

describe("the console's Secrets page on Workers", () => {
  it("adds, replaces and deletes a tenant's secret on Durable Objects, never answering its value", async () => {
    const key = `tg_acme_${crypto.randomUUID()}`;
    const values = [`sk-w-${crypto.randomUUID()}`, `sk-w-${crypto.randomUUID()}`];
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [{ id: "acme", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(key) }] }],
    });
    const gw = createGateway(config, {
      secrets: { tokenSecret: "w".repeat(40) },
      stores: doStores(bindings, { namespace: `console-secrets-${crypto.randomUUID()}` }),
    });
    const bodies: string[] = [];
    const send = async (path: string, init: RequestInit = {}) => {
      const r = await gw.app.request(`${origin}/_tollgate/console${path}`, init);
      bodies.push(await r.clone().text());
      return r;
    };
    const login = await send("/login", {
      method: "POST",
      headers: { origin, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key }),
    });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!;
    const page = await send("/secrets", { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-secret-form="acme"');
    const csrf = html.match(/name="_csrf" value="([^"]+)"/)![1]!;
    const post = (path: string, form: Record<string, string | string[]>, token = true) => {
      const body = new URLSearchParams(token ? { _csrf: csrf } : {});
      for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) body.append(k, one);
      return send(path, { method: "POST", headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" }, body });
    };

    const made = await post("/tenants/acme/secrets", {
      name: "OPENAI",
      value: values[0]!,
      hosts: "api.openai.com",
      methods: ["GET", "POST"],
    });
    expect(made.status).toBe(303);
    expect(made.headers.get("location")).toBe("/_tollgate/console/secrets?tenant=acme&saved=OPENAI");
    const replaced = await post("/tenants/acme/secrets", { name: "OPENAI", value: values[1]!, hosts: "api.openai.com, eu.api.openai.com" });
    expect(replaced.status).toBe(303);
    expect((await gw.services.vault.valueFor("acme", "OPENAI"))?.value).toBe(values[1]);
    const listed = await (await send("/secrets", { headers: { cookie } })).text();
    expect(listed).toContain('data-secret="OPENAI"');
    expect(listed).toContain("api.openai.com, eu.api.openai.com");

    const refused = await post("/tenants/acme/secrets", { name: "OPENAI", value: values[0]!, hosts: "https://x/" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('data-field-error="hosts"');
    expect((await post("/tenants/acme/secrets/OPENAI/delete", {}, false)).status).toBe(403);
    expect((await gw.services.vault.valueFor("acme", "OPENAI"))?.value).toBe(values[1]);

    const deleted = await post("/tenants/acme/secrets/OPENAI/delete", {});
    expect(deleted.status).toBe(303);
    expect(await gw.services.vault.describe("acme", "OPENAI")).toBeUndefined();
    const audit = await (await send("/audit", { headers: { cookie } })).text();
    expect(audit).toContain("OPENAI: hosts api.openai.com → api.openai.com, eu.api.openai.com; methods GET, POST → any");
    for (const b of bodies) for (const v of values) expect(b).not.toContain(v);
  });
});
