// quota on the gateway's real services (memory state, tenant directory, upstream client), mounted behind identify() as
// the route table mounts it. The route behind it stands in for the creation; a loopback upstream answers the two
// look-ups quota makes itself (a snapshot's image, whether a counted resource is still running).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse } from "../../src/errors.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { Logger, Redactor } from "../../src/log.js";
import { identify } from "../identify/index.js";
import { ROUTES } from "../../src/routing/table.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { accessLog } from "../access-log/index.js";
import { requestId } from "../request-id/index.js";
import { quota } from "./index.js";

const UPSTREAM_KEY = "upstream-key-for-tests";

/** Resource statuses and snapshot images the loopback upstream reports; what it was asked. */
const upstreamState = { statuses: new Map<string, string>(), snapshots: new Map<string, string>(), asked: [] as string[] };
let upstream: Server;
let upstreamUrl: string;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    const path = req.url ?? "";
    upstreamState.asked.push(path);
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers["x-api-key"] !== UPSTREAM_KEY) return answer(401, { message: "Invalid API key", code: "unauthorized" });
    const resource = /^\/api\/(sandbox|session)\/([^/?]+)$/.exec(path);
    const snapshot = /^\/api\/snapshots\/([^/?]+)$/.exec(path);
    const status = resource && upstreamState.statuses.get(decodeURIComponent(resource[2]!));
    const image = snapshot && upstreamState.snapshots.get(decodeURIComponent(snapshot[1]!));
    if (status) return answer(200, { id: resource[2], status });
    if (image) return answer(200, { snapshot: { name: snapshot[1], imageName: image } });
    answer(404, { message: "Not found", code: "not_found" });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});
