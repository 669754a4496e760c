// Sandboxes through Tollgate with the unmodified SDK holding only a tenant key: every runtime operation, exposed
// ports, snapshots, and upstream runtime tokens that expire every 4 s underneath without the client noticing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import WebSocket from "ws";
import type { Hyperbrowser } from "@hyperbrowser/sdk";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;
import { gatewayCall, portCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { assertNoUpstreamSecrets } from "./sandboxes-leaks.js";

let s: SandboxStack;
let sbx: SandboxHandle;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Presigned and port URLs name `localhost`; connect to 127.0.0.1 and keep Host.
const raw = (url: string, init: Parameters<typeof request>[1] = {}) => {
  const u = new URL(url);
  return request(`http://127.0.0.1:${u.port}${u.pathname}${u.search}`, {
    ...init,
    headers: { host: u.host, ...((init.headers as any) ?? {}) },
  });
};

beforeAll(async () => {
  s = await startSandboxStack({ runtimeTokenTtlSeconds: 4 });
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
});
afterAll(async () => {
  if (s) await assertNoUpstreamSecrets(s);
  await s?.close();
});

describe("control plane", () => {
  it("hands out the gateway's runtime URL and its own token, never the upstream's", async () => {
    expect(sbx.runtime.baseUrl).toBe(`${s.gatewayUrl}/sandbox/${sbx.id}`);
    expect(sbx.runtime.host).toBe(s.gatewayUrl);
    const detail = await gatewayCall(s, "GET", `/api/sandbox/${sbx.id}`, { headers: { "x-api-key": s.keys.alice } });
    expect(detail.status).toBe(200);
    const claims = JSON.parse(Buffer.from(detail.json.token.split(".")[1], "base64url").toString());
    expect(claims).toMatchObject({ iss: "tollgate", sub: "alice", k: "sandbox", r: sbx.id, s: ["runtime", "terminal", "ports"] });
    expect(Date.parse(detail.json.tokenExpiresAt) - Date.now()).toBeGreaterThan(800_000);
  });

  it("lists only the tenant's own sandboxes, with a matching totalCount and paging", async () => {
    const second = await s.alice.sandboxes.create({ imageName: "debian" });
    const bobs = await s.bob.sandboxes.create({ imageName: "node" });
    const all = await s.alice.sandboxes.list({ limit: 100 });
    expect(all.sandboxes.map((x) => x.id).sort()).toEqual([sbx.id, second.id].sort());
    expect(all.totalCount).toBe(2);
    const p2 = await s.alice.sandboxes.list({ limit: 1, page: 2 });
    expect(p2).toMatchObject({ totalCount: 2, page: 2, perPage: 1 });
    expect(p2.sandboxes).toHaveLength(1);
    expect(p2.sandboxes[0]!.runtime.baseUrl).toBe(`${s.gatewayUrl}/sandbox/${p2.sandboxes[0]!.id}`);
    expect((await s.bob.sandboxes.list()).sandboxes.map((x) => x.id)).toEqual([bobs.id]);
    await second.stop();
    expect((await s.alice.sandboxes.list({ status: "closed" })).sandboxes.map((x) => x.id)).toEqual([second.id]);
    expect((await s.alice.sandboxes.get(second.id)).status).toBe("closed");
    await bobs.stop();
  });

  it("shares the image catalog read-only", async () => {
    expect((await s.bob.sandboxes.listImages()).images.map((i) => i.imageName)).toContain("node");
    const del = await gatewayCall(s, "DELETE", "/api/images/node", { headers: { "x-api-key": s.keys.bob } });
    expect(del.status).toBe(403);
  });
});

describe("runtime plane", () => {
  it("execs and keeps working across upstream runtime-token expiry (4 s) without the client refreshing", async () => {
    const relayedBefore = s.directRelays();
    expect((await sbx.exec("echo hi")).stdout).toBe("hi\n");
    // Through the Node fast path, as every runtime answer here (none when the suite runs with TOLLGATE_DIRECT_RELAY=off).
    if (process.env.TOLLGATE_DIRECT_RELAY === "off") expect(s.directRelays()).toBe(relayedBefore);
    else expect(s.directRelays()).toBeGreaterThan(relayedBefore);
    const before = await s.gw.gateway.stores.kv.get(`sandbox-runtime:${sbx.id}`);
    await sleep(5000);
    expect((await sbx.exec("echo still")).stdout).toBe("still\n");
    const after = await s.gw.gateway.stores.kv.get(`sandbox-runtime:${sbx.id}`);
    expect(JSON.parse(after!).token).not.toBe(JSON.parse(before!).token);
  });

  it("renews and replays once when the upstream answers 401", async () => {
    const key = `sandbox-runtime:${sbx.id}`;
    const cred = JSON.parse((await s.gw.gateway.stores.kv.get(key))!);
    await s.gw.gateway.stores.kv.set(
      key,
      JSON.stringify({ ...cred, token: "revoked-upstream-token", expiresAt: Date.now() + 600_000, receivedAt: Date.now() }),
      600_000,
    );
    await sleep(1100); // past the instance's one-second read of the shared store, so the refused token is the one used
    expect((await sbx.exec("echo replayed")).stdout).toBe("replayed\n");
  });

  it("streams process output over SSE", async () => {
    const p = await sbx.processes.start("for i in 1 2 3; do echo line$i; sleep 0.2; done");
    const events: any[] = [];
    const times: number[] = [];
    for await (const e of p.stream()) {
      events.push(e);
      times.push(Date.now());
    }
    expect(
      events
        .filter((e) => e.type === "stdout")
        .map((e) => e.data)
        .join(""),
    ).toBe("line1\nline2\nline3\n");
    expect(events.at(-1)).toMatchObject({ type: "exit", result: { exitCode: 0 } });
    // Unbuffered: the lines arrive spread over time, not all at once at the end.
    expect(times[times.length - 1]! - times[0]!).toBeGreaterThan(250);
  });

  it("reads, writes, uploads and downloads files", async () => {
    await sbx.files.writeText("/home/ubuntu/a.txt", "hello");
    expect(await sbx.files.readText("/home/ubuntu/a.txt")).toBe("hello");
    const big = Buffer.alloc(3 * 1024 * 1024, 9);
    expect(await sbx.files.upload("/home/ubuntu/big.bin", big)).toEqual({ path: "/home/ubuntu/big.bin", bytesWritten: big.length });
    expect(Buffer.compare(await sbx.files.download("/home/ubuntu/big.bin"), big)).toBe(0);
    await expect(sbx.files.readText("/home/ubuntu/missing")).rejects.toMatchObject({ statusCode: 404 });
  });

  it("watches a directory over the relayed WebSocket", async () => {
    await sbx.files.makeDir("/home/ubuntu/w");
    const events: Array<{ type: string; name: string }> = [];
    const watch = await sbx.files.watchDir("/home/ubuntu/w", (e) => void events.push(e), { recursive: true });
    await sleep(150);
    // A file created before the upstream's watch is in place is not reported (inotify's own rule); on a loaded machine
    // the watch may take longer than the pause above, so a create that went unseen is made again.
    const created = () => events.some((e) => e.type === "create" && e.name === "new.txt");
    for (let attempt = 0; attempt < 5 && !created(); attempt++) {
      if (attempt > 0) await sbx.files.remove("/home/ubuntu/w/new.txt");
      await sbx.files.writeText("/home/ubuntu/w/new.txt", "1");
      for (let i = 0; i < 40 && !created(); i++) await sleep(50);
    }
    await watch.stop();
    expect(events).toEqual(expect.arrayContaining([{ type: "create", name: "new.txt" }]));
  });

  it("serves presigned URLs on the gateway, fetched without auth, one-time use kept", async () => {
    const up = await sbx.files.uploadUrl("/home/ubuntu/pre.txt", { oneTime: true });
    expect(up.url.startsWith(`${s.gatewayUrl}/sandbox/${sbx.id}/files/presigned?ticket=`)).toBe(true);
    const put = await raw(up.url, { method: "PUT", body: "presigned!" });
    expect(put.statusCode).toBe(200);
    await put.body.dump();
    const again = await raw(up.url, { method: "PUT", body: "twice" });
    expect(again.statusCode).toBe(401);
    await again.body.dump();
    const down = await sbx.files.downloadUrl("/home/ubuntu/pre.txt");
    const got = await raw(down.url);
    expect(got.statusCode).toBe(200);
    expect(await got.body.text()).toBe("presigned!");
    const forged = await raw(down.url.replace(/ticket=[^&]+/, "ticket=pst_forged"));
    expect(forged.statusCode).toBe(401);
    await forged.body.dump();
  });

  it("attaches to a PTY over the relayed WebSocket", async () => {
    const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80 });
    const conn = await t.attach();
    const { closed } = await echoOnPty(conn, "pty");
    await conn.resize(40, 120);
    await sleep(100);
    expect((await t.refresh()).current).toMatchObject({ rows: 40, cols: 120 });
    await conn.close();
    await closed;
    await t.kill();
  });
});

