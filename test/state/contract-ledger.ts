// BudgetLedger contract: budget windows, atomic reserve, state transitions, listing and crash-recovery holds.
import { describe, expect, it } from "vitest";
import type { BudgetLedger, NewLedgerEntry } from "../../src/state/types.js";
import { opener, type ContractBackend } from "./contract-backend.js";

/** 2026-01-31 23:00 UTC: two hours later is a new day and a new month. */
const T0 = Date.UTC(2026, 0, 31, 23, 0, 0);
const HOUR = 3_600_000;
const MIN = 60_000;

let seq = 0;
/** A credits-billed reservation: no chain fields, a meter, and for time-metered resources a resource and end time. */
function credit(tenant: string, amount: bigint | string, over: Partial<NewLedgerEntry> = {}): NewLedgerEntry {
  return {
    id: `c-${++seq}-${Math.random().toString(36).slice(2, 8)}`,
    kind: "credits",
    tenant,
    route: "/api/scrape",
    fingerprint: "fp",
    amount: amount.toString(),
    meter: "call",
    instance: "gw-1",
    ...over,
  };
}

function entry(tenant: string, amount: bigint | string, over: Partial<NewLedgerEntry> = {}): NewLedgerEntry {
  return {
    id: `e-${++seq}-${Math.random().toString(36).slice(2, 8)}`,
    tenant,
    route: "/api/web/search",
    fingerprint: "fp",
    amount: amount.toString(),
    asset: "0xUSDC",
    network: "eip155:31337",
    payee: "0xPayee",
    instance: "gw-1",
    ...over,
  };
}

async function reserveOk(ledger: BudgetLedger, e: NewLedgerEntry, now = T0, limits = {}) {
  const r = await ledger.reserve(e, limits, now);
  expect(r.ok).toBe(true);
  return e.id;
}

