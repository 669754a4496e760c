// limitBody and the one JSON body reader (jsonBody): sizes bounded before and while reading, depth bounded before
// parsing, read once per request and shared through the context.
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse } from "../../src/errors.js";
import { jsonBody, jsonValue, setJsonBody } from "../../src/routing/json-body.js";
import { limitBody } from "./index.js";
import { webPlatform } from "../../src/web/speed.js";

/** A body sent as a stream of chunks, with no Content-Length (what a chunked upload looks like). */
function streamed(...chunks: string[]): RequestInit & { duplex: "half" } {
  const enc = new TextEncoder();
  return {
    method: "POST",
    duplex: "half",
    body: new ReadableStream<Uint8Array>({
      start(ctrl) {
        for (const ch of chunks) ctrl.enqueue(enc.encode(ch));
        ctrl.close();
      },
    }),
  };
}

function app(limit?: number) {
  const a = new Hono<GatewayEnv>();
  a.onError((err) => errorResponse(err));
  if (limit !== undefined) a.use("/echo", limitBody(limit));
  a.post("/echo", async (c) => {
    const first = await jsonBody(c, webPlatform);
    const again = await jsonBody(c, webPlatform);
    return c.json({ json: first.json, sameCopy: first === again });
  });
  a.post("/value", async (c) => c.json({ value: await jsonValue(c, webPlatform) }));
  // A step that changes the object it read (as a quota filling defaults does), then hands back what it saw.
  a.post("/mutate", async (c) => {
    const body = await jsonBody(c, webPlatform);
    const seen = { ...body.json };
    body.json.changed = true;
    return c.json({ seen, text: body.text });
  });
  a.post("/replace", async (c) => {
    await jsonBody(c, webPlatform);
    const replaced = setJsonBody(c, { filled: true });
    return c.json({ text: replaced.text, kept: (await jsonBody(c, webPlatform)).json });
  });
  return a;
}

const post = (body: string): RequestInit => ({ method: "POST", body, headers: { "content-type": "application/json" } });

describe("limitBody", () => {
  it("refuses a declared length over the row's limit with 413 body_too_large, before the body is read", async () => {
    const res = await app(16).request("/echo", post(JSON.stringify({ text: "x".repeat(64) })));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      message: "Request bodies on this route are limited to 16 bytes.",
      code: "body_too_large",
      limit: 16,
    });
  });

  it("counts a streamed body without a length against the row's limit as it arrives (413)", async () => {
    const res = await app(32).request("/echo", streamed('{"text":"', "y".repeat(40), '"}'));
    expect(res.status).toBe(413);
    expect((await res.json()).code).toBe("body_too_large");
  });

  it("reads a body within the limit, streamed or not", async () => {
    const ok = await app(64).request("/echo", post('{"a":1}'));
    expect(await ok.json()).toEqual({ json: { a: 1 }, sameCopy: true });
    const chunked = await app(64).request("/echo", streamed('{"b":', "2}"));
    expect(await chunked.json()).toEqual({ json: { b: 2 }, sameCopy: true });
  });
});

describe("jsonBody", () => {
  it("reads the body once and hands every step the same copy; an empty body is {}", async () => {
    const res = await app().request("/echo", { method: "POST" });
    expect(await res.json()).toEqual({ json: {}, sameCopy: true });
  });

  it("gives each request its own object for a text seen before (parsed when read), and the same refusals", async () => {
    const a = app();
    const text = JSON.stringify({ query: "again", n: [1, { deep: true }] });
    for (let i = 0; i < 3; i++) {
      const res = await a.request("/mutate", post(text));
      // A step that changed the object of an earlier request left nothing behind for this one.
      expect(await res.json()).toEqual({ seen: { query: "again", n: [1, { deep: true }] }, text });
    }
    for (let i = 0; i < 2; i++) {
      const bad = await a.request("/echo", post("[1,2]"));
      expect(bad.status).toBe(400);
    }
  });

  it("refuses text that is not JSON, and JSON that is not an object, with 400 invalid_json", async () => {
    const bad = await app().request("/echo", post("{not json"));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ message: "The request body is not valid JSON.", code: "invalid_json" });
    const list = await app().request("/echo", post("[1,2]"));
    expect(list.status).toBe(400);
    expect(await list.json()).toEqual({ message: "The request body must be a JSON object.", code: "invalid_json" });
  });

  it("refuses nesting deeper than 64 levels before parsing it (brackets inside strings do not count)", async () => {
    const deep = `{"a":${"[".repeat(70)}${"]".repeat(70)}}`;
    const res = await app().request("/echo", post(deep));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ message: "The request body nests deeper than 64 levels.", code: "invalid_json", maxDepth: 64 });
    // The shortest text that nests 65 deep (65 opening brackets) is still counted and refused.
    const shortest = await app().request("/echo", post("[".repeat(65)));
    expect(await shortest.json()).toMatchObject({ code: "invalid_json", maxDepth: 64 });
    const quoted = await app().request("/echo", post(JSON.stringify({ s: "[".repeat(200) })));
    expect(quoted.status).toBe(200);
  });

  it("reports a body that ends before its declared length as 400 body_incomplete, not a 500", async () => {
    const a = app();
    const req = new Request("http://gw/echo", {
      method: "POST",
      headers: { "content-length": "10" },
      duplex: "half",
      body: new ReadableStream({ start: (ctrl) => ctrl.error(new Error("socket closed")) }),
    } as RequestInit);
    const res = await a.request(req);
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("body_incomplete");
  });

  it("setJsonBody replaces the copy the chain forwards (its text with it)", async () => {
    const res = await app().request("/replace", post('{"a":1}'));
    expect(await res.json()).toEqual({ text: '{"filled":true}', kept: { filled: true } });
  });

  it("jsonValue takes any JSON shape (arrays too) with the same limits", async () => {
    expect(await (await app().request("/value", post("[1,2]"))).json()).toEqual({ value: [1, 2] });
    expect((await app().request("/value", post("nope"))).status).toBe(400);
  });
});
