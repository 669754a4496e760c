// Agent policies (docs/agent-policies.md) on the route table's body step, for HTTP (the Hyperbrowser SDK through the
// gateway) and MCP (the official MCP client, whose tools call the same rows) alike: the operator's policy, the
// tenant's and a token's all apply, a refusal is 403 policy_denied naming the policy and the field, and nothing is
// forwarded to the emulator.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser, type HyperbrowserError } from "@hyperbrowser/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

const SITE = "http://web.emulator.test";
const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];

let stack: SessionGateway;
let sdk: Hyperbrowser;
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      {
        id: "acme",
        scopes: ALL,
        policy: {
          domains: { deny: ["denied.example", "*.tracker.test"] },
          images: ["node", "debian"],
          maxSessionMinutes: 30,
          maxSandboxMinutes: 20,
          maxCrawlPages: 5,
          egress: { allowOut: ["10.0.0.0/8", "example.org"] },
        },
      },
      { id: "initech", scopes: ALL },
      { id: "ops", scopes: ["admin"] },
    ],
    {
      modules: ["sessions", "jobs", "sandboxes"],
      record: true,
      // The operator's floor: applies to every tenant, whatever its own policy says.
      config: { policy: { egress: { denyOut: ["169.254.0.0/16", "metadata.internal"] } } },
    },
  );
  sdk = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
}, 120_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  await stack?.close();
});

/** What the emulator received on `method path` since `from`. */
const forwarded = (from: number, method: string, path: string) =>
  stack.emulator.received.slice(from).filter((r) => r.method === method && new URL(r.url).pathname === path).length;

/** The SDK call's refusal: its status and the gateway's JSON body (the SDK puts the message in its error). */
async function sdkRefusal(p: Promise<unknown>): Promise<{ status?: number; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as HyperbrowserError;
    return { status: e.statusCode, message: e.message };
  }
  throw new Error("the call was not refused");
}

