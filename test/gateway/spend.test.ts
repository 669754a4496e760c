// Spend of both kinds against one budget: reserveSpend refuses with the same 402 the x402 path gives, settles and
// releases a keyless token's cap entry with the tenant's, and the reconciler commits expired credits holds in full.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { GatewayError } from "../../src/errors.js";
import {
  attachSpend,
  capEntryId,
  holdSpend,
  meteredCost,
  openHoldOf,
  releaseSpend,
  reserveSpend,
  settleSpend,
} from "../../src/payments/spend.js";
import { memoryStores } from "../../src/state/memory.js";
import { stateKeys } from "../../src/state/keys.js";
import { windowPeriod } from "../../src/payments/budgets/windows.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

/** 2026-03-10 12:00 UTC. */
const T0 = Date.UTC(2026, 2, 10, 12, 0, 0);
const MIN = 60_000;

function gatewayAt(clock: { now: number }) {
  const config = parseConfig({
    server: { logLevel: "error" },
    tenants: [
      { id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}` }], budget: { daily: "0.01", monthly: "1.00" } },
      { id: "free", keys: [{ hash: `sha256:${"b".repeat(64)}` }] },
      { id: "stopper", keys: [{ hash: `sha256:${"c".repeat(64)}` }], budget: { daily: "1.00" }, onExhausted: "stop" },
    ],
  });
  const now = () => clock.now;
  const g = createGateway(config, { secrets: {}, stores: memoryStores(now), now, logSink: () => {} });
  return {
    services: g.services,
    tenant: (id: string) => g.directory.get(id)!,
    reconciler: g.reconciler,
    ledger: g.stores.ledger,
    kv: g.stores.kv,
  };
}

const scrape = (amount: bigint, over: Record<string, unknown> = {}) => ({
  kind: "credits" as const,
  route: "/api/scrape",
  fingerprint: "fp",
  amount: amount.toString(),
  meter: "call",
  ...over,
});

async function refusal(p: Promise<unknown>): Promise<GatewayError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(GatewayError);
  return err as GatewayError;
}

describe("reserveSpend / settleSpend / releaseSpend", () => {
  it("refuses credits over the budget with the x402 path's 402 budget_exceeded, counting x402 and credits together", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger } = gatewayAt(clock);
    await reserveSpend(services, {
      tenant: tenant("acme"),
      entry: { kind: "x402", route: "/x402/web/search", fingerprint: "f", amount: "5000", asset: "0xA", network: "eip155:1", payee: "0xP" },
    });
    const ok = await reserveSpend(services, { tenant: tenant("acme"), entry: scrape(4000n) });
    expect(ok.entry).toMatchObject({ kind: "credits", tenant: "acme", state: "reserved", amount: "4000", instance: services.instanceId });
    expect(ok.ids).toEqual([ok.entry.id]);
    const err = await refusal(reserveSpend(services, { tenant: tenant("acme"), entry: scrape(2000n) }));
    expect(err.status).toBe(402);
    expect(err.code).toBe("budget_exceeded");
    expect(err.message).toBe(
      'The daily budget of tenant "acme" cannot cover this call: $0.009 of $0.01 spent, this call costs $0.002. It resets at 2026-03-11T00:00:00.000Z.',
    );
    expect((await ledger.usage("acme", T0)).byKind).toEqual({
      x402: { daily: 5000n, monthly: 5000n, total: 5000n },
      credits: { daily: 4000n, monthly: 4000n, total: 4000n },
    });
  });

  it("settles a time-metered hold for the minutes used, and its keyless cap entry with it, found again by resource", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger } = gatewayAt(clock);
    const cap = { id: "tok-1", amount: 100_000n };
    const maxEnd = Math.floor(T0 / 1000) + 30 * 60;
    const hold = await reserveSpend(services, {
      tenant: tenant("free"),
      cap,
      entry: scrape(30n * 1000n, { route: "/api/sandbox", meter: "minute", resource: "sandbox:sb-9", validBefore: maxEnd }),
    });
    expect(hold.ids).toEqual([hold.entry.id, capEntryId(hold.entry.id)]);
    expect((await ledger.get(capEntryId(hold.entry.id)))?.tenant).toBe("token:tok-1");
    // Later, maybe elsewhere: the stop handler knows only the resource.
    clock.now = T0 + 7 * MIN;
    const [found] = await ledger.list({ tenant: "free", kind: "credits", resource: "sandbox:sb-9", state: "reserved" });
    await settleSpend(services, found, { finalAmount: 7n * 1000n });
    for (const id of hold.ids) expect(await ledger.get(id)).toMatchObject({ state: "committed", amount: "7000", reservedAmount: "30000" });
    expect((await ledger.usage("free", T0)).total).toBe(7000n);
    expect((await ledger.usage("token:tok-1", T0)).total).toBe(7000n);
  });

  it("reserves a sandbox's maximum before its id exists, attaches the id from the answer, and settles the minutes it ran", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger } = gatewayAt(clock);
    const rate = 1000n; // $0.001 a minute
    const timeoutMs = 15 * MIN;
    const hold = await reserveSpend(services, {
      tenant: tenant("free"),
      cap: { id: "tok-4", amount: 1_000_000n },
      entry: scrape(meteredCost(rate, timeoutMs), {
        route: "/api/sandbox",
        meter: "minute",
        validBefore: Math.floor((T0 + timeoutMs) / 1000),
      }),
    });
    await attachSpend(services, hold, { resource: "sandbox:sb-42" });
    expect(await openHoldOf(services, "free", "sandbox:sb-42")).toMatchObject({ id: hold.entry.id, amount: "15000" });
    expect(await openHoldOf(services, "token:tok-4", "sandbox:sb-42")).toMatchObject({ id: capEntryId(hold.entry.id) });
    clock.now = T0 + 4 * MIN + 10_000; // stopped during its fifth minute
    const open = (await openHoldOf(services, "free", "sandbox:sb-42"))!;
    await settleSpend(services, open, { finalAmount: meteredCost(rate, clock.now - open.createdAt) });
    expect(await ledger.get(hold.entry.id)).toMatchObject({ state: "committed", amount: "5000", reservedAmount: "15000" });
    expect(await ledger.get(capEntryId(hold.entry.id))).toMatchObject({ state: "committed", amount: "5000" });
    expect(await openHoldOf(services, "free", "sandbox:sb-42")).toBeUndefined();
    expect(meteredCost(rate, 0)).toBe(0n);
    expect(meteredCost(rate, 60_000)).toBe(1000n);
    expect(meteredCost(rate, 60_001)).toBe(2000n);
  });

  it("refuses over a keyless token's cap, gives the tenant's hold back at once, and releases both entries", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger } = gatewayAt(clock);
    const cap = { id: "tok-2", amount: 3000n };
    const hold = await reserveSpend(services, { tenant: tenant("free"), cap, entry: scrape(2000n) });
    const err = await refusal(reserveSpend(services, { tenant: tenant("free"), cap, entry: scrape(2000n) }));
    expect(err.code).toBe("token_cap_exceeded");
    expect(err.status).toBe(402);
    expect((await ledger.usage("free", T0)).total).toBe(2000n);
    // The tenant's hold, reserved beside the cap's, was given back before the refusal was answered.
    const given = await ledger.list({ tenant: "free", state: "released" });
    expect(given.map((e) => e.reason)).toEqual(["token cap exceeded"]);
    // A token refused lately reserves its cap first: a client retrying on its spent cap writes nothing of its tenant's.
    expect((await refusal(reserveSpend(services, { tenant: tenant("free"), cap, entry: scrape(2000n) }))).code).toBe("token_cap_exceeded");
    expect(await ledger.list({ tenant: "free", state: "released" })).toHaveLength(1);
    await releaseSpend(services, hold, "upstream answered 400");
    expect((await ledger.usage("free", T0)).total).toBe(0n);
    expect((await ledger.usage("token:tok-2", T0)).total).toBe(0n);
    await holdSpend(services, await reserveSpend(services, { tenant: tenant("free"), cap, entry: scrape(3000n) }), "no answer");
    expect(await ledger.list({ tenant: "token:tok-2", state: "uncertain" })).toHaveLength(1);
  });

  it("returns a cap reservation when the tenant's budget refuses", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger } = gatewayAt(clock);
    const err = await refusal(
      reserveSpend(services, { tenant: tenant("acme"), cap: { id: "tok-3", amount: 1_000_000n }, entry: scrape(20_000n) }),
    );
    expect(err.code).toBe("budget_exceeded");
    expect((await ledger.usage("token:tok-3", T0)).total).toBe(0n);
  });

  it("returns a cap reservation when the tenant is stopped (onExhausted = stop), at once", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger, kv } = gatewayAt(clock);
    await kv.set(stateKeys.budgetExhausted("stopper", "daily", windowPeriod("daily", T0)), "1", 86_400_000);
    const err = await refusal(
      reserveSpend(services, { tenant: tenant("stopper"), cap: { id: "tok-4", amount: 1_000_000n }, entry: scrape(10_000n) }),
    );
    expect(err.code).toBe("budget_exceeded");
    expect(err.details).toMatchObject({ stopped: true });
    expect((await ledger.usage("token:tok-4", T0)).total).toBe(0n);
    expect(await ledger.list({ tenant: "token:tok-4", state: "reserved" })).toHaveLength(0);
    expect((await ledger.usage("stopper", T0)).total).toBe(0n);
  });

  it("waits for one state round trip: a token's cap, the stopped check and the tenant's reservation start together", async () => {
    const clock = { now: T0 };
    const calls = { done: 0, waves: [] as { op: string; after: number }[] };
    const stores = memoryStores(() => clock.now);
    // Each store call notes how many calls had answered when it started: all started before any answered = one turn.
    const counted = <T extends object>(name: string, target: T): T =>
      new Proxy(target, {
        get(t, prop, receiver) {
          const v = Reflect.get(t, prop, receiver);
          if (typeof v !== "function") return v;
          return (...args: unknown[]) => {
            calls.waves.push({ op: `${name}.${String(prop)}`, after: calls.done });
            return Promise.resolve(v.apply(t, args)).finally(() => calls.done++);
          };
        },
      });
    const config = parseConfig({
      server: { logLevel: "error" },
      tenants: [
        { id: "stopper", keys: [{ hash: `sha256:${"c".repeat(64)}` }], budget: { daily: "1.00", monthly: "5.00" }, onExhausted: "stop" },
      ],
    });
    const now = () => clock.now;
    const g = createGateway(config, {
      secrets: {},
      stores: { ...stores, ledger: counted("ledger", stores.ledger), kv: counted("kv", stores.kv) },
      now,
      logSink: () => {},
    });
    const stopper = g.directory.get("stopper")!;
    calls.waves.length = 0;
    calls.done = 0;
    const hold = await reserveSpend(g.services, { tenant: stopper, cap: { id: "tok-5", amount: 1_000_000n }, entry: scrape(10_000n) });
    expect(hold.ids).toHaveLength(2);
    // Two reservations (the cap's and the tenant's) and the exhausted marks of both limited windows, all in one turn.
    expect(calls.waves.map((w) => w.op).sort()).toEqual(["kv.get", "kv.get", "ledger.reserve", "ledger.reserve"]);
    expect(calls.waves.every((w) => w.after === 0)).toBe(true);
  });

  it("fails closed when the exhausted marks cannot be read, giving back the holds that landed beside the read", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger, kv } = gatewayAt(clock);
    kv.get = async () => {
      throw new Error("connection lost");
    };
    const err = await refusal(
      reserveSpend(services, { tenant: tenant("stopper"), cap: { id: "tok-6", amount: 1_000_000n }, entry: scrape(10_000n) }),
    );
    expect(err).toMatchObject({ status: 503, code: "state_unavailable" });
    expect((await ledger.usage("stopper", T0)).total).toBe(0n);
    expect((await ledger.usage("token:tok-6", T0)).total).toBe(0n);
    expect((await ledger.list({ tenant: "stopper", state: "released" })).map((e) => e.reason)).toEqual(["state store unavailable"]);
  });

  it("remembers a stopped tenant: its next calls are refused with no state round trip, until its window resets", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger, kv } = gatewayAt(clock);
    await kv.set(stateKeys.budgetExhausted("stopper", "daily", windowPeriod("daily", T0)), "1", 86_400_000);
    const first = await refusal(reserveSpend(services, { tenant: tenant("stopper"), entry: scrape(10_000n) }));
    expect(first.details).toMatchObject({ stopped: true, window: "daily" });
    // The hold reserved beside the check was given back, named.
    expect((await ledger.list({ tenant: "stopper", state: "released" })).map((e) => e.reason)).toEqual(["tenant stopped"]);
    const reserve = ledger.reserve.bind(ledger);
    let reserved = 0;
    ledger.reserve = (...args: Parameters<typeof reserve>) => {
      reserved++;
      return reserve(...args);
    };
    for (let i = 0; i < 5; i++) {
      const again = await refusal(reserveSpend(services, { tenant: tenant("stopper"), entry: scrape(10_000n) }));
      expect(again.details).toMatchObject({ stopped: true, window: "daily" });
    }
    expect(reserved).toBe(0);
    expect(await ledger.list({ tenant: "stopper", state: "released" })).toHaveLength(1);
    // The next day is a fresh window: checked afresh, and reserved.
    clock.now = T0 + 24 * 60 * MIN;
    await reserveSpend(services, { tenant: tenant("stopper"), entry: scrape(10_000n) });
    expect(reserved).toBe(1);
  });
});

describe("the reconciler and credits holds", () => {
  it("commits a credits hold at its reserved maximum once its end time (plus grace) has passed, and leaves live ones", async () => {
    const clock = { now: T0 };
    const { services, tenant, ledger, reconciler } = gatewayAt(clock);
    const s = (ms: number) => Math.floor(ms / 1000);
    const ended = await reserveSpend(services, {
      tenant: tenant("acme"),
      entry: scrape(3000n, { meter: "minute", resource: "session:s1", validBefore: s(T0 + 3 * MIN) }),
    });
    const live = await reserveSpend(services, {
      tenant: tenant("acme"),
      entry: scrape(3000n, { meter: "minute", resource: "session:s2", validBefore: s(T0 + 30 * MIN) }),
    });
    const stopped = await reserveSpend(services, {
      tenant: tenant("acme"),
      entry: scrape(3000n, { meter: "minute", resource: "session:s3", validBefore: s(T0 + 3 * MIN) }),
    });
    await settleSpend(services, stopped, { finalAmount: 1000n });
    clock.now = T0 + 3 * MIN + 1000; // within the grace
    expect((await reconciler.runOnce()).creditsCommitted).toBe(0);
    clock.now = T0 + 4 * MIN;
    expect(await reconciler.runOnce()).toMatchObject({ committed: 0, released: 0, stillHeld: 0, creditsCommitted: 1, creditsCorrected: 0 });
    expect(await ledger.get(ended.entry.id)).toMatchObject({ state: "committed", amount: "3000" });
    expect(await ledger.get(live.entry.id)).toMatchObject({ state: "reserved" });
    expect(await ledger.get(stopped.entry.id)).toMatchObject({ state: "committed", amount: "1000" });
    expect((await ledger.usage("acme", T0)).byKind.credits.total).toBe(7000n);
  });
});

describe("/_tollgate/usage and /_tollgate/ledger with both kinds", () => {
  it("shows each window's spend summed and by kind, and lists entries with their kind, filtered by kind or resource", async () => {
    const key = generateTenantKey();
    const config = parseConfig({
      server: { logLevel: "error" },
      tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }], budget: { daily: "0.05" } }],
    });
    const now = () => T0;
    const g = createGateway(config, { secrets: {}, stores: memoryStores(now), now, logSink: () => {} });
    const acme = g.directory.get("acme")!;
    const paid = await reserveSpend(g.services, {
      tenant: acme,
      entry: { kind: "x402", route: "/x402/web/search", fingerprint: "f", amount: "5000", asset: "0xA", network: "eip155:1", payee: "0xP" },
    });
    await settleSpend(g.services, paid, { transaction: "0xtx" });
    const sandbox = await reserveSpend(g.services, {
      tenant: acme,
      entry: scrape(20_000n, { route: "/api/sandbox", meter: "minute", resource: "sandbox:sb-1" }),
    });
    await settleSpend(g.services, sandbox, { finalAmount: 3000n });
    await reserveSpend(g.services, { tenant: acme, entry: scrape(1000n, { meter: "page" }) });
    const get = async (path: string) => {
      const r = await g.app.fetch(new Request(`http://gateway.test/_tollgate${path}`, { headers: { "x-api-key": key } }));
      return { status: r.status, body: (await r.json()) as any };
    };
    const usage = await get("/usage");
    expect(usage.status).toBe(200);
    expect(usage.body.daily).toEqual({
      limit: "0.05",
      spent: "0.009",
      byKind: { x402: "0.005", credits: "0.004" },
      remaining: "0.041",
      resetsAt: "2026-03-11T00:00:00.000Z",
    });
    expect(usage.body.total.byKind).toEqual({ x402: "0.005", credits: "0.004" });
    const credits = (await get("/ledger?kind=credits")).body.entries;
    expect(credits.map((e: any) => [e.kind, e.meter, e.state, e.amountUsd])).toEqual([
      ["credits", "page", "reserved", "0.001"],
      ["credits", "minute", "committed", "0.003"],
    ]);
    expect(credits[1]).toMatchObject({ resource: "sandbox:sb-1", reservedAmountUsd: "0.02" });
    expect((await get("/ledger?kind=x402")).body.entries.map((e: any) => [e.kind, e.transaction])).toEqual([["x402", "0xtx"]]);
    expect((await get("/ledger?resource=sandbox:sb-1")).body.entries).toHaveLength(1);
    const bad = await get("/ledger?kind=card");
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_kind");
  });
});

