// refuseMethodOverride: a request asking (by ?_method=) to be read as another method never reaches the next step.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse } from "../../src/errors.js";
import { refuseMethodOverride } from "./index.js";

function app() {
  let reached = 0;
  const a = new Hono<GatewayEnv>();
  a.onError((err) => errorResponse(err));
  a.all("/*", refuseMethodOverride, (c) => {
    reached++;
    return c.json({ method: c.req.method });
  });
  return { a, reached: () => reached };
}

describe("refuseMethodOverride", () => {
  it("refuses ?_method= with 400 method_override_refused naming the field, before the next step", async () => {
    const { a, reached } = app();
    const res = await a.request("/api/sandbox/sb_1?_method=DELETE", { method: "POST" });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      message: "?_method= is not accepted: send the request with the method you mean.",
      code: "method_override_refused",
      field: "_method",
    });
    expect(reached()).toBe(0);
  });

  it("refuses it wherever it sits in the query, and with an empty value", async () => {
    const { a, reached } = app();
    for (const q of ["?a=1&_method=PUT", "?_method=", "?_method", "?x=1&%5Fmethod=PUT"]) {
      const res = await a.request(`/api/session${q}`, { method: "POST" });
      expect(res.status, q).toBe(400);
    }
    expect(reached()).toBe(0);
  });

  it("lets through a query without it, a path that merely contains the word, and a similar name", async () => {
    const { a, reached } = app();
    for (const url of ["/api/sessions?page=2", "/api/_method/x", "/api/x?method=PUT", "/api/x?_methods=1"]) {
      const res = await a.request(url, { method: "GET" });
      expect(res.status, url).toBe(200);
      expect(await res.json()).toEqual({ method: "GET" });
    }
    expect(reached()).toBe(4);
  });
});
