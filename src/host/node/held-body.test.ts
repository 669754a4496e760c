// A body node:http has already parsed is taken as it sits (nodeHeldBody), over real sockets: whole in the head's packet
// it is handed out, and a later read of the body through the Request sees the same bytes; a body still on its way, or
// of another length than declared, is left to the usual read.
import { serve, type HttpBindings, type ServerType } from "@hono/node-server";
import { Hono } from "hono";
import { connect, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyFollowsHead, nodeHeldBody, nodeHeldText } from "./held-body.js";
import { heldBody, heldBodyNextTurn } from "../../web/held-body.js";
import type { PlatformSpeed } from "../../web/speed.js";

/** The Node entry's, with its fast paths on. */
const platform: PlatformSpeed = { heldBody: nodeHeldBody };
let server: ServerType;
let port = 0;

beforeAll(async () => {
  const app = new Hono();
  app.post("/take", async (c) => {
    const length = Number(c.req.header("content-length"));
    // As in the chain, after the request's first await: the parser has run through the rest of the packet by then.
    await Promise.resolve();
    const held = nodeHeldBody(c, length);
    const again = new Uint8Array(await c.req.arrayBuffer());
    return c.json({
      held: held ? Buffer.from(held).toString("utf8") : null,
      again: Buffer.from(again).toString("utf8"),
      secondHeld: nodeHeldBody(c, length) === undefined,
    });
  });
  // The core's seam, as the chain uses it: a step that has not waited yet runs before the parser reaches a body that
  // came in the head's packet; one turn later that body is held.
  app.post("/soon", async (c) => {
    const atHead = heldBody(platform, c, 1024);
    const soon = atHead ?? (await heldBodyNextTurn(platform, c, 1024));
    return c.json({ body: soon ? Buffer.from(soon).toString("utf8") : null, tookATurn: atHead === undefined });
  });
  // Over the caller's limit: not taken (the caller's reader refuses it, counting).
  app.post("/limit", async (c) => {
    await Promise.resolve();
    const held = heldBody(platform, c, 4);
    return c.json({ body: held ? "taken" : null, read: Buffer.from(await c.req.arrayBuffer()).toString("utf8") });
  });
  // A subrequest the gateway dispatches in-process keeps the client's `incoming` (not its `outgoing`): its body is its own.
  app.post("/inner", async (c) => {
    const held = heldBody(platform, c, 1024);
    return c.json({ held: held ? Buffer.from(held).toString("utf8") : null, own: await c.req.text() });
  });
  app.post("/outer", async (c) => {
    await Promise.resolve(); // the client's body is held by now, and nobody took it
    const env = { incoming: (c.env as HttpBindings).incoming };
    const res = await app.fetch(new Request("http://127.0.0.1/inner", { method: "POST", body: '{"sub":1}' }), env);
    return c.json({ inner: await res.json(), client: Buffer.from(heldBody(platform, c, 1024) ?? []).toString("utf8") });
  });
  // As the Node entry serves: a request whose body follows its head reaches the app one turn later, and a step that
  // has not waited finds that body held at once.
  app.on(["GET", "POST"], "/entry", (c) => {
    const held = heldBody(platform, c, 1024);
    return c.json({ follows: (c.env as { follows?: boolean }).follows, body: held ? Buffer.from(held).toString("utf8") : null });
  });
  const entry = async (req: Request, env: HttpBindings & { follows?: boolean }) => {
    if (!req.url.endsWith("/entry")) return app.fetch(req, env);
    env.follows = bodyFollowsHead(env.incoming);
    if (env.follows) await undefined;
    return app.fetch(req, env);
  };
  server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: entry as never, hostname: "127.0.0.1", port: 0 }, () => resolve(s));
  });
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Sends a raw request in the given pieces (`pause` ms apart) and returns the answer's JSON body. */
function raw(pieces: string[], pause = 0): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    let out = "";
    sock.on("data", (d) => {
      out += d.toString("utf8");
      const at = out.indexOf("\r\n\r\n");
      if (at >= 0 && /\}$/.test(out)) {
        sock.destroy();
        resolve(
          JSON.parse(
            out
              .slice(at + 4)
              .replace(/^[0-9a-f]+\r\n/, "")
              .replace(/\r\n0\r\n\r\n$/, ""),
          ),
        );
      }
    });
    sock.on("error", reject);
    sock.on("connect", async () => {
      for (const [i, p] of pieces.entries()) {
        if (i > 0 && pause) await new Promise((r) => setTimeout(r, pause));
        sock.write(p);
      }
    });
  });
}

