// Tenants cannot see or touch each other's sandboxes: foreign ids look missing on every id-bearing route, forged or
// expired gateway tokens are refused, and a port host the gateway did not hand out reaches nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import WebSocket from "ws";
import type { Hyperbrowser } from "@hyperbrowser/sdk";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;
import { gatewayCall, portCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { assertNoUpstreamSecrets } from "./sandboxes-leaks.js";

let s: SandboxStack;
let a: SandboxHandle;
let b: SandboxHandle;
let aliceToken: string;
let bobToken: string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const key = (k: string) => ({ "x-api-key": k });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

beforeAll(async () => {
  s = await startSandboxStack();
  a = await s.alice.sandboxes.create({ imageName: "node" });
  b = await s.bob.sandboxes.create({ imageName: "node" });
  aliceToken = (await gatewayCall(s, "GET", `/api/sandbox/${a.id}`, { headers: key(s.keys.alice) })).json.token;
  bobToken = (await gatewayCall(s, "GET", `/api/sandbox/${b.id}`, { headers: key(s.keys.bob) })).json.token;
  await a.processes.start(`node -e 'require("http").createServer((q,r)=>r.end("alice-app")).listen(3000)'`);
  await a.expose({ port: 3000 });
  await a.expose({ port: 3001, auth: true });
});
afterAll(async () => {
  if (s) await assertNoUpstreamSecrets(s);
  await s?.close();
});

describe("control plane", () => {
  it.each([
    ["GET", ""],
    ["PUT", "/stop"],
    ["POST", "/expose", { port: 4000 }],
    ["POST", "/unexpose", { port: 3000 }],
    ["POST", "/snapshot", {}],
    ["PUT", "/network", { allowInternetAccess: false }],
  ])("answers %s /api/sandbox/<foreign id>%s with the upstream's 404", async (method, suffix, body?: object) => {
    const res = await gatewayCall(s, method, `/api/sandbox/${a.id}${suffix}`, {
      headers: key(s.keys.bob),
      body: body ? JSON.stringify(body) : undefined,
    });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ message: `Sandbox ${a.id} not found`, code: "not_found" });
  });

  it("left the foreign sandbox untouched", async () => {
    const detail = await s.alice.sandboxes.get(a.id);
    expect(detail.status).toBe("active");
    expect(detail.exposedPorts.map((p) => p.port)).toEqual([3000, 3001]);
    expect((await a.exec("echo ok")).stdout).toBe("ok\n");
  });

  it("answers an id nobody created here with 404, and no key with 401", async () => {
    expect((await gatewayCall(s, "GET", "/api/sandbox/sbx_doesnotexist", { headers: key(s.keys.alice) })).status).toBe(404);
    expect((await gatewayCall(s, "GET", `/api/sandbox/${a.id}`)).status).toBe(401);
    expect((await gatewayCall(s, "GET", "/api/sandboxes", { headers: key("tg_not-a-real-key-at-all-000000") })).status).toBe(401);
  });
});

