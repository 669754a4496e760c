// The Node transport never leaves a request waiting unbounded: requests undici refuses do not cost a pooled
// connection, and a request settles within its headers timeout (or at once on its signal) wherever it waits.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { UpstreamHeadersTimeout } from "../../web/transport.js";
import { undiciTransport } from "./undici-transport.js";

/** An upstream that answers `/ok` at once (after reading the body) and never answers `/silent`. */
async function startUpstream(): Promise<{ url: string; server: Server; received: () => number }> {
  let received = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    received++;
    if (req.url === "/silent") return void req.resume();
    req.resume();
    req.on("end", () => res.end("ok"));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, received: () => received };
}

/** How a call settled and when. */
async function settle(p: Promise<Response>): Promise<{ outcome: string; ms: number }> {
  const t = performance.now();
  try {
    const res = await p;
    return { outcome: `${res.status} ${await res.text()}`, ms: performance.now() - t };
  } catch (err) {
    return { outcome: err instanceof UpstreamHeadersTimeout ? "headers timeout" : (err as Error).name, ms: performance.now() - t };
  }
}

describe("undiciTransport", { timeout: 5000 }, () => {
  let up: Awaited<ReturnType<typeof startUpstream>>;
  const transports: Array<{ close(): Promise<void> }> = [];
  const transport = (o: Parameters<typeof undiciTransport>[0]) => {
    const t = undiciTransport(o);
    transports.push(t);
    return t;
  };
  beforeAll(async () => {
    up = await startUpstream();
  });
  afterEach(async () => {
    up.server.closeAllConnections();
    // Requests stuck in a pool keep close() waiting: a test that fails leaves them behind, hence the bound.
    await Promise.race([Promise.all(transports.splice(0).map((t) => t.close())), new Promise((r) => setTimeout(r, 1000))]);
  });
  afterAll(async () => {
    await new Promise((r) => up.server.close(r));
  });

  it("keeps its connections when undici refuses requests outright (an Expect header): the next request is answered", async () => {
    // Two connections, three refusals: each refusal used to take a connection out of the pool for good, and the
    // request after them waited in the pool's queue, out of reach of any timeout (the fuzzer's 20 s stalls).
    const t = transport({ connections: 2, headersTimeoutMs: 2000 });
    for (let i = 0; i < 3; i++) {
      const refused = await settle(
        t.request({ url: `${up.url}/ok`, method: "POST", headers: new Headers({ expect: "100-continue" }), body: "{}" }),
      );
      expect(refused.outcome).toBe("NotSupportedError");
    }
    const next = await settle(t.request({ url: `${up.url}/ok`, method: "GET", headers: new Headers() }));
    expect(next.outcome).toBe("200 ok");
    expect(next.ms).toBeLessThan(1000);
  });

  it("times a request that waits for a free connection, and settles it at once when its client goes away", async () => {
    const t = transport({ connections: 1, headersTimeoutMs: 400 });
    const busy = t.request({ url: `${up.url}/silent`, method: "GET", headers: new Headers(), headersTimeoutMs: 5000 });
    busy.catch(() => {});
    // The only connection is busy: these wait in the pool's queue.
    const timed = settle(t.request({ url: `${up.url}/ok`, method: "GET", headers: new Headers() }));
    const client = new AbortController();
    const abandoned = settle(t.request({ url: `${up.url}/ok`, method: "GET", headers: new Headers(), signal: client.signal }));
    setTimeout(() => client.abort(), 100);
    const a = await abandoned;
    expect(a.outcome).toBe("AbortError");
    expect(a.ms).toBeLessThan(300);
    const b = await timed;
    expect(b.outcome).toBe("headers timeout");
    expect(b.ms).toBeGreaterThanOrEqual(350);
    expect(b.ms).toBeLessThan(1500);
  });

  it("times the answer while a request body is still open, from the last chunk sent", async () => {
    // Undici's own headers timeout does not fire while the body is being written: a silent upstream and a body that
    // stops mid-way used to hang for good.
    const t = transport({ headersTimeoutMs: 400 });
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"query":'));
      },
    });
    const r = await settle(t.request({ url: `${up.url}/silent`, method: "POST", headers: new Headers(), body }));
    expect(r.outcome).toBe("headers timeout");
    expect(r.ms).toBeLessThan(1500);
  });

  it("gives a slow upload its time: each chunk sent starts the wait again", async () => {
    const t = transport({ headersTimeoutMs: 300 });
    const enc = new TextEncoder();
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        await new Promise((r) => setTimeout(r, 150));
        if (n++ < 5) c.enqueue(enc.encode("x".repeat(10)));
        else c.close();
      },
    });
    const r = await settle(t.request({ url: `${up.url}/ok`, method: "POST", headers: new Headers(), body }));
    expect(r.outcome).toBe("200 ok");
    expect(r.ms).toBeGreaterThan(600);
  });
});
