import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../../src/context.js";
import { parseExposedHost } from "../../src/sandboxes/rewrite.js";
import { portHosts } from "./index.js";

function app(forwardedHosts = false) {
  const seen: string[] = [];
  const a = new Hono<GatewayEnv>();
  a.use(
    portHosts(async (c) => {
      seen.push(new URL(c.req.url).host);
      return c.text("relayed");
    }, forwardedHosts),
  );
  a.get("*", (c) => c.text("table"));
  return { a, seen };
}

describe("portHosts", () => {
  it("hands a port-shaped Host to the relay and lets any other request go on", async () => {
    const { a, seen } = app();
    expect(await (await a.request("http://3000-sbx_1.gw.example/x")).text()).toBe("relayed");
    expect(await (await a.request("http://gw.example/api/session")).text()).toBe("table");
    expect(await (await a.request("http://127.0.0.1:8080/x")).text()).toBe("table");
    expect(seen).toEqual(["3000-sbx_1.gw.example"]);
  });

  it("behind trusted proxies, hands a port-shaped X-Forwarded-Host to the relay (it checks the proxy); else does not read it", async () => {
    const headers = { "x-forwarded-host": "8080-abc.gw.example" };
    expect(await (await app(true).a.request("http://gw.example/x", { headers })).text()).toBe("relayed");
    expect(await (await app(false).a.request("http://gw.example/x", { headers })).text()).toBe("table");
  });

  it("lets nothing parseExposedHost would accept go past the relay", async () => {
    for (const h of ["3000-sbx.gw", "1-a.b", "65535-x.y.z", "80-ID.Example.com:8443"]) {
      expect(parseExposedHost(h)).toBeDefined();
      const { a } = app(true);
      expect(await (await a.request(`http://${h}/x`)).text()).toBe("relayed");
      expect(await (await a.request("http://gw.example/x", { headers: { "x-forwarded-host": ` ${h}` } })).text()).toBe("relayed");
    }
  });
});
