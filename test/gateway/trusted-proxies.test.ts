// X-Forwarded-Proto/Host/For are believed only from server.trustedProxies; with server.publicHosts no other Host is
// answered; `tollgate start` without either answers loopback names only. (Behind real nginx: tls-proxy.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, request } from "undici";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startGatewayProcess } from "../helpers/gateway-process.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

let s: SandboxStack;
let sbx: Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;
// The gateway trusts 127.0.0.2 only: the same test connects as a proxy (from 127.0.0.2) or as a stranger (127.0.0.1).
const asProxy = new Agent({ localAddress: "127.0.0.2" });
const asStranger = new Agent({ localAddress: "127.0.0.1" });

beforeAll(async () => {
  s = await startSandboxStack({ server: { trustedProxies: ["127.0.0.2/32"], publicHosts: ["localhost", "gw.example.com"] } });
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
});
afterAll(async () => {
  await sbx?.stop().catch(() => {});
  await s?.close();
  await asProxy.close();
  await asStranger.close();
});

async function call(agent: Agent, path: string, headers: Record<string, string>) {
  const res = await request(`http://127.0.0.1:${s.gw.port}${path}`, {
    dispatcher: agent,
    headers: { host: `localhost:${s.gw.port}`, "x-api-key": s.keys.alice, ...headers },
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

const forwarded = { "x-forwarded-proto": "https", "x-forwarded-host": "gw.example.com", "x-forwarded-for": "203.0.113.9, 127.0.0.2" };
const lastLog = (path: string) =>
  s.logs
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === "request" && l.path === path)
    .at(-1);

describe("from a trusted proxy", () => {
  it("hands out https URLs on the forwarded host (detail and minted tokens)", async () => {
    const res = await call(asProxy, `/api/sandbox/${sbx.id}`, forwarded);
    expect(res.status).toBe(200);
    expect(res.json.runtime.baseUrl).toBe(`https://gw.example.com/sandbox/${sbx.id}`);
    const minted = await request(`http://127.0.0.1:${s.gw.port}/_tollgate/tokens`, {
      method: "POST",
      dispatcher: asProxy,
      headers: { host: `localhost:${s.gw.port}`, "x-api-key": s.keys.alice, "content-type": "application/json", ...forwarded },
      body: JSON.stringify({ kind: "sandbox", sandboxId: sbx.id, scopes: ["terminal"] }),
    });
    expect(((await minted.body.json()) as any).runtime.baseUrl).toBe(`https://gw.example.com/sandbox/${sbx.id}`);
  });

  it("logs the client's address from X-Forwarded-For (the nearest hop that is not a trusted proxy)", async () => {
    await call(asProxy, "/api/sandboxes", forwarded);
    expect(lastLog("/api/sandboxes")?.client).toBe("203.0.113.9");
  });

  it("exposed-port URLs go on the forwarded host, with a Secure cookie from the https bootstrap", async () => {
    const res = await request(`http://127.0.0.1:${s.gw.port}/api/sandbox/${sbx.id}/expose`, {
      method: "POST",
      dispatcher: asProxy,
      headers: { host: `localhost:${s.gw.port}`, "x-api-key": s.keys.alice, "content-type": "application/json", ...forwarded },
      body: JSON.stringify({ port: 3200, auth: true }),
    });
    const e = (await res.body.json()) as any;
    expect(e.url).toBe(`https://3200-${sbx.id}.gw.example.com/`);
    const boot = new URL(e.browserUrl);
    const r = await call(asProxy, `${boot.pathname}${boot.search}`, { ...forwarded, "x-forwarded-host": boot.host });
    expect(r.status).toBe(302);
    expect(String(r.headers["set-cookie"])).toMatch(/; Secure/);
  });

  it("refuses a forwarded host that is not a host (400) or not public (421)", async () => {
    expect((await call(asProxy, "/api/sandboxes", { ...forwarded, "x-forwarded-host": "a/b@c" })).json.code).toBe("invalid_host");
    const spoofed = await call(asProxy, "/api/sandboxes", { ...forwarded, "x-forwarded-host": "evil.example" });
    expect(spoofed.status).toBe(421);
    expect(spoofed.json.code).toBe("host_not_allowed");
  });
});

describe("from anyone else", () => {
  it("ignores X-Forwarded-Proto/Host/For: URLs stay on the Host the client called", async () => {
    const res = await call(asStranger, `/api/sandbox/${sbx.id}`, forwarded);
    expect(res.status).toBe(200);
    expect(res.json.runtime.baseUrl).toBe(`http://localhost:${s.gw.port}/sandbox/${sbx.id}`);
    expect(lastLog(`/api/sandbox/${sbx.id}`)?.client).toBe("127.0.0.1");
  });

  it("a Host not in server.publicHosts is refused with 421 before any route runs, and never built into a URL", async () => {
    for (const host of ["evil.example", `evil.example:${s.gw.port}`, `3000-${sbx.id}.evil.example`]) {
      const res = await call(asStranger, `/api/sandbox/${sbx.id}`, { host });
      expect(res.status, host).toBe(421);
      expect(res.json).toMatchObject({ code: "host_not_allowed" });
    }
    const created = await request(`http://127.0.0.1:${s.gw.port}/api/sandbox`, {
      method: "POST",
      dispatcher: asStranger,
      headers: { host: "evil.example", "x-api-key": s.keys.alice, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(created.statusCode).toBe(421);
    await created.body.dump();
    expect((await s.alice.sandboxes.list()).sandboxes.length).toBe(1);
  });

  it("the health check answers any host (load balancers call it by address)", async () => {
    expect((await call(asStranger, "/_tollgate/health", { host: "10.1.2.3:8787" })).status).toBe(200);
  });
});

describe("tollgate start without publicOrigin or publicHosts", () => {
  it("answers loopback names only and says so at start", async () => {
    const upstream = await startEchoUpstream();
    const key = generateTenantKey();
    const gw = await startGatewayProcess(
      {
        server: { host: "127.0.0.1", port: 0 },
        upstream: { baseUrl: upstream.url },
        tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }] }],
      },
      { TOLLGATE_UPSTREAM_API_KEY: "up_" + "k".repeat(30), TOLLGATE_TOKEN_SECRET: "s".repeat(40) },
    );
    try {
      expect(gw.output()).toMatch(/answering only to localhost, 127\.0\.0\.1, \[::1\]/);
      const port = new URL(gw.url).port;
      const get = async (host: string) => (await request(`${gw.url}/_tollgate/whoami`, { headers: { host, "x-api-key": key } })).statusCode;
      expect(await get(`127.0.0.1:${port}`)).toBe(200);
      expect(await get(`localhost:${port}`)).toBe(200);
      expect(await get("evil.example")).toBe(421);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });
});
