// meterCredits on the gateway's real services (memory state, its ledger, the tenant directory), mounted as the route
// table mounts it; the caller is set the way the identify step sets it, and the route behind it stands in for the
// upstream's answer.
import { type Context, Hono, type MiddlewareHandler } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import type { GatewayEnv } from "../../src/context.js";
import { errorResponse, GatewayError } from "../../src/errors.js";
import { createGateway, type Gateway } from "../../src/gateway.js";
import { memoryStores } from "../../src/state/memory.js";
import type { LedgerEntry } from "../../src/state/types.js";
import { ROUTES, type RouteRow } from "../../src/routing/table.js";
import { claimCreated, noteCreated } from "../../src/routing/created.js";
import { stateKeys } from "../../src/state/keys.js";
import { accessLog } from "../access-log/index.js";
import { requestId } from "../request-id/index.js";
import { Logger, Redactor } from "../../src/log.js";
import "../../src/identity/caller.js";
import { quota } from "../quota/index.js";
import { meterCredits } from "./index.js";

const row = (name: string): RouteRow => ROUTES.find((r) => r.name === name)!;

const open: Gateway[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close(0);
});

type Answer = (c: Context<GatewayEnv>, entries: LedgerEntry[]) => Response | Promise<Response>;

function setup(opts: { budget?: Record<string, string>; credits?: Record<string, unknown>; quotas?: Record<string, unknown> } = {}) {
  const config = parseConfig({
    server: { logLevel: "error" },
    credits: opts.credits,
    tenants: [
      {
        id: "acme",
        keys: [{ hash: `sha256:${"a".repeat(64)}` }],
        ...(opts.budget ? { budget: opts.budget } : {}),
        ...(opts.quotas ? { quotas: opts.quotas } : {}),
      },
    ],
  });
  const g = createGateway(config, { secrets: {}, stores: memoryStores(Date.now), logSink: () => {} });
  open.push(g);
  const acme = g.directory.get("acme")!;
  const ledger = () => g.stores.ledger.list({ tenant: "acme", kind: "credits" });
  /** What the handler behind the meter saw: the body it would forward, and the ledger as it stood. */
  const seen: Array<{ body: unknown; entries: LedgerEntry[] }> = [];
  const mount = (r: RouteRow, answer: Answer, before: MiddlewareHandler<GatewayEnv>[] = []) => {
    const a = new Hono<GatewayEnv>();
    a.onError((err) => errorResponse(err));
    a.use(requestId());
    a.use(accessLog(new Logger(() => {}, "silent", new Redactor())));
    const meter = meterCredits(g.services, r);
    if (!meter) throw new Error(`${r.name} is not metered by the chain`);
    a.on(
      r.method as string,
      [r.path],
      (c, next) => {
        c.set("caller", { via: "key", tenant: acme, presented: "tg_test_key" });
        return next();
      },
      ...before,
      meter,
      async (c) => {
        const entries = await ledger();
        seen.push({ body: c.var.jsonBody?.json, entries });
        return answer(c, entries);
      },
    );
    return (path: string, body: unknown = {}) =>
      a.request(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  };
  return { g, mount, ledger, seen };
}

const ATOMIC = (usd: number) => String(Math.round(usd * 1_000_000));

describe("meterCredits: a per-call row", () => {
  it("reserves its price before the request is forwarded, and commits it when the answer is a success", async () => {
    const { mount, ledger, seen } = setup();
    const send = mount(row("scrape.start"), (c) => c.json({ jobId: "job_1" }));
    const res = await send("/api/scrape", { url: "https://example.com" });
    expect(res.status).toBe(200);
    expect(seen[0]!.entries.map((e) => [e.state, e.amount, e.route])).toEqual([["reserved", ATOMIC(0.001), "scrape.start"]]);
    expect((await ledger()).map((e) => [e.state, e.amount])).toEqual([["committed", ATOMIC(0.001)]]);
  });

  it("releases its reservation when the upstream answers with a failure", async () => {
    const { mount, ledger } = setup();
    const send = mount(row("scrape.start"), (c) => c.json({ message: "upstream refused", code: "bad_request" }, 400));
    const res = await send("/api/scrape", { url: "https://example.com" });
    expect(res.status).toBe(400);
    const [entry] = await ledger();
    expect(entry!.state).toBe("released");
  });

  it("releases its reservation when the request is refused further down the chain (nothing forwarded)", async () => {
    const { mount, ledger } = setup();
    const send = mount(row("scrape.start"), () => {
      throw new GatewayError(409, "resource_conflict", "refused downstream");
    });
    expect((await send("/api/scrape", { url: "https://example.com" })).status).toBe(409);
    expect((await ledger()).map((e) => e.state)).toEqual(["released"]);
  });

  it("refuses with 402 when the tenant's budget cannot cover the price, and forwards nothing", async () => {
    const { mount, ledger, seen } = setup({ budget: { daily: "0.0005" } });
    const send = mount(row("scrape.start"), (c) => c.json({ jobId: "job_x" }));
    const res = await send("/api/scrape", { url: "https://example.com" });
    expect(res.status).toBe(402);
    expect((await res.json()).code).toBe("budget_exceeded");
    expect(seen).toEqual([]);
    expect((await ledger()).filter((e) => e.state !== "released")).toEqual([]);
  });

  it("does nothing when credits are off: no reservation, the request goes through", async () => {
    const { mount, ledger } = setup({ credits: { enabled: false } });
    const send = mount(row("scrape.start"), (c) => c.json({ jobId: "job_2" }));
    expect((await send("/api/scrape", { url: "https://example.com" })).status).toBe(200);
    expect(await ledger()).toEqual([]);
  });
});

describe("meterCredits: rows reserved for what they may run", () => {
  it("reserves units × price, writing the default count into the body when the request names none", async () => {
    const { mount, seen } = setup();
    const send = mount(row("crawl.start"), (c) => c.json({ jobId: "job_c" }));
    expect((await send("/api/crawl", { url: "https://example.com" })).status).toBe(200);
    expect(seen[0]!.body).toEqual({ url: "https://example.com", maxPages: 10 });
    expect(seen[0]!.entries[0]!.amount).toBe(ATOMIC(10 * 0.001));
  });

  it("refuses more than 10000 units with 400 invalid_params naming the field", async () => {
    const { mount, seen } = setup();
    const send = mount(row("crawl.start"), (c) => c.json({ jobId: "job_c" }));
    const res = await send("/api/crawl", { url: "https://example.com", maxPages: 20_000 });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_params", field: "maxPages", limit: 10_000 });
    expect(seen).toEqual([]);
  });

  it("keeps a job's hold open on the job the answer names, to settle when it ends", async () => {
    const { mount, ledger } = setup();
    const send = mount(row("crawl.start"), (c) => c.json({ jobId: "job_k", status: "pending" }));
    await send("/api/crawl", { url: "https://example.com", maxPages: 3 });
    expect((await ledger()).map((e) => [e.state, e.amount, e.resource])).toEqual([["reserved", ATOMIC(0.003), "job:job_k"]]);
  });

  it("reserves a sandbox's whole timeout (the default written into the body) and keeps it on the sandbox its handler noted", async () => {
    const { mount, ledger, seen } = setup();
    const send = mount(row("sandbox.create"), (c) => {
      const shown = { id: "sb_1", status: "active" };
      noteCreated(c, shown); // the handler read the answer: the meter takes the id from here
      return c.json(shown);
    });
    expect((await send("/api/sandbox", { imageName: "node" })).status).toBe(200);
    expect(seen[0]!.body).toEqual({ imageName: "node", timeoutMinutes: 30 });
    expect((await ledger()).map((e) => [e.state, e.amount, e.resource])).toEqual([["reserved", ATOMIC(30 * 0.0017), "sandbox:sb_1"]]);
  });

  it("reads a creation's answer once: quota and meter take the id its handler noted, and never read the answer again", async () => {
    const { g, mount, ledger } = setup({ quotas: { maxSandboxes: 5 } });
    let reads = 0;
    const send = mount(
      row("sandbox.create"),
      (c) => {
        noteCreated(c, { id: "sb_noted" });
        // An answer whose body can be read by nobody but the client: any step reading it counts here.
        const body = new ReadableStream<Uint8Array>(
          {
            pull(ctrl) {
              reads++;
              ctrl.enqueue(new TextEncoder().encode('{"id":"sb_noted"}'));
              ctrl.close();
            },
          },
          { highWaterMark: 0 },
        );
        return new Response(body, { headers: { "content-type": "application/json" } });
      },
      [quota(g.services, { kind: "sandbox" })],
    );
    const res = await send("/api/sandbox", { imageName: "node", timeoutMinutes: 10 });
    expect(res.status).toBe(200);
    expect(reads).toBe(0);
    expect(await g.stores.ownership.owner("sandbox", "sb_noted")).toBe("acme");
    expect((await ledger()).map((e) => e.resource)).toEqual(["sandbox:sb_noted"]);
    expect(await res.json()).toEqual({ id: "sb_noted" });
    expect(reads).toBe(1);
  });

  it("attaches and keeps a creation's hold beside its claim, in the claim's one round trip", async () => {
    const { g, mount, ledger } = setup();
    const { kv, ownership } = g.stores;
    // Every state call the claim's step makes, and how many were in flight at once.
    let inFlight = 0;
    let most = 0;
    const spied = [
      [ownership, "claim"],
      [kv, "setIfAbsent"],
      [kv, "set"],
      [g.stores.ledger, "attach"],
    ] as const;
    for (const [store, method] of spied) {
      const real = (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!.bind(store);
      (store as unknown as Record<string, unknown>)[method] = async (...a: unknown[]) => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 20));
        try {
          return await real(...a);
        } finally {
          inFlight--;
        }
      };
    }
    const send = mount(row("sandbox.create"), async (c) => {
      await claimCreated(g.services, c, { kind: "sandbox", id: "sb_beside", tenant: "acme" });
      const shown = { id: "sb_beside", status: "active" };
      noteCreated(c, shown);
      return c.json(shown);
    });
    expect((await send("/api/sandbox", { imageName: "node", timeoutMinutes: 10 })).status).toBe(200);
    expect(most).toBe(3); // the claim, the hold's attachment and its kept record, at once
    expect((await ledger()).map((e) => [e.state, e.resource])).toEqual([["reserved", "sandbox:sb_beside"]]);
    expect(JSON.parse((await kv.get(stateKeys.creditsHold("sandbox", "sb_beside")))!)).toMatchObject({ amount: ATOMIC(10 * 0.0017) });
  });

  it("never replaces another tenant's kept hold when a creation names its id: the claim refuses, the hold is released", async () => {
    const { g, mount, ledger } = setup();
    const { kv, ownership } = g.stores;
    await ownership.claim("sandbox", "sb_theirs", "other");
    const theirs = JSON.stringify({ ids: ["their-hold"], amount: "1" });
    await kv.set(stateKeys.creditsHold("sandbox", "sb_theirs"), theirs, 60_000);
    const send = mount(row("sandbox.create"), async (c) => {
      await claimCreated(g.services, c, { kind: "sandbox", id: "sb_theirs", tenant: "acme" });
      return c.json({ id: "sb_theirs" });
    });
    expect((await send("/api/sandbox", { imageName: "node", timeoutMinutes: 10 })).status).toBe(409);
    expect(await kv.get(stateKeys.creditsHold("sandbox", "sb_theirs"))).toBe(theirs);
    expect((await ledger()).map((e) => e.state)).toEqual(["released"]);
    expect(await ownership.owner("sandbox", "sb_theirs")).toBe("other");
  });

  it("drops the hold it kept beside a claim the tenant's quota refuses, and releases the hold", async () => {
    const { g, mount, ledger } = setup();
    const { kv } = g.stores;
    const send = mount(row("sandbox.create"), async (c) => {
      // As the quota step sets it for a tenant it finds full at the claim (middleware/quota).
      c.set("quotaClaim", {
        kind: "sandbox",
        limit: 0,
        recheck: async () => {},
        learned: () => {},
        refuse: () => new GatewayError(429, "quota_sandboxes", "full"),
      });
      await claimCreated(g.services, c, { kind: "sandbox", id: "sb_over", tenant: "acme" });
      return c.json({ id: "sb_over" });
    });
    expect((await send("/api/sandbox", { imageName: "node", timeoutMinutes: 10 })).status).toBe(429);
    expect(await kv.get(stateKeys.creditsHold("sandbox", "sb_over"))).toBeUndefined();
    expect((await ledger()).map((e) => e.state)).toEqual(["released"]);
  });

  it("reads the created id from an answer relayed as it came when no handler noted it", async () => {
    const { mount, ledger } = setup();
    const send = mount(
      row("sandbox.create"),
      () => new Response(JSON.stringify({ id: "sb_2" }), { headers: { "content-type": "application/json" } }),
    );
    expect((await send("/api/sandbox", { imageName: "node", timeoutMinutes: 10 })).status).toBe(200);
    expect((await ledger()).map((e) => [e.amount, e.resource])).toEqual([[ATOMIC(10 * 0.0017), "sandbox:sb_2"]]);
  });

  it("charges the whole reservation when a creation's answer names no id (nothing to settle against later)", async () => {
    const { mount, ledger } = setup();
    const send = mount(row("sandbox.create"), (c) => c.json({ status: "active" }));
    expect((await send("/api/sandbox", { imageName: "node", timeoutMinutes: 10 })).status).toBe(200);
    expect((await ledger()).map((e) => [e.state, e.amount])).toEqual([["committed", ATOMIC(10 * 0.0017)]]);
  });

  it("gives cached search rows no step: their handler meters itself", () => {
    const { g } = setup();
    expect(meterCredits(g.services, row("web.search"))).toBeUndefined();
    expect(meterCredits(g.services, row("sandbox.get"))).toBeUndefined();
  });
});
