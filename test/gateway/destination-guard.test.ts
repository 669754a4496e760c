// The destination guard (src/web/destination-guard.ts, Node's in src/host/node/destination-guard.ts): every
// outbound fetch a client or tenant can name — an OAuth client's metadata document, an alert webhook — is resolved by
// the guard, refused when any address is loopback, private, link-local (metadata), CGNAT or reserved (IPv4 and IPv6,
// mapped forms too), and connected to the address checked; one error whatever failed; bounded in time and size.
// Names are mapped by a test resolver to 127.0.0.1 (no real DNS, nothing leaves loopback).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { LookupAddress } from "node:dns";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeDestinationGuard, type Resolver } from "../../src/host/node/destination-guard.js";
import { DestinationUnreachable, type GuardedRequest } from "../../src/web/destination-guard.js";
import { nodeWebhookSender } from "../../src/host/node/webhook-sender.js";
import { startTestGateway } from "../helpers/gateway.js";
import { OAUTH_REDIRECT, pkcePair } from "../helpers/mcp-oauth.js";

let server: Server;
let port = 0;
let closedPort = 0;
const seen: Array<{ url: string; host: string }> = [];

/** Names the tests use, each mapped to its addresses (what a DNS answer would hold). */
const NAMES: Record<string, string[]> = {
  "docs.agent.test": ["127.0.0.1"],
  "mixed.agent.test": ["198.51.101.7", "127.0.0.1"], // one public-looking, one loopback: refused
  "mapped.agent.test": ["::ffff:127.0.0.1"],
  "metadata.agent.test": ["169.254.169.254"],
  "metadata6.agent.test": ["fd00:ec2::254"],
  "mapped-metadata.agent.test": ["::ffff:a9fe:a9fe"],
  "cgnat.agent.test": ["100.64.0.1"],
  "private.agent.test": ["10.1.2.3"],
  "v6loop.agent.test": ["::1"],
  "nat64.agent.test": ["64:ff9b::7f00:1"],
};
const resolver: Resolver = async (hostname) => {
  const all = NAMES[hostname];
  if (!all) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  return all.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 }));
};
const guard = nodeDestinationGuard({ resolver });
const get = (url: string, extra: Partial<GuardedRequest> = {}) =>
  guard.fetch({ url, timeoutMs: 1000, maxBytes: 10_000, policy: { allowHttp: true, allowCidrs: [] }, ...extra });
const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DestinationUnreachable);
  return err as DestinationUnreachable;
};

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url!, host: req.headers.host! });
    if (req.url === "/slow") return; // never answers
    if (req.url === "/big") return res.writeHead(200).end("x".repeat(50_000));
    if (req.url === "/redirect") return res.writeHead(302, { location: "http://169.254.169.254/" }).end();
    res.writeHead(req.url === "/doc.json" ? 200 : 404, { "content-type": "application/json" }).end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  closedPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe("the Node destination guard", () => {
  it("refuses a name when any address it resolves to is loopback, private, link-local, CGNAT or NAT64, in any form", async () => {
    const before = seen.length;
    for (const name of Object.keys(NAMES)) {
      const err = await refusal(get(`http://${name}:${port}/doc.json`));
      expect(err.reason, name).toMatch(/^refused: /);
      expect(err.message).toBe(new DestinationUnreachable("x").message);
    }
    // IP literals in every notation the URL parser reads: refused before any connection.
    for (const literal of [
      "127.0.0.1",
      "2130706433",
      "0x7f.1",
      "[::ffff:7f00:1]",
      "[::127.0.0.1]",
      "[::1]",
      "169.254.169.254",
      "[fe80::1]",
    ])
      await refusal(get(`http://${literal}:${port}/doc.json`));
    // Names are judged by what they resolve to: a name with no address is refused too (and nothing is sent).
    for (const name of ["localhost.agent.test", "db.internal", "intranet"]) await refusal(get(`http://${name}:${port}/doc.json`));
    expect(seen.length).toBe(before); // nothing reached the server
  });

  it("connects to the address it checked: an allowlisted range is reached under the name, with the name as Host", async () => {
    const allowed = { allowHttp: true, allowCidrs: ["127.0.0.0/8"] };
    const r = await get(`http://docs.agent.test:${port}/doc.json`, { policy: allowed });
    expect([r.status, new TextDecoder().decode(r.body)]).toEqual([200, '{"ok":true}']);
    expect(seen.at(-1)).toEqual({ url: "/doc.json", host: `docs.agent.test:${port}` });
    // A redirect is an answer, never followed (to metadata or anywhere).
    const moved = await get(`http://docs.agent.test:${port}/redirect`, { policy: allowed });
    expect(moved.status).toBe(302);
    expect(seen.at(-1)!.url).toBe("/redirect");
  });

  it("bounds time and size, and gives one error for a closed port, a silent one, an unknown name and a refused one", async () => {
    const allowed = { allowHttp: true, allowCidrs: ["127.0.0.0/8"] };
    const t0 = Date.now();
    const slow = await refusal(get(`http://docs.agent.test:${port}/slow`, { policy: allowed, timeoutMs: 300 }));
    expect(Date.now() - t0).toBeLessThan(1500);
    const big = await refusal(get(`http://docs.agent.test:${port}/big`, { policy: allowed }));
    const closed = await refusal(get(`http://docs.agent.test:${closedPort}/doc.json`, { policy: allowed }));
    const unknown = await refusal(get(`http://nowhere.agent.test:${port}/doc.json`, { policy: allowed }));
    const refused = await refusal(get(`http://metadata.agent.test:${port}/doc.json`, { policy: allowed }));
    const messages = new Set([slow, big, closed, unknown, refused].map((e) => e.message));
    expect(messages.size).toBe(1);
    // The reasons differ, for the gateway's own log.
    expect(new Set([slow, big, closed, unknown, refused].map((e) => e.reason)).size).toBe(5);
  });

  it("sends alert webhooks through the same guard: a name resolving to loopback is refused unless allowlisted", async () => {
    const before = seen.length;
    const send = nodeWebhookSender({ allowHttp: true, allowCidrs: [] }, guard);
    const req = { url: `http://docs.agent.test:${port}/hook`, headers: new Headers(), body: "{}", timeoutMs: 1000 };
    await expect(send(req)).rejects.toThrow(/refused/);
    expect(seen.length).toBe(before);
    const allowed = nodeWebhookSender({ allowHttp: true, allowCidrs: ["127.0.0.1/32"] }, guard);
    expect(await allowed(req)).toBe(404);
    expect(seen.at(-1)).toEqual({ url: "/hook", host: `docs.agent.test:${port}` });
  });
});