afterAll(async () => {
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

const open: Gateway[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close(0);
  upstreamState.statuses.clear();
  upstreamState.snapshots.clear();
  upstreamState.asked.length = 0;
});

type Quotas = Record<string, unknown>;

async function setup(quotas: Quotas) {
  const key = generateTenantKey();
  const config = parseConfig({
    server: { logLevel: "error" },
    upstream: { baseUrl: upstreamUrl },
    tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }], quotas }],
  });
  const g = createGateway(config, { secrets: { upstreamApiKey: UPSTREAM_KEY }, logSink: () => {} });
  open.push(g);
  /** Creations wait here when a test holds them (to have several in flight at once). */
  let hold: Promise<void> | undefined;
  let made = 0;
  const seen: Array<Record<string, unknown> | undefined> = [];
  const a = new Hono<GatewayEnv>();
  a.onError((err) => errorResponse(err));
  a.use(requestId());
  a.use(accessLog(new Logger(() => {}, "silent", new Redactor())));
  for (const name of ["sandbox.create", "session.create"]) {
    const row = ROUTES.find((r) => r.name === name)!;
    a.post(row.path, identify(g.services, row), quota(g.services, row.quota!), async (c) => {
      seen.push(c.var.jsonBody?.json); // what the handler would forward (undefined: quota left the body unread)
      await hold;
      const refuse = c.req.header("x-test-upstream-refuses");
      if (refuse) return c.json({ message: "refused upstream", code: "bad_request" }, 400);
      const id = `${row.quota!.kind}_${++made}`;
      upstreamState.statuses.set(id, "active"); // as if the upstream had made it
      return c.json({ id, status: "active" });
    });
  }
  const create = async (kind: "sandbox" | "session", body: unknown, headers: Record<string, string> = {}) =>
    a.request(`/api/${kind}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  return {
    g,
    create,
    seen,
    holdCreations: () => {
      let resume!: () => void;
      hold = new Promise<void>((r) => (resume = r));
      return () => {
        hold = undefined;
        resume();
      };
    },
  };
}

describe("quota: body limits", () => {
  it("passes a tenant without quotas straight through, its body unread", async () => {
    const { create, seen } = await setup({});
    const res = await create("sandbox", { imageName: "anything", timeoutMinutes: 600 });
    expect(res.status).toBe(200);
    expect(seen).toEqual([undefined]);
  });

  it("fills in the tenant's timeout and first region when the body names none, and keeps what is within them", async () => {
    const { create, seen } = await setup({ maxTimeoutMinutes: 30, regions: ["eu-west", "us-east"] });
    expect((await create("session", { screen: { width: 1280, height: 720 } })).status).toBe(200);
    expect((await create("session", { timeoutMinutes: 10, region: "us-east" })).status).toBe(200);
    expect(seen).toEqual([
      { screen: { width: 1280, height: 720 }, timeoutMinutes: 30, region: "eu-west" },
      { timeoutMinutes: 10, region: "us-east" },
    ]);
  });

  it("refuses 403 a longer timeout (quota_timeout) or another region (quota_region), with the figures", async () => {
    const { create, seen } = await setup({ maxTimeoutMinutes: 30, regions: ["eu-west"] });
    const long = await create("session", { timeoutMinutes: 31 });
    expect(long.status).toBe(403);
    expect(await long.json()).toEqual({
      message: "timeoutMinutes 31 is above this tenant's limit of 30.",
      code: "quota_timeout",
      limit: 30,
      requested: 31,
    });
    const elsewhere = await create("sandbox", { imageName: "node", region: "ap-south" });
    expect(elsewhere.status).toBe(403);
    expect(await elsewhere.json()).toEqual({
      message: 'Region "ap-south" is not allowed for this tenant (allowed: eu-west).',
      code: "quota_region",
      allowed: ["eu-west"],
      requested: "ap-south",
    });
    expect(seen).toEqual([]);
  });

  it("refuses 403 quota_image for an unlisted image, a snapshot of one, or no image at all; lets listed ones through", async () => {
    const { create, seen } = await setup({ images: ["node", "debian"] });
    upstreamState.snapshots.set("mine", "debian");
    upstreamState.snapshots.set("theirs", "ubuntu");
    const ubuntu = await create("sandbox", { imageName: "ubuntu" });
    expect(ubuntu.status).toBe(403);
    expect(await ubuntu.json()).toMatchObject({ code: "quota_image", allowed: ["node", "debian"], requested: "ubuntu" });
    const fromSnapshot = await create("sandbox", { snapshotName: "theirs" });
    expect(fromSnapshot.status).toBe(403);
    expect(await fromSnapshot.json()).toMatchObject({ code: "quota_image", requested: "ubuntu" });
    const none = await create("sandbox", { vcpus: 2 });
    expect(none.status).toBe(403);
    expect(await none.json()).toEqual({
      message: "imageName is required: this tenant may only use listed images.",
      code: "quota_image",
      allowed: ["node", "debian"],
    });
    expect((await create("sandbox", { imageName: "node" })).status).toBe(200);
    expect((await create("sandbox", { snapshotName: "mine" })).status).toBe(200);
    // An unknown snapshot is the upstream's 404 to give, not a quota refusal.
    expect((await create("sandbox", { snapshotName: "gone" })).status).toBe(200);
    expect(upstreamState.asked).toEqual(["/api/snapshots/theirs", "/api/snapshots/mine", "/api/snapshots/gone"]);
    // Images bind sandboxes only.
    expect((await create("session", {})).status).toBe(200);
    expect(seen).toHaveLength(4);
  });

  it("refuses a timeout the upstream would read as longer (0: none; strings coerced), and sends the limit for null", async () => {
    const { create, seen } = await setup({ maxTimeoutMinutes: 30 });
    for (const timeoutMinutes of [0, -5, "600", "20", [20], true]) {
      const res = await create("session", { timeoutMinutes });
      expect(res.status, JSON.stringify(timeoutMinutes)).toBe(403);
      expect(await res.json()).toEqual({
        message: `timeoutMinutes ${JSON.stringify(timeoutMinutes)} is not a number of minutes within this tenant's limit of 30.`,
        code: "quota_timeout",
        limit: 30,
        requested: timeoutMinutes,
      });
    }
    expect(seen).toEqual([]);
    expect((await create("session", { timeoutMinutes: null })).status).toBe(200);
    expect((await create("session", { timeoutMinutes: 0.5 })).status).toBe(200);
    expect(seen).toEqual([{ timeoutMinutes: 30 }, { timeoutMinutes: 0.5 }]);
  });

  it("checks the snapshot's image as well when a body names both (the upstream starts from the snapshot)", async () => {
    const { create, seen } = await setup({ images: ["node"] });
    upstreamState.snapshots.set("theirs", "ubuntu");
    upstreamState.snapshots.set("mine", "node");
    const both = await create("sandbox", { imageName: "node", snapshotName: "theirs" });
    expect(both.status).toBe(403);
    expect(await both.json()).toMatchObject({ code: "quota_image", allowed: ["node"], requested: "ubuntu" });
    expect((await create("sandbox", { imageName: "node", snapshotName: "mine" })).status).toBe(200);
    expect(seen).toHaveLength(1);
  });

  it("answers a body it cannot read as the client's 400 invalid_json, never a 500", async () => {
    const { create } = await setup({ maxTimeoutMinutes: 30 });
    for (const body of ["{not json", "[1,2]", "42"]) {
      const res = await create("session", body);
      expect(res.status, body).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_json" });
    }
  });
});

