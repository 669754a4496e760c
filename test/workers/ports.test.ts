// Exposed ports through the Worker entry inside workerd, in front of the emulator on 127.0.0.1 (as `dev --worker` runs):
// Workers' fetch cannot set Host, so the relay names the port in x-tollgate-port-host ("auto" picks "port-header"),
// and a port request never reaches the sandbox's runtime API. The exposed-port scenarios the official SDK's own e2e
// suite checks (reserved port, public, auth, unexpose; 4/4 through the Node gateway, 0/4 on the Worker before) are
// replayed here with the same requests the SDK sends, plus a WebSocket to a port and the shareable-link attack.
import { env } from "cloudflare:test";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HTTP_PORT = 3210;
const WS_PORT = 3211;

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function workerEnv(key: string, upstream: Record<string, unknown> = {}) {
  const runtimePort = new URL(stack.runtimeUrl).port;
  return {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify({
      server: { logLevel: "error", publicOrigin: "https://gateway.test" },
      upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${runtimePort}`], ...upstream },
      payments: { enabled: false },
      state: { backend: "durable-objects" },
      tenants: [{ id: `ports-${crypto.randomUUID().slice(0, 8)}`, keys: [{ hash: await sha256(key) }] }],
    }),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_TOKEN_SECRET: "p".repeat(40),
  };
}
const key = `tg_worker_${crypto.randomUUID()}`;
let e: Record<string, unknown>;
/** A request to the Worker at any URL (the gateway's own host, or a port host it handed out). */
const at = (url: string, init: RequestInit = {}) => worker.fetch(new Request(url, init), e as any, ctx);
const call = (path: string, init: RequestInit = {}) => at(`https://gateway.test${path}`, init);
const json = { "content-type": "application/json" };

let sbx: { id: string; token: string };
const runtime = (path: string, body: unknown) =>
  call(`/sandbox/${sbx.id}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${sbx.token}`, ...json },
    body: JSON.stringify(body),
  });
const expose = (body: unknown) =>
  call(`/api/sandbox/${sbx.id}/expose`, { method: "POST", headers: { "x-api-key": key, ...json }, body: JSON.stringify(body) });

/** Retries a port request until `ok` holds (the app inside may still be starting), as the SDK's suite does. */
async function until(url: string, init: RequestInit, ok: (status: number, body: string) => boolean) {
  let last = { status: 0, body: "" };
  for (let i = 1; i <= 15; i++) {
    const res = await at(url, init);
    last = { status: res.status, body: await res.text() };
    if (ok(last.status, last.body)) return last;
    await sleep(100 * i);
  }
  throw new Error(`${url}: last answer ${last.status} ${last.body}`);
}

// A dependency-free WebSocket echo server for inside the sandbox (small text frames only).
const wsServer = `const http=require("http"),crypto=require("crypto");
const s=http.createServer((q,r)=>r.end("http"));
s.on("upgrade",(req,sock)=>{
  const acc=crypto.createHash("sha1").update(req.headers["sec-websocket-key"]+"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
  sock.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: "+acc+"\\r\\n\\r\\n");
  sock.on("data",(b)=>{
    if((b[0]&15)===8) return sock.end();
    const len=b[1]&127,mask=b.subarray(2,6),d=Buffer.alloc(len);
    for(let i=0;i<len;i++) d[i]=b[6+i]^mask[i%4];
    const out=Buffer.from("echo:"+d+":"+req.headers.host+":"+(req.headers.authorization?"auth":"none"));
    sock.write(Buffer.concat([Buffer.from([0x81,out.length]),out]));
  });
});
s.listen(${WS_PORT});`;

describe.sequential("exposed ports through the Worker (workerd) in front of the local emulator", () => {
  beforeAll(async () => {
    e = await workerEnv(key);
    const created = await call("/api/sandbox", {
      method: "POST",
      headers: { "x-api-key": key, ...json },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(created.status).toBe(200);
    sbx = (await created.json()) as { id: string; token: string };
    // The app echoes what reached it, and the Host it was reached by.
    const app = `require("http").createServer((q,r)=>{r.writeHead(200,{"content-type":"text/plain"});r.end("sdk-exposed:"+q.method+":"+q.url+":"+q.headers.host)}).listen(${HTTP_PORT},"0.0.0.0")`;
    expect((await runtime("/processes", { command: `node -e '${app}'` })).status).toBe(200);
    expect((await runtime("/files/write", { path: "/home/ubuntu/ws.js", data: wsServer, encoding: "utf8" })).status).toBeLessThan(300);
    expect((await runtime("/processes", { command: "node /home/ubuntu/ws.js" })).status).toBe(200);
    // Not exposed yet: 403 even with the bearer (the SDK suite's own readiness probe).
    await until(`https://${HTTP_PORT}-${sbx.id}.gateway.test/`, { headers: { authorization: `Bearer ${sbx.token}` } }, (s) => s === 403);
  });

  afterAll(async () => {
    if (sbx) await call(`/api/sandbox/${sbx.id}/stop`, { method: "PUT", headers: { "x-api-key": key } });
  });

  it("refuses to expose the reserved runtime port 4001 (400, cannot be exposed)", async () => {
    const res = await expose({ port: 4001 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toContain("cannot be exposed");
  });

  it("serves a public port at the URL it hands out, the app seeing its own port host", async () => {
    const res = await expose({ port: HTTP_PORT, auth: false });
    expect(res.status).toBe(200);
    const exposure = (await res.json()) as { port: number; auth: boolean; url: string; browserUrl?: string };
    expect(exposure).toMatchObject({ port: HTTP_PORT, auth: false, url: `https://${HTTP_PORT}-${sbx.id}.gateway.test/` });
    expect(exposure.browserUrl).toBe(exposure.url);
    const got = await until(exposure.url, {}, (s, b) => s === 200 && b.startsWith("sdk-exposed:GET:/"));
    expect(got.body).toBe(`sdk-exposed:GET:/:${HTTP_PORT}-${sbx.id}.localhost:${new URL(stack.runtimeUrl).port}`);
  });

  it("requires the sandbox bearer on an auth port: 401 without, the app's answer with it", async () => {
    const res = await expose({ port: HTTP_PORT, auth: true });
    const exposure = (await res.json()) as { auth: boolean; url: string; browserUrl: string; browserUrlExpiresAt: unknown };
    expect(exposure.auth).toBe(true);
    expect(exposure.browserUrl).toContain("/_hb/auth");
    expect(exposure.browserUrlExpiresAt).toBeTruthy();
    expect((await until(exposure.url, {}, (s) => s === 401)).status).toBe(401);
    const ok = await until(
      exposure.url,
      { headers: { authorization: `Bearer ${sbx.token}` } },
      (s, b) => s === 200 && b.includes("sdk-exposed:GET:/"),
    );
    expect(ok.status).toBe(200);
  });

  it("a shareable ports link cannot reach the runtime API: /sandbox/<id>/exec on the port host is the app's path", async () => {
    const exposure = (await (await expose({ port: HTTP_PORT, auth: true })).json()) as { url: string; browserUrl: string };
    const boot = await at(exposure.browserUrl, { redirect: "manual" });
    expect(boot.status).toBe(302);
    const cookie = boot.headers.get("set-cookie")!.split(";")[0]!;
    for (const path of [`sandbox/${sbx.id}/exec`, "sandbox/exec", `sandbox/${sbx.id}/processes`]) {
      const res = await at(`${exposure.url}${path}`, {
        method: "POST",
        headers: { cookie, ...json },
        body: JSON.stringify({ command: "touch /tmp/ports-link-ran" }),
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`sdk-exposed:POST:/${path}:${HTTP_PORT}-${sbx.id}.localhost:${new URL(stack.runtimeUrl).port}`);
    }
    // Nothing ran: the file is not there.
    const check = await runtime("/exec", { command: "test -e /tmp/ports-link-ran && echo ran || echo clean" });
    expect(((await check.json()) as { result: { stdout: string } }).result.stdout.trim()).toBe("clean");
    // A client cannot name a port itself: its own x-tollgate-port-host is dropped, the runtime call stays a runtime call.
    const named = await call(`/sandbox/${sbx.id}/exec`, {
      method: "POST",
      headers: { authorization: `Bearer ${sbx.token}`, "x-tollgate-port-host": `${HTTP_PORT}-${sbx.id}.localhost`, ...json },
      body: JSON.stringify({ command: "echo runtime" }),
    });
    expect(((await named.json()) as { result: { stdout: string } }).result.stdout.trim()).toBe("runtime");
  });

  it("relays a WebSocket to an auth port with the gateway token, and refuses it without", async () => {
    const exposure = (await (await expose({ port: WS_PORT, auth: true })).json()) as { url: string };
    const open = (headers: Record<string, string>) => at(exposure.url, { headers: { Upgrade: "websocket", ...headers } });
    let res = await open({ authorization: `Bearer ${sbx.token}` });
    for (let i = 0; i < 40 && res.status !== 101; i++) await sleep(100), (res = await open({ authorization: `Bearer ${sbx.token}` }));
    expect(res.status).toBe(101);
    const ws = (res as Response & { webSocket: (WebSocket & { accept(): void }) | null }).webSocket!;
    ws.accept();
    const reply = new Promise<string>((r) => ws.addEventListener("message", (m: MessageEvent) => r(String(m.data)), { once: true }));
    ws.send("hi");
    // Admitted with the upstream's bearer the relay added, which the upstream keeps from the app; the app sees its own
    // port host.
    expect(await reply).toBe(`echo:hi:${WS_PORT}-${sbx.id}.localhost:${new URL(stack.runtimeUrl).port}:none`);
    ws.close();
    expect((await open({})).status).toBe(401);
  });

  it("unexposing removes the public route: 403", async () => {
    const exposure = (await (await expose({ port: HTTP_PORT, auth: false })).json()) as { url: string };
    const removed = await call(`/api/sandbox/${sbx.id}/unexpose`, {
      method: "POST",
      headers: { "x-api-key": key, ...json },
      body: JSON.stringify({ port: HTTP_PORT }),
    });
    expect(await removed.json()).toEqual({ port: HTTP_PORT, exposed: false });
    expect((await until(exposure.url, {}, (s) => s === 403)).status).toBe(403);
  });
});

describe("a port mode the Worker cannot carry out", () => {
  it('refuses upstream.exposedPorts = "host-header" at start, naming the field', async () => {
    const k = `tg_worker_${crypto.randomUUID()}`;
    const env2 = await workerEnv(k, { exposedPorts: "host-header" });
    const started = Promise.resolve().then(() => worker.fetch(new Request("https://gateway.test/_tollgate/health"), env2 as any, ctx));
    await expect(started).rejects.toThrow(/upstream\.exposedPorts: "host-header"/);
  });
});
