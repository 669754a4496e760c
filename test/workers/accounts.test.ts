// Several upstream accounts on the Worker entry inside workerd (issue 45, docs/accounts.md), in front of an emulator
// running accounts a, b and c (test/workers/global-setup.ts), state on Durable Objects: creations spread by weight,
// custody follows the account (the emulator answers another account's key 404, so a resource the gateway reaches was
// reached with its own account's key), a session limit holds through the Durable Object count, a pinned tenant never
// lands elsewhere, and another tenant's id answers 404.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack").accounts;
const ctx = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The account holding a resource, asked of the emulator with each account's key (the others answer 404). */
async function holder(path: string): Promise<string | undefined> {
  for (const [id, key] of Object.entries(stack.keys)) {
    const res = await fetch(`${stack.controlUrl}${path}`, { headers: { "x-api-key": key } });
    await res.arrayBuffer();
    if (res.status === 200) return id;
  }
  return undefined;
}

describe("upstream accounts on the Worker (workerd, Durable Objects)", () => {
  it("spreads by weight, keeps custody and limits, keeps a pinned tenant home, and answers another tenant 404", async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const keys = { acme: `tg_acme_${run}`, globex: `tg_globex_${run}`, pinned: `tg_pinned_${run}` };
    const e = {
      ...(env as Record<string, unknown>),
      TOLLGATE_CONFIG: JSON.stringify({
        server: { logLevel: "error", publicOrigin: "https://gateway.test" },
        upstream: {
          baseUrl: stack.controlUrl,
          allowedHosts: [new URL(stack.controlUrl).host, new URL(stack.runtimeUrl).host],
          accounts: [
            { id: "a", apiKeyEnv: "KEY_A", weight: 2, limits: { sessions: 1 } },
            { id: "b", apiKeyEnv: "KEY_B", weight: 1, limits: { sessions: 1 } },
            { id: "c", apiKeyEnv: "KEY_C", weight: 1 },
          ],
        },
        payments: { enabled: false },
        state: { backend: "durable-objects" },
        tenants: [
          { id: `acme-${run}`, scopes: ["sessions"], keys: [{ hash: await sha256(keys.acme) }] },
          { id: `globex-${run}`, scopes: ["sessions"], keys: [{ hash: await sha256(keys.globex) }] },
          { id: `pinned-${run}`, scopes: ["sessions"], accounts: ["c"], keys: [{ hash: await sha256(keys.pinned) }] },
        ],
      }),
      KEY_A: stack.keys.a,
      KEY_B: stack.keys.b,
      KEY_C: stack.keys.c,
      TOLLGATE_TOKEN_SECRET: "q".repeat(40),
    };
    const call = (key: string, path: string, body?: unknown) =>
      worker.fetch(
        new Request(`https://gateway.test${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
        e as any,
        ctx,
      );
    const create = async (key: string, path: string, body: unknown = {}) => {
      const res = await call(key, path, body);
      const json = (await res.json()) as { id: string };
      expect(res.status, JSON.stringify(json)).toBe(200);
      return json.id;
    };

    // Creations spread by weight (2:1:1).
    const profiles: string[] = [];
    for (let i = 0; i < 8; i++) profiles.push(await create(keys.acme, "/api/profile", { name: `w-${run}-${i}` }));
    const owners = await Promise.all(profiles.map((id) => holder(`/api/profile/${id}`)));
    expect(["a", "b", "c"].map((a) => owners.filter((o) => o === a).length)).toEqual([4, 2, 2]);
    // Custody: each reached through the gateway, which only works with its own account's key.
    for (const id of profiles) expect((await call(keys.acme, `/api/profile/${id}`)).status).toBe(200);

    // Sessions: a and b take one each (their limits, counted in a Durable Object); the rest go to c.
    const sessions = await Promise.all(Array.from({ length: 4 }, () => create(keys.acme, "/api/session")));
    const sOwners = await Promise.all(sessions.map((id) => holder(`/api/session/${id}`)));
    expect(sOwners.filter((o) => o === "a").length).toBeLessThanOrEqual(1);
    expect(sOwners.filter((o) => o === "b").length).toBeLessThanOrEqual(1);
    expect(sOwners.every((o) => o !== undefined)).toBe(true);
    for (const id of sessions) {
      const res = await call(keys.acme, `/api/session/${id}`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { id: string }).id).toBe(id);
    }

    // A pinned tenant never lands elsewhere.
    const pinned: string[] = [];
    for (let i = 0; i < 4; i++) pinned.push(await create(keys.pinned, "/api/profile", { name: `p-${run}-${i}` }));
    expect(await Promise.all(pinned.map((id) => holder(`/api/profile/${id}`)))).toEqual(["c", "c", "c", "c"]);

    // Another tenant's id answers 404, whatever account holds it, exactly as a missing one.
    const missing = await call(keys.globex, "/api/profile/00000000-0000-4000-8000-000000000000");
    const missingBody = await missing.json();
    expect(missing.status).toBe(404);
    for (const id of [profiles[0]!, profiles[1]!, pinned[0]!]) {
      const res = await call(keys.globex, `/api/profile/${id}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { code: string }).code).toBe((missingBody as { code: string }).code);
    }
    const theirs = await call(keys.globex, `/api/session/${sessions[0]}`);
    expect(theirs.status).toBe(404);
    await theirs.arrayBuffer();

    for (const id of sessions) {
      const res = await worker.fetch(
        new Request(`https://gateway.test/api/session/${id}/stop`, { method: "PUT", headers: { "x-api-key": keys.acme } }),
        e as any,
        ctx,
      );
      await res.arrayBuffer();
    }
  });
});