describe("quota: active resources", () => {
  it("counts the tenant's running resources, refuses 429 quota_sandboxes past the limit, and re-checks before refusing", async () => {
    const { g, create } = await setup({ maxSandboxes: 2 });
    const { ownership } = g.services.stores;
    await ownership.claim("sandbox", "sbx_old", "acme");
    upstreamState.statuses.set("sbx_old", "active");
    const first = await create("sandbox", { imageName: "node" });
    expect(first.status).toBe(200);
    const { id } = (await first.json()) as { id: string };
    expect(await ownership.owner("sandbox", id)).toBe("acme"); // claimed here even though the route did not
    const refused = await create("sandbox", { imageName: "node" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      message: "This tenant may have at most 2 active sandboxes; 2 active and 0 being created. Stop one to free a slot.",
      code: "quota_sandboxes",
      limit: 2,
      current: 2,
      pending: 0,
    });
    expect(upstreamState.asked.sort()).toEqual([`/api/sandbox/${id}`, "/api/sandbox/sbx_old"].sort());
    // The old one ended upstream unseen (a timeout): the next re-check frees its slot.
    upstreamState.statuses.set("sbx_old", "closed");
    expect((await create("sandbox", { imageName: "node" })).status).toBe(200);
    expect(await ownership.activeCount("sandbox", "acme")).toBe(2);
  });

  it("admits exactly the limit of many simultaneous creations and frees slots of creations that failed", async () => {
    const { g, create, holdCreations } = await setup({ maxSessions: 3 });
    const release = holdCreations();
    const answered: number[] = [];
    const all = Array.from({ length: 8 }, () => create("session", {}).then((r) => (answered.push(r.status), r)));
    // The five refused answer while the three admitted are still being created (bounded wait).
    for (let i = 0; i < 150 && answered.length < 5; i++) await new Promise((r) => setTimeout(r, 10));
    expect(answered).toEqual([429, 429, 429, 429, 429]);
    release();
    const results = await Promise.all(all);
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 429, 429, 429, 429, 429]);
    expect(await results.find((r) => r.status === 429)!.json()).toMatchObject({ code: "quota_sessions", limit: 3, current: 0 });
    const refusal = await create("session", {});
    expect(refusal.status).toBe(429);
    expect(await refusal.json()).toMatchObject({ code: "quota_sessions", limit: 3, current: 3, pending: 0 });
    expect(await g.services.stores.ownership.activeCount("session", "acme")).toBe(3);
  });

  it("with room it knows of, counts a creation in its claim alone: no reservation, no count read before the upstream", async () => {
    const { g, create } = await setup({ maxSandboxes: 5 });
    const { kv, ownership } = g.services.stores;
    // The first creation knows nothing of the tenant: it reserves a slot, and its claim tells the count (1).
    expect((await create("sandbox", { imageName: "node" })).status).toBe(200);
    const incr = vi.spyOn(kv, "incrBy");
    const count = vi.spyOn(ownership, "activeCount");
    const within = vi.spyOn(ownership, "claimWithin");
    try {
      for (let i = 0; i < 3; i++) expect((await create("sandbox", { imageName: "node" })).status).toBe(200);
      expect(incr).not.toHaveBeenCalled();
      expect(count).not.toHaveBeenCalled();
      expect(within.mock.calls.map((call) => call.slice(2))).toEqual([
        ["acme", 5],
        ["acme", 5],
        ["acme", 5],
      ]);
      // Four active of five: the last slot is reserved before the upstream call again (never created over).
      expect((await create("sandbox", { imageName: "node" })).status).toBe(200);
      expect(incr).toHaveBeenCalled();
      expect((await create("sandbox", { imageName: "node" })).status).toBe(429);
    } finally {
      vi.restoreAllMocks();
    }
    expect(await ownership.activeCount("sandbox", "acme")).toBe(5);
  });

  it("refuses a creation whose claim finds the tenant full (other instances filled it), and stops what it made", async () => {
    const { g, create } = await setup({ maxSessions: 3 });
    const { ownership } = g.services.stores;
    expect((await create("session", {})).status).toBe(200); // learns a count of 1
    // Another instance's creations meanwhile, still running upstream.
    for (const id of ["elsewhere_1", "elsewhere_2"]) {
      await ownership.claim("session", id, "acme");
      upstreamState.statuses.set(id, "active");
    }
    upstreamState.asked.length = 0;
    const refused = await create("session", {});
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: "quota_sessions", limit: 3, current: 3, pending: 0 });
    expect(await ownership.activeCount("session", "acme")).toBe(3);
    // Re-checked before the refusal, then the one it made stopped upstream.
    for (let i = 0; i < 100 && !upstreamState.asked.some((p) => p.endsWith("/stop")); i++) await new Promise((r) => setTimeout(r, 10));
    expect(upstreamState.asked).toContain("/api/session/session_2/stop");
    expect(upstreamState.asked).toContain("/api/session/elsewhere_1");
    expect(await ownership.list("session", "acme")).not.toContain("session_2");
    // One of the others ended unseen: knowing the tenant full, the next creation reserves first, and the re-check frees it.
    upstreamState.statuses.set("elsewhere_1", "closed");
    expect((await create("session", {})).status).toBe(200);
    expect(await ownership.activeCount("session", "acme")).toBe(3);
  });

  it("holds no slot for a creation the upstream refused, nor claims anything for it", async () => {
    const { g, create } = await setup({ maxSessions: 1 });
    for (let i = 0; i < 3; i++) expect((await create("session", {}, { "x-test-upstream-refuses": "1" })).status).toBe(400);
    expect(await g.services.stores.ownership.activeCount("session", "acme")).toBe(0);
    expect((await create("session", {})).status).toBe(200);
    expect((await create("session", {})).status).toBe(429);
  });
});
