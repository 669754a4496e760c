// A runtime host the gateway does not follow is named for the operator (issue 54): the emulator hands out
// `localhost:<port>` runtime URLs; a gateway that lists the address it listens on (127.0.0.1:<port>, the mistake its old
// banner led to) refuses the sandbox with 502 upstream_url_refused, and its log names the host to add.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";

describe("upstream_url_refused", () => {
  let emu: EmulatorHandle;
  let gw: RunningGateway;
  const logs: string[] = [];
  const key = generateTenantKey();
  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sandboxes"] });
    const port = new URL(emu.runtimeUrl).port;
    gw = await startNodeGateway({
      config: parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "info" },
        upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${port}`] },
        payments: { enabled: false },
        credits: { enabled: false },
        tenants: [{ id: "acme", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(key) }] }],
      }),
      secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
      logSink: (l) => logs.push(l),
    });
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await emu?.close();
  });

  it("names the refused host in the log, not to the tenant", async () => {
    const r = await fetch(`${gw.url}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    const body = await r.json();
    expect(r.status, JSON.stringify(body)).toBe(502);
    expect(body.code).toBe("upstream_url_refused");
    const host = `localhost:${new URL(emu.runtimeUrl).port}`;
    expect(JSON.stringify(body)).not.toContain(host);
    const line = logs.find((l) => l.includes("sandbox.runtime.refused"));
    expect(line, logs.join("\n")).toBeDefined();
    expect(JSON.parse(line!)).toMatchObject({ host, reason: `runtime host ${host} not in upstream.allowedHosts` });
  }, 60_000);
});
