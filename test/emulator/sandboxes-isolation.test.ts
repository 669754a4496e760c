// Isolation, exposed ports, token refresh and clean shutdown of the sandbox emulator.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request as httpRequest } from "node:http";
import { request } from "undici";
import { exposedRequest, isAlive, startSandboxHarness, type SandboxHandle, type SandboxHarness } from "./sandboxes-harness.js";

const SERVER = `node -e 'const h=require("http").createServer((q,s)=>s.end(process.env.NAME+" "+q.url+" auth="+(q.headers.authorization?"yes":"no")));h.on("upgrade",(q,sock)=>{sock.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n");sock.pipe(sock)});h.listen(3000,"127.0.0.1",()=>console.log("up"))'`;

async function startServer(sbx: SandboxHandle, name: string) {
  const p = await sbx.processes.start(SERVER, { env: { NAME: name } });
  for await (const e of p.stream()) if (e.type === "stdout" && e.data.includes("up")) break;
  return p;
}

let h: SandboxHarness;
let a: SandboxHandle;
let b: SandboxHandle;
beforeAll(async () => {
  h = await startSandboxHarness({ runtimeTokenTtlSeconds: 3 });
  [a, b] = await Promise.all([h.hb.sandboxes.create({ imageName: "node" }), h.hb.sandboxes.create({ imageName: "node" })]);
  await Promise.all([startServer(a, "A"), startServer(b, "B")]);
});
afterAll(async () => h?.close());

describe("isolation", () => {
  it("lets two sandboxes both listen on port 3000, each reached through its own exposed URL", async () => {
    const ua = (await a.expose({ port: 3000 })).url;
    const ub = (await b.expose({ port: 3000 })).url;
    expect(ua).toBe(a.getExposedUrl(3000));
    expect((await exposedRequest(h.emu, `${ua}hello?x=1`)).text).toBe("A /hello?x=1 auth=no");
    expect((await exposedRequest(h.emu, `${ub}hello`)).text).toBe("B /hello auth=no");
    expect((await a.exec('node -e \'require("http").get("http://127.0.0.1:3000/in",r=>r.pipe(process.stdout))\'')).stdout).toBe(
      "A /in auth=no",
    );
  });

  it("keeps files and processes of one sandbox invisible to another, and the host unwritable", async () => {
    await a.files.writeText("/tmp/secret-a", "a-only");
    expect(await b.files.exists("/tmp/secret-a")).toBe(false);
    await a.processes.start("sleep 471.5");
    // A started process execs its command a moment later (its launcher shows first): wait until it is there.
    let mine = "";
    for (let i = 0; i < 50 && !mine.includes("sleep 471.5"); i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      mine = (await a.exec("ps -eo args")).stdout;
    }
    expect((await b.exec("ps -eo args")).stdout).not.toContain("sleep 471.5");
    expect(mine).toContain("sleep 471.5");
    const marker = `/tmp/tollgate-escape-${Date.now()}`;
    const w = await a.exec(`echo x > ${marker}; touch /usr/escape; touch /etc/escape; ls /work 2>&1; echo done`);
    expect(w.stdout).toContain("done");
    expect(isAlive(process.pid)).toBe(true);
    const { existsSync } = await import("node:fs");
    expect(existsSync(marker)).toBe(false);
    expect(existsSync("/usr/escape")).toBe(false);
    expect(w.stderr).toMatch(/Read-only file system|Permission denied/);
    expect((await a.exec("cat /proc/1/cmdline | tr '\\0' ' '")).stdout).not.toContain("node");
  });
});

describe("exposed ports", () => {
  it("needs the sandbox token on auth:true ports, answers 403 for unexposed ones, and relays upgrades", async () => {
    const { url, browserUrl } = await a.expose({ port: 3000, auth: true });
    expect((await exposedRequest(h.emu, url)).status).toBe(401);
    const token = (await a.info()).token!;
    const ok = await exposedRequest(h.emu, `${url}p`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok).toMatchObject({ status: 200, text: "A /p auth=no" }); // the sandbox token is not leaked to the app
    const grant = await exposedRequest(h.emu, browserUrl!);
    expect(grant.status).toBe(302);
    expect(grant.headers.location).toBe("/");
    const cookie = String(grant.headers["set-cookie"]).split(";")[0]!;
    expect((await exposedRequest(h.emu, url, { headers: { cookie } })).status).toBe(200);
    expect((await exposedRequest(h.emu, a.getExposedUrl(3999), { headers: { authorization: `Bearer ${token}` } })).status).toBe(403);
    await a.unexpose(3000);
    expect((await exposedRequest(h.emu, url, { headers: { authorization: `Bearer ${token}` } })).status).toBe(403);

    const ub = new URL(b.getExposedUrl(3000));
    const echoed = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({
        host: "127.0.0.1",
        port: ub.port,
        path: "/ws",
        headers: { host: ub.host, connection: "Upgrade", upgrade: "echo" },
      });
      req.on("upgrade", (_res, socket) => {
        socket.write("ping-through-relay");
        socket.once("data", (d) => (resolve(d.toString()), socket.destroy()));
      });
      req.on("error", reject);
      req.end();
    });
    expect(echoed).toBe("ping-through-relay");
  });
});

describe("runtime tokens", () => {
  it("rejects an expired token with 401 and the SDK refreshes by itself", async () => {
    const old = (await a.info()).token!;
    await new Promise((r) => setTimeout(r, 3200));
    const res = await request(`${a.runtime.baseUrl.replace("localhost", "127.0.0.1")}/processes`, {
      headers: { authorization: `Bearer ${old}` },
    });
    expect(res.statusCode).toBe(401);
    expect(await res.body.json()).toMatchObject({ code: "token_expired" });
    expect((await a.exec("echo refreshed")).stdout).toBe("refreshed\n");
    expect((await a.info()).token).not.toBe(old);
  });
});

describe("shutdown", () => {
  it("leaves no process behind when a sandbox stops, nor when the emulator closes", async () => {
    const c = await h.hb.sandboxes.create({ imageName: "node" });
    await c.processes.start("sleep 1000 & sleep 1001 & wait");
    await c.terminal.create({ command: "bash" });
    const pidsC = await h.hostPids(c.id);
    expect(pidsC.length).toBeGreaterThanOrEqual(5);
    await c.stop();
    expect(pidsC.filter(isAlive)).toEqual([]);
    const pidsAB = [...(await h.hostPids(a.id)), ...(await h.hostPids(b.id))];
    expect(pidsAB.length).toBeGreaterThan(4);
    await h.close();
    expect(pidsAB.filter(isAlive)).toEqual([]);
  });
});
