// The request log's spend is what the ledger charged, not what was held (issue 54): credit-billed calls through a real
// gateway in front of the emulator (a real Chromium per session), for a tenant whose credits carry a multiplier (the
// ledger records price × multiplier). A per-call row's spend equals its committed ledger entry; a session's creation
// leaves a hold open, shown as `held` (its reservation) and never as spend; the CSV carries the same.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { startPaidGateway, type PaidStack } from "../helpers/paid-stack.js";

type Row = { id: string; route: string; status: number; spend?: string; held?: string; heldUsd?: string };
type Entry = { id: string; amount: string; state: string; route?: string; requestId?: string; resource?: string };

describe("request-log spend against the ledger (credit-billed calls)", () => {
  let emu: EmulatorHandle;
  let s: Omit<PaidStack, "emulator">;
  const admin = async (path: string) => {
    const r = await fetch(`${s.gateway.url}${path}`, { headers: { "x-api-key": s.keys.ops! } });
    expect(r.status, await r.clone().text()).toBe(200);
    return r;
  };
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${s.gateway.url}${path}`, {
      method,
      headers: { "x-api-key": s.keys.acme!, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["x402", "sessions"] });
    s = await startPaidGateway(emu, [
      { id: "acme", scopes: ["search", "sessions"], creditMultiplier: "1.5" } as { id: string },
      { id: "ops", scopes: ["admin"] },
    ]);
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("per-call spend equals the committed ledger entry; a session's creation shows its hold as held, not spend", async () => {
    const ids: string[] = [];
    for (const q of ["request log spend one", "request log spend two"]) {
      const r = await call("POST", "/api/web/search", { query: q });
      expect(r.status, await r.clone().text()).toBe(200);
      ids.push(r.headers.get("x-request-id")!);
      await r.arrayBuffer();
    }
    const created = await call("POST", "/api/session", {});
    expect(created.status, await created.clone().text()).toBe(200);
    const session = (await created.json()) as { id: string };
    const createdId = created.headers.get("x-request-id")!;

    const rows = ((await (await admin("/_tollgate/admin/requests?tenant=acme")).json()) as { requests: Row[] }).requests;
    const ledger = ((await (await admin("/_tollgate/admin/ledger?tenant=acme&limit=100")).json()) as { entries: Entry[] }).entries;

    const searches = rows.filter((r) => ids.includes(r.id));
    expect(searches).toHaveLength(2);
    const committedSearches = ledger.filter((e) => e.state === "committed" && e.route === "web.search");
    expect(committedSearches).toHaveLength(2);
    const logged = searches.reduce((a, r) => a + BigInt(r.spend!), 0n);
    const booked = committedSearches.reduce((a, e) => a + BigInt(e.amount), 0n);
    expect(logged).toBe(booked);
    // The multiplier is in both: what was charged, not the price held.
    for (const r of searches) expect(BigInt(r.spend!) % 3n).toBe(0n);

    const creation = rows.find((r) => r.id === createdId)!;
    expect(creation).toBeDefined();
    expect(creation.spend).toBeUndefined();
    const open = ledger.find((e) => e.state === "reserved" && e.resource === `session:${session.id}`);
    expect(open, JSON.stringify(ledger)).toBeDefined();
    expect(creation.held).toBe(open!.amount);

    const csv = await (await admin("/_tollgate/admin/requests?tenant=acme&format=csv")).text();
    const [head, ...lines] = csv.trim().split("\n");
    const cols = head!.split(",");
    const line = lines.find((l) => l.includes(createdId))!;
    expect(line.split(",")[cols.indexOf("spendUsd")]).toBe("");
    expect(line.split(",")[cols.indexOf("heldUsd")]).toBe(creation.heldUsd);

    const stop = await call("PUT", `/api/session/${session.id}/stop`);
    expect(stop.status).toBe(200);
    await stop.arrayBuffer();
  }, 120_000);

  it("an operator asking /_tollgate/requests for another tenant is sent to the admin route, not shown its own log", async () => {
    const r = await fetch(`${s.gateway.url}/_tollgate/requests?tenant=acme`, { headers: { "x-api-key": s.keys.ops! } });
    expect(r.status).toBe(400);
    const body = await r.json();
    expect(body).toMatchObject({ code: "invalid_params", field: "tenant" });
    expect(body.message).toContain("/_tollgate/admin/requests?tenant=acme");
    const own = await fetch(`${s.gateway.url}/_tollgate/requests?tenant=acme`, { headers: { "x-api-key": s.keys.acme! } });
    expect(own.status).toBe(200);
  });
});
