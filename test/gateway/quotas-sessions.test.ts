// Per-tenant session quotas through the gateway: active sessions, timeoutMinutes and regions, each refused at its limit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

describe("session quotas", () => {
  let stack: SessionGateway;
  let small: Hyperbrowser;

  beforeAll(async () => {
    stack = await startSessionGateway([
      { id: "small", quotas: { maxSessions: 1, maxTimeoutMinutes: 10, regions: ["us-east", "eu-west"] } },
      { id: "other", quotas: { maxSessions: 1 } },
    ]);
    small = new Hyperbrowser({ apiKey: stack.keys.small!, baseUrl: stack.gateway.url });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const create = (body: Record<string, unknown>, tenant = "small", path = "/api/session") =>
    fetch(stack.gateway.url + path, {
      method: "POST",
      headers: { "x-api-key": stack.keys[tenant]!, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("admits exactly one of two simultaneous creations at a limit of 1", async () => {
    const [a, b] = await Promise.all([create({}), create({})]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([200, 429]);
    const refused = await (a.status === 429 ? a : b).json();
    expect(refused).toMatchObject({ code: "quota_sessions", limit: 1 });
    expect(refused.current + refused.pending).toBeGreaterThanOrEqual(1);
    const admitted = await (a.status === 200 ? a : b).json();
    await small.sessions.stop(admitted.id);
  });

  it("refuses a second active session with the figures behind it, and admits again once one is stopped", async () => {
    const first = await small.sessions.create();
    const r = await create({});
    expect(r.status).toBe(429);
    expect(await r.json()).toMatchObject({
      code: "quota_sessions",
      limit: 1,
      current: 1,
      pending: 0,
      message: expect.stringContaining("at most 1 active sessions"),
    });
    await small.sessions.stop(first.id);
    const again = await small.sessions.create();
    expect(again.status).toBe("active");
    await small.sessions.stop(again.id);
  });

  it("counts paid /x402/session creations against the same limit, refused before anything is paid", async () => {
    const first = await small.sessions.create();
    const r = await create({ timeoutMinutes: 5 }, "small", "/x402/session");
    expect(r.status).toBe(429);
    expect(await r.json()).toMatchObject({ code: "quota_sessions", limit: 1, current: 1 });
    await small.sessions.stop(first.id);
  });

  it("frees the slot of a session that ended upstream without the gateway seeing it (timeout)", async () => {
    const short = await small.sessions.create({ timeoutMinutes: 0.04 }); // ~2.4 s
    expect((await create({})).status).toBe(429);
    await new Promise((r) => setTimeout(r, 3500));
    const next = await small.sessions.create();
    expect(next.status).toBe("active");
    expect((await small.sessions.get(short.id)).status).toBe("closed");
    await small.sessions.stop(next.id);
  });

  it("keeps tenants' limits apart", async () => {
    const mine = await small.sessions.create();
    const theirs = await create({}, "other");
    expect(theirs.status).toBe(200);
    await small.sessions.stop(mine.id);
    await fetch(`${stack.gateway.url}/api/session/${(await theirs.json()).id}/stop`, {
      method: "PUT",
      headers: { "x-api-key": stack.keys.other! },
    });
  });

  it("refuses a timeoutMinutes above the tenant's limit with quota_timeout", async () => {
    const r = await create({ timeoutMinutes: 11 });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "quota_timeout", limit: 10, requested: 11 });
  });

  it("refuses a region outside the tenant's list with quota_region", async () => {
    const r = await create({ region: "ap-south" });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "quota_region", allowed: ["us-east", "eu-west"], requested: "ap-south" });
    const ok = await small.sessions.create({ region: "eu-west" as never, timeoutMinutes: 10 });
    expect(ok.status).toBe("active");
    await small.sessions.stop(ok.id);
  });

  it("answers a body that is not a JSON object with a 400 before anything reaches the upstream", async () => {
    const r = await fetch(`${stack.gateway.url}/api/session`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.small! },
      body: "[1,2]",
    });
    expect(r.status).toBe(400);
    expect((await r.json()).code).toBe("invalid_json");
  });
});
