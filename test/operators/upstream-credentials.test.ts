// Signals that tell the truth (issue 54), against a real gateway in front of the emulator:
// - the gateway's upstream key rotated (its file rewritten, as an operator would) to one the upstream rejects: within
//   seconds /_tollgate/ready turns degraded naming it, tollgate_upstream_credentials_rejected goes to 1 and its total
//   counts, the upstream.credentials_rejected alert is raised (audited), an operator's console page shows it, and a
//   tenant's call answers 502 upstream_credentials_rejected (never the upstream's 401 "Invalid API key"); restoring
//   the key turns all of it back within seconds;
// - a reload of the config file that fails sets tollgate_config_reload_failed, /ready's config check and the console's
//   banner; a good file clears them.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";

describe("the gateway's own upstream key, and its config file, watched", () => {
  let emu: EmulatorHandle;
  let dir: string;
  let gw: RunningGateway;
  let keyFile: string;
  let configFile: string;
  let raw: Record<string, unknown>;
  const keys = { acme: generateTenantKey(), ops: generateTenantKey() };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-credentials-"));
    emu = await startEmulator({ modules: ["x402"] });
    keyFile = join(dir, "upstream-key");
    await writeFile(keyFile, emu.apiKey);
    raw = {
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: emu.controlUrl },
      payments: { enabled: false },
      cache: { enabled: false },
      secrets: { upstreamApiKeyFile: keyFile, checkSeconds: 0.5 },
      state: { backend: "memory", rehearsal: true },
      tenants: [
        { id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(keys.acme) }] },
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
      ],
    };
    configFile = join(dir, "tollgate.json");
    await writeFile(configFile, JSON.stringify(raw));
    gw = await startNodeGateway({
      config: parseConfig(raw),
      secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
      configFile,
      env: {},
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await emu?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const ready = async () => (await (await fetch(`${gw.url}/_tollgate/ready`, { headers: { "x-api-key": keys.ops } })).json()) as any;
  const metrics = async () => (await fetch(`${gw.url}/_tollgate/metrics`, { headers: { "x-api-key": keys.ops } })).text();
  const search = () =>
    fetch(`${gw.url}/api/web/search`, {
      method: "POST",
      headers: { "x-api-key": keys.acme, "content-type": "application/json" },
      body: JSON.stringify({ query: `credentials ${Math.random()}` }),
    });
  /** Polls /ready until `until` holds; the seconds it took. */
  const waitReady = async (until: (r: any) => boolean): Promise<{ seconds: number; report: any }> => {
    const started = Date.now();
    for (;;) {
      const report = await ready();
      if (until(report)) return { seconds: (Date.now() - started) / 1000, report };
      if (Date.now() - started > 20_000) throw new Error(`/ready did not turn: ${JSON.stringify(report)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** The console's overview as an operator signed in with the admin key sees it. */
  const consolePage = async () => {
    const login = await fetch(`${gw.url}/_tollgate/console/login`, {
      method: "POST",
      redirect: "manual",
      headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ key: keys.ops }),
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get("set-cookie")!.split(";")[0]!;
    return (await fetch(`${gw.url}/_tollgate/console`, { headers: { cookie } })).text();
  };

  it("a rotation to a rejected key turns /ready, a metric and an alert within seconds; tenants see the new code; restoring turns them back", async () => {
    const before = await waitReady((r) => r.status === "ready");
    expect(before.report.checks.upstream).toMatchObject({ ok: true, credentials: "accepted" });
    expect((await search()).status).toBe(200);

    await writeFile(keyFile, "hb_rejected_key_00000000");
    const rejected = await waitReady((r) => r.status === "degraded");
    expect(rejected.report.checks.upstream).toMatchObject({ ok: true, credentials: "rejected", status: 401 });
    expect(rejected.report.checks.upstream.error).toContain("upstream_credentials_rejected");
    expect(rejected.seconds).toBeLessThan(5);

    const refused = await search();
    expect(refused.status).toBe(502);
    const body = await refused.json();
    expect(body.code).toBe("upstream_credentials_rejected");
    expect(body.message).toContain("your key is fine");
    expect(JSON.stringify(body)).not.toContain("hb_rejected_key");

    const m = await metrics();
    expect(m).toMatch(/^tollgate_upstream_credentials_rejected\{account="default"\} 1$/m);
    expect(Number(/^tollgate_upstream_credentials_rejected_total\{account="default"\} (\d+)$/m.exec(m)?.[1])).toBeGreaterThanOrEqual(2);
    let audit: Array<{ action: string }> = [];
    for (let i = 0; i < 50 && !audit.some((e) => e.action === "alert.upstream.credentials_rejected"); i++) {
      await new Promise((r) => setTimeout(r, 100));
      audit = ((await (await fetch(`${gw.url}/_tollgate/admin/audit?limit=50`, { headers: { "x-api-key": keys.ops } })).json()) as any)
        .entries;
    }
    expect(audit.filter((e) => e.action === "alert.upstream.credentials_rejected")).toHaveLength(1);
    expect(await metrics()).toMatch(/^tollgate_alerts_total\{type="upstream.credentials_rejected"\} 1$/m);
    expect(await consolePage()).toContain("The upstream rejects the gateway&#39;s API key");

    await writeFile(keyFile, emu.apiKey);
    const restored = await waitReady((r) => r.status === "ready");
    expect(restored.report.checks.upstream.credentials).toBe("accepted");
    expect(restored.seconds).toBeLessThan(5);
    expect((await search()).status).toBe(200);
    expect(await metrics()).toMatch(/^tollgate_upstream_credentials_rejected\{account="default"\} 0$/m);
    expect(await consolePage()).not.toContain("data-gateway-warning");
  }, 90_000);

  it("a failed reload of the config file sets a metric, /ready degraded and a console banner; a good one clears them", async () => {
    await writeFile(configFile, "{ not json");
    const failed = await waitReady((r) => r.checks.config?.ok === false);
    expect(failed.report.status).toBe("degraded");
    expect(failed.report.checks.config.error).toContain(configFile);
    expect(await metrics()).toMatch(/^tollgate_config_reload_failed 1$/m);
    expect(await consolePage()).toContain("data-gateway-warning");

    await writeFile(configFile, JSON.stringify(raw));
    const ok = await waitReady((r) => r.checks.config?.ok === true);
    expect(ok.report.status).toBe("ready");
    expect(await metrics()).toMatch(/^tollgate_config_reload_failed 0$/m);
    expect(await metrics()).toMatch(/^tollgate_config_reloads_total\{result="failed"\} 1$/m);
  }, 60_000);
});
