// `tollgate tenants …` and `tollgate keys … --gateway` drive a running gateway's admin API from a terminal.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

const run = promisify(execFile);
let gw: Awaited<ReturnType<typeof startTestGateway>>;
const ops = generateTenantKey();

const cli = (...args: string[]) =>
  run(process.execPath, ["--import", "tsx", "src/cli/index.ts", ...args], {
    env: { ...process.env, TOLLGATE_ADMIN_KEY: ops, TOLLGATE_GATEWAY: gw.url },
  })
    .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }))
    .catch((e) => ({ code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string }));
const whoami = async (key: string) => (await fetch(`${gw.url}/_tollgate/whoami`, { headers: { "x-api-key": key } })).status;

beforeAll(async () => {
  gw = await startTestGateway(
    {
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] }],
    },
    { tokenSecret: randomBytes(32).toString("hex") },
  );
});
afterAll(async () => {
  await gw?.close();
});

describe("tollgate tenants / keys against a running gateway", () => {
  it("creates a tenant and prints its key once; the key works", async () => {
    const r = await cli(
      "tenants",
      "create",
      "cli-co",
      "--scopes",
      "search,sessions",
      "--daily",
      "3.00",
      "--on-exhausted",
      "stop",
      "--rpm",
      "120",
    );
    expect(r.code).toBe(0);
    const key = r.stdout.match(/tg_[A-Za-z0-9_-]+/)![0];
    expect(await whoami(key)).toBe(200);
    const got = JSON.parse((await cli("tenants", "get", "cli-co")).stdout);
    expect(got).toMatchObject({
      id: "cli-co",
      scopes: ["search", "sessions"],
      budget: { daily: "3.00" },
      onExhausted: "stop",
      quotas: { requestsPerMinute: 120 },
    });
    const listed = (await cli("tenants", "list")).stdout;
    // A header row, then one row per tenant, every column starting where its header does.
    const [head, ...rows] = listed.trimEnd().split("\n");
    expect(head!.split(/ {2,}/)).toEqual(["TENANT", "STATE", "SCOPES", "KEYS", "SOURCE"]);
    const starts = ["STATE", "SCOPES", "KEYS", "SOURCE"].map((h) => head!.indexOf(h));
    const row = rows.find((r) => r.startsWith("cli-co "))!;
    expect(row.split(/ {2,}/)).toEqual(["cli-co", "enabled", "search,sessions", "1", "api"]);
    for (const r of rows) {
      expect(r).not.toContain("\t");
      for (const at of starts) {
        expect(r.slice(at - 2, at), r).toBe("  ");
        expect(r[at], r).not.toBe(" ");
      }
    }
  }, 60_000);

  it("updates, rotates, revokes and disables, and says what went wrong", async () => {
    const upd = JSON.parse((await cli("tenants", "update", "cli-co", "--monthly", "30.00")).stdout);
    expect(upd.budget).toEqual({ daily: "3.00", monthly: "30.00" });
    const made = await cli("keys", "create", "--tenant", "cli-co", "--label", "ci", "--json");
    const issued = JSON.parse(made.stdout);
    expect(await whoami(issued.key)).toBe(200);
    const rotated = await cli("keys", "rotate", "--tenant", "cli-co", "--key", issued.id);
    const newKey = rotated.stdout.match(/tg_[A-Za-z0-9_-]+/)![0];
    expect(await whoami(issued.key)).toBe(401);
    expect(await whoami(newKey)).toBe(200);
    const newId = rotated.stdout.match(/key id: (\w+)/)![1]!;
    expect((await cli("keys", "revoke", "--tenant", "cli-co", "--key", newId)).code).toBe(0);
    expect(await whoami(newKey)).toBe(401);
    expect(JSON.parse((await cli("tenants", "disable", "cli-co")).stdout).enabled).toBe(false);
    const bad = await cli("tenants", "update", "cli-co", "--daily", "lots");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("400 invalid_body: budget.daily:");
    const wrongKey = await run(
      process.execPath,
      ["--import", "tsx", "src/cli/index.ts", "tenants", "list", "--gateway", gw.url, "--admin-key", "tg_wrong"],
      { env: { ...process.env, TOLLGATE_ADMIN_KEY: "", TOLLGATE_GATEWAY: "" } },
    ).catch((e) => e);
    expect(wrongKey.stderr).toContain("401 invalid_api_key");
  }, 60_000);

  it("tenants update prints the refusal of a tenant the config file owns: the tenant, the file, what to do", async () => {
    const r = await cli("tenants", "update", "ops", "--daily", "9.00");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("409 config_conflict");
    expect(r.stderr).toContain('tenant "ops" is owned by the gateway\'s config file');
    expect(r.stderr).toContain("edit it there (a reload applies it), or remove the tenant from that file");
    expect(JSON.parse((await cli("tenants", "get", "ops")).stdout).budget).toEqual({});
  }, 60_000);

  it("keeps the offline `keys create` when no gateway is named", async () => {
    const r = await run(process.execPath, ["--import", "tsx", "src/cli/index.ts", "keys", "create", "--tenant", "acme"], {
      env: { ...process.env, TOLLGATE_GATEWAY: "" },
    });
    expect(r.stdout).toMatch(/keys = \[\{ hash = "sha256:[0-9a-f]{64}", createdAt = "[^"]+" \}\]/);
  }, 30_000);
});
