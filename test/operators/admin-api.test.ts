// The admin API on one gateway (memory state): tenants and keys through HTTP, validation, the audit log, the
// paged ledger view, config seeding, and the OpenAPI document.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

type Running = Awaited<ReturnType<typeof startTestGateway>>;

describe("admin API", () => {
  let gw: Running;
  const keys = { ops: generateTenantKey(), acme: generateTenantKey() };
  let globexKey = "";

  const call = async (method: string, path: string, body?: unknown, key = keys.ops) => {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
  };
  const whoami = (key: string) => fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": key } });

  beforeAll(async () => {
    gw = await startTestGateway(
      {
        upstream: { baseUrl: "http://127.0.0.1:9" },
        tenants: [
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
          { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme), label: "from config" }], budget: { daily: "5.00" } },
        ],
      },
      { tokenSecret: randomBytes(32).toString("hex") },
    );
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("answers only to a key with the admin scope", async () => {
    expect((await call("GET", "/_tollgate/admin/tenants", undefined, keys.acme)).json).toMatchObject({ code: "missing_scope" });
    expect((await call("GET", "/_tollgate/admin/tenants", undefined, "tg_nope")).status).toBe(401);
  });

  it("lists the config file's tenants with key ids, never key hashes", async () => {
    const r = await call("GET", "/_tollgate/admin/tenants");
    expect(r.status).toBe(200);
    expect(r.json.tenants.map((t: any) => t.id)).toEqual(["acme", "ops"]);
    const acme = r.json.tenants.find((t: any) => t.id === "acme");
    expect(acme).toMatchObject({ source: "config", enabled: true, budget: { daily: "5.00" }, onExhausted: "block" });
    expect(acme.keys).toEqual([{ id: (await hashTenantKey(keys.acme)).slice(7, 23), label: "from config" }]);
    expect(r.text).not.toContain("sha256:");
    const usage = await call("GET", "/_tollgate/admin/usage");
    expect(usage.json.tenants.map((t: any) => t.tenant).sort()).toEqual(["acme", "ops"]);
  });

  it("creates a tenant whose first key is in the answer once and works at once", async () => {
    const r = await call("POST", "/_tollgate/admin/tenants", {
      id: "globex",
      scopes: ["search"],
      budget: { daily: "1.00" },
      keyLabel: "ci",
    });
    expect(r.status).toBe(201);
    expect(r.json.key).toMatch(/^tg_/);
    globexKey = r.json.key;
    expect(r.json.tenant).toMatchObject({ id: "globex", source: "api", scopes: ["search"], keys: [{ id: r.json.keyId, label: "ci" }] });
    expect(await (await whoami(r.json.key)).json()).toEqual({ tenant: "globex", scopes: ["search"] });
    const again = await call("GET", "/_tollgate/admin/tenants/globex");
    expect(again.text).not.toContain(r.json.key);
    expect((await call("POST", "/_tollgate/admin/tenants", { id: "globex" })).json).toMatchObject({ code: "tenant_exists" });
  });

  it("refuses a bad body with a 400 that names every field", async () => {
    const r = await call("POST", "/_tollgate/admin/tenants", { id: "Bad Id", scopes: ["fly"], budget: { daily: "five" }, extra: 1 });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe("invalid_body");
    for (const f of ["id", "scopes.0", "budget.daily"]) expect(r.json.message).toContain(`${f}:`);
    expect(r.json.fields.map((f: any) => f.field)).toEqual(expect.arrayContaining(["id", "scopes.0", "budget.daily"]));
    expect((await call("PATCH", "/_tollgate/admin/tenants/acme", "{not json")).json.code).toBe("invalid_json");
    expect((await call("PATCH", "/_tollgate/admin/tenants/acme", { onExhausted: "explode" })).json.message).toContain("onExhausted:");
    expect((await call("PATCH", "/_tollgate/admin/tenants/nobody", { enabled: true })).status).toBe(404);
  });

  it("refuses to change the settings of a tenant the config file owns, naming it and the file (one owner per tenant)", async () => {
    const before = (await call("GET", "/_tollgate/admin/tenants/acme")).json;
    for (const [method, path, body] of [
      ["PATCH", "/_tollgate/admin/tenants/acme", { budget: { daily: "2.50" } }],
      ["PUT", "/_tollgate/admin/tenants/acme/quotas", { maxSandboxes: 2 }],
      ["PUT", "/_tollgate/admin/tenants/acme/scopes", ["search"]],
      ["DELETE", "/_tollgate/admin/tenants/acme", undefined],
    ] as const) {
      const r = await call(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(409);
      expect(r.json).toMatchObject({ code: "config_conflict", tenant: "acme", file: expect.any(String) });
      expect(r.json.message).toContain('tenant "acme" is owned by the gateway\'s config file');
      expect(r.json.message).toContain("edit it there");
      expect(r.json.message).toContain("remove the tenant from that file");
    }
    expect((await call("GET", "/_tollgate/admin/tenants/acme")).json).toEqual(before);
  });

  it("updates scopes, budgets, payment policy, quotas and rate limits of a tenant the admin API owns", async () => {
    let r = await call("PATCH", "/_tollgate/admin/tenants/globex", { budget: { daily: "2.50", monthly: "20.00" }, onExhausted: "stop" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ source: "api", budget: { daily: "2.50", monthly: "20.00" }, onExhausted: "stop" });
    r = await call("PUT", "/_tollgate/admin/tenants/globex/quotas", { maxSandboxes: 2, requestsPerMinute: 600 });
    expect(r.json.quotas).toEqual({ maxSandboxes: 2, requestsPerMinute: 600 });
    r = await call("PUT", "/_tollgate/admin/tenants/globex/payment", { maxPerRequest: "0.02" });
    expect(r.json.payment).toEqual({ maxPerRequest: "0.02" });
    r = await call("PUT", "/_tollgate/admin/tenants/globex/scopes", ["search", "sandboxes"]);
    expect(r.json.scopes).toEqual(["search", "sandboxes"]);
    expect(await (await whoami(globexKey)).json()).toEqual({ tenant: "globex", scopes: ["search", "sandboxes"] });
  });

  it("creates, rotates, expires and revokes keys; a revoked key stops at once", async () => {
    const created = await call("POST", "/_tollgate/admin/tenants/acme/keys", { label: "laptop" });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ tenant: "acme", label: "laptop" });
    expect((await whoami(created.json.key)).status).toBe(200);

    const rotated = await call("POST", `/_tollgate/admin/tenants/acme/keys/${created.json.id}/rotate`, { graceSeconds: 60 });
    expect(rotated.status).toBe(201);
    expect(rotated.json).toMatchObject({ replaced: created.json.id, label: "laptop" });
    expect((await whoami(rotated.json.key)).status).toBe(200);
    expect((await whoami(created.json.key)).status).toBe(200); // still in its grace period

    const expired = await call("POST", `/_tollgate/admin/tenants/acme/keys/${created.json.id}/expire`, {
      expiresAt: new Date(Date.now() - 1000).toISOString(),
    });
    expect(expired.status).toBe(200);
    expect(await (await whoami(created.json.key)).json()).toMatchObject({ code: "api_key_expired" });

    const revoked = await call("DELETE", `/_tollgate/admin/tenants/acme/keys/${rotated.json.id}`);
    expect(revoked.json).toEqual({ tenant: "acme", revoked: rotated.json.id });
    expect(await (await whoami(rotated.json.key)).json()).toMatchObject({ code: "invalid_api_key" });
    expect((await call("DELETE", `/_tollgate/admin/tenants/acme/keys/${rotated.json.id}`)).json.code).toBe("key_not_found");
  });

  it("disables, enables and deletes a tenant; a deleted id is not reused and the config does not bring it back", async () => {
    const made = await call("POST", "/_tollgate/admin/tenants", { id: "initech" });
    expect((await call("POST", "/_tollgate/admin/tenants/initech/disable")).json.enabled).toBe(false);
    expect(await (await whoami(made.json.key)).json()).toMatchObject({ code: "tenant_disabled" });
    expect((await call("POST", "/_tollgate/admin/tenants/initech/enable")).json.enabled).toBe(true);
    expect((await whoami(made.json.key)).status).toBe(200);
    expect((await call("DELETE", "/_tollgate/admin/tenants/initech")).json).toEqual({ id: "initech", deleted: true });
    expect((await whoami(made.json.key)).status).toBe(401);
    expect((await call("GET", "/_tollgate/admin/tenants/initech")).status).toBe(404);
    expect((await call("POST", "/_tollgate/admin/tenants", { id: "initech" })).status).toBe(409);
  });

  it("does not let an admin lock itself out", async () => {
    expect((await call("POST", "/_tollgate/admin/tenants/ops/disable")).json.code).toBe("admin_lockout");
    expect((await call("PATCH", "/_tollgate/admin/tenants/ops", { scopes: ["search"] })).json.code).toBe("admin_lockout");
    expect((await call("DELETE", "/_tollgate/admin/tenants/ops")).status).toBe(409);
  });

  it("audits every change (who, what, before and after, when), newest first, in pages", async () => {
    const first = await call("GET", "/_tollgate/admin/audit?limit=3");
    expect(first.status).toBe(200);
    expect(first.json.entries).toHaveLength(3);
    // Deleting a live tenant pulls the kill switch after the deletion is recorded.
    expect(first.json.entries[0]).toMatchObject({
      actor: "ops",
      action: "tenant.kill",
      target: "tenant:initech",
      after: { reason: "deleted by an admin" },
    });
    expect(first.json.entries[1]).toMatchObject({
      actor: "ops",
      action: "tenant.delete",
      target: "tenant:initech",
      before: { id: "initech" },
    });
    expect(first.json.entries[1]).not.toHaveProperty("after");
    expect(Date.parse(first.json.entries[0].at)).toBeGreaterThan(Date.now() - 60_000);
    const seen = [...first.json.entries];
    let next = first.json.next;
    for (let i = 0; next && i < 50; i++) {
      const page = await call("GET", `/_tollgate/admin/audit?limit=3&cursor=${next}`);
      seen.push(...page.json.entries);
      next = page.json.next;
    }
    const actions = seen.map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        "tenant.create",
        "tenant.update",
        "tenant.quotas",
        "key.create",
        "key.rotate",
        "key.expire",
        "key.revoke",
        "tenant.disable",
        "tenant.enable",
        "tenant.kill",
      ]),
    );
    expect(new Set(seen.map((e) => e.seq)).size).toBe(seen.length);
    const update = seen.find((e) => e.action === "tenant.update");
    expect(update.before.budget).toEqual({ daily: "1.00" });
    expect(update.after.budget).toEqual({ daily: "2.50", monthly: "20.00" });
    expect(JSON.stringify(seen)).not.toMatch(/tg_[A-Za-z0-9_-]{20}/);
  });

  it("does not audit a change that changes nothing (a Save with nothing edited)", async () => {
    const count = async () =>
      (await call("GET", "/_tollgate/admin/audit?limit=200")).json.entries.filter((e: any) => e.target === "tenant:globex").length;
    const budget = (await call("GET", "/_tollgate/admin/tenants/globex")).json.budget;
    const before = await count();
    expect((await call("PUT", "/_tollgate/admin/tenants/globex/budget", budget)).status).toBe(200);
    expect(await count()).toBe(before);
  });

  it("pages the ledger across tenants with tenant, state, kind and surface filters", async () => {
    const ledger = gw.gateway.stores.ledger;
    const base = { route: "/x402/web/search", fingerprint: "f", amount: "1000", asset: "a", network: "n", payee: "p" };
    for (let i = 0; i < 5; i++) await ledger.reserve({ ...base, id: `s${i}`, tenant: "acme" }, {}, Date.now());
    await ledger.reserve({ ...base, id: "x1", tenant: "globex", route: "/x402/session" }, {}, Date.now());
    await ledger.commit("s0", "0xtx", Date.now());
    const p1 = await call("GET", "/_tollgate/admin/ledger?tenant=acme&limit=2");
    expect(p1.json.entries.map((e: any) => e.id)).toEqual(["s4", "s3"]);
    const p2 = await call("GET", `/_tollgate/admin/ledger?tenant=acme&limit=2&cursor=${p1.json.next}`);
    expect(p2.json.entries.map((e: any) => e.id)).toEqual(["s2", "s1"]);
    const p3 = await call("GET", `/_tollgate/admin/ledger?tenant=acme&limit=2&cursor=${p2.json.next}`);
    expect(p3.json).toMatchObject({
      entries: [{ id: "s0", state: "committed", kind: "x402", surface: "search", amountUsd: "0.001" }],
      next: null,
    });
    expect((await call("GET", "/_tollgate/admin/ledger?surface=session")).json.entries.map((e: any) => e.id)).toEqual(["x1"]);
    expect((await call("GET", "/_tollgate/admin/ledger?kind=credits")).json.entries).toEqual([]);
    expect((await call("GET", "/_tollgate/admin/ledger?state=committed")).json.entries.map((e: any) => e.id)).toEqual(["s0"]);
    expect((await call("GET", "/_tollgate/admin/ledger?state=lost")).json).toMatchObject({ code: "invalid_query" });
  });

  it("publishes an OpenAPI 3.1 document of every /_tollgate endpoint, built from the zod schemas", async () => {
    const r = await fetch(`${gw.url}/_tollgate/openapi.json`);
    expect(r.status).toBe(200);
    const doc = await r.json();
    expect(doc.openapi).toBe("3.1.0");
    for (const p of [
      "/_tollgate/health",
      "/_tollgate/usage",
      "/_tollgate/ledger",
      "/_tollgate/tokens",
      "/_tollgate/admin/tenants",
      "/_tollgate/admin/tenants/{id}",
      "/_tollgate/admin/tenants/{id}/keys",
      "/_tollgate/admin/tenants/{id}/keys/{keyId}/rotate",
      "/_tollgate/admin/audit",
      "/_tollgate/admin/ledger",
    ]) {
      expect(Object.keys(doc.paths)).toContain(p);
    }
    expect(Object.keys(doc.paths["/_tollgate/admin/tenants/{id}"])).toEqual(expect.arrayContaining(["get", "patch", "delete"]));
    const create = doc.paths["/_tollgate/admin/tenants"].post.requestBody.content["application/json"].schema;
    const schema = create.$ref ? doc.components.schemas[create.$ref.split("/").pop()] : create;
    expect(schema.required).toContain("id");
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(["id", "scopes", "budget", "quotas", "onExhausted", "keyLabel"]));
    expect(doc.components.securitySchemes.tenantKey).toMatchObject({ type: "apiKey", name: "x-api-key" });
  });
});
