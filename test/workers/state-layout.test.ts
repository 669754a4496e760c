// State sharded by tenant on Durable Objects, inside workerd through real RPC stubs: ownership in one object per
// resource and one per tenant (no object on every request), each tenant's objects created at its location hint, and
// the previous layout's one "ownership" object read through after an upgrade, then moved out by the cron.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { doStores, migrateDurableState } from "../../src/state/durable-client.js";

const bindings = env as unknown as Record<string, unknown>;
const namespace = () => `layout-${crypto.randomUUID()}`;
// The stub's RPC methods, called as the previous version called them.
type Stub = Record<string, (...a: unknown[]) => Promise<unknown>>;
const real = bindings.TOLLGATE_STATE as { idFromName(n: string): unknown; get(id: unknown, o?: unknown): Stub };
const stubOf = (ns: string, name: string): Stub => real.get(real.idFromName(`${ns}/${name}`));

describe("Durable Objects: ownership sharded by resource and tenant", () => {
  it("keeps owners in the resource's object and lists in the tenant's, never in one object for all", async () => {
    const ns = namespace();
    const stores = doStores(bindings, { namespace: ns });
    expect(await stores.ownership.claim("sandbox", "sb1", "acme")).toBe(true);
    expect(await stores.ownership.claim("sandbox", "sb1", "globex")).toBe(false);
    expect(await stores.ownership.claim("session", "se1", "globex")).toBe(true);
    await stores.ownership.setActive("sandbox", "sb1", false);
    expect(await stubOf(ns, "res:sandbox:sb1").ownOwner("sandbox", "sb1", 0)).toBe("acme");
    expect(await stubOf(ns, "own:acme").ownRecords("sandbox", "acme", 0)).toEqual([{ id: "sb1", active: false }]);
    expect(await stubOf(ns, "own:globex").ownList("session", "globex", 0)).toEqual(["se1"]);
    // The fleet-wide object of the previous layout holds nothing.
    expect(await stubOf(ns, "ownership").ownExport(0, 10)).toEqual([]);
  });

  it("creates a tenant's objects at its location hint, and others where the runtime chooses", async () => {
    const ns = namespace();
    const seen: Array<{ name: string; hint: string | undefined }> = [];
    const recording = {
      idFromName: (name: string) => name,
      get: (name: string, o?: { locationHint?: string }) => {
        seen.push({ name: name.slice(ns.length + 1), hint: o?.locationHint });
        return real.get(real.idFromName(name));
      },
    };
    const hints: Record<string, string> = { acme: "weur" };
    const stores = doStores({ TOLLGATE_STATE: recording }, { namespace: ns, locationHint: (t) => hints[t] });
    const e = (id: string, tenant: string) => ({
      id,
      tenant,
      route: "/r",
      fingerprint: "f",
      amount: "5",
      asset: "a",
      network: "n",
      payee: "p",
    });
    expect((await stores.ledger.reserve(e("x1", "acme"), { total: 10n }, Date.now())).ok).toBe(true);
    expect((await stores.ledger.reserve(e("x2", "globex"), { total: 10n }, Date.now())).ok).toBe(true);
    await stores.ownership.claim("sandbox", "sb1", "acme");
    await stores.ledger.usage("acme", Date.now());
    const hintOf = (name: string) => seen.filter((s) => s.name === name).map((s) => s.hint);
    expect(hintOf("ledger:acme")).toEqual(["weur", "weur"]);
    expect(hintOf("ledger:globex")).toEqual([undefined]);
    expect(hintOf("res:sandbox:sb1")).toEqual(["weur"]);
    expect(hintOf("own:acme")).toEqual(["weur"]);
  });
});

describe("Durable Objects: upgrading from one ownership object", () => {
  it("reads the previous layout's rows through, writes past them, and the cron moves them out", async () => {
    const ns = namespace();
    // What the previous version wrote: every resource in the one "ownership" object.
    const legacy = stubOf(ns, "ownership");
    expect(await legacy.ownClaim("sandbox", "sb-old", "acme")).toBe(true);
    expect(await legacy.ownClaim("sandbox", "sb-old2", "acme")).toBe(true);
    await legacy.ownSetActive("sandbox", "sb-old2", false, Date.now());
    await legacy.ownNoteStatus("sandbox", "sb-old", "running");
    expect(await legacy.ownClaim("session", "se-g", "globex")).toBe(true);

    const stores = doStores(bindings, { namespace: ns });
    // Read through: owners, lists with their liveness and status, counts.
    expect(await stores.ownership.owner("sandbox", "sb-old")).toBe("acme");
    expect(await stores.ownership.owner("session", "se-g")).toBe("globex");
    expect(await stores.ownership.records("sandbox", "acme")).toEqual([
      { id: "sb-old2", active: false },
      { id: "sb-old", active: true, status: "running" },
    ]);
    expect(await stores.ownership.activeCount("sandbox", "acme")).toBe(1);
    // An old id is not taken over by another tenant; a new claim sorts above the old ones.
    expect(await stores.ownership.claim("session", "se-g", "acme")).toBe(false);
    expect(await stores.ownership.claim("sandbox", "sb-new", "acme")).toBe(true);
    expect(await stores.ownership.list("sandbox", "acme")).toEqual(["sb-new", "sb-old2", "sb-old"]);
    // A write to an old resource lands in the new objects, and the move does not undo it.
    await stores.ownership.setActive("sandbox", "sb-old", false);

    // The cron's steps, until the old object says it is empty of anything not moved; through the stores as the
    // gateway holds them (its wrappers spread the stores and replace the registries).
    const wrapped = { ...stores, ownership: { ...stores.ownership } as typeof stores.ownership };
    let done = false;
    for (let i = 0; i < 5 && !done; i++) done = await migrateDurableState(wrapped);
    expect(done).toBe(true);
    expect(await legacy.ownLegacyState()).toEqual({ done: true, cursor: 0 });
    expect(await stubOf(ns, "res:session:se-g").ownOwner("session", "se-g", 0)).toBe("globex");
    expect(await stubOf(ns, "own:globex").ownList("session", "globex", 0)).toEqual(["se-g"]);

    // Another isolate after the move: the old object is asked once (done) and the answers are the same.
    const fresh = doStores(bindings, { namespace: ns });
    expect(await fresh.ownership.owner("session", "se-g")).toBe("globex");
    expect(await fresh.ownership.records("sandbox", "acme")).toEqual([
      { id: "sb-new", active: true },
      { id: "sb-old2", active: false },
      { id: "sb-old", active: false },
    ]);
    expect(await fresh.ownership.activeCount("sandbox", "acme")).toBe(1);
    expect(await fresh.ownership.activeCount("session", "globex")).toBe(1);
  });
});