describe("runtime plane", () => {
  it("refuses another sandbox's token as if the sandbox did not exist (HTTP and WebSocket)", async () => {
    const res = await gatewayCall(s, "POST", `/sandbox/${a.id}/exec`, {
      headers: bearer(bobToken),
      body: JSON.stringify({ command: "id" }),
    });
    expect(res.status).toBe(404);
    const ws = await new Promise<{ status: number }>((resolve) => {
      const sock = new WebSocket(`ws://127.0.0.1:${s.gw.port}/sandbox/${a.id}/pty/pty_x/ws?sessionId=${a.id}`, {
        headers: bearer(bobToken),
      });
      sock.once("unexpected-response", (_req, res) => resolve({ status: res.statusCode ?? 0 }));
      sock.once("open", () => (sock.close(), resolve({ status: 101 })));
      sock.once("error", () => {});
    });
    expect(ws.status).toBe(404);
  });

  it("refuses missing, forged, tenant-key, alg:none and expired tokens with 401", async () => {
    const exec = (headers: Record<string, string>) =>
      gatewayCall(s, "POST", `/sandbox/${a.id}/exec`, { headers, body: JSON.stringify({ command: "id" }) });
    expect((await exec({})).json.code).toBe("token_missing");
    const claims = { k: "sandbox", r: a.id, s: ["runtime", "terminal", "ports"] };
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("tollgate")
      .setSubject("alice")
      .setJti("x")
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(new TextEncoder().encode("not-the-gateway-secret"));
    expect((await exec(bearer(forged))).json.code).toBe("token_invalid");
    const none = `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(JSON.stringify({ ...claims, iss: "tollgate", sub: "alice", exp: 9e9 })).toString("base64url")}.`;
    expect((await exec(bearer(none))).status).toBe(401);
    expect((await exec(bearer(s.keys.alice))).status).toBe(401);
    const short = await s.gw.gateway.services.tokens.mint({
      tenant: "alice",
      kind: "sandbox",
      resource: a.id,
      scopes: ["runtime"],
      ttlSeconds: 1,
    });
    expect((await exec(bearer(short.token))).status).toBe(200);
    await sleep(2100);
    expect((await exec(bearer(short.token))).json.code).toBe("token_expired");
  });

  it("needs the terminal scope for /pty and the runtime scope elsewhere", async () => {
    const portsOnly = await s.gw.gateway.services.tokens.mint({
      tenant: "alice",
      kind: "sandbox",
      resource: a.id,
      scopes: ["ports"],
      ttlSeconds: 60,
    });
    expect((await gatewayCall(s, "GET", `/sandbox/${a.id}/processes`, { headers: bearer(portsOnly.token) })).status).toBe(403);
    const runtimeOnly = await s.gw.gateway.services.tokens.mint({
      tenant: "alice",
      kind: "sandbox",
      resource: a.id,
      scopes: ["runtime"],
      ttlSeconds: 60,
    });
    expect(
      (
        await gatewayCall(s, "POST", `/sandbox/${a.id}/pty`, {
          headers: bearer(runtimeOnly.token),
          body: JSON.stringify({ command: "bash" }),
        })
      ).status,
    ).toBe(403);
    expect((await gatewayCall(s, "GET", `/sandbox/${a.id}/processes`, { headers: bearer(aliceToken) })).status).toBe(200);
  });

  it("serves a presigned ticket only on the sandbox it was issued for", async () => {
    await a.files.writeText("/home/ubuntu/p.txt", "p");
    const url = new URL((await a.files.downloadUrl("/home/ubuntu/p.txt")).url);
    expect((await gatewayCall(s, "GET", `${url.pathname}${url.search}`)).text).toBe("p");
    expect((await gatewayCall(s, "GET", `/sandbox/${b.id}/files/presigned${url.search}`)).status).toBe(401);
  });
});

describe("exposed ports", () => {
  const host = (port: number, id: string, rest?: string) => `${port}-${id}.${rest ?? `localhost:${s.gw.port}`}`;

  it("serves the public port by Host only under the host it handed out", async () => {
    let res = await portCall(s, "http://x/", { host: host(3000, a.id) });
    for (let i = 0; i < 40 && res.status !== 200; i++) await sleep(100), (res = await portCall(s, "http://x/", { host: host(3000, a.id) }));
    expect(res.text).toBe("alice-app");
    for (const spoof of [
      host(3000, a.id, "evil.example"),
      host(3000, a.id, `127.0.0.1:${s.gw.port}`),
      host(3000, a.id, "localhost:1"),
      host(3000, a.id, `localhost:${s.gw.port}.evil.example`),
    ]) {
      const r = await portCall(s, "http://x/api/sandboxes", { host: spoof, headers: key(s.keys.alice) });
      // 400: Node refuses a Host that is no valid host at all before any route runs.
      expect([400, 404], spoof).toContain(r.status);
    }
  });

  it("answers unknown sandboxes with 404 and refuses another tenant's token on an auth port", async () => {
    expect((await portCall(s, "http://x/", { host: host(3000, "sbx_unknown") })).status).toBe(404);
    expect((await portCall(s, "http://x/", { host: host(3001, a.id), headers: bearer(bobToken) })).status).toBe(404);
    expect((await portCall(s, "http://x/", { host: host(3001, a.id) })).status).toBe(401);
    const forgedGrant = `http://x/_hb/auth?grant=${encodeURIComponent(bobToken)}&next=%2F`;
    expect((await portCall(s, forgedGrant, { host: host(3001, a.id) })).status).toBe(404);
    expect((await portCall(s, "http://x/", { host: host(3001, a.id), headers: { cookie: `tollgate_port=${bobToken}` } })).status).toBe(401);
  });
});
