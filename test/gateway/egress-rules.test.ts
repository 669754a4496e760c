// Egress rules (allowOut / denyOut) through the gateway with the unmodified SDK: forwarded in one canonical spelling
// (what the upstream stores is what the egress floor checked), and an entry that is not plainly an address, a CIDR
// range or a host name refused with a 400 naming the field, before anything reaches the upstream.
import { randomBytes } from "node:crypto";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

let emu: EmulatorHandle;
let gw: RunningGateway;
let plain: Hyperbrowser;
let floored: Hyperbrowser;
let gatewayUrl: string;
const keys = { plain: generateTenantKey(), floored: generateTenantKey() };
const stops: Array<() => Promise<unknown>> = [];

/** How many sandboxes the upstream holds (asked of the emulator directly): a refused body must not have made one. */
async function upstreamSandboxes(): Promise<number> {
  const res = await fetch(`${emu.controlUrl}/api/sandboxes?limit=100`, { headers: { "x-api-key": emu.apiKey } });
  return ((await res.json()) as { totalCount: number }).totalCount;
}

beforeAll(async () => {
  emu = await startEmulator({ modules: ["sandboxes"] });
  const runtimePort = new URL(emu.runtimeUrl).port;
  const raw: Record<string, unknown> = {
    server: { host: "127.0.0.1", port: 0, logLevel: "error" },
    upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
    payments: { enabled: false },
    tenants: [
      { id: "plain", keys: [{ hash: await hashTenantKey(keys.plain) }], scopes: ["sandboxes", "sessions"] },
      {
        id: "floored",
        keys: [{ hash: await hashTenantKey(keys.floored) }],
        scopes: ["sandboxes", "sessions"],
        policy: { egress: { allowOut: ["allowed.example", "10.0.0.0/8"] } },
      },
    ],
  };
  gw = await startNodeGateway({
    config: parseConfig(raw),
    secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
  });
  gatewayUrl = `http://localhost:${gw.port}`;
  plain = new Hyperbrowser({ apiKey: keys.plain, baseUrl: gatewayUrl });
  floored = new Hyperbrowser({ apiKey: keys.floored, baseUrl: gatewayUrl });
}, 60_000);

afterAll(async () => {
  for (const stop of stops) await stop().catch(() => {});
  await gw?.close();
  await emu?.close();
});

describe("egress rules are forwarded in their canonical spelling", () => {
  it("on sandbox creation and on a network update", async () => {
    const sbx = await plain.sandboxes.create({
      imageName: "node",
      allowOut: ["203.0.113.0/024", "Example.COM.", "198.51.100.7/24"],
      denyOut: ["2001:DB8:0:0:0:0:0:0/32", "*.Tracker.example"],
    });
    stops.push(() => sbx.stop());
    // What the upstream stored (its own detail, read back through the gateway).
    const detail = await plain.sandboxes.get(sbx.id);
    expect(detail.network).toEqual({
      allowInternetAccess: expect.any(Boolean),
      allowOut: ["203.0.113.0/24", "example.com", "198.51.100.0/24"],
      denyOut: ["2001:db8::/32", "*.tracker.example"],
    });
    const updated = await sbx.updateNetwork({ allowOut: ["192.0.2.9/024"], denyOut: ["::FFFF:10.0.0.0/104"] });
    expect(updated.network).toMatchObject({ allowOut: ["192.0.2.0/24"], denyOut: ["10.0.0.0/8"] });
  });

  it("before the egress floor reads them: a spelled-out range inside the floor passes as the range it is", async () => {
    const sbx = await floored.sandboxes.create({ imageName: "node", allowOut: ["10.1.2.3/008"] });
    stops.push(() => sbx.stop());
    expect((await floored.sandboxes.get(sbx.id)).network?.allowOut).toEqual(["10.0.0.0/8"]);
  });
});

describe("an egress rule that is not plainly an address, a range or a host is refused, naming the field", () => {
  it("on sandbox creation, network updates and session creation: 400 invalid_params, nothing forwarded", async () => {
    const before = await upstreamSandboxes();
    await expect(plain.sandboxes.create({ imageName: "node", allowOut: ["0.0.0.0/0.allowed.example"] })).rejects.toMatchObject({
      statusCode: 400,
      code: "invalid_params",
      message: expect.stringContaining("allowOut.0"),
    });
    await expect(plain.sandboxes.create({ imageName: "node", denyOut: ["example.com", "203.0.113.0/33"] })).rejects.toMatchObject({
      statusCode: 400,
      code: "invalid_params",
      message: expect.stringContaining("denyOut.1"),
    });
    expect(await upstreamSandboxes()).toBe(before);

    const sbx = await plain.sandboxes.create({ imageName: "node" });
    stops.push(() => sbx.stop());
    await expect(sbx.updateNetwork({ allowOut: ["example.com:443"] })).rejects.toMatchObject({
      statusCode: 400,
      code: "invalid_params",
      message: expect.stringContaining("allowOut.0"),
    });
    expect((await plain.sandboxes.get(sbx.id)).network?.allowOut).toEqual([]);

    // Sessions take the same rules (the emulator here runs no browsers: a refusal never gets that far).
    const res = await fetch(`${gatewayUrl}/api/session`, {
      method: "POST",
      headers: { "x-api-key": keys.plain, "content-type": "application/json" },
      body: JSON.stringify({ allowOut: ["1.2.3"] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_params", message: expect.stringContaining("allowOut.0") });
  });

  it("under an egress floor, where the entry would have read as a host inside an allowed domain", async () => {
    const before = await upstreamSandboxes();
    await expect(floored.sandboxes.create({ imageName: "node", allowOut: ["0.0.0.0/0.allowed.example"] })).rejects.toMatchObject({
      statusCode: 400,
      code: "invalid_params",
    });
    expect(await upstreamSandboxes()).toBe(before);
  });
});

describe("an egress floor in the configuration is read the same way", () => {
  it("keeps its rules in the canonical spelling, and refuses one that is not plainly a rule, naming the field", () => {
    const tenant = { id: "t", keys: [{ hash: `sha256:${"a".repeat(64)}` }] };
    const config = parseConfig({ tenants: [{ ...tenant, policy: { egress: { allowOut: ["10.1.2.3/008", "Allowed.Example."] } } }] });
    expect(config.tenants[0]!.policy?.egress?.allowOut).toEqual(["10.0.0.0/8", "allowed.example"]);
    expect(() => parseConfig({ policy: { egress: { denyOut: ["ok.example", "0.0.0.0/0.allowed.example"] } } })).toThrow(
      /policy\.egress\.denyOut\[1\]: expected an address, a CIDR range/,
    );
  });
});