describe("an OAuth client's metadata document through the guard", () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  beforeAll(async () => {
    gw = await startTestGateway(
      {
        server: { logLevel: "error" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        oauth: { clientMetadataDocuments: { allowHttpLoopback: true, timeoutMs: 500, cacheSeconds: 0 } },
        tenants: [],
      },
      { upstreamApiKey: "k", tokenSecret: "s".repeat(40) },
    );
  });
  afterAll(async () => {
    await gw?.close();
  });

  const authorize = async (clientId: string) => {
    const { challenge } = await pkcePair();
    const u = new URL(`${gw.url}/authorize`);
    for (const [k, v] of Object.entries({
      response_type: "code",
      client_id: clientId,
      redirect_uri: OAUTH_REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
    }))
      u.searchParams.set(k, v);
    const r = await fetch(u, { redirect: "manual" });
    return { status: r.status, text: (await r.text()).replaceAll(clientId, "<client_id>") };
  };

  it("tells an open port from a closed one in no way: the same answer for both, and for a silent one", async () => {
    const open = await authorize(`http://127.0.0.1:${port}/missing.json`);
    const closed = await authorize(`http://127.0.0.1:${closedPort}/missing.json`);
    const silent = await authorize(`http://127.0.0.1:${port}/slow`);
    expect(open.status).toBe(400);
    expect(open.text).toContain("invalid_client");
    expect(closed).toEqual(open);
    expect(silent).toEqual(open);
  });
});

describe("a gateway whose resolver maps a client's https name to loopback", () => {
  it("refuses the document before connecting (the old check only refused IP literals and localhost)", async () => {
    const { startNodeGateway } = await import("../../src/host/node.js");
    const { parseConfig } = await import("../../config/load.js");
    const running = await startNodeGateway({
      config: parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: { baseUrl: "http://127.0.0.1:9" },
        oauth: { clientMetadataDocuments: { timeoutMs: 500, cacheSeconds: 0 } },
        tenants: [],
      }),
      secrets: { upstreamApiKey: "k", tokenSecret: "s".repeat(40) },
      deps: { destinations: guard },
    });
    try {
      const before = seen.length;
      const { challenge } = await pkcePair();
      const u = new URL(`${running.url}/authorize`);
      u.searchParams.set("response_type", "code");
      u.searchParams.set("client_id", `https://docs.agent.test:${port}/doc.json`);
      u.searchParams.set("redirect_uri", OAUTH_REDIRECT);
      u.searchParams.set("code_challenge", challenge);
      u.searchParams.set("code_challenge_method", "S256");
      const r = await fetch(u, { redirect: "manual" });
      expect(r.status).toBe(400);
      expect(await r.text()).toContain("could not be reached");
      expect(seen.length).toBe(before);
    } finally {
      await running.close();
    }
  });
});
