// Operators v2 on the admin API (one gateway, memory state): the operator-readonly role reads and changes nothing, the
// fleet's last admin key cannot be revoked, expired, disabled or deleted away (409 last_admin_key), the audit log's
// filters are honoured and unknown ones refused, keys carry created and last-used, and a one-time console link is
// minted for an operator and used once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

type Running = Awaited<ReturnType<typeof startTestGateway>>;
const run = promisify(execFile);

describe("operator roles and admin fixes", () => {
  let gw: Running;
  const keys = { ops: generateTenantKey(), watch: generateTenantKey(), acme: generateTenantKey() };

  const call = async (method: string, path: string, body?: unknown, key = keys.ops) => {
    const res = await fetch(`${gw.url}${path}`, {
      method,
      headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined, text };
  };

  beforeAll(async () => {
    gw = await startTestGateway(
      {
        upstream: { baseUrl: "http://127.0.0.1:9" },
        tenants: [
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
          { id: "watch", scopes: ["operator-readonly"], keys: [{ hash: await hashTenantKey(keys.watch) }] },
          { id: "acme", keys: [{ hash: await hashTenantKey(keys.acme) }], budget: { daily: "5.00" } },
        ],
      },
      { tokenSecret: randomBytes(32).toString("hex") },
    );
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("lets an operator-readonly key read every admin view and refuses every change with 403 read_only", async () => {
    for (const path of ["/tenants", "/tenants/acme", "/audit", "/ledger", "/usage"]) {
      expect((await call("GET", `/_tollgate/admin${path}`, undefined, keys.watch)).status, path).toBe(200);
    }
    const metrics = (key: string) => fetch(`${gw.url}/_tollgate/metrics`, { headers: { "x-api-key": key } });
    expect((await metrics(keys.watch)).status).toBe(200);
    expect((await metrics(keys.acme)).status).toBe(403);
    for (const [method, path, body] of [
      ["POST", "/tenants", { id: "sneaky" }],
      ["PATCH", "/tenants/acme", { budget: { daily: "500.00" } }],
      ["POST", "/tenants/acme/disable", undefined],
      ["POST", "/tenants/acme/keys", {}],
      ["DELETE", "/tenants/acme", undefined],
    ] as const) {
      const r = await call(method, `/_tollgate/admin${path}`, body, keys.watch);
      expect(r.status, `${method} ${path}`).toBe(403);
      expect(r.json.code).toBe("read_only");
    }
    expect((await call("GET", "/_tollgate/admin/tenants/acme")).json.budget).toEqual({ daily: "5.00" });
    expect((await call("GET", "/_tollgate/admin/tenants/sneaky")).status).toBe(404);
    // A tenant key is still no operator.
    expect((await call("GET", "/_tollgate/admin/tenants", undefined, keys.acme)).json.code).toBe("missing_scope");
    // The scope can be given through the API like any other.
    const r = await call("POST", "/_tollgate/admin/tenants", { id: "auditor", scopes: ["operator-readonly"] });
    expect(r.status).toBe(201);
    expect((await call("GET", "/_tollgate/admin/audit", undefined, r.json.key)).status).toBe(200);
    expect((await call("POST", "/_tollgate/admin/tenants/acme/enable", undefined, r.json.key)).status).toBe(403);
  });

  it("shows when each key was created and last used (written at most once a minute)", async () => {
    const created = await call("POST", "/_tollgate/admin/tenants/acme/keys", { label: "fresh" });
    expect(created.status).toBe(201);
    expect(Date.parse(created.json.createdAt)).toBeGreaterThan(Date.now() - 60_000);
    const view = await call("GET", "/_tollgate/admin/tenants/acme");
    expect(view.json.keys.find((k: { id: string }) => k.id === created.json.id)).toMatchObject({
      label: "fresh",
      createdAt: created.json.createdAt,
    });
    expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": created.json.key } })).status).toBe(200);
    const { lastUsed } = await import("../../src/identity/key-usage.js");
    const hash = await hashTenantKey(created.json.key);
    let used: number | undefined;
    for (let i = 0; i < 50 && used === undefined; i++) {
      used = (await lastUsed(gw.gateway.services, [hash])).get(hash);
      if (used === undefined) await new Promise((r) => setTimeout(r, 20));
    }
    expect(used).toBeGreaterThan(Date.now() - 60_000);
    // A second use within the minute writes nothing new.
    await gw.gateway.services.stores.kv.set(`key:last-used:${hash}`, "1", 60_000);
    expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": created.json.key } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 100));
    expect((await lastUsed(gw.gateway.services, [hash])).get(hash)).toBe(1);
  });

  it("refuses to revoke or expire away the fleet's last admin key (409 last_admin_key); a rotation replaces it", async () => {
    const opsKey = (await call("GET", "/_tollgate/admin/tenants/ops")).json.keys[0].id;
    // Another admin tenant acting on ops: ops' key is the fleet's only admin key.
    const second = await call("POST", "/_tollgate/admin/tenants", { id: "ops2", scopes: ["search"] });
    const ops2 = second.json.key as string;
    expect((await call("PATCH", "/_tollgate/admin/tenants/ops2", { scopes: ["admin"] })).status).toBe(200);
    const ops2Key = second.json.keyId as string;
    // With two admin keys one may go; then the other is the last.
    expect((await call("DELETE", `/_tollgate/admin/tenants/ops2/keys/${ops2Key}`)).status).toBe(200);
    for (const [method, path, body] of [
      ["DELETE", `/tenants/ops/keys/${opsKey}`, undefined],
      ["POST", `/tenants/ops/keys/${opsKey}/expire`, { expiresAt: "2020-01-01T00:00:00Z" }],
      ["POST", `/tenants/ops/keys/${opsKey}/rotate`, { graceSeconds: 0 }],
    ] as const) {
      const r = await call(method, `/_tollgate/admin${path}`, body);
      if (method === "POST" && path.endsWith("rotate")) {
        expect(r.status).toBe(201); // a rotation replaces the key: there is still one
        keys.ops = r.json.key;
        continue;
      }
      expect(r.status, `${method} ${path}`).toBe(409);
      expect(r.json.code).toBe("last_admin_key");
    }
    const newId = (await call("GET", "/_tollgate/admin/tenants/ops")).json.keys[0].id;
    expect((await call("DELETE", `/_tollgate/admin/tenants/ops/keys/${newId}`)).json.code).toBe("last_admin_key");
    expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": keys.ops } })).status).toBe(200);
    expect(ops2).toMatch(/^tg_/);
  });

  it("honours the audit log's action, actor, target and time filters, and refuses an unknown one (400)", async () => {
    const all = (await call("GET", "/_tollgate/admin/audit?limit=1000")).json.entries as Array<{
      action: string;
      actor: string;
      target: string;
      at: string;
    }>;
    expect(all.length).toBeGreaterThan(3);
    const revokes = await call("GET", "/_tollgate/admin/audit?action=key.revoke");
    expect(revokes.status).toBe(200);
    expect(revokes.json.entries.length).toBe(all.filter((e) => e.action === "key.revoke").length);
    expect(revokes.json.entries.every((e: { action: string }) => e.action === "key.revoke")).toBe(true);
    const keyActions = await call("GET", "/_tollgate/admin/audit?action=key.");
    expect(new Set(keyActions.json.entries.map((e: { action: string }) => e.action))).toEqual(
      new Set(all.filter((e) => e.action.startsWith("key.")).map((e) => e.action)),
    );
    const acme = await call("GET", "/_tollgate/admin/audit?target=tenant:acme");
    expect(acme.json.entries.length).toBeGreaterThan(0);
    expect(acme.json.entries.every((e: { target: string }) => e.target === "tenant:acme" || e.target.startsWith("key:acme/"))).toBe(true);
    const future = await call("GET", `/_tollgate/admin/audit?since=${new Date(Date.now() + 3_600_000).toISOString()}`);
    expect(future.json.entries).toEqual([]);
    const past = await call("GET", "/_tollgate/admin/audit?until=2001-01-01");
    expect(past.json.entries).toEqual([]);
    const byOps = await call("GET", "/_tollgate/admin/audit?actor=ops&action=tenant.*&limit=1");
    expect(byOps.json.entries).toHaveLength(1);
    expect(byOps.json.next).not.toBeNull();
    const page2 = await call("GET", `/_tollgate/admin/audit?actor=ops&action=tenant.*&limit=1&cursor=${byOps.json.next}`);
    expect(page2.json.entries[0].action).toMatch(/^tenant\./);
    expect(page2.json.entries[0]).not.toEqual(byOps.json.entries[0]);
    for (const bad of ["?acton=key.revoke", "?since=yesterday", "?limit=0"]) {
      const r = await call("GET", `/_tollgate/admin/audit${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.json.code).toBe("invalid_query");
    }
  });

  it("mints a one-time console link for an operator (CLI included): no key in it, used once, short-lived", async () => {
    const cli = await run(process.execPath, [
      "--import",
      "tsx",
      "src/cli/index.ts",
      "console",
      "link",
      "--gateway",
      gw.url,
      "--admin-key",
      keys.watch,
    ]);
    const url = /https?:\/\/\S+/.exec(cli.stdout)![0];
    expect(url).toContain("/_tollgate/console/link?code=");
    expect(url).not.toContain(keys.watch);
    expect(cli.stdout).not.toContain(keys.watch);
    const landing = await fetch(url);
    expect(landing.status).toBe(200);
    expect(await landing.text()).toContain("watch");
    const code = new URL(url).searchParams.get("code")!;
    const exchange = () =>
      fetch(`${gw.url}/_tollgate/console/link`, {
        method: "POST",
        redirect: "manual",
        headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ code }),
      });
    const [a, b] = await Promise.all([exchange(), exchange()]);
    expect([a.status, b.status].sort()).toEqual([303, 401]);
    const cookie = (a.status === 303 ? a : b).headers.get("set-cookie")!.split(";")[0]!;
    const overview = await fetch(`${gw.url}/_tollgate/console`, { headers: { cookie } });
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('data-role="readonly"');
    expect((await exchange()).status).toBe(401);
    expect((await fetch(url)).status).toBe(404);
    // A tenant key mints none; a bad ttl is a 400 naming the field.
    expect((await call("POST", "/_tollgate/admin/console-links", {}, keys.acme)).status).toBe(403);
    const badTtl = await call("POST", "/_tollgate/admin/console-links", { ttlSeconds: 999_999 });
    expect(badTtl.status).toBe(400);
    expect(badTtl.json.message).toContain("ttlSeconds");
    const logins = await call("GET", "/_tollgate/admin/audit?action=console.");
    expect(logins.json.entries.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining(["console.link.create", "console.login"]),
    );
  });
});

describe("the fleet's last admin key, through every path", () => {
  let gw: Running;
  const keys = { ops: generateTenantKey(), ops2: generateTenantKey() };
  const call = async (method: string, path: string, body?: unknown, key = keys.ops) => {
    const res = await fetch(`${gw.url}/_tollgate/admin${path}`, {
      method,
      headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  const keyIdOf = async (tenant: string) => (await call("GET", `/tenants/${tenant}`)).json.keys[0].id as string;
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

  beforeAll(async () => {
    gw = await startTestGateway(
      {
        upstream: { baseUrl: "http://127.0.0.1:9" },
        tenants: [
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
          { id: "ops2", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops2), expiresAt: "2020-01-01T00:00:00Z" }] },
        ],
      },
      { tokenSecret: randomBytes(32).toString("hex") },
    );
  });
  afterAll(async () => {
    await gw?.close();
  });

  it("refuses to expire it at a later date, or to rotate it into a key that ends, with 409 last_admin_key naming when", async () => {
    const id = await keyIdOf("ops");
    const later = await call("POST", `/tenants/ops/keys/${id}/expire`, { expiresAt: inAnHour() });
    expect(later.status).toBe(409);
    expect(later.json).toMatchObject({ code: "last_admin_key", message: expect.stringMatching(/without a live admin key from 20\d\d-/) });
    for (const body of [
      { graceSeconds: 60, expiresAt: "2020-01-01T00:00:00Z" }, // the new key is dead on arrival, the old one ends in a minute
      { graceSeconds: 0, expiresAt: inAnHour() }, // the new key ends in an hour
    ]) {
      const r = await call("POST", `/tenants/ops/keys/${id}/rotate`, body);
      expect(r.status, JSON.stringify(body)).toBe(409);
      expect(r.json.code).toBe("last_admin_key");
    }
    expect((await call("GET", "/tenants/ops")).json.keys).toEqual([expect.not.objectContaining({ expiresAt: expect.anything() })]);
    // Another admin key without expiry first: then the first one may be given an end.
    const more = await call("POST", "/tenants/ops2/keys", { label: "second" });
    expect(more.status).toBe(201);
    expect((await call("POST", `/tenants/ops/keys/${id}/expire`, { expiresAt: inAnHour() })).status).toBe(200);
    expect((await call("POST", `/tenants/ops/keys/${id}/expire`, { expiresAt: "2100-01-01T00:00:00Z" })).status).toBe(200);
    keys.ops2 = more.json.key;
    // Now ops2's new key is the only one without expiry: it can be neither revoked nor expired.
    const r = await call("DELETE", `/tenants/ops2/keys/${more.json.id}`);
    expect(r.json.code).toBe("last_admin_key");
    expect((await call("DELETE", `/tenants/ops/keys/${id}`)).status).toBe(200); // ops' key ended sooner anyway
    keys.ops = keys.ops2;
  });

  it("refuses it through the CLI (exit 1, the code printed) and the console (409)", async () => {
    const id = (await call("GET", "/tenants/ops2")).json.keys.find((k: { expiresAt?: string }) => !k.expiresAt).id as string;
    const cli = await run(process.execPath, [
      "--import",
      "tsx",
      "src/cli/index.ts",
      "keys",
      "revoke",
      "--tenant",
      "ops2",
      "--key",
      id,
      "--gateway",
      gw.url,
      "--admin-key",
      keys.ops,
    ]).catch((e) => e);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("409 last_admin_key");

    const login = await fetch(`${gw.url}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: keys.ops }),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    const page = await (await fetch(`${gw.url}/_tollgate/console/keys`, { headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const revoked = await fetch(`${gw.url}/_tollgate/console/tenants/ops2/keys/${id}/revoke`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf }),
    });
    expect(revoked.status).toBe(409);
    expect(await revoked.text()).toContain("without a live admin key");
    expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": keys.ops } })).status).toBe(200);
  }, 60_000);

  it("lets one of two concurrent revocations of the last two admin keys through, never both", async () => {
    // The caller's own key ends in 2100: the two raced are the last admin keys without expiry.
    const caller = await call("POST", "/tenants/ops/keys", { label: "caller", expiresAt: "2100-01-01T00:00:00Z" });
    expect(caller.status).toBe(201);
    keys.ops = caller.json.key;
    for (let round = 0; round < 5; round++) {
      const a = await call("POST", "/tenants/ops/keys", { label: `a${round}` });
      const b = await call("POST", "/tenants/ops2/keys", { label: `b${round}` });
      for (const t of ["ops", "ops2"])
        for (const k of (await call("GET", `/tenants/${t}`)).json.keys as Array<{ id: string; expiresAt?: string }>)
          if (!k.expiresAt && k.id !== a.json.id && k.id !== b.json.id)
            expect((await call("DELETE", `/tenants/${t}/keys/${k.id}`)).status).toBe(200);
      const [x, y] = await Promise.all([
        call("DELETE", `/tenants/ops/keys/${a.json.id}`),
        call("DELETE", `/tenants/ops2/keys/${b.json.id}`),
      ]);
      expect([x.status, y.status].sort(), `round ${round}`).toEqual([200, 409]);
      expect([x, y].find((r) => r.status === 409)!.json.code).toBe("last_admin_key");
      const survivor = x.status === 409 ? a.json.key : b.json.key;
      expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": survivor } })).status).toBe(200);
    }
  });
});
