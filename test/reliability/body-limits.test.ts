// Body limits hold while the body streams: a gateway process takes 16 concurrent 50 MiB bodies on every route that
// reads one and its memory barely moves; a 600 MiB stream is refused with 413; deep JSON is a 400 before any parsing.
import { Client } from "undici";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { sendBulkBody } from "./bulk-body.js";
import { rssMiB, sampleRss } from "./process-memory.js";

const RSS_GROWTH_LIMIT_MIB = 64;

describe("request bodies are bounded while they stream", () => {
  let emu: EmulatorHandle;
  let gw: GatewayProcess;
  const keys = { acme: generateTenantKey(), ops: generateTenantKey() };
  let sessionId: string;
  let baseline: number;
  const figures: string[] = [];

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sessions"] });
    const runtimePort = new URL(emu.runtimeUrl).port;
    gw = await startGatewayProcess(
      {
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: {
          baseUrl: emu.controlUrl,
          allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`, new URL(emu.controlUrl).host],
        },
        tenants: [
          { id: "acme", scopes: ["search", "sessions", "sandboxes"], keys: [{ hash: await hashTenantKey(keys.acme) }] },
          { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(keys.ops) }] },
        ],
      },
      { TOLLGATE_UPSTREAM_API_KEY: emu.apiKey, TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") },
    );
    const created = await fetch(`${gw.url}/api/session`, {
      method: "POST",
      headers: { "x-api-key": keys.acme, "content-type": "application/json" },
      body: "{}",
    });
    expect(created.status).toBe(200);
    sessionId = (await created.json()).id;
    // Warm the paths under test with small bodies, so the baseline already holds their code and buffers.
    for (let i = 0; i < 3; i++) {
      for (const path of ["/x402/web/search", "/api/sandbox", "/_tollgate/tokens", `/_tollgate/computer-action/${sessionId}`]) {
        await sendBulkBody({ url: gw.url + path, headers: { "x-api-key": keys.acme }, mib: 2, declared: i % 2 === 0 });
      }
    }
    baseline = rssMiB(gw.pid);
  }, 120_000);

  afterAll(async () => {
    if (figures.length) console.log(`[body-limits] baseline RSS ${baseline.toFixed(0)} MiB\n${figures.join("\n")}`);
    await gw?.stop();
    await emu?.close();
  });

  const routes = () => [
    { name: "paid search", path: "/x402/web/search" },
    { name: "sandbox creation (quota)", path: "/api/sandbox" },
    { name: "token minting", path: "/_tollgate/tokens" },
    { name: "a computer action", path: `/_tollgate/computer-action/${sessionId}` },
  ];

  for (const declared of [true, false]) {
    it(`16 concurrent 50 MiB bodies (${declared ? "Content-Length" : "chunked"}) on each body-reading route: all 413, RSS grows ≤ ${RSS_GROWTH_LIMIT_MIB} MiB`, async () => {
      for (const r of routes()) {
        const sampler = sampleRss(gw.pid);
        const started = Date.now();
        const answers = await Promise.all(
          Array.from({ length: 16 }, () =>
            sendBulkBody({ url: gw.url + r.path, headers: { "x-api-key": keys.acme }, mib: 50, declared, prefix: '{"query":"' }),
          ),
        );
        const peak = sampler.stop();
        figures.push(
          `  ${r.name.padEnd(26)} ${declared ? "length " : "chunked"} 16×50 MiB in ${Date.now() - started} ms, peak RSS ${peak.toFixed(0)} MiB (+${(peak - baseline).toFixed(0)})`,
        );
        expect(
          answers.map((a) => a.status),
          r.name,
        ).toEqual(Array(16).fill(413));
        expect(JSON.parse(answers[0]!.body)).toMatchObject({ code: "body_too_large" });
        expect(peak - baseline, `${r.name}: peak ${peak.toFixed(0)} MiB over a baseline of ${baseline.toFixed(0)} MiB`).toBeLessThanOrEqual(
          RSS_GROWTH_LIMIT_MIB,
        );
      }
    }, 120_000);
  }

  it("refuses one 600 MiB streamed body with 413, not 500, and keeps its memory", async () => {
    const sampler = sampleRss(gw.pid);
    const a = await sendBulkBody({
      url: `${gw.url}/x402/web/search`,
      headers: { "x-api-key": keys.acme },
      mib: 600,
      declared: false,
      prefix: '{"query":"',
    });
    const peak = sampler.stop();
    figures.push(`  one 600 MiB chunked body: ${a.status}, peak RSS ${peak.toFixed(0)} MiB (+${(peak - baseline).toFixed(0)})`);
    expect(a.status).toBe(413);
    expect(JSON.parse(a.body)).toMatchObject({ code: "body_too_large", limit: expect.any(Number) });
    expect(peak - baseline).toBeLessThanOrEqual(RSS_GROWTH_LIMIT_MIB);
  }, 60_000);

  it("answers JSON nested 3000 and 5000 deep with 400 invalid_json on every JSON route, before parsing it (or 413 past the route's size)", async () => {
    const targets = [
      { path: "/x402/web/search", key: keys.acme },
      { path: "/api/web/search", key: keys.acme },
      { path: "/api/sandbox", key: keys.acme },
      { path: "/api/session", key: keys.acme },
      { path: "/_tollgate/tokens", key: keys.acme },
      { path: "/_tollgate/tokens/revoke", key: keys.acme },
      { path: "/_tollgate/admin/tenants", key: keys.ops },
    ];
    for (const depth of [3000, 5000]) {
      const objects = `{"query":${'{"a":'.repeat(depth)}1${"}".repeat(depth)}}`;
      const arrays = `${"[".repeat(depth)}${"]".repeat(depth)}`;
      for (const t of targets) {
        for (const body of [objects, arrays]) {
          const r = await fetch(gw.url + t.path, {
            method: "POST",
            headers: { "x-api-key": t.key, "content-type": "application/json" },
            body,
          });
          const { code } = await r.json();
          // Searches and token requests are limited to 16 KiB: deep bodies pass that before their depth is looked at.
          const small = t.path.startsWith("/_tollgate/tokens") || t.path.endsWith("/web/search");
          if (r.status === 413 && small && body.length > 16 * 1024) expect(code).toBe("body_too_large");
          else expect([r.status, code], `${t.path} at depth ${depth}`).toEqual([400, "invalid_json"]);
        }
      }
    }
    // Nested objects inside a string are text, not depth.
    const inString = await fetch(`${gw.url}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": keys.acme, "content-type": "application/json" },
      body: JSON.stringify({ kind: "search", cap: "0.01", note: "[".repeat(5000) }),
    });
    expect((await inString.json()).code).toBe("invalid_token_request");
  });

  it("holds a search to its row's 16 KiB: a larger body is refused before it is read, a query of a few KiB is not", async () => {
    for (const path of ["/x402/web/search", "/api/web/search"]) {
      const big = JSON.stringify({ query: "q".repeat(17 * 1024) });
      const refused = await fetch(gw.url + path, {
        method: "POST",
        headers: { "x-api-key": keys.acme, "content-type": "application/json" },
        body: big,
      });
      expect(refused.status).toBe(413);
      expect(await refused.json()).toMatchObject({ code: "body_too_large", limit: 16 * 1024 });
      const streamed = await sendBulkBody({
        url: gw.url + path,
        headers: { "x-api-key": keys.acme },
        mib: 1,
        declared: false,
        prefix: '{"query":"',
      });
      expect(streamed.status).toBe(413);
      const fine = await fetch(gw.url + path, {
        method: "POST",
        headers: { "x-api-key": keys.acme, "content-type": "application/json" },
        body: JSON.stringify({ query: `weather ${"x".repeat(4 * 1024)}` }),
      });
      expect(fine.status, path).not.toBe(413);
      await fine.arrayBuffer();
    }
  });

  it("answers the next request at once after refusing the rest of a body (that connection closes after its answer)", async () => {
    const client = new Client(gw.url, { pipelining: 1, keepAliveTimeout: 10_000 });
    try {
      for (let i = 0; i < 3; i++) {
        const chunks = async function* () {
          yield Buffer.from('{"query":"');
          for (let n = 0; n < 16; n++) yield Buffer.alloc(64 * 1024, 0x20);
          yield Buffer.from('"}');
        };
        const refused = await client.request({
          path: "/x402/web/search",
          method: "POST",
          headers: { "x-api-key": keys.acme, "content-type": "application/json" },
          body: Readable.from(chunks()),
        });
        expect(refused.statusCode).toBe(413);
        await refused.body.dump();
        const started = Date.now();
        const next = await client.request({ path: "/_tollgate/health", method: "GET" });
        expect(next.statusCode).toBe(200);
        await next.body.dump();
        expect(Date.now() - started).toBeLessThan(400); // not sent into a connection the server then drops
      }
    } finally {
      await client.close();
    }
  });

  it("is still up, and logged nothing unhandled", async () => {
    expect((await fetch(`${gw.url}/_tollgate/health`)).status).toBe(200);
    expect(gw.output()).not.toMatch(/unhandled|internal_error/);
  });
});
