import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../../src/context.js";
import { parseExposedHost } from "../../src/sandboxes/rewrite.js";
import { portHosts } from "./index.js";

function app() {
  const seen: string[] = [];
  const a = new Hono<GatewayEnv>();
  a.use(
    portHosts(async (c) => {
      seen.push(new URL(c.req.url).host);
      return c.text("relayed");
    }),
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

  it("hands a port-shaped X-Forwarded-Host to the relay (it decides whether the proxy is trusted)", async () => {
    const { a } = app();
    const res = await a.request("http://gw.example/x", { headers: { "x-forwarded-host": "8080-abc.gw.example" } });
    expect(await res.text()).toBe("relayed");
  });

  it("lets through nothing parseExposedHost would accept", () => {
    const re = /^\s*\d{1,5}-[^.,\s]+\./;
    for (const h of ["3000-sbx.gw", " 1-a.b", "65535-x.y.z", "80-ID.Example.com"]) {
      expect(parseExposedHost(h)).toBeDefined();
      expect(re.test(h)).toBe(true);
    }
  });
});