/** Types `echo <word>-$((6*7))` into an attached PTY and waits for `<word>-42`; `closed` settles when the connection ends. */
async function echoOnPty(
  conn: { events(): AsyncIterable<{ type: string }>; write(data: string): Promise<unknown> },
  word: string,
): Promise<{ closed: Promise<void> }> {
  let seen = "";
  // Wrapped in an object: a promise returned as such from an async function would be awaited with it.
  const closed = (async () => {
    for await (const e of conn.events()) if (e.type === "output") seen += (e as unknown as { data: string }).data;
  })();
  await conn.write(`echo ${word}-$((6*7))\r`);
  for (let i = 0; i < 60 && !seen.includes(`${word}-42\r\n`); i++) await sleep(50);
  expect(seen).toContain(`${word}-42`);
  return { closed };
}

describe("runtime plane WebSockets", () => {
  it("renews the kept token and connects once more when the upstream refuses it on a WebSocket handshake", async () => {
    // The terminal first: an HTTP call would renew the token itself (and the handshake would find it fresh).
    const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80 });
    const key = `sandbox-runtime:${sbx.id}`;
    const cred = JSON.parse((await s.gw.gateway.stores.kv.get(key))!);
    await s.gw.gateway.stores.kv.set(
      key,
      JSON.stringify({ ...cred, token: "revoked-upstream-token", expiresAt: Date.now() + 600_000, receivedAt: Date.now() }),
      600_000,
    );
    await sleep(1100); // past the instance's one-second read of the shared store
    const conn = await t.attach();
    const { closed } = await echoOnPty(conn, "renewed");
    await conn.close();
    await closed;
    await t.kill();
  });
});

