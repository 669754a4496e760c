// Per-call credits are billed in one place (src/payments/credit-meter.ts) whoever settles them: the chain's meter step
// around a scrape's handler, and the search handler around its upstream call (`meter.settles: "handler"`). Driven
// through a real gateway over 127.0.0.1 against a small upstream: both leave the same ledger entry, a cached answer
// costs nothing, and a call the upstream refuses is released.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

const key = generateTenantKey();
let upstream: Server;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
const calls: string[] = [];

beforeAll(async () => {
  // A completed search answer (cacheable), a refusal when the query says so, a job id for a scrape.
  upstream = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      calls.push(req.url!);
      res.setHeader("content-type", "application/json");
      if (body.includes("refuse")) {
        res.writeHead(500);
        res.end(JSON.stringify({ message: "upstream broke", code: "internal" }));
      } else if (req.url!.startsWith("/api/web/search")) res.end(JSON.stringify({ status: "completed", data: { results: [] } }));
      else res.end(JSON.stringify({ jobId: `job_${calls.length}`, status: "pending" }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  gw = await startTestGateway(
    {
      upstream: { baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
      tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }] }],
    },
    { upstreamApiKey: "upstream-key", tokenSecret: "t".repeat(64) },
  );
});
afterAll(async () => {
  await gw?.close();
  await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
});

const post = (path: string, body: unknown) =>
  fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
const ledger = async () =>
  ((await (await fetch(`${gw.url}/_tollgate/ledger?limit=100`, { headers: { "x-api-key": key } })).json()) as { entries: any[] }).entries;

describe("per-call credits, billed in one place", () => {
  it("bills a search miss once in its handler, a cached repeat not at all, as the chain bills a scrape", async () => {
    const miss = await post("/api/web/search", { query: "one place" });
    expect(miss.status).toBe(200);
    expect(miss.headers.get("x-tollgate-cache")).toBe("miss");
    expect(miss.headers.get("x-tollgate-paid")).toBe("0.005");
    const hit = await post("/api/web/search", { query: "one place" });
    expect(hit.headers.get("x-tollgate-cache")).toBe("hit");
    expect(hit.headers.get("x-tollgate-paid")).toBe("0.00");
    expect((await post("/api/scrape", { url: "https://example.com" })).status).toBe(200);
    const shape = (e: any) => [e.route, e.kind, e.meter, e.state, e.amountUsd];
    expect((await ledger()).map(shape).sort()).toEqual([
      ["scrape.start", "credits", "call", "committed", "0.001"],
      ["web.search", "credits", "call", "committed", "0.005"],
    ]);
  });

  it("releases what a refused call held, in the handler as in the chain", async () => {
    const before = (await ledger()).length;
    expect((await post("/api/web/search", { query: "refuse this" })).status).toBe(500);
    expect((await post("/api/scrape", { url: "https://example.com/refuse" })).status).toBe(500);
    const added = (await ledger()).slice(0, (await ledger()).length - before);
    expect(added.map((e) => [e.route, e.state]).sort()).toEqual([
      ["scrape.start", "released"],
      ["web.search", "released"],
    ]);
  });
});
