// Contracts for the operator stores: tenant records (with start-up seeding), the audit log, and set-if-absent.
import { describe, expect, it } from "vitest";
import type { TenantConfig } from "../../config/schema.js";
import type { StoredTenant } from "../../src/state/types.js";
import { opener, type ContractBackend } from "./contract-backend.js";

const tenant = (id: string, over: Partial<TenantConfig> = {}): TenantConfig => ({
  id,
  enabled: true,
  scopes: ["search"],
  keys: [{ hash: `sha256:${"a".repeat(64)}` }],
  budget: {},
  payment: {},
  paysForItself: false,
  quotas: {},
  onExhausted: "block",
  alerts: {},
  ...over,
});
const rec = (t: TenantConfig, source: StoredTenant["source"], extra: Partial<StoredTenant> = {}): StoredTenant => ({
  tenant: t,
  source,
  updatedAt: 1,
  ...extra,
});

export function tenantStoreContract(b: ContractBackend) {
  describe(`TenantStore (${b.name})`, () => {
    const open = opener(b);

    it("stores, lists by id and replaces records, bumping the version on every write", async () => {
      const { tenants } = await open.fresh();
      const v0 = await tenants.version();
      await tenants.put(rec(tenant("zeta"), "api"));
      await tenants.put(rec(tenant("alpha"), "api"));
      const v1 = await tenants.version();
      expect(v1).toBeGreaterThan(v0);
      expect((await tenants.list()).map((r) => r.tenant.id)).toEqual(["alpha", "zeta"]);
      await tenants.put(rec(tenant("alpha", { enabled: false }), "api"));
      expect(await tenants.version()).toBeGreaterThan(v1);
      expect((await tenants.get("alpha"))?.tenant.enabled).toBe(false);
      expect(await tenants.get("missing")).toBeUndefined();
    });

    it("creates a tenant only under an unused id, tombstones included", async () => {
      const { tenants } = await open.fresh();
      expect(await tenants.create(rec(tenant("a"), "api"))).toBe(true);
      expect(await tenants.create(rec(tenant("a", { scopes: ["admin"] }), "api"))).toBe(false);
      expect((await tenants.get("a"))?.tenant.scopes).toEqual(["search"]);
      await tenants.put(rec(tenant("b"), "api", { deleted: true }));
      expect(await tenants.create(rec(tenant("b"), "api"))).toBe(false);
    });

    it("lets the config seed new and config-made tenants, never over an API change or a deletion", async () => {
      const { tenants } = await open.fresh();
      expect(await tenants.seed(rec(tenant("c"), "config"))).toBe(true);
      const v = await tenants.version();
      expect(await tenants.seed(rec(tenant("c"), "config"))).toBe(false); // unchanged: no write, no version bump
      expect(await tenants.version()).toBe(v);
      expect(await tenants.seed(rec(tenant("c", { scopes: ["sessions"] }), "config"))).toBe(true);
      await tenants.put(rec(tenant("c", { scopes: ["admin"] }), "api"));
      expect(await tenants.seed(rec(tenant("c"), "config"))).toBe(false);
      expect((await tenants.get("c"))?.tenant.scopes).toEqual(["admin"]);
      await tenants.put(rec(tenant("d"), "api", { deleted: true }));
      expect(await tenants.seed(rec(tenant("d"), "config"))).toBe(false);
      expect((await tenants.get("d"))?.deleted).toBe(true);
    });

    it("shows one instance's write to another", async () => {
      const [a, b2] = await open.pair();
      const v = await b2.tenants.version();
      await a.tenants.put(rec(tenant("shared"), "api"));
      expect(await b2.tenants.version()).toBeGreaterThan(v);
      expect((await b2.tenants.get("shared"))?.tenant.id).toBe("shared");
    });

    it("lets exactly one of many concurrent creations of one id win", async () => {
      const [a, b2] = await open.pair();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? a : b2).tenants.create(rec(tenant("race", { scopes: [i % 2 ? "search" : "admin"] }), "api")),
        ),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });
  });
}

export function auditLogContract(b: ContractBackend) {
  describe(`AuditLog (${b.name})`, () => {
    const open = opener(b);

    it("appends entries with growing sequence numbers and pages through them newest first", async () => {
      const { audit } = await open.fresh();
      const seqs: number[] = [];
      for (let i = 0; i < 5; i++) {
        const e = await audit.append({
          at: 1000 + i,
          actor: "ops",
          action: "tenant.update",
          target: `tenant:t${i}`,
          before: { n: i },
          after: { n: i + 1 },
        });
        seqs.push(e.seq);
      }
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      const page1 = await audit.list({ limit: 2 });
      expect(page1.map((e) => e.target)).toEqual(["tenant:t4", "tenant:t3"]);
      expect(page1[0]).toMatchObject({ actor: "ops", action: "tenant.update", before: { n: 4 }, after: { n: 5 }, at: 1004 });
      const page2 = await audit.list({ limit: 2, before: page1[1]!.seq });
      expect(page2.map((e) => e.target)).toEqual(["tenant:t2", "tenant:t1"]);
      const page3 = await audit.list({ limit: 2, before: page2[1]!.seq });
      expect(page3.map((e) => e.target)).toEqual(["tenant:t0"]);
    });

    it("keeps one sequence across instances", async () => {
      const [a, b2] = await open.pair();
      await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b2).audit.append({ at: i, actor: "x", action: "a", target: `t${i}` })),
      );
      const all = await a.audit.list({ limit: 100 });
      expect(all).toHaveLength(6);
      expect(new Set(all.map((e) => e.seq)).size).toBe(6);
    });
  });
}

export function setIfAbsentContract(b: ContractBackend) {
  describe(`KeyValueStore.setIfAbsent (${b.name})`, () => {
    const open = opener(b);

    it("sets a key only when it holds no live value", async () => {
      const { kv } = await open.fresh();
      expect(await kv.setIfAbsent("once", "a", 60_000)).toBe(true);
      expect(await kv.setIfAbsent("once", "b", 60_000)).toBe(false);
      expect(await kv.get("once")).toBe("a");
      expect(await kv.setIfAbsent("short", "a", 30)).toBe(true);
      await new Promise((r) => setTimeout(r, 80));
      expect(await kv.setIfAbsent("short", "b", 60_000)).toBe(true);
    });

    it("lets exactly one of many racing instances win", async () => {
      const [a, b2] = await open.pair();
      const wins = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b2).kv.setIfAbsent("race", String(i), 60_000)));
      expect(wins.filter(Boolean)).toHaveLength(1);
    });
  });
}