describe("exposed ports", () => {
  const server = `require("http").createServer((q,r)=>{r.setHeader("set-cookie","app=1");r.end("app:"+q.url+":"+(q.headers.authorization?"auth":"none"))}).listen(PORT)`;

  it("serves a public port at the URL the SDK derives", async () => {
    await sbx.processes.start(`node -e '${server.replace("PORT", "3000")}'`);
    const e = await sbx.expose({ port: 3000 });
    expect(e.url).toBe(sbx.getExposedUrl(3000));
    expect(e.url).toBe(`http://3000-${sbx.id}.localhost:${s.gw.port}/`);
    let res = await portCall(s, `${e.url}hello`);
    for (let i = 0; i < 40 && res.status !== 200; i++) await sleep(100), (res = await portCall(s, `${e.url}hello`));
    expect(res.status).toBe(200);
    expect(res.text).toBe("app:/hello:none");
    expect(res.headers["set-cookie"]).toBe("app=1");
  });

  it("requires the gateway token or the browserUrl cookie on an auth port, and injects the upstream bearer", async () => {
    await sbx.processes.start(`node -e '${server.replace("PORT", "3001")}'`);
    const e = await sbx.expose({ port: 3001, auth: true });
    expect(e.url).toBe(sbx.getExposedUrl(3001));
    const token = (await gatewayCall(s, "GET", `/api/sandbox/${sbx.id}`, { headers: { "x-api-key": s.keys.alice } })).json.token;
    let res = await portCall(s, e.url, { headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < 40 && res.status !== 200; i++)
      await sleep(100), (res = await portCall(s, e.url, { headers: { authorization: `Bearer ${token}` } }));
    expect(res.status).toBe(200);
    // The app sees the upstream's auth, relayed; the client never held it.
    expect(res.text).toBe("app:/:none");
    expect((await portCall(s, e.url)).status).toBe(401);
    expect(e.browserUrl).toContain(`${e.url}_hb/auth?grant=`);
    const boot = await portCall(s, e.browserUrl!);
    expect(boot.status).toBe(302);
    expect(boot.headers.location).toBe("/");
    const cookie = String(boot.headers["set-cookie"]).split(";")[0]!;
    expect(String(boot.headers["set-cookie"])).toMatch(/HttpOnly/);
    expect((await portCall(s, e.url, { headers: { cookie } })).status).toBe(200);
    await sbx.unexpose(3001);
    expect((await portCall(s, e.url, { headers: { cookie } })).status).toBe(403);
  });
});

describe("exposed port WebSockets", () => {
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
    const out=Buffer.from("echo:"+d+":"+(req.headers.authorization?"auth":"none"));
    sock.write(Buffer.concat([Buffer.from([0x81,out.length]),out]));
  });
});
s.listen(3002);`;

  const open = (host: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; socket?: WebSocket }>((resolve) => {
      const sock = new WebSocket(`ws://127.0.0.1:${s.gw.port}/`, { headers: { host, ...headers } });
      sock.once("open", () => resolve({ status: 101, socket: sock }));
      sock.once("unexpected-response", (_q, res) => resolve({ status: res.statusCode ?? 0 }));
      sock.once("error", () => resolve({ status: 0 }));
    });

  it("relays a WebSocket to an auth port with the gateway token, and refuses it without", async () => {
    await sbx.files.writeText("/home/ubuntu/ws.js", wsServer);
    await sbx.processes.start("node /home/ubuntu/ws.js");
    const e = await sbx.expose({ port: 3002, auth: true });
    const host = new URL(e.url).host;
    const token = (await gatewayCall(s, "GET", `/api/sandbox/${sbx.id}`, { headers: { "x-api-key": s.keys.alice } })).json.token;
    let conn = await open(host, { authorization: `Bearer ${token}` });
    for (let i = 0; i < 40 && conn.status !== 101; i++) await sleep(100), (conn = await open(host, { authorization: `Bearer ${token}` }));
    expect(conn.status).toBe(101);
    const reply = new Promise<string>((r) => conn.socket!.once("message", (d) => r(d.toString())));
    conn.socket!.send("hi");
    expect(await reply).toBe("echo:hi:none");
    conn.socket!.close();
    expect((await open(host)).status).toBe(401);
  });
});

