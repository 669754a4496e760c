// Pure rewriting rules for sandbox responses: every URL points at the gateway, and it agrees with the SDK's derivation.
import { describe, expect, test } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { createRequire } from "node:module";
import {
  exposedUrlFor,
  gatewayRuntime,
  parseExposedHost,
  rewriteSandboxDetail,
  upstreamExposedHost,
  upstreamRuntimeUrl,
  type SandboxRewriteContext,
} from "../../src/sandboxes/rewrite.js";
import { needsRenewal } from "../../src/sandboxes/custody.js";

// The SDK does not export SandboxHandle from its entry; load the compiled class itself to use its getExposedUrl.
const { SandboxHandle } = createRequire(import.meta.url)("../../node_modules/@hyperbrowser/sdk/dist/services/sandboxes.js");

const ctx = (publicOrigin: string): SandboxRewriteContext => ({
  publicOrigin,
  mintRuntimeToken: async (id) => ({ token: `gw-runtime-${id}`, expiresAt: "2030-01-01T00:00:00.000Z" }),
  mintPortGrant: async (id) => ({ token: `gw-grant-${id}`, expiresAt: "2030-01-01T00:05:00.000Z" }),
});

const upstreamDetail = {
  id: "sbx_123",
  status: "active",
  runtime: { transport: "regional_proxy", host: "https://runtime.example.com", baseUrl: "https://runtime.example.com/sandbox/sbx_123" },
  exposedPorts: [
    { port: 3000, auth: false, url: "https://3000-sbx_123.runtime.example.com/", browserUrl: "https://3000-sbx_123.runtime.example.com/" },
    {
      port: 8080,
      auth: true,
      url: "https://8080-sbx_123.runtime.example.com/",
      browserUrl: "https://8080-sbx_123.runtime.example.com/_hb/auth?grant=UPSTREAM&next=%2F",
      browserUrlExpiresAt: "x",
    },
  ],
  token: "UPSTREAM_RUNTIME_TOKEN",
  tokenExpiresAt: "2029-01-01T00:00:00.000Z",
};

describe("rewriteSandboxDetail", () => {
  test("points runtime.baseUrl and runtime.host at the gateway", async () => {
    const out = await rewriteSandboxDetail(upstreamDetail, ctx("http://127.0.0.1:8787"));
    expect(out.runtime).toEqual({
      transport: "regional_proxy",
      host: "http://127.0.0.1:8787",
      baseUrl: "http://127.0.0.1:8787/sandbox/sbx_123",
    });
  });

  test("replaces the upstream runtime token with a gateway token and its expiry", async () => {
    const out = await rewriteSandboxDetail(upstreamDetail, ctx("https://gw.example.com"));
    expect(out.token).toBe("gw-runtime-sbx_123");
    expect(out.tokenExpiresAt).toBe("2030-01-01T00:00:00.000Z");
    expect(JSON.stringify(out)).not.toMatch(/UPSTREAM|runtime\.example\.com/);
  });

  test("keeps token null for a stopped sandbox", async () => {
    const out = await rewriteSandboxDetail(
      { ...upstreamDetail, status: "closed", token: null, tokenExpiresAt: null },
      ctx("https://gw.example.com"),
    );
    expect(out.token).toBeNull();
    expect(out.tokenExpiresAt).toBeNull();
  });

  test("leaves token absent on list entries", async () => {
    const { token: _t, tokenExpiresAt: _e, ...entry } = upstreamDetail;
    const out = await rewriteSandboxDetail(entry, ctx("https://gw.example.com"));
    expect("token" in out).toBe(false);
  });

  test("exposed-port urls equal what the unmodified SDK's getExposedUrl derives", async () => {
    for (const origin of ["http://localhost:8787", "https://gw.example.com", "https://gw.example.com:8443"]) {
      const out = await rewriteSandboxDetail(upstreamDetail, ctx(origin));
      const hb = new Hyperbrowser({ apiKey: "k", baseUrl: origin });
      const handle = new SandboxHandle(hb.sandboxes, out as any);
      for (const e of out.exposedPorts) expect(e.url).toBe(handle.getExposedUrl(e.port));
      expect(out.exposedPorts[0].browserUrl).toBe(out.exposedPorts[0].url);
      expect(out.exposedPorts[1].browserUrl).toBe(`${out.exposedPorts[1].url}_hb/auth?grant=gw-grant-sbx_123&next=%2F`);
      expect(out.exposedPorts[1].browserUrlExpiresAt).toBe("2030-01-01T00:05:00.000Z");
    }
  });

  test("an IP-literal public origin still rewrites (the URL is built as a string, as the SDK cannot parse it)", async () => {
    const out = await rewriteSandboxDetail(upstreamDetail, ctx("http://127.0.0.1:8787"));
    expect(out.exposedPorts[0].url).toBe("http://3000-sbx_123.127.0.0.1:8787/");
  });

  test("derives the example from the upstream contract", () => {
    expect(exposedUrlFor({ baseUrl: "https://runtime.example.com/sandbox/sbx_123" }, 3000)).toBe(
      "https://3000-sbx_123.runtime.example.com/",
    );
    expect(exposedUrlFor(gatewayRuntime("http://127.0.0.1:9000", "sbx_1"), 3000)).toBe("http://3000-sbx_1.127.0.0.1:9000/");
  });
});

describe("upstream targets", () => {
  test("region-path runtime: the rest is appended to the base path", () => {
    expect(upstreamRuntimeUrl("https://region.example.dev/sandbox/sbx_123", "/exec?foo=bar")).toBe(
      "https://region.example.dev/sandbox/sbx_123/exec?foo=bar",
    );
  });
  test("session-host runtime: /sandbox is prepended", () => {
    expect(upstreamRuntimeUrl("https://session.example.dev:8443", "/exec")).toBe("https://session.example.dev:8443/sandbox/exec");
  });
  test("the upstream's own exposed-port host is derived from its runtime", () => {
    expect(upstreamExposedHost({ baseUrl: "http://127.0.0.1:4100/sandbox/sbx_9" }, 3000)).toBe("3000-sbx_9.127.0.0.1:4100");
  });
});

describe("parseExposedHost", () => {
  test("reads port, id and the rest of the host", () => {
    expect(parseExposedHost("3000-sbx_ab12.gw.example.com:8443")).toEqual({ port: 3000, id: "sbx_ab12", rest: "gw.example.com:8443" });
  });
  test("ignores hosts that are not port hosts", () => {
    for (const h of ["gw.example.com", "127.0.0.1:8787", "abc-sbx_1.gw", "0-sbx_1.gw", "70000-sbx_1.gw", ""])
      expect(parseExposedHost(h)).toBeUndefined();
  });
});

describe("needsRenewal", () => {
  test("renews a long-lived token in its last 60 s", () => {
    expect(needsRenewal({ token: "t", baseUrl: "x", receivedAt: 0, expiresAt: 900_000 }, 839_000)).toBe(false);
    expect(needsRenewal({ token: "t", baseUrl: "x", receivedAt: 0, expiresAt: 900_000 }, 840_000)).toBe(true);
  });
  test("renews a short-lived token in its second half, not on every call", () => {
    expect(needsRenewal({ token: "t", baseUrl: "x", receivedAt: 0, expiresAt: 4_000 }, 1_000)).toBe(false);
    expect(needsRenewal({ token: "t", baseUrl: "x", receivedAt: 0, expiresAt: 4_000 }, 2_000)).toBe(true);
  });
});
