// Config as code inside workerd on Durable Objects (docs/config-as-code.md): the live state exported as TOML from one
// fleet and applied to an empty one gives the same state; an admin edit then shows as drift.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parse as parseToml } from "smol-toml";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";

const bindings = env as unknown as Record<string, unknown>;

async function fleet(ops: string, tenants: unknown[] = []) {
  const config = parseConfig({
    server: { logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] }, ...tenants],
  });
  const g = createGateway(config, {
    secrets: { tokenSecret: "w".repeat(40) },
    stores: doStores(bindings, { namespace: `cac-${crypto.randomUUID()}` }),
  });
  return (method: string, path: string, body?: unknown) =>
    g.app.request(`/_tollgate/admin${path}`, {
      method,
      headers: { "x-api-key": ops, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
}

describe("config as code on Durable Objects (workerd)", () => {
  it("export -> apply to an empty fleet gives the same state; an edit shows as drift", async () => {
    const ops = `tg_ops_${crypto.randomUUID()}`;
    const source = await fleet(ops, [{ id: "acme", keys: [{ hash: await hashTenantKey("tg_acme") }], budget: { daily: "5.00" } }]);
    expect((await source("POST", "/tenants", { id: "edge", scopes: ["search"], quotas: { requestsPerMinute: 60 } })).status).toBe(201);
    const exported = await source("GET", "/config/export");
    expect(exported.headers.get("content-type")).toContain("application/toml");
    const text = await exported.text();
    const target = await fleet(ops);
    const applied = await target("POST", "/config/apply", { document: parseToml(text) });
    expect(applied.status).toBe(200);
    expect(((await applied.json()) as any).sections.tenants.changes.map((c: any) => `${c.action} ${c.id}`)).toEqual([
      "create acme",
      "create edge",
    ]);
    const strip = (t: string) => t.replace(/^#.*\n/gm, "");
    expect(strip(await (await target("GET", "/config/export")).text())).toBe(strip(text));
    await target("PUT", "/tenants/edge/budget", { daily: "1.00" });
    const drift = (await (await target("GET", "/config/drift")).json()) as any;
    expect(drift.sections.tenants.changes).toEqual([{ id: "edge", action: "update", fields: ["budget.daily"] }]);
  });
});
