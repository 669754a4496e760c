// The route table against the SDK: every operation of @hyperbrowser/sdk's services has a row (a new SDK operation
// without one fails here), every row checks its scope, every row that addresses an id checks its owner, and a request
// no row matches is refused without reaching the upstream.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { ROUTES, methodsOf, type RouteRow } from "../../src/routing/table.js";
import { SCOPES } from "../../config/tenant-schema.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startEchoUpstream } from "../helpers/echo-upstream.js";
import { startTestGateway } from "../helpers/gateway.js";

const SDK_DIST = join(process.cwd(), "node_modules/@hyperbrowser/sdk/dist");

/** A row's path pattern as a regex over concrete paths (`:param` is one segment). */
const rowRegex = (row: RouteRow) =>
  new RegExp(`^${row.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\\\$\\\{|:[A-Za-z]+/g, "[^/]+")}$`);
const rowsFor = (method: string, path: string) => ROUTES.filter((r) => methodsOf(r).includes(method as never) && rowRegex(r).test(path));

function jsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? jsFiles(p) : p.endsWith(".js") ? [p] : [];
  });
}

/** Every path the SDK's compiled services and runtime modules name, with `${…}` as a placeholder segment. */
function sdkPaths(): string[] {
  const found = new Set<string>();
  for (const file of [...jsFiles(join(SDK_DIST, "services")), ...jsFiles(join(SDK_DIST, "sandbox"))]) {
    const src = readFileSync(file, "utf8");
    for (const m of src.matchAll(/this\.request\(\s*(["`])(\/[^"`]*)\1/g)) found.add(`/api${m[2]}`);
    for (const m of src.matchAll(/(["`])(\/sandbox\/[a-z][^"`?]*)[?"`]/g)) found.add(m[2]!);
  }
  return [...found].map((p) => p.replace(/\$\{[^}]*\}/g, "X").replace(/^\/sandbox\/(?!X)/, "/sandbox/X/"));
}

describe("every SDK operation has a row", () => {
  it("matches every path the SDK names to at least one row", () => {
    const paths = sdkPaths();
    expect(paths.length).toBeGreaterThan(80);
    const missing = paths.filter((p) => !ROUTES.some((r) => rowRegex(r).test(p)));
    expect(missing).toEqual([]);
  });

  // The SDK driven for real against a recorder: every request it sends (method and path) must match a row.
  let recorder: Server;
  let origin = "";
  const seen: Array<{ method: string; path: string }> = [];
  beforeAll(async () => {
    recorder = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        const path = (req.url ?? "/").split("?")[0]!;
        seen.push({ method: req.method!, path });
        const future = new Date(Date.now() + 3600_000).toISOString();
        const body = {
          id: "id1",
          jobId: "job1",
          status: "completed",
          success: true,
          data: [],
          results: [],
          sessions: [],
          sandboxes: [],
          images: [],
          snapshots: [],
          volumes: [],
          profiles: [],
          builds: [],
          token: "t",
          tokenExpiresAt: future,
          runtime: { transport: "regional_proxy", host: origin, baseUrl: `${origin}/sandbox/sbx1` },
          computerActionEndpoint: `${origin}/computer-action/id1`,
          wsEndpoint: `ws://127.0.0.1/x`,
          file: { path: "/x", name: "x", type: "file" },
          entries: [],
          files: [],
          process: { id: "p1", status: "exited", exitCode: 0 },
          pty: { id: "t1", running: false },
          watch: { id: "w1", path: "/x", active: false },
          build: { id: "b1" },
          upload: { url: `${origin}/upload`, method: "PUT", headers: {} },
          snapshot: { id: "s1" },
          totalCount: 0,
          page: 1,
          perPage: 10,
          totalPageBatches: 1,
          currentPageBatch: 1,
        };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((r) => recorder.listen(0, "127.0.0.1", () => r()));
    origin = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  });
  afterAll(
    () =>
      new Promise<void>((r) => {
        recorder.closeAllConnections();
        recorder.close(() => r());
      }),
  );

  /** Calls every method of every service (and of a sandbox handle's runtime parts) with placeholder arguments. */
  async function driveAll(root: object, depth = 0): Promise<number> {
    let calls = 0;
    for (const [name, value] of Object.entries(root)) {
      // The runtime transport is the SDK's plumbing, not an operation: its callers are.
      if (!value || typeof value !== "object" || depth > 2 || name === "transport") continue;
      const proto = Object.getPrototypeOf(value);
      for (const m of Object.getOwnPropertyNames(proto)) {
        if (m === "constructor" || m === "request" || typeof (value as any)[m] !== "function") continue;
        calls++;
        const args = [
          "id1",
          {
            query: "q",
            url: "https://example.com",
            urls: ["https://example.com"],
            task: "t",
            imageName: "node",
            name: "n",
            port: 3000,
            path: "/x",
            command: "true",
            action: "screenshot",
            data: "d",
            from: "/a",
            to: "/b",
            mode: "755",
            durationMinutes: 5,
            type: "screen",
            params: {},
          },
          {},
        ];
        await Promise.race([
          Promise.resolve()
            .then(() => (value as any)[m](...args))
            .catch(() => {}),
          new Promise((r) => setTimeout(r, 1500)),
        ]);
      }
      calls += await driveAll(value, depth + 1);
      void name;
    }
    return calls;
  }

  it("routes every request the unmodified SDK sends, driven method by method", async () => {
    const client = new Hyperbrowser({ apiKey: "k", baseUrl: origin, timeout: 2000 });
    const calls = await driveAll(client);
    const sandbox = await client.sandboxes.connect("sbx1").catch(() => undefined);
    const runtimeCalls = sandbox
      ? await driveAll({ sandbox, files: sandbox.files, processes: sandbox.processes, terminal: sandbox.terminal })
      : 0;
    expect(calls).toBeGreaterThan(60);
    expect(runtimeCalls).toBeGreaterThan(20);
    // Computer actions go to the session's computerActionEndpoint, which the gateway rewrites to its own row.
    const requests = seen.map(({ method, path }) => ({ method, path: path.startsWith("/computer-action/") ? `/_tollgate${path}` : path }));
    const distinct = new Map(requests.map((r) => [`${r.method} ${r.path}`, r]));
    expect(distinct.size).toBeGreaterThan(60);
    const unrouted = [...distinct.keys()].filter((k) => {
      const { method, path } = distinct.get(k)!;
      return path !== "/upload" && rowsFor(method, path).length === 0;
    });
    expect(unrouted).toEqual([]);
  }, 240_000);
});

describe("every row checks its scope and its owner", () => {
  let upstream: Awaited<ReturnType<typeof startEchoUpstream>>;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    upstream = await startEchoUpstream();
    // One tenant per scope holding every other scope but that one; "owner" holds all scopes (and owns nothing).
    const tenants = [];
    for (const scope of SCOPES) {
      keys[scope] = generateTenantKey();
      tenants.push({
        id: `lacks-${scope}`,
        scopes: SCOPES.filter((s) => s !== scope),
        keys: [{ hash: await hashTenantKey(keys[scope]!) }],
      });
    }
    keys.all = generateTenantKey();
    tenants.push({ id: "everything", scopes: [...SCOPES], keys: [{ hash: await hashTenantKey(keys.all) }] });
    gw = await startTestGateway(
      { upstream: { baseUrl: upstream.url }, tenants },
      { upstreamApiKey: "upstream-key", walletKey: undefined, tokenSecret: "s".repeat(64) },
    );
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const concrete = (row: RouteRow) => row.path.replace(/:[A-Za-z]+/g, "someone-elses-id");
  const call = (row: RouteRow, key: string) =>
    fetch(`${gw.url}${concrete(row)}`, {
      method: methodsOf(row)[0],
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: methodsOf(row)[0] === "GET" ? undefined : "{}",
    });

  const keyRows = ROUTES.filter((r) => r.auth.includes("key") && !r.refuse);
  it.each(keyRows.map((r) => [r.name, r] as const))(
    "%s refuses a key without its scope (403 missing_scope), forwarding nothing",
    async (_n, row) => {
      const before = upstream.seen.length;
      const r = await call(row, keys[row.scope!]!);
      expect(r.status).toBe(403);
      expect(await r.json()).toMatchObject({ code: "missing_scope", requiredScope: row.scope });
      expect(upstream.seen.length).toBe(before);
    },
  );

  const ownedRows = ROUTES.filter((r) => r.owns || r.path.includes(":idOrName"));
  it.each(ownedRows.map((r) => [r.name, r] as const))(
    "%s answers 404 for an id the caller does not own, forwarding nothing",
    async (_n, row) => {
      const before = upstream.seen.length;
      const headers: Record<string, string> = { "x-api-key": keys.all! };
      if (row.auth.includes("sandbox-token")) {
        const t = await gw.gateway.services.tokens.mint({
          tenant: "everything",
          kind: "sandbox",
          resource: "my-own-sandbox",
          scopes: ["runtime", "terminal", "ports"],
          ttlSeconds: 60,
        });
        headers.authorization = `Bearer ${t.token}`;
      }
      const method = methodsOf(row)[0]!;
      const r = await fetch(`${gw.url}${concrete(row)}`, {
        method,
        headers: { ...headers, "content-type": "application/json", ...(row.path.endsWith("/ws") ? {} : {}) },
        body: method === "GET" ? undefined : "{}",
      });
      expect(r.status).toBe(404);
      expect((await r.json()).code).toBe("not_found");
      expect(upstream.seen.length).toBe(before);
    },
  );

  it("answers 404 route_not_fronted for what no row declares, and forwards nothing", async () => {
    const before = upstream.seen.length;
    for (const [method, path] of [
      ["GET", "/api/secret-admin-thing"],
      ["PATCH", "/api/snapshots/x"],
      ["POST", "/api/team/credit-info"],
      ["GET", "/whatever"],
      ["DELETE", "/api/sessions"],
    ]) {
      const r = await fetch(`${gw.url}${path}`, { method, headers: { "x-api-key": keys.all! } });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(await r.json()).toMatchObject({ code: "route_not_fronted", method, path });
    }
    expect(upstream.seen.length).toBe(before);
  });

  it("names every row once, and every row is reachable by its own method and path", () => {
    const names = ROUTES.map((r) => r.name);
    expect(new Set(names).size).toBe(names.length);
    for (const row of ROUTES) expect(rowsFor(methodsOf(row)[0]!, concrete(row))[0]?.name, row.name).toBeDefined();
  });
});

describe("docs/routes.md", () => {
  it("is the table as `tollgate routes` prints it", async () => {
    const { routeTableMarkdown } = await import("../../src/routing/describe.js");
    expect(readFileSync(join(process.cwd(), "docs/routes.md"), "utf8")).toContain(routeTableMarkdown());
  });
});
