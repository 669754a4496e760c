import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { errorResponse, GatewayError } from "../../src/errors.js";
import { Logger, Redactor } from "../../src/log.js";
import { requestId } from "../request-id/index.js";
import { accessLog } from "./index.js";

function app(lines: string[]) {
  const a = new Hono();
  a.onError((err) => errorResponse(err));
  a.use(requestId());
  a.use(accessLog(new Logger((l) => lines.push(l), "info", new Redactor())));
  a.get("/paid", (c) => {
    Object.assign(c.var.logFields, { tenant: "acme", route: "x402.web.search", paid: 5000n });
    return c.json({ ok: true });
  });
  a.get("/refused", () => {
    throw new GatewayError(403, "token_scope", "nope");
  });
  return a;
}

describe("accessLog", () => {
  it("writes one line per request with the fields the chain filled in; amounts as strings", async () => {
    const lines: string[] = [];
    await app(lines).request("/paid", { headers: { "x-request-id": "log-1", "user-agent": "probe/1" } });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({
      requestId: "log-1",
      method: "GET",
      path: "/paid",
      status: 200,
      tenant: "acme",
      route: "x402.web.search",
      paid: "5000",
      userAgent: "probe/1",
    });
    expect(typeof line.durationMs).toBe("number");
    // The request's own fields first, the chain's in the order it set them, then the outcome.
    expect(Object.keys(line)).toEqual([
      ...["time", "level", "msg", "requestId", "method", "path"],
      ...["tenant", "route", "paid", "status", "userAgent", "durationMs"],
    ]);
  });

  it("writes the line of a refused request too, with the status the client got", async () => {
    const lines: string[] = [];
    const res = await app(lines).request("/refused");
    expect(res.status).toBe(403);
    expect(JSON.parse(lines[0]!)).toMatchObject({ path: "/refused", status: 403 });
  });
});
