// Contract for the per-tenant request log: each tenant keeps its newest N records, newest first, apart from every other
// tenant; two instances share one log; concurrent appends never leave more than N.
import { describe, expect, it } from "vitest";
import type { RequestRecord } from "../../src/state/types.js";
import { opener, type ContractBackend } from "./contract-backend.js";

const T0 = 1_800_000_000_000;
const rec = (tenant: string, n: number, over: Partial<RequestRecord> = {}): RequestRecord => ({
  id: `req-${tenant}-${n}`,
  at: T0 + n,
  tenant,
  method: "POST",
  route: "x402.web.search",
  path: "/api/x402/web/search",
  status: 200,
  durationMs: 12.5,
  ...over,
});

export function requestLogContract(b: ContractBackend) {
  describe(`RequestLog (${b.name})`, () => {
    const open = opener(b);

    it("keeps each tenant's newest records within the bound, newest first, tenants apart", async () => {
      const { requests } = await open.fresh();
      await requests.append([rec("acme", 1), rec("beta", 1), rec("acme", 2)], 3);
      await requests.append(
        [rec("acme", 3), rec("acme", 4, { status: 402, code: "budget_exceeded", spend: "5000", traceId: "t".repeat(32) })],
        3,
      );
      const acme = await requests.list("acme", 10);
      expect(acme.map((r) => r.id)).toEqual(["req-acme-4", "req-acme-3", "req-acme-2"]);
      expect(acme[0]).toEqual(rec("acme", 4, { status: 402, code: "budget_exceeded", spend: "5000", traceId: "t".repeat(32) }));
      expect((await requests.list("beta", 10)).map((r) => r.id)).toEqual(["req-beta-1"]);
      expect(await requests.list("nobody", 10)).toEqual([]);
      expect((await requests.list("acme", 2)).map((r) => r.id)).toEqual(["req-acme-4", "req-acme-3"]);
    });

    it("is one log for every instance sharing the backend", async () => {
      const [a, b2] = await open.pair();
      await a.requests.append([rec("acme", 1)], 10);
      await b2.requests.append([rec("acme", 2)], 10);
      expect((await a.requests.list("acme", 10)).map((r) => r.id)).toEqual(["req-acme-2", "req-acme-1"]);
    });

    it("never holds more than the bound under concurrent appends from two instances", async () => {
      const [a, b2] = await open.pair();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b2).requests.append([rec("acme", i), rec("acme", 100 + i)], 7)));
      const kept = await a.requests.list("acme", 100);
      expect(kept).toHaveLength(7);
      expect(new Set(kept.map((r) => r.id)).size).toBe(7);
    });
  });
}
