// Hostile requests from outside answer a 4xx JSON `{message, code}`, never a 500: bad Host headers on every route, a
// broken port cookie, and a bootstrap `next` that would break the Location header or send the browser off the port host.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { gatewayCall, portCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { sameHostPath } from "../../src/sandboxes/ports.js";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

let s: SandboxStack;
let sbx: SandboxHandle;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  s = await startSandboxStack();
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
});
afterAll(async () => {
  await sbx?.stop().catch(() => {});
  await s?.close();
});

describe("a Host that makes no URL", () => {
  // Whether a Host makes a URL is the runtime's URL parser's to say: Node 20 refuses `xn--` (an empty punycode label),
  // Node 26's parser (a newer WHATWG URL) takes it; the gateway then routes it like any other Host, never a 500.
  for (const host of ["foo.123", "1.2.3.4.5", "xn--", "3000-sbx.1.2.3.4.5"]) {
    if (URL.canParse(`http://${host}/`)) {
      it(`routes Host ${host}, which this runtime's URL parser takes, like any other (never a 500)`, async () => {
        const res = await gatewayCall(s, "GET", "/api/sandboxes", { host });
        expect(res.status).toBeLessThan(500);
        expect(res.json).not.toMatchObject({ code: "invalid_host" });
      });
      continue;
    }
    it(`answers 400 invalid_host for Host ${host} on every route, unauthenticated`, async () => {
      for (const path of [
        "/",
        "/api/session",
        "/api/sandboxes",
        "/_tollgate/usage",
        "/sandbox/abc/files",
        "/x402/web/search",
        "/devtools/browser/x",
      ]) {
        const res = await gatewayCall(s, "GET", path, { host });
        expect(res.status, `${host} ${path}`).toBe(400);
        expect(res.json).toMatchObject({ code: "invalid_host" });
      }
    });
  }

  it("still serves a valid Host", async () => {
    expect((await gatewayCall(s, "GET", "/_tollgate/health")).status).toBe(200);
  });
});

describe("exposed-port hosts", () => {
  const app = `require("http").createServer((q,r)=>r.end("app:"+q.url)).listen(PORT)`;
  let publicUrl: string;
  let authUrl: string;
  let browserUrl: string;

  beforeAll(async () => {
    await sbx.processes.start(`node -e '${app.replace("PORT", "3100")}'`);
    await sbx.processes.start(`node -e '${app.replace("PORT", "3101")}'`);
    publicUrl = (await sbx.expose({ port: 3100 })).url;
    const e = await sbx.expose({ port: 3101, auth: true });
    authUrl = e.url;
    browserUrl = e.browserUrl!;
    for (let i = 0; i < 50 && (await portCall(s, publicUrl)).status !== 200; i++) await sleep(100);
  });

  it("a cookie `tollgate_port=%` admits nothing: the public port still answers, the auth port says 401", async () => {
    const pub = await portCall(s, `${publicUrl}x`, { headers: { cookie: "tollgate_port=%" } });
    expect(pub.status).toBe(200);
    expect(pub.text).toBe("app:/x");
    const auth = await portCall(s, authUrl, { headers: { cookie: "a=1; tollgate_port=%E0%A4%A" } });
    expect(auth.status).toBe(401);
  });

  it("the bootstrap refuses a `next` with CR/LF with 400 invalid_next (no header injection, no plain-text 500)", async () => {
    for (const next of ["/a%0d%0aSet-Cookie:%20x=1", "/%0a", "/a%00"]) {
      const res = await portCall(s, browserUrl.replace("next=%2F", `next=${next}`));
      expect(res.status, next).toBe(400);
      expect(res.json).toMatchObject({ code: "invalid_next" });
      expect(res.headers["set-cookie"]).toBeUndefined();
    }
  });

  it("the bootstrap never redirects off the port host", async () => {
    for (const next of [
      "/%09/evil.example/",
      "//evil.example/",
      "/%5Cevil.example",
      "/.//evil.example/",
      "https://evil.example/",
      "/%0d/evil.example",
    ]) {
      const res = await portCall(s, browserUrl.replace("next=%2F", `next=${next}`));
      expect(res.status, next).toBe(400);
      expect(res.json).toMatchObject({ code: "invalid_next" });
    }
    const ok = await portCall(s, browserUrl.replace("next=%2F", `next=${encodeURIComponent("/app/?q=1#top")}`));
    expect(ok.status).toBe(302);
    expect(ok.headers.location).toBe("/app/?q=1#top");
  });
});

describe("sameHostPath", () => {
  it("keeps paths on the host and refuses everything a browser would read as another host", () => {
    expect(sameHostPath("/")).toBe("/");
    expect(sameHostPath("/a/b?c=d")).toBe("/a/b?c=d");
    for (const bad of ["//x", "/\\x", "/\t/x", "\\\\x", "/./\\x", "x", "", "/\r\nx", "http://x/"])
      expect(sameHostPath(bad), JSON.stringify(bad)).toBeUndefined();
  });
});
