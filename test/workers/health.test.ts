import { SELF } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";

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

describe("the Worker entry's client address", () => {
  it("is the cf-connecting-ip Cloudflare's edge sets, in the access line", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      const r = await SELF.fetch("https://gateway.test/_tollgate/health", {
        headers: { "cf-connecting-ip": "203.0.113.7", "x-request-id": "w-peer" },
      });
      expect(r.status).toBe(200);
    } finally {
      spy.mockRestore();
    }
    const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.requestId === "w-peer");
    expect(line).toMatchObject({ msg: "request", client: "203.0.113.7" });
  });
});
