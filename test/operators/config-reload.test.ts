// Reload without a restart (docs/config-as-code.md): a real `tollgate start` process reads its config file again on
// SIGHUP and applies its tenants (the file is the truth for what it names, audited as system:config-reload), with its
// secrets read from files named by TOLLGATE_*_FILE; a broken file changes nothing and is named by its field. In
// process: a change to the file is picked up without a signal.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway } from "../../src/host/node.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";

const ops = generateTenantKey();
const newco = generateTenantKey();
const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};
const admin = async (url: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${url}/_tollgate/admin${path}`, {
    method,
    headers: { "x-api-key": ops, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: (await res.json()) as any };
};

describe("config reload on SIGHUP (a real gateway process)", () => {
  let dir: string;
  let gw: GatewayProcess;
  let config: any;
  const upstreamKey = `up_${randomBytes(16).toString("hex")}`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-reload-"));
    await writeFile(join(dir, "upstream-key"), upstreamKey);
    config = {
      server: { host: "127.0.0.1", port: 0, logLevel: "info" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      secrets: { checkSeconds: 600 }, // only the signal reloads here
      tenants: [
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] },
        { id: "acme", keys: [{ hash: await hashTenantKey(generateTenantKey()) }], budget: { daily: "5.00" } },
      ],
    };
    gw = await startGatewayProcess(config, {
      TOLLGATE_UPSTREAM_API_KEY: "",
      TOLLGATE_UPSTREAM_API_KEY_FILE: join(dir, "upstream-key"),
      TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex"),
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("applies the file's tenants on SIGHUP without a restart, audited; the admin API refuses to edit them", async () => {
    // One owner per tenant: the file owns acme, so an admin edit is refused (naming the file), and nothing drifts.
    const refused = await admin(gw.url, "PUT", "/tenants/acme/budget", { daily: "9.00" });
    expect(refused.status).toBe(409);
    expect(refused.json).toMatchObject({ code: "config_conflict", tenant: "acme", file: gw.configFile, fields: ["budget"] });
    expect((await admin(gw.url, "GET", "/config/drift")).json).toMatchObject({ inSync: true, against: { kind: "config-file" } });

    const next = structuredClone(config);
    next.tenants[1].budget.daily = "6.00";
    next.tenants.push({ id: "newco", scopes: ["search"], keys: [{ hash: await hashTenantKey(newco) }] });
    await writeFile(gw.configFile, JSON.stringify(next));
    const pid = gw.pid;
    gw.signal("SIGHUP");
    await until("the reload", async () => (await admin(gw.url, "GET", "/tenants/acme")).json.budget?.daily === "6.00");
    expect((await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": newco } })).status).toBe(200);
    expect(gw.pid).toBe(pid);
    expect(process.kill(pid, 0)).toBe(true); // the same process, still running
    const audit = (await admin(gw.url, "GET", "/audit?action=config.")).json.entries;
    expect(audit.find((e: any) => e.action === "config.tenant.update" && e.target === "tenant:acme")).toMatchObject({
      actor: "system:config-reload",
      before: { budget: { daily: "5.00" } },
      after: { budget: { daily: "6.00" } },
    });
    expect(audit.find((e: any) => e.action === "config.tenant.create" && e.target === "tenant:newco")).toBeTruthy();
    // A reload is not an operator's apply: drift is still measured against the file (no apply yet), now in sync.
    expect((await admin(gw.url, "GET", "/config/drift")).json).toMatchObject({ inSync: true, against: { kind: "config-file" } });
    // The log sink writes behind the requests: the line comes when it is flushed.
    await until("the reload's log line", () => gw.output().includes("config reloaded"));
  }, 60_000);

  it("a broken file changes nothing, is named by its field, and the gateway keeps serving", async () => {
    const next = JSON.parse(await readFile(gw.configFile, "utf8"));
    next.tenants[1].budget.daily = "lots";
    await writeFile(gw.configFile, JSON.stringify(next));
    const mark = gw.output().length;
    gw.signal("SIGHUP");
    await until("the complaint", () => gw.output().slice(mark).includes("config reload failed"));
    expect(gw.output().slice(mark)).toContain("tenants[1].budget.daily");
    expect((await admin(gw.url, "GET", "/tenants/acme")).json.budget.daily).toBe("6.00");
    expect(gw.output()).not.toContain(upstreamKey);
  }, 30_000);

  it("export -> edit -> apply -> reload of the gateway's file: nothing reverted, drift exact", async () => {
    // The gateway's file as last read well (acme's daily 6.00); the broken write above is fixed by the next reload.
    const good = structuredClone(config);
    good.tenants[1].budget.daily = "6.00";
    good.tenants.push({ id: "newco", scopes: ["search"], keys: [{ hash: await hashTenantKey(newco) }] });
    const exported = (await admin(gw.url, "GET", "/config/export?format=json")).json;
    expect(exported.fileOwned).toEqual(expect.arrayContaining(["ops", "acme"]));

    // One owner per tenant (issue 54): a tenant the gateway's file names is refused, by name and file, nothing written.
    const edited = structuredClone(exported.tenants);
    edited.find((t: any) => t.id === "acme").budget.daily = "7.50";
    for (const path of ["/config/diff", "/config/apply"]) {
      const r = await admin(gw.url, "POST", path, { document: { tenants: edited } });
      const refused = path === "/config/apply" ? r.json.plan : r.json;
      expect(refused.sections.tenants.changes, JSON.stringify(r.json)).toEqual([
        { id: "acme", action: "refused", reason: expect.stringContaining(`owned by the gateway's config file ${gw.configFile}`) },
      ]);
      if (path === "/config/apply") {
        expect(r.status).toBe(409);
        expect(r.json).toMatchObject({ code: "config_conflict", message: expect.stringContaining("edit it there") });
        expect(r.json.message).toContain("remove the tenant from that file");
      }
    }
    expect((await admin(gw.url, "GET", "/tenants/acme")).json.budget.daily).toBe("6.00");

    // A tenant apply owns: made, then changed, by apply (the exported file-owned blocks left as they are).
    const apicoHash = await hashTenantKey(generateTenantKey());
    const withApico = (daily: string) => [
      ...exported.tenants,
      { id: "apico", scopes: ["search"], keys: [{ hash: apicoHash }], budget: { daily } },
    ];
    for (const daily of ["3.00", "4.00"]) {
      const applied = await admin(gw.url, "POST", "/config/apply", { document: { tenants: withApico(daily) } });
      expect(applied.status, JSON.stringify(applied.json)).toBe(200);
    }
    expect((await admin(gw.url, "GET", "/tenants/apico")).json.budget.daily).toBe("4.00");
    // An admin edit after the apply: the one drift there should be.
    await admin(gw.url, "PUT", "/tenants/apico/quotas", { maxSandboxes: 2 });

    // The gateway's own file reloaded, with a tenant added: what apply changed stays, the file's tenants are the file's.
    good.tenants.push({ id: "later", scopes: ["search"], keys: [{ hash: await hashTenantKey(generateTenantKey()) }] });
    await writeFile(gw.configFile, JSON.stringify(good));
    gw.signal("SIGHUP");
    await until("the reload", async () => (await admin(gw.url, "GET", "/tenants/later")).status === 200);
    const apico = (await admin(gw.url, "GET", "/tenants/apico")).json;
    expect(apico.budget.daily).toBe("4.00");
    expect(apico.quotas.maxSandboxes).toBe(2);
    expect((await admin(gw.url, "GET", "/tenants/acme")).json.budget.daily).toBe("6.00");
    const drift = (await admin(gw.url, "GET", "/config/drift")).json;
    expect(drift).toMatchObject({ inSync: false, against: { kind: "last-apply", origin: "admin API (tollgate apply)" } });
    expect(drift.sections.tenants.changes).toEqual([{ id: "apico", action: "update", fields: ["quotas.maxSandboxes"] }]);
  }, 60_000);
});

describe("config reload on a file change (in process)", () => {
  it("picks up a changed file without a signal", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-reload-watch-"));
    const file = join(dir, "tollgate.json");
    const raw = {
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      secrets: { checkSeconds: 0.1 },
      tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] }],
    };
    await writeFile(file, JSON.stringify(raw));
    const gw = await startNodeGateway({
      config: parseConfig(raw),
      secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) },
      configFile: file,
      env: {},
      logSink: () => {},
    });
    try {
      await new Promise((r) => setTimeout(r, 300)); // the watcher has read the file once
      raw.tenants.push({ id: "later", scopes: ["search"], keys: [{ hash: await hashTenantKey(newco) }] } as any);
      await writeFile(file, JSON.stringify(raw));
      await until(
        "the change",
        async () => (await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": newco } })).status === 200,
      );
    } finally {
      await gw.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
