// The unmodified SDK's exposed-port flow through `tollgate dev --worker`: the gateway as the Worker under wrangler dev
// (workerd, on a socket), in front of the emulator on 127.0.0.1. Workers' fetch cannot set Host, so the relay names the
// port in x-tollgate-port-host; before it did, every port request reached the runtime API (404 here, the SDK's own
// readiness probe included). The scenarios are those of the SDK's e2e expose suite: reserved port, public, auth,
// unexpose. (test/workers/ports.test.ts checks the same inside workerd, with the link-cookie attack.)
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerDev, type WorkerDev } from "../../src/cli/dev-worker.js";

const HTTP_PORT = 3210;
let dev: WorkerDev;
let port: string;
let sbx: Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

/** A request to a URL the gateway handed out (`<port>-<id>.localhost`): connect to 127.0.0.1, name the host. */
async function portCall(url: string, headers: Record<string, string> = {}) {
  const u = new URL(url);
  const r = await request(`http://127.0.0.1:${port}${u.pathname}${u.search}`, { headers: { host: u.host, ...headers } });
  return { status: r.statusCode, text: await r.body.text() };
}

/** Retries until `ok` holds (the app may still be starting), as the SDK's suite does; the last answer either way. */
async function until(url: string, headers: Record<string, string>, ok: (status: number, text: string) => boolean) {
  let last = { status: 0, text: "" };
  for (let i = 1; i <= 15; i++) {
    last = await portCall(url, headers);
    if (ok(last.status, last.text)) break;
    await new Promise((r) => setTimeout(r, 200 * i));
  }
  return last;
}

beforeAll(async () => {
  dev = await startWorkerDev();
  port = new URL(dev.gateway).port;
  const hb = new Hyperbrowser({ apiKey: dev.tenants.acme, baseUrl: `http://localhost:${port}` });
  sbx = await hb.sandboxes.create({ imageName: "node" });
  const app = `require("http").createServer((q,r)=>r.end("sdk-exposed:"+q.method+":"+q.url)).listen(${HTTP_PORT},"0.0.0.0")`;
  await sbx.processes.start({ command: "node", args: ["-e", app] });
  // Not exposed yet: 403 even with the bearer (the SDK suite's readiness probe).
  expect((await until(sbx.getExposedUrl(HTTP_PORT), { authorization: `Bearer ${sbx.toJSON().token}` }, (s) => s === 403)).status).toBe(403);
}, 180_000);

afterAll(async () => {
  await sbx?.stop().catch(() => {});
  await dev?.close();
});

describe.sequential("the SDK's exposed ports through the Worker under wrangler dev", () => {
  it("refuses the reserved runtime port", async () => {
    await expect(sbx.expose({ port: 4001 })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringContaining("cannot be exposed"),
    });
  });

  it("serves a public port at the URL the SDK derives", async () => {
    const exposure = await sbx.expose({ port: HTTP_PORT, auth: false });
    expect(exposure.url).toBe(sbx.getExposedUrl(HTTP_PORT));
    expect(exposure.browserUrl).toBe(exposure.url);
    const got = await until(exposure.url, {}, (s, t) => s === 200 && t.includes("sdk-exposed:GET:/"));
    expect(got).toEqual({ status: 200, text: "sdk-exposed:GET:/" });
  });

  it("requires the sandbox bearer on an auth port", async () => {
    const exposure = await sbx.expose({ port: HTTP_PORT, auth: true });
    expect(exposure.browserUrl).toContain("/_hb/auth");
    expect((await until(exposure.url, {}, (s) => s === 401)).status).toBe(401);
    await sbx.refresh();
    const ok = await until(
      exposure.url,
      { authorization: `Bearer ${sbx.toJSON().token}` },
      (s, t) => s === 200 && t.includes("sdk-exposed"),
    );
    expect(ok.status).toBe(200);
  });

  it("unexposing removes the route: 403", async () => {
    const exposure = await sbx.expose({ port: HTTP_PORT, auth: false });
    expect(await sbx.unexpose(HTTP_PORT)).toEqual({ port: HTTP_PORT, exposed: false });
    expect((await until(exposure.url, {}, (s) => s === 403)).status).toBe(403);
  });
});
