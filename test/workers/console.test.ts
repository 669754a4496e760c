// The console inside workerd: the Worker entry serves the sign-in page, and on Durable Objects an admin key signs in
// (HttpOnly, SameSite=Strict cookie) and sees the overview; JSX renders with no build step on Workers too.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";

const bindings = env as unknown as Record<string, unknown>;

describe("console on Workers", () => {
  it("serves the sign-in page from the Worker entry", async () => {
    const r = await SELF.fetch("https://gateway.test/_tollgate/console/login");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/html");
    expect(r.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await r.text();
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('name="key"');
    const overview = await SELF.fetch("https://gateway.test/_tollgate/console", { redirect: "manual" });
    expect(overview.status).toBe(303);
    expect(overview.headers.get("location")).toBe("/_tollgate/console/login");
  });

  it("signs an admin in on Durable Objects and renders the overview with its spend charts", async () => {
    const ops = `tg_ops_${crypto.randomUUID()}`;
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] },
        {
          id: "edge",
          scopes: ["search"],
          budget: { daily: "1.00" },
          keys: [{ hash: await hashTenantKey(`tg_edge_${crypto.randomUUID()}`) }],
        },
      ],
    });
    const gw = createGateway(config, {
      secrets: { tokenSecret: "w".repeat(40) },
      stores: doStores(bindings, { namespace: `console-${crypto.randomUUID()}` }),
    });
    const origin = "https://gateway.test";
    const login = await gw.app.request(`${origin}/_tollgate/console/login`, {
      method: "POST",
      headers: { origin, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: ops }),
    });
    expect(login.status).toBe(303);
    const setCookie = login.headers.get("set-cookie") ?? "";
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Secure/);
    const page = await gw.app.request(`${origin}/_tollgate/console`, { headers: { cookie: setCookie.split(";")[0]! } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('data-tenant="edge"');
    expect(html).toContain("<svg");
    expect(html).not.toContain(ops);
  });

  it("signs an operator-readonly key in by a one-time link on Durable Objects, draws the spend charts, and refuses its changes", async () => {
    const watch = `tg_watch_${crypto.randomUUID()}`;
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [
        { id: "watch", scopes: ["operator-readonly"], keys: [{ hash: await hashTenantKey(watch) }] },
        {
          id: "edge",
          scopes: ["search"],
          budget: { daily: "1.00" },
          keys: [{ hash: await hashTenantKey(`tg_edge_${crypto.randomUUID()}`) }],
        },
      ],
    });
    const gw = createGateway(config, {
      secrets: { tokenSecret: "w".repeat(40) },
      stores: doStores(bindings, { namespace: `console-link-${crypto.randomUUID()}` }),
    });
    const origin = "https://gateway.test";
    const minted = await gw.app.request(`${origin}/_tollgate/admin/console-links`, {
      method: "POST",
      headers: { "x-api-key": watch, "content-type": "application/json" },
      body: "{}",
    });
    expect(minted.status).toBe(201);
    const { url } = (await minted.json()) as { url: string };
    expect(url).not.toContain(watch);
    const code = new URL(url).searchParams.get("code")!;
    const exchange = () =>
      gw.app.request(`${origin}/_tollgate/console/link`, {
        method: "POST",
        headers: { origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ code }),
      });
    const first = await exchange();
    expect(first.status).toBe(303);
    expect((await exchange()).status).toBe(401);
    const cookie = first.headers.get("set-cookie")!.split(";")[0]!;
    const page = await gw.app.request(`${origin}/_tollgate/console`, { headers: { cookie } });
    const html = await page.text();
    expect(html).toContain('data-role="readonly"');
    expect(html).toContain('data-chart="spend-by-kind"');
    expect(html).not.toContain("data-new-tenant");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)![1]!;
    const forged = await gw.app.request(`${origin}/_tollgate/console/tenants/edge/disable`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf }),
    });
    expect(forged.status).toBe(403);
    expect(gw.directory.get("edge")?.enabled).toBe(true);
  });
});