const head = (length: number, path = "/take") =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe("nodeHeldBody", () => {
  it("hands out a body that came with its head, once, and a later read of the Request gets the same bytes", async () => {
    const body = '{"timeoutMs":1000,"é":"ü"}';
    const answer = await raw([head(Buffer.byteLength(body)) + body]);
    expect(answer).toEqual({ held: body, again: body, secondHeld: true });
  });

  it("leaves a body still on its way to the usual read", async () => {
    const body = '{"later":true}';
    const answer = await raw([head(body.length), body], 150);
    expect(answer).toMatchObject({ held: null, again: body });
  });

  it("hands out an empty body as empty", async () => {
    const answer = await raw([head(0)]);
    expect(answer).toMatchObject({ held: "", again: "" });
  });

  it("finds a body that came with the head one turn later, when the step asking had not waited yet", async () => {
    const body = '{"query":"hot cached query"}';
    const answer = await raw([head(body.length, "/soon") + body]);
    expect(answer).toMatchObject({ body });
  });

  it("leaves a body still on its way to the usual read after that turn too", async () => {
    const body = '{"later":true}';
    const answer = await raw([head(body.length, "/soon"), body], 150);
    expect(answer).toEqual({ body: null, tookATurn: true });
  });

  it("bodyFollowsHead: after the entry's one turn, a body that came with its head is held for a step that has not waited", async () => {
    const body = '{"query":"hot cached query"}';
    expect(await raw([head(body.length, "/entry") + body])).toEqual({ follows: true, body });
    // A body on its way: still one turn, then the usual read (nothing held yet).
    expect(await raw([head(body.length, "/entry"), body], 150)).toEqual({ follows: true, body: null });
    // No body: no turn.
    expect(await raw([head(0, "/entry")])).toEqual({ follows: false, body: "" });
    expect(await raw(["GET /entry HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"])).toEqual({ follows: false, body: null });
    // Nor for a GET with a body (no step reads one; its headers are not looked at for it).
    expect(await raw(["GET /entry HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"])).toEqual({ follows: false, body: null });
  });

  it("is not taken by a subrequest dispatched in-process with the client's incoming: each reads its own body", async () => {
    const body = '{"client":true}';
    expect(await raw([head(body.length, "/outer") + body])).toEqual({ inner: { held: null, own: '{"sub":1}' }, client: body });
  });

  it("leaves a body over the caller's limit to the usual read", async () => {
    const body = '{"a":12345}';
    const answer = await raw([head(body.length, "/limit") + body]);
    expect(answer).toEqual({ body: null, read: body });
  });
});

describe("nodeHeldText", () => {
  it("reads bytes as TextDecoder does: a leading BOM dropped, bad sequences replaced, any other text as it is", () => {
    const td = new TextDecoder();
    const samples = [
      Buffer.from('{"a":"é ü 日本 🙂"}'),
      Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"bom":1}')]),
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0xc3]),
      Buffer.from([0xef, 0xbb]),
      Buffer.alloc(0),
      new Uint8Array(Buffer.from('{"plain":"uint8array"}')),
      Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x31]),
    ];
    for (const b of samples) expect(nodeHeldText(b)).toBe(td.decode(b));
  });
});
