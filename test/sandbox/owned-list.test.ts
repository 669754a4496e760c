// A tenant's list costs what the tenant owns, not what the account holds: 1,000 profiles made directly on the emulator
// (other teams' work on the same account), a tenant with 3, and its list page costs at most page size + 1 upstream
// calls, counted by the gateway's own tollgate_upstream_duration_seconds_count. Filters, paging and totalCount stay
// right, and a sandbox status filter answers from the last status the gateway saw, checked against the upstream.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { startEmulator } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

const METRICS_TOKEN = "m".repeat(40);
const keys = { acme: generateTenantKey(), other: generateTenantKey() };

describe("owned lists cost what the tenant owns", () => {
  let emu: EmulatorHandle;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sessions", "sandboxes"] });
    gw = await startTestGateway(
      {
        server: { logLevel: "error" },
        upstream: { baseUrl: emu.controlUrl, allowedHosts: [`localhost:${new URL(emu.runtimeUrl).port}`] },
        tenants: [
          { id: "acme", scopes: ["sessions", "sandboxes"], keys: [{ hash: await hashTenantKey(keys.acme) }] },
          { id: "other", scopes: ["sessions", "sandboxes"], keys: [{ hash: await hashTenantKey(keys.other) }] },
        ],
      },
      { upstreamApiKey: emu.apiKey, tokenSecret: "t".repeat(64), metricsToken: METRICS_TOKEN },
    );
  }, 120_000);
  afterAll(async () => {
    await gw?.close();
    await emu?.close();
  });

  /** Every upstream call the gateway made so far, all routes. */
  const upstreamCalls = async () => {
    const text = await (await fetch(`${gw.url}/_tollgate/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    let n = 0;
    for (const m of text.matchAll(/^tollgate_upstream_duration_seconds_count\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
    return n;
  };
  const call = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${gw.url}${path}`, {
      method,
      headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  /** A list through the gateway, with what it cost upstream. */
  const list = async (key: string, path: string) => {
    const before = await upstreamCalls();
    const res = await call(key, "GET", path);
    const body = await res.json();
    return { status: res.status, body, cost: (await upstreamCalls()) - before };
  };

  it("lists 3 of 1,000 profiles in at most 4 upstream calls, with name filter, paging and totalCount right", async () => {
    // 1,000 profiles of the account that no tenant of this gateway owns, made on the emulator directly.
    for (let batch = 0; batch < 20; batch++) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          const r = await fetch(`${emu.controlUrl}/api/profile`, {
            method: "POST",
            headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
            body: JSON.stringify({ name: `account-${batch * 50 + i}` }),
          });
          expect(r.status).toBe(200);
        }),
      );
    }
    const mine: string[] = [];
    for (const name of ["mine-a", "mine-b", "mine-c"]) {
      const r = await call(keys.acme, "POST", "/api/profile", { name });
      expect(r.status).toBe(200);
      mine.unshift((await r.json()).id);
    }
    const theirs = (await (await call(keys.other, "POST", "/api/profile", { name: "mine-but-other" })).json()).id;

    const all = await list(keys.acme, "/api/profiles");
    expect(all.status).toBe(200);
    expect(all.body.profiles.map((p: { id: string }) => p.id)).toEqual(mine);
    expect(all.body.profiles[0]).toMatchObject({ id: mine[0], name: "mine-c" });
    expect(all.body).toMatchObject({ totalCount: 3, page: 1 });
    expect(all.cost).toBeLessThanOrEqual(4);

    const named = await list(keys.acme, "/api/profiles?name=MINE-B");
    expect(named.body.profiles.map((p: { name: string }) => p.name)).toEqual(["mine-b"]);
    expect(named.body.totalCount).toBe(1);
    expect(named.cost).toBeLessThanOrEqual(4);

    const paged = await list(keys.acme, "/api/profiles?page=2&limit=2");
    expect(paged.body.profiles.map((p: { id: string }) => p.id)).toEqual([mine[2]]);
    expect(paged.body).toMatchObject({ totalCount: 3, page: 2, perPage: 2 });
    expect(paged.cost).toBeLessThanOrEqual(3);

    // The other tenant sees only its own, and none of acme's.
    const other = await list(keys.other, "/api/profiles");
    expect(other.body.profiles.map((p: { id: string }) => p.id)).toEqual([theirs]);
    expect(other.body.totalCount).toBe(1);

    // A profile deleted on the account directly: the next list finds it gone, drops it, and the one after is exact.
    expect(
      (await fetch(`${emu.controlUrl}/api/profile/${mine[1]}`, { method: "DELETE", headers: { "x-api-key": emu.apiKey } })).status,
    ).toBe(200);
    const afterDelete = await list(keys.acme, "/api/profiles");
    expect(afterDelete.body.profiles.map((p: { id: string }) => p.id)).toEqual([mine[0], mine[2]]);
    expect(afterDelete.body.totalCount).toBe(2);
    const again = await list(keys.acme, "/api/profiles");
    expect(again.body.totalCount).toBe(2);
    expect(again.cost).toBeLessThanOrEqual(3);
    expect((await call(keys.acme, "GET", `/api/profile/${mine[1]}`)).status).toBe(404);

    // Deleted through the gateway: it has ended, leaves the list at once (its owner is kept for the retention window).
    expect((await call(keys.acme, "DELETE", `/api/profile/${mine[2]}`)).status).toBe(200);
    const afterOwnDelete = await list(keys.acme, "/api/profiles");
    expect(afterOwnDelete.body.profiles.map((p: { id: string }) => p.id)).toEqual([mine[0]]);
    expect(afterOwnDelete.body.totalCount).toBe(1);
  }, 120_000);

  it("answers a sandbox status filter from the last status seen, and corrects a stale one from the upstream", async () => {
    const made: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await call(keys.acme, "POST", "/api/sandbox", { imageName: "node" });
      expect(r.status).toBe(200);
      made.push((await r.json()).id);
    }
    try {
      // Stopped through the gateway: it knows.
      expect((await call(keys.acme, "PUT", `/api/sandbox/${made[0]}/stop`)).status).toBe(200);
      const first = await list(keys.acme, "/api/sandboxes");
      expect(first.body.sandboxes.map((s: { id: string }) => s.id)).toEqual([made[1], made[0]]);
      const statusOf = Object.fromEntries(first.body.sandboxes.map((s: { id: string; status: string }) => [s.id, s.status]));
      expect(statusOf[made[0]]).toBe("closed");
      const running = statusOf[made[1]];
      expect(running).not.toBe("closed");

      const open = await list(keys.acme, `/api/sandboxes?status=${running}`);
      expect(open.body.sandboxes.map((s: { id: string }) => s.id)).toEqual([made[1]]);
      expect(open.body.totalCount).toBe(1);
      expect(open.cost).toBeLessThanOrEqual(2);
      const closed = await list(keys.acme, "/api/sandboxes?status=closed");
      expect(closed.body.sandboxes.map((s: { id: string }) => s.id)).toEqual([made[0]]);
      expect(closed.body.totalCount).toBe(1);

      // Stopped on the account directly (the gateway did not see it): the filter reads the page, finds the change,
      // and answers right.
      expect(
        (await fetch(`${emu.controlUrl}/api/sandbox/${made[1]}/stop`, { method: "PUT", headers: { "x-api-key": emu.apiKey } })).status,
      ).toBe(200);
      const stale = await list(keys.acme, `/api/sandboxes?status=${running}`);
      expect(stale.body.sandboxes).toEqual([]);
      expect(stale.body.totalCount).toBe(0);
      const nowClosed = await list(keys.acme, "/api/sandboxes?status=closed");
      expect(nowClosed.body.totalCount).toBe(2);
      // Both are known to have ended now: the next closed filter reads the page only.
      const settled = await list(keys.acme, "/api/sandboxes?status=closed&limit=1");
      expect(settled.body).toMatchObject({ totalCount: 2, perPage: 1 });
      expect(settled.cost).toBeLessThanOrEqual(2);
    } finally {
      for (const id of made)
        await fetch(`${emu.controlUrl}/api/sandbox/${id}/stop`, { method: "PUT", headers: { "x-api-key": emu.apiKey } });
    }
  }, 120_000);
});