describe("snapshots", () => {
  it("snapshots a sandbox and starts another from it; the snapshot is its tenant's alone", async () => {
    await sbx.files.writeText("/home/ubuntu/snap.txt", "kept");
    const snap = await sbx.createMemorySnapshot({ snapshotName: "alice-base" });
    expect(snap.status).toBe("created");
    expect((await s.alice.sandboxes.getSnapshot(snap.snapshotId)).snapshotName).toBe("alice-base");
    expect((await s.alice.sandboxes.getSnapshot("alice-base")).id).toBe(snap.snapshotId);
    const restored = await s.alice.sandboxes.create({ snapshotName: "alice-base" });
    expect(await restored.files.readText("/home/ubuntu/snap.txt")).toBe("kept");
    await restored.stop();
    expect((await s.alice.sandboxes.listSnapshots()).snapshots.map((x) => x.id)).toEqual([snap.snapshotId]);
    expect((await s.bob.sandboxes.listSnapshots()).totalCount).toBe(0);
    await expect(s.bob.sandboxes.getSnapshot(snap.snapshotId)).rejects.toMatchObject({ statusCode: 404 });
    await expect(s.bob.sandboxes.getSnapshot("alice-base")).rejects.toMatchObject({ statusCode: 404 });
    await expect(s.bob.sandboxes.create({ snapshotName: "alice-base" })).rejects.toMatchObject({ statusCode: 404 });
  });
});
