// The admin API inside workerd on Durable Objects: a key created through one gateway instance works on another
// within a second, a revoked one stops; the OpenAPI document is served by the Worker entry.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";

const bindings = env as unknown as Record<string, unknown>;

async function twoInstances() {
  const ops = `tg_ops_${crypto.randomUUID()}`;
  const config = parseConfig({
    server: { logLevel: "silent" },
    upstream: { baseUrl: "http://127.0.0.1:9" },
    tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] }],
  });
  const namespace = `admin-${crypto.randomUUID()}`;
  const make = () => createGateway(config, { secrets: { tokenSecret: "w".repeat(40) }, stores: doStores(bindings, { namespace }) });
  return { ops, a: make(), b: make() };
}

describe("admin API on Durable Objects (workerd)", () => {
  it("applies a key created or revoked through one instance on another within 1 s", async () => {
    const { ops, a, b } = await twoInstances();
    const whoami = async (key: string) => (await b.app.request("/_tollgate/whoami", { headers: { "x-api-key": key } })).status;
    expect(await whoami(ops)).toBe(200);
    const created = await a.app.request("/_tollgate/admin/tenants", {
      method: "POST",
      headers: { "x-api-key": ops, "content-type": "application/json" },
      body: JSON.stringify({ id: "edge", scopes: ["search"] }),
    });
    expect(created.status).toBe(201);
    const { key, keyId } = (await created.json()) as { key: string; keyId: string };
    let t0 = Date.now();
    while ((await whoami(key)) !== 200 && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 20));
    expect(Date.now() - t0).toBeLessThan(1000);
    const revoked = await a.app.request(`/_tollgate/admin/tenants/edge/keys/${keyId}`, { method: "DELETE", headers: { "x-api-key": ops } });
    expect(revoked.status).toBe(200);
    t0 = Date.now();
    while ((await whoami(key)) !== 401 && Date.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 20));
    expect(Date.now() - t0).toBeLessThan(1000);
    const audit = (await (await b.app.request("/_tollgate/admin/audit?limit=5", { headers: { "x-api-key": ops } })).json()) as any;
    expect(audit.entries.map((e: any) => e.action)).toEqual(["key.revoke", "tenant.create"]);
  });

  it("serves the OpenAPI document from the Worker entry", async () => {
    const r = await SELF.fetch("https://gateway.test/_tollgate/openapi.json");
    expect(r.status).toBe(200);
    const doc = (await r.json()) as any;
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/_tollgate/admin/tenants"]).toBeDefined();
  });
});