export function ledgerContract(b: ContractBackend) {
  describe(`BudgetLedger (${b.name})`, () => {
    const open = opener(b);

    it("counts a reservation in the daily, monthly and total windows", async () => {
      const { ledger } = await open.fresh();
      await reserveOk(ledger, entry("t1", 1500n));
      await reserveOk(ledger, entry("t1", 500n));
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 2000n, monthly: 2000n, total: 2000n });
      expect(await ledger.usage("t2", T0)).toMatchObject({ daily: 0n, monthly: 0n, total: 0n });
    });

    it("refuses a reservation that would overflow any window, naming it, and counts nothing", async () => {
      const { ledger } = await open.fresh();
      await reserveOk(ledger, entry("t1", 700n), T0, { daily: 1000n, monthly: 800n });
      const r = await ledger.reserve(entry("t1", 200n), { daily: 1000n, monthly: 800n, total: 10_000n }, T0);
      expect(r).toEqual({ ok: false, window: "monthly", limit: 800n, spent: 700n, resetAt: "2026-02-01T00:00:00.000Z" });
      const d = await ledger.reserve(entry("t1", 400n), { daily: 1000n }, T0);
      expect(d).toEqual({ ok: false, window: "daily", limit: 1000n, spent: 700n, resetAt: "2026-02-01T00:00:00.000Z" });
      const t = await ledger.reserve(entry("t1", 400n), { total: 1000n }, T0);
      expect(t).toMatchObject({ ok: false, window: "total", resetAt: null });
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 700n, monthly: 700n, total: 700n });
      await reserveOk(ledger, entry("t1", 100n), T0, { daily: 1000n, monthly: 800n });
      expect((await ledger.usage("t1", T0)).total).toBe(800n);
    });

    it("resets the daily window at UTC midnight, the monthly on the 1st, and never the total", async () => {
      const { ledger } = await open.fresh();
      await reserveOk(ledger, entry("t1", 900n), T0 - 24 * HOUR); // Jan 30
      await reserveOk(ledger, entry("t1", 100n), T0); // Jan 31
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 100n, monthly: 1000n, total: 1000n });
      const feb1 = T0 + 2 * HOUR;
      expect(await ledger.usage("t1", feb1)).toMatchObject({ daily: 0n, monthly: 0n, total: 1000n });
      expect((await ledger.reserve(entry("t1", 500n), { daily: 500n, monthly: 500n }, feb1)).ok).toBe(true);
      expect(await ledger.reserve(entry("t1", 1n), { total: 1500n }, feb1)).toMatchObject({ ok: false, window: "total", spent: 1500n });
    });

    it("keeps committed and uncertain amounts counted, returns released ones", async () => {
      const { ledger } = await open.fresh();
      const a = await reserveOk(ledger, entry("t1", 100n));
      const c = await reserveOk(ledger, entry("t1", 20n));
      const u = await reserveOk(ledger, entry("t1", 3n));
      await ledger.release(a, "upstream answered 402", T0 + 1);
      await ledger.commit(c, "0xtx", T0 + 1);
      await ledger.markUncertain(u, "timeout", T0 + 1);
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 23n, monthly: 23n, total: 23n });
      await ledger.release(u, "authorization expired unused", T0 + 2);
      expect((await ledger.usage("t1", T0)).total).toBe(20n);
      const u2 = await reserveOk(ledger, entry("t1", 5n));
      await ledger.markUncertain(u2, "timeout", T0 + 1);
      await ledger.commit(u2, "0xfound", T0 + 2);
      expect((await ledger.usage("t1", T0)).total).toBe(25n);
      expect(await ledger.get(u2)).toMatchObject({ state: "committed", transaction: "0xfound" });
      expect(await ledger.get(a)).toMatchObject({ state: "released", reason: "upstream answered 402", updatedAt: T0 + 1 });
    });

    it("treats a repeated final transition as a no-op and refuses to change a final state", async () => {
      const { ledger } = await open.fresh();
      const a = await reserveOk(ledger, entry("t1", 100n));
      await ledger.release(a, "first", T0 + 1);
      await ledger.release(a, "again", T0 + 2);
      expect((await ledger.usage("t1", T0)).total).toBe(0n);
      await expect(ledger.commit(a, "0xtx", T0 + 3)).rejects.toThrow(/cannot become committed/);
      const c = await reserveOk(ledger, entry("t1", 50n));
      await ledger.commit(c, "0xtx", T0 + 1);
      await ledger.commit(c, "0xtx", T0 + 2);
      await expect(ledger.release(c, "late", T0 + 3)).rejects.toThrow(/cannot become released/);
      await expect(ledger.markUncertain(c, "late", T0 + 3)).rejects.toThrow(/cannot become uncertain/);
      expect((await ledger.usage("t1", T0)).total).toBe(50n);
      await expect(ledger.commit("no-such-entry", undefined, T0)).rejects.toThrow(/not found/);
    });

    it("returns the amount to the window it was reserved in, even when released on a later day", async () => {
      const { ledger } = await open.fresh();
      const a = await reserveOk(ledger, entry("t1", 100n));
      await reserveOk(ledger, entry("t1", 7n), T0 + 2 * HOUR);
      await ledger.release(a, "late", T0 + 3 * HOUR);
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 0n, monthly: 0n, total: 7n });
      expect(await ledger.usage("t1", T0 + 3 * HOUR)).toMatchObject({ daily: 7n, monthly: 7n, total: 7n });
    });

    it("treats a second reserve of the same id as a retry: same entry, counted once", async () => {
      const { ledger } = await open.fresh();
      const e = entry("t1", 100n);
      const first = await ledger.reserve(e, { total: 150n }, T0);
      const again = await ledger.reserve(e, { total: 150n }, T0 + 5);
      expect(again).toEqual(first);
      expect((await ledger.usage("t1", T0)).total).toBe(100n);
    });

    it("stores every field of the entry, the signature details and the settlement", async () => {
      const { ledger } = await open.fresh();
      // The authorization a payment will carry is chosen before the reservation, which stores it.
      const e = entry("t1", "123456789012345678", { nonce: "0xabc", validBefore: 1_769_900_000, payer: "0xPayer" });
      const r = await ledger.reserve(e, {}, T0);
      expect(r.ok && r.entry).toEqual({
        ...e,
        kind: "x402",
        state: "reserved",
        day: "2026-01-31",
        month: "2026-01",
        createdAt: T0,
        updatedAt: T0,
      });
      expect((await ledger.usage("t1", T0)).total).toBe(123456789012345678n);
      await ledger.commit(e.id, undefined, T0 + 20);
      expect(await ledger.get(e.id)).toEqual({
        ...e,
        kind: "x402",
        state: "committed",
        day: "2026-01-31",
        month: "2026-01",
        createdAt: T0,
        updatedAt: T0 + 20,
        nonce: "0xabc",
        validBefore: 1_769_900_000,
        payer: "0xPayer",
      });
      expect(await ledger.get("missing")).toBeUndefined();
    });

    it("lists entries newest first, by tenant and by state, up to a limit", async () => {
      const { ledger } = await open.fresh();
      const a1 = await reserveOk(ledger, entry("ta", 1n), T0);
      const b1 = await reserveOk(ledger, entry("tb", 1n), T0 + 1);
      const a2 = await reserveOk(ledger, entry("ta", 1n), T0 + 2);
      const a3 = await reserveOk(ledger, entry("ta", 1n), T0 + 3);
      await ledger.commit(a2, "0x2", T0 + 4);
      const ids = (l: { id: string }[]) => l.map((e) => e.id);
      expect(ids(await ledger.list({ tenant: "ta" }))).toEqual([a3, a2, a1]);
      expect(ids(await ledger.list({ tenant: "ta", limit: 2 }))).toEqual([a3, a2]);
      expect(ids(await ledger.list({ tenant: "ta", state: "reserved" }))).toEqual([a3, a1]);
      expect(ids(await ledger.list({ state: "committed" }))).toEqual([a2]);
      expect(ids(await ledger.list({}))).toEqual([a3, a2, b1, a1]);
      expect(ids(await ledger.list({ limit: 3 }))).toEqual([a3, a2, b1]);
      expect(await ledger.list({ tenant: "nobody" })).toEqual([]);
      expect((await ledger.list({ tenant: "tb" }))[0]).toMatchObject({ id: b1, tenant: "tb", state: "reserved", amount: "1" });
    });

    it("hands a reconciler the reserved and uncertain entries whose authorization can no longer settle", async () => {
      const { ledger } = await open.fresh();
      const vb = Math.floor((T0 + 5 * MIN) / 1000);
      const unsigned = await reserveOk(ledger, entry("t1", 1n), T0);
      const signedHeld = await reserveOk(ledger, entry("t2", 1n, { nonce: "0x1", validBefore: vb, payer: "0xp" }), T0);
      const uncertain = await reserveOk(ledger, entry("t1", 1n, { nonce: "0x2", validBefore: vb + 60, payer: "0xp" }), T0 + 1);
      await ledger.markUncertain(uncertain, "timeout", T0 + 2);
      const done = await reserveOk(ledger, entry("t1", 1n, { nonce: "0x3", validBefore: vb, payer: "0xp" }), T0);
      await ledger.commit(done, "0xtx", T0 + 3);
      const gone = await reserveOk(ledger, entry("t1", 1n), T0);
      await ledger.release(gone, "402", T0 + 3);
      const ids = async (now: number, limit = 100) => (await ledger.expiredHolds(now, limit)).map((e) => e.id);
      expect(await ids(T0 + 4 * MIN)).toEqual([]);
      expect(await ids(vb * 1000)).toEqual([signedHeld]);
      expect(await ids(T0 + 10 * MIN)).toEqual([signedHeld, uncertain, unsigned]);
      expect(await ids(T0 + 10 * MIN, 2)).toEqual([signedHeld, uncertain]);
      const [first] = await ledger.expiredHolds(T0 + 10 * MIN, 1);
      expect(first).toMatchObject({ tenant: "t2", state: "reserved", nonce: "0x1", validBefore: vb, instance: "gw-1" });
      await ledger.commit(uncertain, "0xchain", T0 + 11 * MIN);
      expect(await ids(T0 + 11 * MIN)).toEqual([signedHeld, unsigned]);
    });

    it("keeps an authorization given at reserve time like a signed hold: read back, held until its validBefore", async () => {
      // The paid path chooses the authorization before the reservation (docs/paid-round-trips.md): the hold carries it
      // from the one atomic call, whether or not a signature left the gateway, and the reconciler asks the chain.
      const [one, two] = await open.pair();
      const vb = Math.floor((T0 + 5 * MIN) / 1000);
      const e = entry("t-auth", 7n, { nonce: "0xfeed", validBefore: vb, payer: "0xPayer" });
      const held = await reserveOk(one.ledger, e, T0);
      expect(await two.ledger.get(held)).toMatchObject({ state: "reserved", nonce: "0xfeed", validBefore: vb, payer: "0xPayer" });
      const expired = async (now: number) => (await two.ledger.expiredHolds(now, 100)).map((x) => x.id).filter((id) => id === held);
      // Held until its own validBefore (5 minutes; not the 10 an unsigned hold gets), then handed to the reconciler.
      expect(await expired(T0 + 4 * MIN)).toEqual([]);
      expect(await expired(vb * 1000)).toEqual([held]);
      // Released by its id from another instance (an ahead hold not used, or the reconciler finding it unused).
      await two.ledger.release(held, "reserved ahead, not used", T0 + 6 * MIN);
      expect((await one.ledger.usage("t-auth", T0 + 6 * MIN)).daily).toBe(0n);
    });

    it("never overspends under 200 concurrent reserves from two instances (budget for 20)", async () => {
      const [one, two] = await open.pair();
      const limits = { daily: 20_000n, monthly: 1_000_000n, total: 10_000_000n };
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => (i % 2 ? one : two).ledger.reserve(entry("race", 1000n), limits, T0)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(20);
      expect(results.filter((r) => !r.ok && r.window === "daily")).toHaveLength(180);
      expect(await two.ledger.usage("race", T0)).toMatchObject({ daily: 20_000n, monthly: 20_000n, total: 20_000n });
      expect(await one.ledger.list({ tenant: "race", state: "reserved", limit: 500 })).toHaveLength(20);
    });

    it("reserves, commits and releases credits entries, which carry no chain fields", async () => {
      const { ledger } = await open.fresh();
      const e = credit("t1", 2000n);
      const r = await ledger.reserve(e, { daily: 10_000n }, T0);
      expect(r.ok && r.entry).toEqual({ ...e, state: "reserved", day: "2026-01-31", month: "2026-01", createdAt: T0, updatedAt: T0 });
      const gone = await reserveOk(ledger, credit("t1", 300n));
      await ledger.commit(e.id, undefined, T0 + 1);
      await ledger.release(gone, "upstream answered 400", T0 + 1);
      const got = await ledger.get(e.id);
      expect(got).toMatchObject({ kind: "credits", state: "committed", amount: "2000", meter: "call", updatedAt: T0 + 1 });
      expect(got).not.toHaveProperty("asset");
      expect(got).not.toHaveProperty("reservedAmount");
      expect(await ledger.get(gone)).toMatchObject({ kind: "credits", state: "released", reason: "upstream answered 400" });
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 2000n, monthly: 2000n, total: 2000n });
    });

    it("commits a smaller final amount, returning the rest to every window", async () => {
      const { ledger } = await open.fresh();
      const sandbox = await reserveOk(
        ledger,
        credit("t1", 6000n, { meter: "minute", resource: "sandbox:sb-1", validBefore: Math.floor(T0 / 1000) + 3600 }),
      );
      await reserveOk(ledger, entry("t1", 100n));
      expect((await ledger.usage("t1", T0)).total).toBe(6100n);
      await ledger.commit(sandbox, undefined, T0 + 20 * MIN, 1500n);
      expect(await ledger.get(sandbox)).toMatchObject({
        state: "committed",
        amount: "1500",
        reservedAmount: "6000",
        resource: "sandbox:sb-1",
      });
      expect(await ledger.usage("t1", T0)).toEqual({
        daily: 1600n,
        monthly: 1600n,
        total: 1600n,
        byKind: { x402: { daily: 100n, monthly: 100n, total: 100n }, credits: { daily: 1500n, monthly: 1500n, total: 1500n } },
      });
      // A repeated commit is a no-op, whatever amount it names.
      await ledger.commit(sandbox, undefined, T0 + 21 * MIN, 10n);
      expect((await ledger.get(sandbox))?.amount).toBe("1500");
      // From uncertain, to zero.
      const zero = await reserveOk(ledger, credit("t1", 700n));
      await ledger.markUncertain(zero, "no answer", T0 + 1);
      await ledger.commit(zero, undefined, T0 + 2, 0n);
      expect(await ledger.get(zero)).toMatchObject({ state: "committed", amount: "0", reservedAmount: "700" });
      expect((await ledger.usage("t1", T0)).byKind.credits.total).toBe(1500n);
      // The smaller x402 commit works the same way.
      const paid = await reserveOk(ledger, entry("t1", 80n));
      await ledger.commit(paid, "0xtx", T0 + 1, 50n);
      expect((await ledger.usage("t1", T0)).byKind.x402.total).toBe(150n);
      // The refund goes to the windows of the reservation, even on a later day.
      const late = await reserveOk(ledger, credit("t1", 1000n));
      await ledger.commit(late, undefined, T0 + 3 * HOUR, 400n);
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 2050n, total: 2050n });
      expect(await ledger.usage("t1", T0 + 3 * HOUR)).toMatchObject({ daily: 0n, monthly: 0n, total: 2050n });
    });

    it("records a credits settlement above its hold whole, counted in every window past the limit; x402 stays held to it", async () => {
      const { ledger } = await open.fresh();
      const limits = { daily: 1000n };
      const job = await reserveOk(ledger, credit("t1", 500n, { meter: "page" }), T0, limits);
      await ledger.commit(job, undefined, T0 + 1, 4_500n, { settledFrom: "upstream", costAmount: "4500", estimatedAmount: "500" });
      expect(await ledger.get(job)).toMatchObject({
        state: "committed",
        amount: "4500",
        reservedAmount: "500",
        settledFrom: "upstream",
        costAmount: "4500",
        estimatedAmount: "500",
      });
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 4500n, monthly: 4500n, total: 4500n });
      expect((await ledger.usage("t1", T0)).byKind.credits).toEqual({ daily: 4500n, monthly: 4500n, total: 4500n });
      // The budget is now past its limit: the next reservation is refused.
      expect(await ledger.reserve(credit("t1", 1n), limits, T0 + 2)).toMatchObject({ ok: false, window: "daily", spent: 4500n });
      const paid = await reserveOk(ledger, entry("t2", 80n));
      await ledger.commit(paid, "0xtx", T0 + 1, 9_999n);
      expect(await ledger.get(paid)).toMatchObject({ state: "committed", amount: "80" });
      expect(await ledger.get(paid)).not.toHaveProperty("reservedAmount");
    });

    it("settles a committed credits entry again when the upstream's figure lands late, counting the difference", async () => {
      const { ledger } = await open.fresh();
      const s = await reserveOk(ledger, credit("t1", 3000n, { meter: "minute", resource: "session:s1" }));
      await ledger.commit(s, undefined, T0 + MIN, 1000n, { settledFrom: "estimate", costAmount: "1000", estimatedAmount: "1000" });
      expect(await ledger.resettle(s, 1_250n, { settledFrom: "upstream", costAmount: "1250" }, T0 + 2 * MIN)).toBe(250n);
      expect(await ledger.get(s)).toMatchObject({
        amount: "1250",
        reservedAmount: "3000",
        settledFrom: "upstream",
        costAmount: "1250",
        estimatedAmount: "1000",
        updatedAt: T0 + 2 * MIN,
      });
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 1250n, total: 1250n });
      // Down as well, and in the windows of the reservation even on a later day.
      expect(await ledger.resettle(s, 900n, { settledFrom: "upstream", costAmount: "900" }, T0 + 3 * HOUR)).toBe(-350n);
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 900n, total: 900n, byKind: { credits: { total: 900n } } });
      expect(await ledger.usage("t1", T0 + 3 * HOUR)).toMatchObject({ daily: 0n, total: 900n });
      expect(await ledger.resettle(s, 900n, {}, T0 + 3 * HOUR)).toBe(0n);
      // Only committed credits entries.
      const held = await reserveOk(ledger, credit("t1", 5n));
      await expect(ledger.resettle(held, 1n, {}, T0)).rejects.toThrow(/cannot be settled again/);
      const paid = await reserveOk(ledger, entry("t1", 5n));
      await ledger.commit(paid, "0xtx", T0 + 1);
      await expect(ledger.resettle(paid, 1n, {}, T0)).rejects.toThrow(/cannot be settled again/);
      await expect(ledger.resettle("no-such-entry", 1n, {}, T0)).rejects.toThrow(/not found/);
    });

    it("keeps a refused report's flag through a commit and a later resettle of the same amount", async () => {
      const { ledger } = await open.fresh();
      const s = await reserveOk(ledger, credit("t1", 3000n, { meter: "minute", resource: "session:s2" }));
      await ledger.commit(s, undefined, T0 + MIN, 1000n, {
        settledFrom: "estimate",
        costAmount: "1000",
        estimatedAmount: "1000",
        refusedReport: "not_finite",
      });
      expect(await ledger.get(s)).toMatchObject({ amount: "1000", settledFrom: "estimate", refusedReport: "not_finite" });
      expect(await ledger.resettle(s, 1000n, { refusedReport: "above_limit" }, T0 + 2 * MIN)).toBe(0n);
      expect(await ledger.get(s)).toMatchObject({
        amount: "1000",
        settledFrom: "estimate",
        costAmount: "1000",
        refusedReport: "above_limit",
      });
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 1000n, total: 1000n });
    });

    it("checks every window against the sum of both kinds", async () => {
      const { ledger } = await open.fresh();
      const limits = { daily: 1000n, monthly: 5000n, total: 20_000n };
      await reserveOk(ledger, entry("t1", 600n), T0, limits);
      expect(await ledger.reserve(credit("t1", 500n), limits, T0)).toEqual({
        ok: false,
        window: "daily",
        limit: 1000n,
        spent: 600n,
        resetAt: "2026-02-01T00:00:00.000Z",
      });
      await reserveOk(ledger, credit("t1", 400n), T0, limits);
      expect(await ledger.reserve(entry("t1", 1n), limits, T0)).toMatchObject({ ok: false, window: "daily", spent: 1000n });
      expect(await ledger.reserve(credit("t1", 1n), limits, T0)).toMatchObject({ ok: false, window: "daily", spent: 1000n });
      // A credits release makes room for an x402 payment, and the other way round.
      const c = await reserveOk(ledger, credit("t1", 0n), T0, limits);
      await ledger.release(c, "nothing", T0);
      const [held] = await ledger.list({ tenant: "t1", kind: "credits", state: "reserved" });
      await ledger.release(held.id, "upstream refused", T0 + 1);
      await reserveOk(ledger, entry("t1", 400n), T0, limits);
      expect(await ledger.usage("t1", T0)).toEqual({
        daily: 1000n,
        monthly: 1000n,
        total: 1000n,
        byKind: { x402: { daily: 1000n, monthly: 1000n, total: 1000n }, credits: { daily: 0n, monthly: 0n, total: 0n } },
      });
      // Credits spent yesterday count in the month and total, not today.
      await reserveOk(ledger, credit("t2", 4000n), T0 - 24 * HOUR, { monthly: 5000n });
      expect(await ledger.reserve(credit("t2", 1001n), { monthly: 5000n }, T0)).toMatchObject({
        ok: false,
        window: "monthly",
        spent: 4000n,
      });
      await reserveOk(ledger, entry("t2", 1000n), T0, limits);
      expect(await ledger.usage("t2", T0)).toEqual({
        daily: 1000n,
        monthly: 5000n,
        total: 5000n,
        byKind: { x402: { daily: 1000n, monthly: 1000n, total: 1000n }, credits: { daily: 0n, monthly: 4000n, total: 4000n } },
      });
    });

    it("lists by kind and by resource, with tenant and state", async () => {
      const { ledger } = await open.fresh();
      const x1 = await reserveOk(ledger, entry("ta", 1n), T0);
      const c1 = await reserveOk(ledger, credit("ta", 1n, { meter: "minute", resource: "sandbox:a" }), T0 + 1);
      const c2 = await reserveOk(ledger, credit("tb", 1n, { meter: "page" }), T0 + 2);
      const c3 = await reserveOk(ledger, credit("ta", 1n, { meter: "minute", resource: "sandbox:a" }), T0 + 3);
      const x2 = await reserveOk(ledger, entry("ta", 1n), T0 + 4);
      await ledger.commit(c1, undefined, T0 + 5, 0n);
      const ids = (l: { id: string }[]) => l.map((e) => e.id);
      expect(ids(await ledger.list({ kind: "credits" }))).toEqual([c3, c2, c1]);
      expect(ids(await ledger.list({ kind: "x402" }))).toEqual([x2, x1]);
      expect(ids(await ledger.list({ kind: "credits", tenant: "ta" }))).toEqual([c3, c1]);
      expect(ids(await ledger.list({ kind: "credits", limit: 2 }))).toEqual([c3, c2]);
      expect(ids(await ledger.list({ kind: "credits", state: "reserved" }))).toEqual([c3, c2]);
      expect(ids(await ledger.list({ resource: "sandbox:a" }))).toEqual([c3, c1]);
      expect(ids(await ledger.list({ resource: "sandbox:a", state: "committed" }))).toEqual([c1]);
      expect(ids(await ledger.list({ resource: "sandbox:a", tenant: "tb" }))).toEqual([]);
      expect(ids(await ledger.list({ resource: "sandbox:none" }))).toEqual([]);
      expect(ids(await ledger.list({ kind: "x402", tenant: "tb" }))).toEqual([]);
    });

    it("hands a reconciler x402 holds and credits holds apart, credits by the end time the caller set", async () => {
      const { ledger } = await open.fresh();
      const s = (ms: number) => Math.floor(ms / 1000);
      const x = await reserveOk(ledger, entry("t1", 1n, { nonce: "0x1", validBefore: s(T0 + 2 * MIN), payer: "0xp" }), T0);
      const sandbox = await reserveOk(
        ledger,
        credit("t1", 900n, { meter: "minute", resource: "sandbox:1", validBefore: s(T0 + 3 * MIN) }),
        T0,
      );
      const session = await reserveOk(
        ledger,
        credit("t2", 900n, { meter: "minute", resource: "session:1", validBefore: s(T0 + 1 * MIN) }),
        T0,
      );
      const call = await reserveOk(ledger, credit("t1", 5n), T0); // no end time: stale after 10 min
      const stopped = await reserveOk(ledger, credit("t1", 900n, { meter: "minute", resource: "sandbox:2", validBefore: s(T0 + MIN) }), T0);
      await ledger.commit(stopped, undefined, T0 + 30_000, 100n);
      const lost = await reserveOk(ledger, credit("t1", 7n, { validBefore: s(T0 + 4 * MIN) }), T0);
      await ledger.markUncertain(lost, "no answer", T0 + 1);
      const ids = async (fn: "expiredHolds" | "expiredCreditHolds", now: number, limit = 100) =>
        (await ledger[fn](now, limit)).map((e) => e.id);
      expect(await ids("expiredCreditHolds", T0 + 30_000)).toEqual([]);
      expect(await ids("expiredCreditHolds", T0 + MIN)).toEqual([session]);
      expect(await ids("expiredCreditHolds", T0 + 10 * MIN)).toEqual([session, sandbox, lost, call]);
      expect(await ids("expiredCreditHolds", T0 + 10 * MIN, 2)).toEqual([session, sandbox]);
      expect(await ids("expiredHolds", T0 + 10 * MIN)).toEqual([x]);
      const [first] = await ledger.expiredCreditHolds(T0 + 10 * MIN, 1);
      expect(first).toMatchObject({ kind: "credits", tenant: "t2", state: "reserved", amount: "900", resource: "session:1" });
      await ledger.commit(session, undefined, T0 + 11 * MIN);
      await ledger.release(call, "answered 400", T0 + 11 * MIN);
      expect(await ids("expiredCreditHolds", T0 + 11 * MIN)).toEqual([sandbox, lost]);
    });

    it("attaches a resource and an end time to a hold reserved before the resource existed", async () => {
      const { ledger } = await open.fresh();
      const s = (ms: number) => Math.floor(ms / 1000);
      const hold = await reserveOk(ledger, credit("t1", 900n, { meter: "minute" }), T0);
      const other = await reserveOk(ledger, credit("t1", 900n, { meter: "minute", resource: "sandbox:old" }), T0);
      await ledger.attach(hold, { resource: "sandbox:sb-7", validBefore: s(T0 + 30 * MIN) }, T0 + 5);
      expect(await ledger.get(hold)).toMatchObject({
        resource: "sandbox:sb-7",
        validBefore: s(T0 + 30 * MIN),
        updatedAt: T0 + 5,
        state: "reserved",
      });
      expect((await ledger.list({ resource: "sandbox:sb-7" })).map((e) => e.id)).toEqual([hold]);
      // Its hold now ends at the new end time, not 10 minutes after it was made.
      expect((await ledger.expiredCreditHolds(T0 + 10 * MIN, 10)).map((e) => e.id)).toEqual([other]);
      expect((await ledger.expiredCreditHolds(T0 + 30 * MIN, 10)).map((e) => e.id)).toEqual([other, hold]);
      // Re-attaching moves it; an end time alone leaves the resource.
      await ledger.attach(other, { resource: "sandbox:new" }, T0 + 6);
      expect(await ledger.list({ resource: "sandbox:old" })).toEqual([]);
      expect((await ledger.list({ resource: "sandbox:new", tenant: "t1" })).map((e) => e.id)).toEqual([other]);
      await ledger.attach(other, { validBefore: s(T0 + 60 * MIN) }, T0 + 7);
      expect(await ledger.get(other)).toMatchObject({ resource: "sandbox:new", validBefore: s(T0 + 60 * MIN) });
      expect((await ledger.expiredCreditHolds(T0 + 30 * MIN, 10)).map((e) => e.id)).toEqual([hold]);
      await ledger.commit(hold, undefined, T0 + 8, 100n);
      expect(await ledger.expiredCreditHolds(T0 + 30 * MIN, 10)).toEqual([]);
      await expect(ledger.attach("no-such-entry", { resource: "x" }, T0)).rejects.toThrow(/not found/);
    });

    it("grows a hold and moves its end time, or refuses a growth a window cannot take and changes nothing", async () => {
      const { ledger } = await open.fresh();
      const s = (ms: number) => Math.floor(ms / 1000);
      const limits = { daily: 2000n, monthly: 10_000n };
      const session = await reserveOk(
        ledger,
        credit("t1", 900n, { meter: "minutes", resource: "session:s1", validBefore: s(T0 + 30 * MIN) }),
        T0,
        limits,
      );
      const r = await ledger.extend(session, { amount: 600n, seconds: 10 * 60 }, limits, T0 + 5 * MIN);
      expect(r.ok && r.entry).toMatchObject({
        id: session,
        state: "reserved",
        amount: "1500",
        validBefore: s(T0 + 40 * MIN),
        resource: "session:s1",
        createdAt: T0,
        updatedAt: T0 + 5 * MIN,
      });
      expect(await ledger.get(session)).toMatchObject({ amount: "1500", validBefore: s(T0 + 40 * MIN) });
      expect(await ledger.usage("t1", T0)).toMatchObject({
        daily: 1500n,
        monthly: 1500n,
        total: 1500n,
        byKind: { credits: { daily: 1500n } },
      });
      // 1500 + 600 > 2000: refused, naming the window, and nothing moves.
      expect(await ledger.extend(session, { amount: 600n, seconds: 600 }, limits, T0 + 6 * MIN)).toEqual({
        ok: false,
        window: "daily",
        limit: 2000n,
        spent: 1500n,
        resetAt: "2026-02-01T00:00:00.000Z",
      });
      expect(await ledger.get(session)).toMatchObject({ amount: "1500", validBefore: s(T0 + 40 * MIN), updatedAt: T0 + 5 * MIN });
      expect((await ledger.usage("t1", T0)).daily).toBe(1500n);
      // The reconciler sees the new end time, not the old one.
      expect(await ledger.expiredCreditHolds(T0 + 30 * MIN, 10)).toEqual([]);
      expect((await ledger.expiredCreditHolds(T0 + 40 * MIN, 10)).map((e) => e.id)).toEqual([session]);
      // A give-back (the upstream refused the extension) returns both, and never goes below zero.
      const back = await ledger.extend(session, { amount: -600n, seconds: -600 }, limits, T0 + 7 * MIN);
      expect(back.ok && back.entry).toMatchObject({ amount: "900", validBefore: s(T0 + 30 * MIN) });
      expect((await ledger.usage("t1", T0)).daily).toBe(900n);
      // The settlement is one commit against the grown hold; the rest returns to the budget.
      await ledger.extend(session, { amount: 600n, seconds: 600 }, limits, T0 + 8 * MIN);
      await ledger.commit(session, undefined, T0 + 35 * MIN, 1_500n);
      expect(await ledger.get(session)).toMatchObject({ state: "committed", amount: "1500" });
      const small = await reserveOk(ledger, credit("t1", 300n, { meter: "minutes", resource: "session:s2" }), T0, limits);
      await ledger.extend(small, { amount: 100n, seconds: 60 }, limits, T0 + 1);
      await ledger.commit(small, undefined, T0 + 2, 150n);
      expect(await ledger.get(small)).toMatchObject({ amount: "150", reservedAmount: "400" });
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 1650n, byKind: { credits: { total: 1650n } } });
      const gone = await reserveOk(ledger, credit("t1", 50n), T0);
      await ledger.extend(gone, { amount: -80n, seconds: 0 }, {}, T0 + 1);
      expect(await ledger.get(gone)).toMatchObject({ amount: "0", state: "reserved" });
      expect((await ledger.usage("t1", T0)).daily).toBe(1650n);
      // Settled or unknown entries cannot grow.
      await expect(ledger.extend(session, { amount: 1n, seconds: 60 }, {}, T0 + 36 * MIN)).rejects.toThrow(/committed, cannot be extended/);
      await expect(ledger.extend("no-such-entry", { amount: 1n, seconds: 60 }, {}, T0)).rejects.toThrow(/not found/);
    });

    it("counts a hold's growth in the windows the hold was reserved in, even on a later day", async () => {
      const { ledger } = await open.fresh();
      const hold = await reserveOk(ledger, credit("t1", 400n, { meter: "minutes", resource: "session:late" }), T0); // Jan 31
      const feb1 = T0 + 2 * HOUR;
      await reserveOk(ledger, credit("t1", 50n), feb1);
      // Jan 31 holds 400 of a daily 450: growing the hold by 100 there is refused, though Feb 1 has room.
      expect(await ledger.extend(hold, { amount: 100n, seconds: 60 }, { daily: 450n }, feb1)).toMatchObject({
        ok: false,
        window: "daily",
        spent: 400n,
      });
      const r = await ledger.extend(hold, { amount: 50n, seconds: 60 }, { daily: 450n }, feb1);
      expect(r.ok).toBe(true);
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 450n, monthly: 450n, total: 500n });
      expect(await ledger.usage("t1", feb1)).toMatchObject({ daily: 50n, monthly: 50n, total: 500n });
      await ledger.commit(hold, undefined, feb1 + 1, 100n);
      expect(await ledger.usage("t1", T0)).toMatchObject({ daily: 100n, total: 150n });
    });

    it("grows a hold exactly as far as the budget allows under 20 concurrent extensions from two instances", async () => {
      const [one, two] = await open.pair();
      const s = (ms: number) => Math.floor(ms / 1000);
      const limits = { daily: 5000n };
      const hold = await reserveOk(
        one.ledger,
        credit("race-x", 1000n, { meter: "minutes", resource: "session:r", validBefore: s(T0 + 10 * MIN) }),
        T0,
        limits,
      );
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).ledger.extend(hold, { amount: 1000n, seconds: 60 }, limits, T0 + 1)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(4);
      expect(results.filter((r) => !r.ok && r.window === "daily")).toHaveLength(16);
      expect(await two.ledger.get(hold)).toMatchObject({ amount: "5000", validBefore: s(T0 + 14 * MIN) });
      expect((await one.ledger.usage("race-x", T0)).daily).toBe(5000n);
    });

    it("never overspends under 100 concurrent credit reserves from two instances (budget for 10)", async () => {
      const [one, two] = await open.pair();
      const limits = { daily: 10_000n };
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 ? one : two).ledger.reserve(credit("race-c", 1000n, { meter: "page" }), limits, T0)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(10);
      expect(results.filter((r) => !r.ok && r.window === "daily" && r.spent === 10_000n)).toHaveLength(90);
      expect(await two.ledger.usage("race-c", T0)).toMatchObject({
        daily: 10_000n,
        byKind: { credits: { daily: 10_000n }, x402: { daily: 0n } },
      });
      expect(await one.ledger.list({ tenant: "race-c", kind: "credits", limit: 500 })).toHaveLength(10);
    });
  });
}