describe("releases the state store could not take", () => {
  it("are retried by the reconciler once Redis is back, so an outage holds no budget after it ends", async () => {
    const { startDurableRedis } = await import("../reliability/durable-redis.js");
    const { redisStores } = await import("../../src/state/redis.js");
    const redis = await startDurableRedis(); // keeps its data across a crash, as a production Redis would
    const stores = redisStores(redis.url, { prefix: "abandoned:" });
    const config = parseConfig({
      server: { logLevel: "silent" },
      tenants: [{ id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}` }], budget: { daily: "1.00" } }],
    });
    const g = createGateway(config, { secrets: {}, stores, logSink: () => {} });
    const acme = g.directory.get("acme")!;
    try {
      const hold = await reserveSpend(g.services, { tenant: acme, entry: scrape(400_000n) });
      await redis.crash();
      // Redis is down: the release cannot land (nothing was sent for the hold), and the reconciler cannot reach it yet.
      await expect(releaseSpend(g.services, hold, "not sent")).rejects.toThrow();
      await g.reconciler.runOnce().catch(() => undefined);
      await redis.restart();
      let state: string | undefined = "reserved";
      for (let i = 0; i < 50 && state !== "released"; i++) {
        await g.reconciler.runOnce().catch(() => undefined);
        state = await g.stores.ledger.get(hold.entry.id).then(
          (e) => e?.state,
          () => "unreachable",
        );
        if (state !== "released") await new Promise((r) => setTimeout(r, 100));
      }
      expect(state).toBe("released");
      expect((await g.stores.ledger.usage("acme", Date.now())).daily).toBe(0n);
    } finally {
      await g.close(0);
      await redis.stop();
    }
  }, 30_000);
});
