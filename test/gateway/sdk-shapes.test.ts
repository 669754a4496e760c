// Every session, extension and list answer through the gateway parses under both official SDKs' models (the Python
// SDK's pydantic models and the Node SDK's types, as zod fixtures in test/fixtures/sdk-models.ts), against the emulator;
// and the unpaged list filter keeps whichever shape an upstream answers (bare array or `{extensions:[…]}`).
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { writeZip } from "../../emulator/sessions/zip-writer.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { node, parsesUnder, python } from "../fixtures/sdk-models.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

const ALL = ["sessions", "sandboxes"];

describe("answers through the gateway parse under both SDKs (emulator upstream)", () => {
  let stack: SessionGateway;
  let acme: Hyperbrowser;
  let work: string;

  const call = async (tenant: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.gateway.url}${path}`, {
      method,
      headers: { "x-api-key": stack.keys[tenant]!, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    expect(res.status, `${method} ${path}`).toBe(200);
    return res.json();
  };
  const both = (pySchema: Parameters<typeof parsesUnder>[0], nodeSchema: Parameters<typeof parsesUnder>[0], value: unknown) => {
    expect(parsesUnder(pySchema, value), "Python SDK model").toEqual([]);
    expect(parsesUnder(nodeSchema, value), "Node SDK type").toEqual([]);
  };

  beforeAll(async () => {
    stack = await startSessionGateway(
      [
        { id: "acme", scopes: ALL },
        { id: "initech", scopes: ALL },
      ],
      { modules: ["sessions", "sandboxes"] },
    );
    acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
    work = mkdtempSync(join(tmpdir(), "sdk-shapes-"));
  }, 120_000);

  afterAll(async () => {
    await stack?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("session create, get, list and a stopped session's detail", async () => {
    const created = await call("acme", "POST", "/api/session", {});
    both(python.SessionDetail, node.SessionDetail, created);
    expect(created.liveUrl).toMatch(/\/_tollgate\/live\//);
    both(python.SessionDetail, node.SessionDetail, await call("acme", "GET", `/api/session/${created.id}`));
    const list = await call("acme", "GET", "/api/sessions");
    both(python.SessionListResponse, node.SessionListResponse, list);
    expect(list.sessions.map((s: { id: string }) => s.id)).toContain(created.id);
    await call("acme", "PUT", `/api/session/${created.id}/stop`);
    both(python.SessionDetail, node.SessionDetail, await call("acme", "GET", `/api/session/${created.id}`));
    both(python.SessionListResponse, node.SessionListResponse, await call("initech", "GET", "/api/sessions"));
  });

  it("extensions: the created one and the tenant's list (the list's envelope is the upstream's: {extensions})", async () => {
    const dir = join(work, "ext");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "manifest.json"), JSON.stringify({ manifest_version: 3, name: "Shapes", version: "1.0" }));
    await writeZip(dir, join(work, "ext.zip"));
    const ext = await acme.extensions.create({ filePath: join(work, "ext.zip"), name: "shapes" });
    both(python.ExtensionResponse, node.ExtensionResponse, ext);
    const list = await call("acme", "GET", "/api/extensions/list");
    expect(parsesUnder(python.ExtensionList, list)).toEqual([]);
    for (const item of list.extensions) expect(parsesUnder(node.ExtensionResponse, item)).toEqual([]);
    expect(list.extensions.map((e: { id: string }) => e.id)).toEqual([ext.id]);
    expect(await call("initech", "GET", "/api/extensions/list")).toEqual({ extensions: [] });
  });

  it("profiles and volumes lists", async () => {
    await acme.profiles.create({ name: "shapes" });
    both(python.ProfileListResponse, node.ProfileListResponse, await call("acme", "GET", "/api/profiles"));
    await acme.volumes.create({ name: `shapes-${Date.now()}` });
    both(python.VolumeListResponse, node.VolumeListResponse, await call("acme", "GET", "/api/volume"));
  });

  it("sandbox create, get and list, in a region both SDKs know", async () => {
    const sbx = await call("acme", "POST", "/api/sandbox", { imageName: "node" });
    try {
      expect(sbx.region).toBe("us-central");
      both(python.SandboxDetail, node.SandboxDetail, sbx);
      both(python.SandboxDetail, node.SandboxDetail, await call("acme", "GET", `/api/sandbox/${sbx.id}`));
      both(python.SandboxListResponse, node.SandboxListResponse, await call("acme", "GET", "/api/sandboxes"));
    } finally {
      await call("acme", "PUT", `/api/sandbox/${sbx.id}/stop`);
    }
  });
});

describe("the unpaged list filter keeps the upstream's shape (an upstream answering either)", () => {
  let upstream: Server;
  let gateway: RunningGateway;
  let shape: "array" | "object" = "array";
  const keys = { a: generateTenantKey(), b: generateTenantKey() };
  const made: Array<{ id: string; name: string; createdAt: string; updatedAt: string }> = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        if (req.url === "/api/extensions/add") {
          const now = new Date().toISOString();
          const ext = { id: `ext_${made.length + 1}`, name: `ext ${made.length + 1}`, createdAt: now, updatedAt: now };
          made.push(ext);
          return res.end(JSON.stringify(ext));
        }
        res.end(JSON.stringify(shape === "array" ? made : { extensions: made }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    gateway = await startNodeGateway({
      config: parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: { baseUrl: base, allowedHosts: [new URL(base).host] },
        tenants: [
          { id: "a", scopes: ["sessions"], keys: [{ hash: await hashTenantKey(keys.a) }] },
          { id: "b", scopes: ["sessions"], keys: [{ hash: await hashTenantKey(keys.b) }] },
        ],
      }),
      secrets: { upstreamApiKey: "upstream-key", tokenSecret: randomBytes(32).toString("hex") },
      logSink: () => {},
    });
    const add = (key: string) => {
      const form = new FormData();
      form.set("file", new Blob([new Uint8Array([0x50, 0x4b, 5, 6])]), "x.zip");
      return fetch(`${gateway.url}/api/extensions/add`, { method: "POST", headers: { "x-api-key": key }, body: form });
    };
    for (const key of [keys.a, keys.b, keys.a]) expect((await add(key)).status).toBe(200);
  });

  afterAll(async () => {
    await gateway?.close();
    await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
  });

  const list = async (key: string) => (await fetch(`${gateway.url}/api/extensions/list`, { headers: { "x-api-key": key } })).json();

  it("a bare array stays a bare array, with the caller's items only (the Node SDK's type)", async () => {
    shape = "array";
    const mine = await list(keys.a);
    expect(mine.map((e: { id: string }) => e.id)).toEqual(["ext_1", "ext_3"]);
    expect(parsesUnder(node.ExtensionList, mine)).toEqual([]);
    expect(await list(keys.b)).toEqual([made[1]]);
  });

  it("{extensions:[…]} stays that object, with the caller's items only (the Python SDK's model)", async () => {
    shape = "object";
    const mine = await list(keys.a);
    expect(mine).toEqual({ extensions: [made[0], made[2]] });
    expect(parsesUnder(python.ExtensionList, mine)).toEqual([]);
    expect(await list(keys.b)).toEqual({ extensions: [made[1]] });
  });
});

describe("an agent task's upstream live view (an upstream answering as the real service)", () => {
  let upstream: Server;
  let gateway: RunningGateway;
  const key = generateTenantKey();
  const LIVE = "https://live.upstream.example/view?token=upstream-secret";

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        if (req.method === "POST") return res.end(JSON.stringify({ jobId: "task_1", liveUrl: LIVE }));
        res.end(JSON.stringify({ jobId: "task_1", status: "completed", data: { steps: [], finalResult: "ok" }, liveUrl: LIVE }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    gateway = await startNodeGateway({
      config: parseConfig({
        server: { host: "127.0.0.1", port: 0, logLevel: "error" },
        upstream: { baseUrl: base, allowedHosts: [new URL(base).host] },
        credits: { enabled: false },
        tenants: [{ id: "a", scopes: ["agents", "sessions"], keys: [{ hash: await hashTenantKey(key) }] }],
      }),
      secrets: { upstreamApiKey: "upstream-key", tokenSecret: randomBytes(32).toString("hex") },
      logSink: () => {},
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise<void>((r) => (upstream ? upstream.close(() => r()) : r()));
  });

  it("is never relayed: liveUrl is null on the start and read answers (both SDKs take null), the rest as sent", async () => {
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${gateway.url}${path}`, {
        method,
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const started = await (await call("POST", "/api/task/browser-use", { task: "t" })).json();
    expect(started).toEqual({ jobId: "task_1", liveUrl: null });
    const read = await (await call("GET", "/api/task/browser-use/task_1")).json();
    expect(read).toMatchObject({ jobId: "task_1", status: "completed", liveUrl: null });
    expect(JSON.stringify(read)).not.toContain("upstream-secret");
  });
});
