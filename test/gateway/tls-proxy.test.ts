// Behind a real nginx terminating TLS (certificate made at test time): the unmodified SDK creates a sandbox, runs a
// command and attaches a terminal over wss, puppeteer drives a session over wss, exposed ports work over https, and
// every URL the gateway hands out is https/wss on nginx's host, because nginx is a trusted proxy.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNginxTls, type NginxTls } from "../helpers/nginx-tls.js";

let emu: EmulatorHandle;
let gw: RunningGateway;
let nginx: NginxTls;
let found: Record<string, any>;
let clientOutput = "";

beforeAll(async () => {
  emu = await startEmulator({ modules: ["sandboxes", "sessions"] });
  const key = generateTenantKey();
  const hostOf = (u: string) => new URL(u).host;
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "info", trustedProxies: ["127.0.0.1", "::1"], publicHosts: ["localhost"] },
    upstream: {
      baseUrl: emu.controlUrl,
      allowedHosts: [hostOf(emu.controlUrl), hostOf(emu.runtimeUrl), `localhost:${new URL(emu.runtimeUrl).port}`],
    },
    tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }] }],
  });
  gw = await startNodeGateway({
    config,
    secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
    logSink: () => {},
  });
  nginx = await startNginxTls(`http://127.0.0.1:${gw.port}`);
  // The client runs apart: NODE_EXTRA_CA_CERTS is read once, when a Node process starts.
  const child = spawn(process.execPath, ["--import", "tsx", "test/gateway/tls-proxy-client.ts"], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: nginx.certFile, TG_GATEWAY: nginx.url, TG_KEY: key },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (clientOutput += d));
  child.stderr!.on("data", (d) => (clientOutput += d));
  const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
  await new Promise((r) => child.once("exit", r));
  clearTimeout(timer);
  const line = clientOutput.split("\n").find((l) => l.startsWith("{"));
  if (!line) throw new Error(`client printed no findings:\n${clientOutput}`);
  found = JSON.parse(line);
}, 200_000);

afterAll(async () => {
  await nginx?.stop();
  await gw?.close();
  await emu?.close();
});

describe("behind nginx terminating TLS", () => {
  it("hands out the runtime on https at nginx's host", () => {
    expect(found.runtimeBaseUrl).toMatch(new RegExp(`^${nginx.url}/sandbox/sbx_`));
  });

  it("runs a command through the SDK over https", () => {
    expect(found.exec).toBe("over-tls\n");
  });

  it("attaches a terminal over wss", () => {
    expect(found.terminal).toBe("wss-42");
  });

  it("serves exposed ports over https, at URLs on nginx's host", () => {
    expect(found.port).toMatchObject({ status: 200, body: "port:/hi" });
    expect(found.port.url).toMatch(new RegExp(`^https://3300-sbx_[^.]+\\.localhost:${nginx.port}/$`));
  });

  it("bootstraps an auth port with a Secure cookie and keeps the redirect on the port host", () => {
    expect(found.authPort).toMatchObject({ bootStatus: 302, location: "/", secure: true, status: 200, body: "auth:/" });
  });

  it("lets puppeteer drive a session over wss", () => {
    expect(found.session.title).toBe("through-wss");
    expect(found.session.wsEndpoint).toMatch(new RegExp(`^wss://localhost:${nginx.port}/devtools/browser/`));
  });

  it("went through nginx, over TLS only", async () => {
    const log = await nginx.accessLog();
    expect(log).toMatch(/POST \/api\/sandbox HTTP\/1\.1" 200/);
    expect(log).toMatch(/GET \/sandbox\/[^ ]+\/ws\?[^ ]* HTTP\/1\.1" 101/);
    expect(log).toMatch(/GET \/devtools\/browser\/[^ ]+ HTTP\/1\.1" 101/);
  });
});
