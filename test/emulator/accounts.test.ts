// The emulator with several accounts: each key sees only its own resources, has its own concurrency limits and its
// own credit usage, and can be made to refuse creations, fail or slow down (PUT /_emulator/accounts/:id).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";

let emu: EmulatorHandle;
const key = (id: string) => emu.accounts.get(id)!.apiKey;

async function call(account: string, method: string, path: string, body?: unknown) {
  const res = await fetch(emu.controlUrl + path, {
    method,
    headers: { "x-api-key": key(account), ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

beforeAll(async () => {
  emu = await startEmulator({
    modules: ["sessions"],
    accounts: [{ id: "small", limits: { sessions: 1 } }, { id: "big" }],
  });
}, 60_000);
afterAll(() => emu?.close());

describe("emulator accounts", () => {
  it("keeps each account's resources to itself: another key's id is 404 and lists leave it out", async () => {
    const mine = await call("small", "POST", "/api/profile", { name: "p-small" });
    expect(mine.status).toBe(200);
    const id = mine.body.id as string;
    expect(emu.accounts.ownerOf(id)).toBe("small");
    expect((await call("small", "GET", `/api/profile/${id}`)).status).toBe(200);
    expect(await call("big", "GET", `/api/profile/${id}`)).toEqual({ status: 404, body: { message: "Not found", code: "not_found" } });
    const bigList = await call("big", "GET", "/api/profiles");
    expect(bigList.body.profiles.map((p: { id: string }) => p.id)).not.toContain(id);
    const smallList = await call("small", "GET", "/api/profiles");
    expect(smallList.body.profiles.map((p: { id: string }) => p.id)).toContain(id);
  });

  it("refuses a session past the account's concurrency limit with 429 concurrency_limit_exceeded; stopping frees it", async () => {
    const first = await call("small", "POST", "/api/session", {});
    expect(first.status).toBe(200);
    const second = await call("small", "POST", "/api/session", {});
    expect(second.status).toBe(429);
    expect(second.body.code).toBe("concurrency_limit_exceeded");
    // Another account's limit is its own.
    const other = await call("big", "POST", "/api/session", {});
    expect(other.status).toBe(200);
    expect((await call("small", "PUT", `/api/session/${first.body.id}/stop`)).status).toBe(200);
    const third = await call("small", "POST", "/api/session", {});
    expect(third.status).toBe(200);
    for (const [a, id] of [
      ["small", third.body.id],
      ["big", other.body.id],
    ] as const)
      expect((await call(a, "PUT", `/api/session/${id}/stop`)).status).toBe(200);
  }, 60_000);

  it("reports each account's own credit usage, summing to the team's", async () => {
    const small = await call("small", "GET", "/api/team/credit-info");
    const big = await call("big", "GET", "/api/team/credit-info");
    expect(emu.credits.usage("small")).toBeGreaterThan(0);
    expect(emu.credits.usage("big")).toBeGreaterThan(0);
    expect(small.body.usage).toBe(Math.ceil(emu.credits.usage("small")));
    expect(big.body.usage).toBe(Math.ceil(emu.credits.usage("big")));
    expect(emu.credits.usage("small") + emu.credits.usage("big") + emu.credits.usage("default")).toBeCloseTo(emu.credits.usage(), 3);
  });

  it("makes an account refuse, fail or slow down on demand, with the default account's key only", async () => {
    const set = (by: string, id: string, body: unknown) =>
      fetch(`${emu.controlUrl}/_emulator/accounts/${id}`, {
        method: "PUT",
        headers: { "x-api-key": key(by), "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await set("big", "small", { mode: "fail" })).status).toBe(401);
    expect((await set("default", "nobody", { mode: "fail" })).status).toBe(404);
    expect((await set("default", "small", { mode: "explode" })).status).toBe(400);
    expect((await set("default", "small", { mode: "fail" })).status).toBe(200);
    expect(await call("small", "GET", "/api/profiles")).toEqual({
      status: 503,
      body: { message: "Service temporarily unavailable", code: "service_unavailable" },
    });
    expect((await set("default", "small", { mode: "refuse" })).status).toBe(200);
    expect((await call("small", "POST", "/api/profile", {})).body.code).toBe("concurrency_limit_exceeded");
    expect((await call("small", "GET", "/api/profiles")).status).toBe(200);
    expect((await set("default", "small", { mode: "slow", delayMs: 300 })).status).toBe(200);
    const t0 = performance.now();
    expect((await call("small", "GET", "/api/profiles")).status).toBe(200);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(280);
    expect((await set("default", "small", { mode: "ok" })).status).toBe(200);
  });
});
