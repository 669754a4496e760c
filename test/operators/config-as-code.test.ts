// Config as code (docs/config-as-code.md): `tollgate export`, `diff` and `apply` against running gateways through the
// admin API. An exported fleet applied to an empty one gives the same state; a change in the file shows in the diff,
// applies and is audited under its actor; admin edits since the last apply show as drift (admin API, /ready);
// --prune deletes what the file does not name; a bad file is refused naming the field; nothing is half applied.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parse as parseToml, stringify as tomlStringify } from "smol-toml";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

const run = promisify(execFile);
type Running = Awaited<ReturnType<typeof startTestGateway>>;

const ops = generateTenantKey();
const viewer = generateTenantKey();
const acmeKey = generateTenantKey();
let source: Running;
let empty: Running;
let dir: string;

const cli = (gw: Running, ...args: string[]) =>
  run(process.execPath, ["--import", "tsx", "src/cli/index.ts", ...args], {
    env: { ...process.env, TOLLGATE_ADMIN_KEY: ops, TOLLGATE_GATEWAY: gw.url },
  })
    .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }))
    .catch((e) => ({ code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string }));

const call = async (gw: Running, method: string, path: string, body?: unknown, key = ops) => {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text, type: res.headers.get("content-type") };
};

/** The exported state without its header comment (it names the time and the gateway). */
const exportBody = async (gw: Running) => {
  const r = await call(gw, "GET", "/_tollgate/admin/config/export");
  expect(r.status).toBe(200);
  return r.text.replace(/^#.*\n/gm, "");
};

const base = async (tenants: unknown[]) => ({
  upstream: { baseUrl: "http://127.0.0.1:9" },
  tenants: [
    { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] },
    { id: "viewer", scopes: ["operator-readonly"], keys: [{ hash: await hashTenantKey(viewer) }] },
    ...tenants,
  ],
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tg-cac-"));
  const secrets = { tokenSecret: randomBytes(32).toString("hex") };
  source = await startTestGateway(
    await base([
      {
        id: "acme",
        keys: [{ hash: await hashTenantKey(acmeKey), label: "from config" }],
        budget: { daily: "5.00" },
        quotas: { maxSandboxes: 3 },
      },
    ]),
    secrets,
  );
  empty = await startTestGateway(await base([]), secrets);
  // The source fleet after some admin work: a tenant made through the API, its policy, alerts and a second key.
  expect(
    (
      await call(source, "POST", "/_tollgate/admin/tenants", {
        id: "globex",
        scopes: ["search"],
        budget: { monthly: "40.00" },
        policy: { domains: { deny: ["evil.example"] }, maxSessionMinutes: 15 },
        alerts: { thresholds: [75] },
        creditMultiplier: "1.25",
        onExhausted: "stop",
        keyLabel: "ci",
      })
    ).status,
  ).toBe(201);
  expect(
    (await call(source, "POST", "/_tollgate/admin/tenants/acme/keys", { label: "second", expiresAt: "2031-01-01T00:00:00Z" })).status,
  ).toBe(201);
}, 60_000);

