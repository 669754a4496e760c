import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { requestId } from "./index.js";

function app() {
  const a = new Hono();
  a.use(requestId());
  a.get("/", (c) => c.json({ id: c.var.requestId }));
  return a;
}

describe("requestId", () => {
  it("keeps the client's sane x-request-id, for the handlers and on the response", async () => {
    const res = await app().request("/", { headers: { "x-request-id": "req-abc.123:4" } });
    expect(res.headers.get("x-request-id")).toBe("req-abc.123:4");
    expect(await res.json()).toEqual({ id: "req-abc.123:4" });
  });

  it("replaces an id with spaces, control characters or more than 128 characters by a fresh UUID", async () => {
    for (const given of ["bad id", "tab\there", "x".repeat(129)]) {
      const res = await app().request("/", { headers: { "x-request-id": given } });
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await res.json()).toEqual({ id });
    }
  });

  it("gives each request without one its own id", async () => {
    const a = app();
    const [one, two] = await Promise.all([a.request("/"), a.request("/")]);
    expect(one.headers.get("x-request-id")).not.toBe(two.headers.get("x-request-id"));
  });
});
