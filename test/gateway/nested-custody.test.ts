// Work a body starts is owned: an agent task that keeps its browser open runs in a session of the caller's (listed,
// metered by the minute, hidden from other tenants, stopped and settled by the kill switch), and the kill switch holds:
// with onExhausted = "stop", paid calls stay refused until the window resets even after the stop gave budget back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { statusOf } from "../helpers/sdk-status.js";

const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];
const SITE = "http://web.emulator.test";

let stack: SessionGateway;
let kept: Hyperbrowser;
let rival: Hyperbrowser;

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "kept", scopes: ALL },
      { id: "rival", scopes: ALL },
      { id: "agentsonly", scopes: ["agents"] },
      // $0.06 a day: one 30-minute session (30 × $0.0017 = $0.051) fits, a second does not.
      { id: "capped", scopes: ALL, budget: { daily: "0.06" }, onExhausted: "stop" },
      { id: "ops", scopes: [...ALL, "admin"] },
    ],
    { modules: ["sessions", "jobs"] },
  );
  kept = new Hyperbrowser({ apiKey: stack.keys.kept!, baseUrl: stack.gateway.url });
  rival = new Hyperbrowser({ apiKey: stack.keys.rival!, baseUrl: stack.gateway.url });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const admin = (path: string, init: RequestInit = {}) =>
  fetch(`${stack.gateway.url}/_tollgate/admin${path}`, { ...init, headers: { "x-api-key": stack.keys.ops!, ...init.headers } });

async function ledger(tenant: string, resource: string) {
  const r = await admin(`/ledger?tenant=${tenant}&kind=credits&limit=1000`);
  const entries = (await r.json()).entries as Array<{ route: string; state: string; amount: string; amountUsd: string; resource?: string }>;
  return entries.filter((e) => e.resource === resource);
}

/** The session as the upstream itself reports it (asked with the operator's key, around the gateway). */
async function upstreamStatus(id: string): Promise<string> {
  const r = await fetch(`${stack.emulator.controlUrl}/api/session/${id}`, { headers: { "x-api-key": stack.emulator.apiKey } });
  return (await r.json()).status;
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe("an agent task that keeps its browser open", () => {
  let sessionId: string;

  it("runs in a session of the caller's, named in its answer", async () => {
    const started = (await kept.agents.browserUse.start({
      task: `Open ${SITE}/about and tell me its title.`,
      keepBrowserOpen: true,
      maxSteps: 2,
      sessionOptions: { timeoutMinutes: 30 },
    })) as { jobId: string; sessionId?: string };
    expect(started.sessionId).toEqual(expect.any(String));
    sessionId = started.sessionId!;
    await until(
      "the task to end",
      () => kept.agents.browserUse.getStatus(started.jobId),
      (s) => s.status !== "running" && s.status !== "pending",
      90_000,
    );
    // The browser outlives the task, as asked, and it is the caller's.
    expect((await kept.sessions.get(sessionId)).status).toBe("active");
    expect((await kept.sessions.list({ status: "active" })).sessions.map((s) => s.id)).toContain(sessionId);
    expect(await statusOf(rival.sessions.get(sessionId))).toBe(404);
    expect(await statusOf(rival.sessions.stop(sessionId))).toBe(404);
  }, 120_000);

  it("is metered like a session the caller created: 30 minutes reserved at the session rate", async () => {
    const entries = await ledger("kept", `session:${sessionId}`);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ route: "session.create", state: "reserved", amountUsd: "0.051" });
  });

  it("needs the sessions scope, since it creates a session", async () => {
    const r = await fetch(`${stack.gateway.url}/api/task/browser-use`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.agentsonly!, "content-type": "application/json" },
      body: JSON.stringify({ task: "t", keepBrowserOpen: true }),
    });
    expect(r.status).toBe(403);
    expect((await r.json()).message).toContain("keepBrowserOpen");
  });

  it("is stopped by a disable, and its hold settled for the minutes it ran", async () => {
    const r = await admin("/tenants/kept/disable", { method: "POST" });
    expect(r.status).toBe(200);
    expect(
      await until(
        "the upstream to close it",
        () => upstreamStatus(sessionId),
        (s) => s !== "active",
      ),
    ).toBe("closed");
    const [entry] = await until(
      "the hold to settle",
      () => ledger("kept", `session:${sessionId}`),
      (e) => e[0]?.state === "committed",
    );
    // Settled at the stop for what it ran (the upstream's report, or the minutes at the table's rate), far below the
    // $0.051 reserved: the rest is back in the budget at once.
    expect(Number(entry!.amountUsd)).toBeGreaterThan(0);
    expect(Number(entry!.amountUsd)).toBeLessThanOrEqual(0.0017);
  }, 60_000);
});

describe("the kill switch with onExhausted = stop", () => {
  it("keeps paid calls refused until the window resets, even once the stop gave budget back", async () => {
    const capped = new Hyperbrowser({ apiKey: stack.keys.capped!, baseUrl: stack.gateway.url });
    const first = await capped.sessions.create({ timeoutMinutes: 30 });
    // The second does not fit: refused, the budget is exhausted, and the kill switch stops the first.
    expect(await statusOf(capped.sessions.create({ timeoutMinutes: 30 }))).toBe(402);
    expect(
      await until(
        "the kill switch",
        () => upstreamStatus(first.id),
        (s) => s !== "active",
      ),
    ).toBe("closed");
    await until(
      "the first session's hold to settle",
      () => ledger("capped", `session:${first.id}`),
      (e) => e[0]?.state === "committed",
    );
    // $0.0017 spent of $0.06: a 5-minute session ($0.0085) would fit the budget, and is still refused.
    const r = await fetch(`${stack.gateway.url}/api/session`, {
      method: "POST",
      headers: { "x-api-key": stack.keys.capped!, "content-type": "application/json" },
      body: JSON.stringify({ timeoutMinutes: 5 }),
    });
    expect(r.status).toBe(402);
    expect(await r.json()).toMatchObject({ code: "budget_exceeded", window: "daily", stopped: true, resetAt: expect.any(String) });
    // Reads stay open: the tenant is stopped, not disabled.
    expect((await capped.sessions.list()).sessions.map((s) => s.id)).toContain(first.id);
  }, 60_000);
});
