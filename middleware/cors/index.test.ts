import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { gatewayCors } from "./index.js";

const FRONT = "https://app.example.com";

function app() {
  const a = new Hono();
  a.use(gatewayCors({ origins: [FRONT], maxAgeSeconds: 600 }));
  // Stands in for a credential check: a preflight must never reach it.
  a.all("*", (c) => (c.req.header("x-api-key") ? c.json({ ok: true }) : c.json({ message: "Missing API key", code: "unauthorized" }, 401)));
  return a;
}

describe("gatewayCors", () => {
  it("answers a preflight from a configured origin at once, without any key", async () => {
    const res = await app().request("http://gw.test/api/sandboxes", {
      method: "OPTIONS",
      headers: { origin: FRONT, "access-control-request-method": "POST", "access-control-request-headers": "authorization" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(FRONT);
    expect(res.headers.get("access-control-max-age")).toBe("600");
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
  });

  it("lets a configured origin read error answers, and exposes x-request-id", async () => {
    const res = await app().request("http://gw.test/api/sandboxes", { headers: { origin: FRONT } });
    expect(res.status).toBe(401);
    expect(res.headers.get("access-control-allow-origin")).toBe(FRONT);
    expect(res.headers.get("access-control-expose-headers")).toContain("x-request-id");
  });

  it("grants nothing to another origin, and leaves exposed-port hosts to the app behind the port", async () => {
    const other = await app().request("http://gw.test/api/sandboxes", {
      method: "OPTIONS",
      headers: { origin: "https://evil.test", "access-control-request-method": "POST" },
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    expect(other.status).toBe(401);
    const port = await app().request("http://3000-sbx1.gw.test/", { headers: { origin: FRONT, host: "3000-sbx1.gw.test" } });
    expect(port.headers.get("access-control-allow-origin")).toBeNull();
  });
});
