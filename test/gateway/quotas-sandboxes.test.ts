// Per-tenant sandbox quotas through the gateway on the real sandbox emulator: active count and allowed images.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";

describe("sandbox quotas", () => {
  let stack: SessionGateway;
  let hb: Hyperbrowser;

  beforeAll(async () => {
    stack = await startSessionGateway([{ id: "team", quotas: { maxSandboxes: 1, images: ["node", "debian"], maxTimeoutMinutes: 30 } }], {
      modules: ["sandboxes"],
    });
    hb = new Hyperbrowser({ apiKey: stack.keys.team!, baseUrl: stack.gateway.url });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const create = (body: Record<string, unknown>) =>
    fetch(`${stack.gateway.url}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.team!, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("refuses an image outside the tenant's list with quota_image, before the upstream sees it", async () => {
    const r = await create({ imageName: "ubuntu" });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "quota_image", allowed: ["node", "debian"], requested: "ubuntu" });
  });

  it("refuses a longer timeoutMinutes with quota_timeout", async () => {
    const r = await create({ imageName: "node", timeoutMinutes: 31 });
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ code: "quota_timeout", limit: 30, requested: 31 });
  });

  it("admits one of two simultaneous creations at maxSandboxes 1, refuses more, and admits again after stop", async () => {
    const [a, b] = await Promise.all([create({ imageName: "node" }), create({ imageName: "debian" })]);
    expect([a.status, b.status].sort()).toEqual([200, 429]);
    const refused = await (a.status === 429 ? a : b).json();
    expect(refused).toMatchObject({ code: "quota_sandboxes", limit: 1 });
    const first = await (a.status === 200 ? a : b).json();
    const again = await create({ imageName: "node" });
    expect(again.status).toBe(429);
    expect(await again.json()).toMatchObject({ code: "quota_sandboxes", limit: 1, current: 1, pending: 0 });
    await hb.sandboxes.stop(first.id);
    const next = await hb.sandboxes.create({ imageName: "node" });
    expect(next.status).toBe("active");
    await next.stop();
  });
});