afterAll(async () => {
  await source?.close();
  await empty?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("config as code", () => {
  it("exports the live state in the config file's shape, to admins only", async () => {
    const r = await call(source, "GET", "/_tollgate/admin/config/export");
    expect(r.status).toBe(200);
    expect(r.type).toContain("application/toml");
    const doc = parseToml(r.text) as any;
    expect(doc.tenants.map((t: any) => t.id)).toEqual(["acme", "globex", "ops", "viewer"]);
    const acme = doc.tenants.find((t: any) => t.id === "acme");
    expect(acme.keys).toHaveLength(2);
    expect(acme.keys[0].hash).toBe(await hashTenantKey(acmeKey));
    expect(r.text).not.toContain(acmeKey);
    const json = await call(source, "GET", "/_tollgate/admin/config/export?format=json");
    expect(json.json.tenants.find((t: any) => t.id === "globex")).toMatchObject({
      policy: { domains: { deny: ["evil.example"] }, maxSessionMinutes: 15 },
      creditMultiplier: "1.25",
    });
    // The key hashes are for admins: a read-only operator may not export, a tenant key may not at all.
    expect((await call(source, "GET", "/_tollgate/admin/config/export", undefined, viewer)).status).toBe(403);
    expect((await call(source, "GET", "/_tollgate/admin/config/export", undefined, acmeKey)).json.code).toBe("missing_scope");
  });

  it("export -> apply to an empty fleet gives the same state (the CLI round trip)", async () => {
    const file = join(dir, "fleet.toml");
    const exported = await cli(source, "export", "--out", file);
    expect(exported.code, exported.stderr).toBe(0);
    const diff = await cli(empty, "diff", file, "--exit-code");
    expect(diff.code).toBe(1);
    expect(diff.stdout).toContain("+ tenant acme");
    expect(diff.stdout).toContain("+ tenant globex");
    expect(diff.stdout).toContain("= 2 tenants unchanged");
    const applied = await cli(empty, "apply", file);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain("2 changes applied.");
    expect(await exportBody(empty)).toBe(await exportBody(source));
    // The keys work on the new fleet at once; a second diff says in sync (exit 0).
    expect((await fetch(`${empty.url}/_tollgate/whoami`, { headers: { "x-api-key": acmeKey } })).status).toBe(200);
    const again = await cli(empty, "diff", file, "--exit-code");
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("In sync: nothing to change.");
  }, 60_000);

  it("a change in the file shows in diff, applies, and is audited under its actor", async () => {
    const file = join(dir, "change.toml");
    const doc = parseToml(await readFile(join(dir, "fleet.toml"), "utf8")) as any;
    const acme = doc.tenants.find((t: any) => t.id === "acme");
    acme.budget.daily = "7.50";
    acme.keys = acme.keys.filter((k: any) => k.label !== "second");
    await writeFile(file, tomlStringify(doc));
    const secondId = (await call(empty, "GET", "/_tollgate/admin/tenants/acme")).json.keys.find((k: any) => k.label === "second").id;
    const diff = await cli(empty, "diff", file);
    expect(diff.stdout).toContain(`~ tenant acme: budget.daily, keys: -${secondId}`);
    expect(diff.stdout).not.toContain("sha256:");
    const applied = await cli(empty, "apply", file);
    expect(applied.code, applied.stderr).toBe(0);
    const acmeNow = (await call(empty, "GET", "/_tollgate/admin/tenants/acme")).json;
    expect(acmeNow).toMatchObject({ budget: { daily: "7.50" }, source: "config" });
    expect(acmeNow.keys.map((k: any) => k.id)).not.toContain(secondId);
    const audit = (await call(empty, "GET", "/_tollgate/admin/audit?action=config.")).json.entries;
    const update = audit.find((e: any) => e.action === "config.tenant.update" && e.target === "tenant:acme");
    expect(update).toMatchObject({ actor: "ops", before: { budget: { daily: "5.00" } }, after: { budget: { daily: "7.50" } } });
    expect(audit.find((e: any) => e.action === "config.apply" && e.after.updated.includes("acme"))).toMatchObject({ actor: "ops" });
    expect(JSON.stringify(audit)).not.toContain("sha256:");
  }, 60_000);

  it("admin edits since the last apply show as drift (admin API and /ready); apply puts them back", async () => {
    expect((await call(empty, "GET", "/_tollgate/admin/config/drift")).json).toMatchObject({
      inSync: true,
      against: { kind: "last-apply", by: "ops" },
    });
    await call(empty, "PUT", "/_tollgate/admin/tenants/globex/budget", { monthly: "99.00" });
    const drift = (await call(empty, "GET", "/_tollgate/admin/config/drift")).json;
    expect(drift.inSync).toBe(false);
    expect(drift.sections.tenants.changes).toEqual([{ id: "globex", action: "update", fields: ["budget.monthly"] }]);
    const ready = (await call(empty, "GET", "/_tollgate/ready")).json;
    expect(ready.config.drift).toMatchObject({ inSync: false, changes: 1, tenants: ["update globex"] });
    // Not shown to anyone but an admin.
    expect((await call(empty, "GET", "/_tollgate/ready", undefined, acmeKey)).json.config).toBeUndefined();
    const applied = await cli(empty, "apply", join(dir, "change.toml"));
    expect(applied.stdout).toContain("~ tenant globex: budget.monthly");
    expect((await call(empty, "GET", "/_tollgate/admin/config/drift")).json.inSync).toBe(true);
  }, 60_000);

  it("leaves what the file does not name alone; --prune deletes it (audited, the kill switch pulled)", async () => {
    const made = await call(empty, "POST", "/_tollgate/admin/tenants", { id: "stray", scopes: ["search"] });
    expect(made.status).toBe(201);
    const file = join(dir, "change.toml");
    const plain = await cli(empty, "diff", file);
    expect(plain.stdout).toContain("1 tenant not in the file, left alone: stray");
    expect(plain.stdout).toContain("In sync");
    const pruned = await cli(empty, "apply", file, "--prune");
    expect(pruned.stdout).toContain("- tenant stray (not in the file; --prune)");
    expect((await call(empty, "GET", "/_tollgate/admin/tenants/stray")).status).toBe(404);
    expect((await fetch(`${empty.url}/_tollgate/whoami`, { headers: { "x-api-key": made.json.key } })).status).toBe(401);
    const audit = (await call(empty, "GET", "/_tollgate/admin/audit?action=config.tenant.delete")).json.entries;
    expect(audit[0]).toMatchObject({ actor: "ops", target: "tenant:stray" });
    // A deleted id named again is refused as a whole: nothing is written.
    const doc = parseToml(await readFile(file, "utf8")) as any;
    doc.tenants.push({ id: "stray", keys: [{ hash: await hashTenantKey(generateTenantKey()) }] });
    doc.tenants.find((t: any) => t.id === "acme").budget.daily = "1.00";
    const r = await call(empty, "POST", "/_tollgate/admin/config/apply", { document: doc });
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ code: "config_conflict" });
    expect(r.json.message).toContain("stray");
    expect((await call(empty, "GET", "/_tollgate/admin/tenants/acme")).json.budget.daily).toBe("7.50");
  }, 60_000);

  it("a bad file is refused naming each field; the last admin key cannot be applied away", async () => {
    const bad = await call(empty, "POST", "/_tollgate/admin/config/diff", {
      document: {
        tenants: [{ id: "Bad Id" }, { id: "ok", keys: [{ hash: "nope" }], budget: { daily: "five" }, colour: 1 }],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe("invalid_config");
    for (const f of ["tenants[0].id", "tenants[0].keys", "tenants[1].keys[0].hash", "tenants[1].budget.daily", "tenants[1].colour"])
      expect(bad.json.message).toContain(f);
    expect((await call(empty, "POST", "/_tollgate/admin/config/diff", { document: [] })).json.code).toBe("invalid_body");
    expect((await call(empty, "POST", "/_tollgate/admin/config/diff", { document: {}, extra: 1 })).status).toBe(400);
    const file = join(dir, "broken.toml");
    await writeFile(file, "[[tenants]]\nid = \n");
    const parse = await cli(empty, "diff", file);
    expect(parse.code).not.toBe(0);
    expect(parse.stderr).toContain("broken.toml:2");
    // The file takes the admin scope from the only admin: refused (409), nothing written.
    const doc = (await call(empty, "GET", "/_tollgate/admin/config/export?format=json")).json;
    doc.tenants.find((t: any) => t.id === "ops").scopes = ["search"];
    const r = await call(empty, "POST", "/_tollgate/admin/config/apply", { document: doc });
    expect(r.status).toBe(409);
    expect((await call(empty, "GET", "/_tollgate/admin/tenants/ops")).json.scopes).toEqual(["admin"]);
    // The admins are the gateway's own file's (one owner per tenant): the refusal names the tenant and the file.
    expect(r.json.message).toContain('tenant "ops" is owned by the gateway\'s config file');
    // A file naming only a newcomer, with prune, would delete what apply made (acme), never the file's tenants (ops,
    // viewer): the gateway's file decides whether they exist.
    const lone = { tenants: [{ id: "newcomer", keys: [{ hash: await hashTenantKey(generateTenantKey()) }] }] };
    const pruned = await call(empty, "POST", "/_tollgate/admin/config/diff", { document: lone, prune: true });
    expect(pruned.status).toBe(200);
    const changes = pruned.json.sections.tenants.changes as Array<{ id: string; action: string }>;
    expect(changes).toEqual(
      expect.arrayContaining([
        { id: "newcomer", action: "create" },
        { id: "acme", action: "delete" },
      ]),
    );
    expect(changes.filter((c) => c.id === "ops" || c.id === "viewer")).toEqual([]);
  }, 60_000);

  it("the console's drift page shows the drifted tenant to operators, not to tenants", async () => {
    const consolePage = async (key: string) => {
      const login = await fetch(`${empty.url}/_tollgate/console/login`, {
        method: "POST",
        redirect: "manual",
        headers: { origin: empty.url, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ key }),
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
      const res = await fetch(`${empty.url}/_tollgate/console/config`, { headers: { cookie } });
      return { status: res.status, html: await res.text() };
    };
    expect((await consolePage(ops)).html).toContain('data-drift="in-sync"');
    await call(empty, "PATCH", "/_tollgate/admin/tenants/acme", { quotas: { maxSandboxes: 9 } });
    for (const key of [ops, viewer]) {
      const page = await consolePage(key);
      expect(page.status).toBe(200);
      expect(page.html).toContain('data-drift="drift"');
      expect(page.html).toContain('data-drift-tenant="acme" data-action="update"');
      expect(page.html).toContain("quotas.maxSandboxes");
      expect(page.html).toContain('data-against="last-apply"');
      expect(page.html).not.toContain("sha256:");
    }
    expect((await consolePage(acmeKey)).status).toBe(404);
  });

  it("a read-only operator may diff, not apply", async () => {
    const doc = (await call(empty, "GET", "/_tollgate/admin/config/export?format=json")).json;
    expect((await call(empty, "POST", "/_tollgate/admin/config/diff", { document: doc }, viewer)).json.inSync).toBe(true);
    expect((await call(empty, "POST", "/_tollgate/admin/config/apply", { document: doc }, viewer)).status).toBe(403);
  });
});
