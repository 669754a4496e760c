// Headers added after the handler land in an answer's unread header record on node-server (no Headers built), with
// the same result as Headers.set: replaced case-insensitively, the default content type kept, the record the handler
// made left alone, and the usual way taken once something has read the headers.
import { serve, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestId } from "../../../middleware/request-id/index.js";
import type { PlatformSpeed } from "../../web/speed.js";
import { headerlessCheck, unreadHeaderWriter } from "./unread-headers.js";

const shared = { "Content-Type": "application/json", "X-Request-Id": "from-the-upstream" };
/** The gateway's, its writer set once the server runs (as the Node entry does). */
const platform: PlatformSpeed = {};
let server: ServerType;
let url = "";
let writes = 0;

beforeAll(async () => {
  const app = new Hono();
  app.use(requestId(platform));
  app.use("/read-first", async (c, next) => {
    await next();
    c.res.headers.get("content-type"); // read: a full Response now
  });
  app.get("/shared", () => new Response('{"a":1}', { headers: shared }));
  app.get("/bare", () => new Response("plain"));
  // A handler that named the request's id itself (the paid search's answer does).
  const named: Record<string, string> = {};
  app.get("/named", (c) => {
    named.last = c.get("requestId");
    return new Response('{"n":1}', { headers: { "content-type": "application/json", "x-request-id": c.get("requestId") } });
  });
  app.get("/empty", () => new Response(null, { status: 204 }));
  app.get("/read-first", () => new Response('{"b":2}', { headers: { "content-type": "application/json" } }));
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const writer = unreadHeaderWriter();
  expect(writer).toBeDefined(); // node-server keeps its record as this expects (it checks itself when made)
  platform.writeUnread = (res, name, value) => {
    const done = writer!(res, name, value);
    if (done) writes++;
    return done;
  };
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
});

describe("headers added to an unread answer (node-server)", () => {
  it("replaces a header of the handler's record, case-insensitively, and leaves that record as it was", async () => {
    for (const id of ["req-a", "req-b"]) {
      const before = writes;
      const res = await request(`${url}/shared`, { headers: { "x-request-id": id } });
      expect(res.headers["x-request-id"]).toBe(id);
      expect(res.headers["content-type"]).toBe("application/json");
      expect(await res.body.json()).toEqual({ a: 1 });
      expect(writes).toBe(before + 1);
    }
    expect(shared).toEqual({ "Content-Type": "application/json", "X-Request-Id": "from-the-upstream" });
  });

  it("keeps the default content type of a body made without headers, and adds nothing to a bodiless answer", async () => {
    const bare = await request(`${url}/bare`, { headers: { "x-request-id": "req-c" } });
    expect(bare.headers["content-type"]).toBe("text/plain; charset=UTF-8");
    expect(bare.headers["x-request-id"]).toBe("req-c");
    expect(await bare.body.text()).toBe("plain");
    const empty = await request(`${url}/empty`, { headers: { "x-request-id": "req-d" } });
    expect(empty.statusCode).toBe(204);
    expect(empty.headers["x-request-id"]).toBe("req-d");
    expect(empty.headers["content-type"]).toBeUndefined();
    await empty.body.dump();
  });

  it("leaves a record that already says it as it would write it", async () => {
    const res = await request(`${url}/named`, { headers: { "x-request-id": "req-n" } });
    expect(res.headers["x-request-id"]).toBe("req-n");
    expect(res.headers["content-type"]).toBe("application/json");
    expect(await res.body.json()).toEqual({ n: 1 });
  });

  it("sets it the usual way on an answer whose headers were read", async () => {
    const before = writes;
    const res = await request(`${url}/read-first`, { headers: { "x-request-id": "req-e" } });
    expect(res.headers["x-request-id"]).toBe("req-e");
    expect(await res.body.json()).toEqual({ b: 2 });
    expect(writes).toBe(before);
  });
});

describe("an answer made without headers (node-server)", () => {
  it("is seen to have none until its headers are read or set, without building them", () => {
    const headerless = headerlessCheck();
    expect(headerless).toBeDefined();
    const none = new Response(null, { status: 200, statusText: "tag" });
    expect(headerless!(none)).toBe(true);
    expect(headerless!(none)).toBe(true); // the check itself reads nothing
    const set = new Response(null, { status: 200 });
    set.headers.set("vary", "Origin");
    expect(headerless!(set)).toBe(false);
    const read = new Response(null, { status: 200 });
    expect(read.headers.get("vary")).toBeNull();
    expect(headerless!(read)).toBe(false);
    expect(headerless!(new Response(null, { headers: { "x-a": "1" } }))).toBe(false);
    expect(headerless!(new Response("body"))).toBe(false);
  });
});