async function post(path: string, body: unknown, credential = stack.keys.acme!) {
  const r = await fetch(`${stack.gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${credential}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any> };
}

async function mint(body: Record<string, unknown>) {
  const r = await post("/_tollgate/tokens", { kind: "mcp", ttlSeconds: 600, cap: "1.00", scopes: ALL, ...body });
  expect(r.status).toBe(201);
  return r.body as { token: string };
}

async function connect(credential: string): Promise<Client> {
  const client = new Client({ name: "policy-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.gateway.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${credential}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return client;
}
const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }, undefined, { timeout: 90_000 }) as Promise<CallToolResult>;
function toolError(r: CallToolResult): Record<string, any> {
  expect(r.isError).toBe(true);
  return JSON.parse((r.content.find((p) => p.type === "text") as { text: string }).text);
}

describe("agent policies over HTTP (the Hyperbrowser SDK)", () => {
  it("a crawl of a denied domain is refused naming domains.deny and the url; nothing forwarded", async () => {
    const from = stack.emulator.received.length;
    const r = await sdkRefusal(sdk.crawl.start({ url: "https://denied.example/products" }));
    expect(r.status).toBe(403);
    expect(r.message).toContain("policy domains.deny refuses url (denied.example)");
    // A subdomain of a denied host, and a "*." rule.
    const raw = await post("/api/crawl", { url: "https://shop.denied.example/" });
    expect(raw).toMatchObject({ status: 403, body: { code: "policy_denied", policy: "domains.deny", field: "url", by: "tenant" } });
    expect((await post("/api/scrape", { url: "https://a.tracker.test/x" })).body).toMatchObject({ policy: "domains.deny" });
    expect((await post("/api/extract", { urls: [`${SITE}/about`, "http://denied.example/*"] })).body).toMatchObject({
      code: "policy_denied",
      field: "urls[1]",
    });
    expect(forwarded(from, "POST", "/api/crawl") + forwarded(from, "POST", "/api/scrape") + forwarded(from, "POST", "/api/extract")).toBe(
      0,
    );
  });

  it("a crawl larger than maxCrawlPages is refused; one without maxPages is sent with the limit", async () => {
    const from = stack.emulator.received.length;
    const r = await sdkRefusal(sdk.crawl.start({ url: `${SITE}/products`, maxPages: 50 }));
    expect(r.status).toBe(403);
    expect(r.message).toContain("policy maxCrawlPages refuses maxPages (50 > 5)");
    expect(forwarded(from, "POST", "/api/crawl")).toBe(0);
    const ok = await sdk.crawl.start({ url: `${SITE}/products` });
    expect(ok.jobId).toBeTruthy();
    expect(forwarded(from, "POST", "/api/crawl")).toBe(1);
  });

  it("a sandbox from a disallowed image is refused naming images and imageName; nothing forwarded", async () => {
    const from = stack.emulator.received.length;
    const r = await sdkRefusal(sdk.sandboxes.create({ imageName: "ubuntu" }));
    expect(r.status).toBe(403);
    expect(r.message).toContain("policy images refuses imageName (ubuntu)");
    expect(forwarded(from, "POST", "/api/sandbox")).toBe(0);
  });

  it("a session or sandbox beyond the longest lifetime is refused naming the limit; nothing forwarded", async () => {
    const from = stack.emulator.received.length;
    const s = await sdkRefusal(sdk.sessions.create({ timeoutMinutes: 90 }));
    expect(s.status).toBe(403);
    expect(s.message).toContain("policy maxSessionMinutes refuses timeoutMinutes (90 > 30)");
    const b = await sdkRefusal(sdk.sandboxes.create({ imageName: "node", timeoutMinutes: 60 }));
    expect(b.message).toContain("policy maxSandboxMinutes refuses timeoutMinutes (60 > 20)");
    // A job's browser is a session too.
    expect((await post("/api/scrape", { url: `${SITE}/about`, sessionOptions: { timeoutMinutes: 45 } })).body).toMatchObject({
      policy: "maxSessionMinutes",
      field: "sessionOptions.timeoutMinutes",
    });
    expect(forwarded(from, "POST", "/api/session") + forwarded(from, "POST", "/api/sandbox") + forwarded(from, "POST", "/api/scrape")).toBe(
      0,
    );
  });

  it("an egress rule wider than the floor is refused: the operator's deny list, the tenant's allow list", async () => {
    const from = stack.emulator.received.length;
    const d = await sdkRefusal(sdk.sandboxes.create({ imageName: "node", allowOut: ["169.254.169.254"] }));
    expect(d.status).toBe(403);
    expect(d.message).toContain("policy egress.denyOut refuses allowOut (169.254.169.254); set by the operator's policy");
    const a = await sdkRefusal(sdk.sessions.create({ allowOut: ["8.8.8.8/32"] }));
    expect(a.message).toContain("policy egress.allowOut refuses allowOut (8.8.8.8/32); set by the tenant's policy");
    expect(forwarded(from, "POST", "/api/sandbox") + forwarded(from, "POST", "/api/session")).toBe(0);
  });

  it("the floor is merged into a create: the operator's denyOut and the tenant's allowOut reach the upstream", async () => {
    const sb = await sdk.sandboxes.create({ imageName: "node", allowOut: ["10.1.0.0/16"], denyOut: ["10.1.2.3"] });
    try {
      const detail = (await (
        await fetch(`${stack.gateway.url}/api/sandbox/${sb.id}`, { headers: { authorization: `Bearer ${stack.keys.acme}` } })
      ).json()) as { network?: { allowOut: string[]; denyOut: string[] }; timeoutMinutes?: number };
      expect(detail.network?.allowOut).toEqual(["10.1.0.0/16"]);
      expect(detail.network?.denyOut).toEqual(expect.arrayContaining(["10.1.2.3", "169.254.0.0/16", "metadata.internal"]));
      // A network update cannot widen it either.
      const widen = await fetch(`${stack.gateway.url}/api/sandbox/${sb.id}/network`, {
        method: "PUT",
        headers: { authorization: `Bearer ${stack.keys.acme}`, "content-type": "application/json" },
        body: JSON.stringify({ allowOut: ["169.254.169.254"] }),
      });
      expect(widen.status).toBe(403);
      expect(await widen.json()).toMatchObject({ code: "policy_denied", policy: "egress.denyOut" });
    } finally {
      await sdk.sandboxes.stop(sb.id).catch(() => {});
    }
  });

  it("another tenant without a policy of its own still gets the operator's floor, and nothing else", async () => {
    const rival = new Hyperbrowser({ apiKey: stack.keys.initech!, baseUrl: stack.gateway.url });
    const r = await sdkRefusal(rival.sandboxes.create({ imageName: "ubuntu", allowOut: ["169.254.0.1"] }));
    expect(r.message).toContain("policy egress.denyOut refuses allowOut (169.254.0.1); set by the operator's policy");
    const job = await rival.crawl.start({ url: "https://denied.example/" }).catch((e: Error) => e);
    // initech's own policy says nothing about domains: the upstream gets it (and the emulator answers).
    expect(job instanceof Error ? job.message : "").not.toContain("policy");
  });

  it("a token narrows its tenant's policy, never widens it: both apply", async () => {
    const narrow = await mint({ policy: { domains: { allow: ["web.emulator.test"] }, maxCrawlPages: 2 } });
    const off = await post("/api/crawl", { url: "https://example.com/" }, narrow.token);
    expect(off.body).toMatchObject({ code: "policy_denied", policy: "domains.allow", by: "token" });
    expect((await post("/api/crawl", { url: `${SITE}/`, maxPages: 3 }, narrow.token)).body).toMatchObject({
      policy: "maxCrawlPages",
      by: "token",
    });
    // A token that claims to allow a denied domain or a longer crawl does not: the tenant's policy still applies.
    const wide = await mint({ policy: { domains: { allow: ["denied.example", "web.emulator.test"] }, maxCrawlPages: 500 } });
    expect((await post("/api/crawl", { url: "https://denied.example/" }, wide.token)).body).toMatchObject({
      policy: "domains.deny",
      by: "tenant",
    });
    expect((await post("/api/crawl", { url: `${SITE}/`, maxPages: 50 }, wide.token)).body).toMatchObject({
      policy: "maxCrawlPages",
      by: "tenant",
    });
    // A policy that is not one is refused at the mint, naming the field.
    const bad = await post("/_tollgate/tokens", { kind: "mcp", cap: "1", scopes: ["jobs"], policy: { maxCrawlPages: -1 } });
    expect(bad).toMatchObject({ status: 400, body: { code: "invalid_token_request", field: "policy.maxCrawlPages" } });
  });
});

describe("a tenant's policy through the admin API", () => {
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${stack.gateway.url}/_tollgate/admin${path}`, {
      method,
      headers: { "x-api-key": stack.keys.ops!, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("is set, applied at once, replaced, and a malformed one refused naming the field", async () => {
    const created = await admin("POST", "/tenants", { id: "globex", scopes: ["jobs"], policy: { maxCrawlPages: 3 } });
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: string };
    expect((await post("/api/crawl", { url: `${SITE}/`, maxPages: 4 }, key)).body).toMatchObject({ policy: "maxCrawlPages", by: "tenant" });
    const put = await admin("PUT", "/tenants/globex/policy", { domains: { deny: ["web.emulator.test"] } });
    expect(put.status).toBe(200);
    expect(((await put.json()) as { policy: unknown }).policy).toEqual({ domains: { deny: ["web.emulator.test"] } });
    expect((await post("/api/crawl", { url: `${SITE}/`, maxPages: 4 }, key)).body).toMatchObject({ policy: "domains.deny", by: "tenant" });
    const bad = await admin("PATCH", "/tenants/globex", { policy: { domains: { deny: ["not a host"] } } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain("policy.domains.deny.0");
  });
});

describe("agent policies through MCP (the official MCP client, a header token)", () => {
  it("the same four refusals, as tool errors naming the policy; nothing forwarded", async () => {
    const t = await mint({});
    const c = await connect(t.token);
    const from = stack.emulator.received.length;
    expect(toolError(await call(c, "crawl", { url: "https://denied.example/", wait: 0 }))).toMatchObject({
      code: "policy_denied",
      status: 403,
      policy: "domains.deny",
      field: "url",
    });
    const image = toolError(await call(c, "sandbox_create", { imageName: "ubuntu" }));
    expect(image).toMatchObject({ code: "policy_denied", policy: "images", field: "imageName" });
    expect(image.message).toContain("policy images refuses imageName (ubuntu)");
    expect(toolError(await call(c, "browser_create", { timeoutMinutes: 90 }))).toMatchObject({
      code: "policy_denied",
      policy: "maxSessionMinutes",
      field: "timeoutMinutes",
    });
    expect(toolError(await call(c, "sandbox_create", { imageName: "node", allowOut: ["169.254.169.254"] }))).toMatchObject({
      code: "policy_denied",
      policy: "egress.denyOut",
      field: "allowOut",
      by: "operator",
    });
    expect(forwarded(from, "POST", "/api/crawl") + forwarded(from, "POST", "/api/sandbox") + forwarded(from, "POST", "/api/session")).toBe(
      0,
    );
  });

  it("a crawl started as an MCP task is refused the same way, naming the policy; no task, nothing forwarded", async () => {
    const c = await connect((await mint({})).token);
    const from = stack.emulator.received.length;
    const seen: Array<{ type: string; error?: { message: string; data?: unknown } }> = [];
    for await (const m of c.experimental.tasks.callToolStream(
      { name: "crawl", arguments: { url: "https://denied.example/" } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    ))
      seen.push(m as never);
    expect(seen.map((m) => m.type)).toEqual(["error"]);
    expect(seen[0]!.error!.message).toContain("policy_denied: policy domains.deny refuses url (denied.example)");
    expect(seen[0]!.error!.data).toMatchObject({ code: "policy_denied", policy: "domains.deny", status: 403 });
    expect(forwarded(from, "POST", "/api/crawl")).toBe(0);
  });

  it("a token's narrower policy applies to its tools", async () => {
    const t = await mint({ policy: { images: ["debian"] } });
    const c = await connect(t.token);
    // node is the tenant's, but not the token's.
    expect(toolError(await call(c, "sandbox_create", { imageName: "node" }))).toMatchObject({ policy: "images", by: "token" });
  });
});
