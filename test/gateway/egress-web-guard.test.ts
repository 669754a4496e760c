// The egress on the Web path Workers take: createGateway with the Web destination guard (fetch, the URL checked, no
// resolver), in-process, in front of a local test server: the placeholder is swapped for the value, streamed, and a
// refused destination answers the one egress_unreachable. (The Node guard's path: secrets-sandbox.test.ts.)
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { webDestinationGuard } from "../../src/web/destination-guard.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

const VALUE = "sk-web-guard-0123456789";
const key = generateTenantKey();
let server: Server;
let host: string;
let gw: Gateway;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    // The upstream's sandbox detail, which the egress reads to know the sandbox still runs (ended unseen: refused).
    if (req.url?.startsWith("/api/sandbox/")) {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ id: req.url.split("/")[3], status: "active" }));
    }
    seen.push(req.headers);
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end("data: hi\n\n");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = parseConfig({
    server: { logLevel: "error", publicOrigin: "https://gw.example" },
    upstream: { baseUrl: `http://${host}` },
    egress: { allowHttpLoopback: true },
    tenants: [{ id: "acme", scopes: ["sandboxes"], keys: [{ hash: await hashTenantKey(key) }] }],
  });
  gw = createGateway(config, { secrets: { upstreamApiKey: "k", tokenSecret: "t".repeat(40) }, destinations: webDestinationGuard });
});

afterAll(async () => {
  await gw?.close();
  await new Promise((r) => server?.close(r));
});

const call = (path: string, init: RequestInit = {}) => gw.app.fetch(new Request(`https://gw.example${path}`, init));

it("swaps the placeholder for the value through the Web guard, and refuses an address it does not allow", async () => {
  for (const [name, hosts] of [
    ["API", [host]],
    ["META", ["169.254.169.254"]],
  ] as const) {
    const put = await call(`/_tollgate/secrets/${name}`, {
      method: "PUT",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ value: VALUE, hosts }),
    });
    expect(put.status).toBe(201);
  }
  // A sandbox of acme's, live, as the sandbox routes would have claimed it.
  await gw.services.stores.ownership.claim("sandbox", "sbx_web", "acme");
  const env = await gw.services.vault.placeholders("acme", "sbx_web", new Set());
  const res = await call("/_tollgate/egress/API/v1/x", { headers: { authorization: `Bearer ${env.API}` } });
  expect(res.status).toBe(200);
  expect(await res.text()).toBe("data: hi\n\n");
  expect(seen.at(-1)!.authorization).toBe(`Bearer ${VALUE}`);
  const meta = await call("/_tollgate/egress/META/latest", { headers: { authorization: `Bearer ${env.META}` } });
  expect(meta.status).toBe(502);
  expect(((await meta.json()) as { code: string }).code).toBe("egress_unreachable");
  expect(seen).toHaveLength(1);
});
