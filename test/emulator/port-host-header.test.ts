// The emulator's stand-in for the real service's port DNS: x-tollgate-port-host names an exposed port on the runtime
// listener for a client that cannot set Host (Workers' fetch). It wins over Host, and a request that carries it is a
// port request or a 400: never served by the runtime API, whatever its path and however valid its runtime token.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { type SandboxHandle, type SandboxHarness, startSandboxHarness } from "./sandboxes-harness.js";

let h: SandboxHarness;
let sbx: SandboxHandle;
let token: string;

beforeAll(async () => {
  h = await startSandboxHarness();
  sbx = await h.hb.sandboxes.create({ imageName: "node" });
  token = sbx.toJSON().token!;
}, 60_000);
afterAll(async () => {
  await sbx?.stop().catch(() => {});
  await h?.close();
});

/** POST <runtime>/sandbox/<id>/exec with the sandbox's own runtime token, and the given extra headers. */
async function exec(headers: Record<string, string>, command = "echo ran") {
  const res = await request(`${h.emu.runtimeUrl}/sandbox/${sbx.id}/exec`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ command }),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

describe("x-tollgate-port-host on the emulator's runtime listener", () => {
  it("is a port request even on a runtime API path: unexposed → 403, a header naming no port → 400", async () => {
    expect((await exec({})).status).toBe(200); // the same call without it is the runtime API's
    const runtimeHost = new URL(h.emu.runtimeUrl).host;
    const unexposed = await exec({ "x-tollgate-port-host": `3300-${sbx.id}.localhost:${new URL(h.emu.runtimeUrl).port}` });
    expect(unexposed.status).toBe(403);
    expect(JSON.parse(unexposed.text)).toMatchObject({ code: "port_not_exposed" });
    for (const value of ["nonsense", runtimeHost, ""]) {
      const res = await exec({ "x-tollgate-port-host": value });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toMatchObject({ code: "invalid_port_host" });
    }
  });

  it("serves the exposed port it names, the app seeing the port host as Host and never the header", async () => {
    const app = `require("http").createServer((q,r)=>r.end(q.method+" "+q.url+" "+q.headers.host+" "+(q.headers["x-tollgate-port-host"]??"-"))).listen(3301)`;
    await sbx.processes.start(`node -e '${app}'`);
    await sbx.expose({ port: 3301 });
    const portHost = `3301-${sbx.id}.localhost:${new URL(h.emu.runtimeUrl).port}`;
    let res = await exec({ "x-tollgate-port-host": portHost });
    for (let i = 0; i < 40 && res.status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100)), (res = await exec({ "x-tollgate-port-host": portHost }));
    expect(res).toEqual({ status: 200, text: `POST /sandbox/${sbx.id}/exec ${portHost} -` });
  });
});
