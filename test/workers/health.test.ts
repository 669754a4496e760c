import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("the Worker entry, inside workerd", () => {
  it("serves the health check", async () => {
    const r = await SELF.fetch("https://gateway.test/_tollgate/health");
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ status: "ok", service: "tollgate" });
  });

  it("answers unauthenticated upstream routes with the JSON error shape and a request id", async () => {
    const r = await SELF.fetch("https://gateway.test/api/sandboxes", { headers: { "x-request-id": "w-1" } });
    expect(r.status).toBe(401);
    expect(r.headers.get("x-request-id")).toBe("w-1");
    expect(await r.json()).toMatchObject({ code: "unauthorized" });
  });
});
