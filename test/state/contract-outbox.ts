// Contract for the webhook outbox: enqueue once per id, claims leased to one instance, settled only by their holder.
import { describe, expect, it } from "vitest";
import type { OutboxMessage } from "../../src/state/types.js";
import { opener, type ContractBackend } from "./contract-backend.js";

const T0 = 1_800_000_000_000;
const msg = (id: string, nextAt = T0): Omit<OutboxMessage, "attempts"> => ({
  id,
  event: `evt_${id}`,
  destination: "https://hooks.example.com/tollgate",
  body: JSON.stringify({ id }),
  format: "standard",
  nextAt,
  createdAt: T0,
});

export function outboxContract(b: ContractBackend) {
  describe(`WebhookOutbox (${b.name})`, () => {
    const open = opener(b);

    it("enqueues a message once per id and hands out only those due, soonest first", async () => {
      const { outbox } = await open.fresh();
      expect(await outbox.enqueue(msg("b", T0 + 10))).toBe(true);
      expect(await outbox.enqueue(msg("a", T0))).toBe(true);
      expect(await outbox.enqueue(msg("later", T0 + 60_000))).toBe(true);
      expect(await outbox.enqueue(msg("a", T0))).toBe(false);
      const got = await outbox.claim("i1", T0 + 20, 30_000, 10);
      expect(got.map((m) => m.id)).toEqual(["a", "b"]);
      expect(got[0]).toMatchObject({ event: "evt_a", attempts: 0, nextAt: T0 + 20 + 30_000, format: "standard" });
      expect((await outbox.list("pending", 10)).map((m) => m.id).at(-1)).toBe("later");
    });

    it("keeps a claimed message from every other claim until its lease lapses, then lets another instance take it", async () => {
      const [a, b2] = await open.pair();
      await a.outbox.enqueue(msg("m"));
      expect(await a.outbox.claim("i1", T0, 10_000, 10)).toHaveLength(1);
      expect(await b2.outbox.claim("i2", T0 + 5_000, 10_000, 10)).toHaveLength(0);
      expect(await b2.outbox.claim("i2", T0 + 10_001, 10_000, 10)).toHaveLength(1);
      // The first holder's lease lapsed and i2 took it: i1 can no longer settle it.
      expect(await a.outbox.ack("m", "i1")).toBe(false);
      expect(await b2.outbox.ack("m", "i2")).toBe(true);
      expect(await a.outbox.list("pending", 10)).toEqual([]);
    });

    it("gives each due message to exactly one of many concurrent claimers", async () => {
      const [a, b2] = await open.pair();
      for (let i = 0; i < 20; i++) await a.outbox.enqueue(msg(`m${i}`));
      const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b2).outbox.claim(`i${i}`, T0, 60_000, 5)));
      const ids = claims.flat().map((m) => m.id);
      expect(ids).toHaveLength(20);
      expect(new Set(ids).size).toBe(20);
    });

    it("counts a failed attempt and makes the message due again at the time given, or buries it", async () => {
      const { outbox } = await open.fresh();
      await outbox.enqueue(msg("r"));
      await outbox.claim("i1", T0, 10_000, 10);
      expect(await outbox.retry("r", "other", T0 + 1, "503")).toBe(false);
      expect(await outbox.retry("r", "i1", T0 + 2_000, "503")).toBe(true);
      expect(await outbox.claim("i1", T0 + 1_999, 10_000, 10)).toHaveLength(0);
      const [again] = await outbox.claim("i1", T0 + 2_000, 10_000, 10);
      expect(again).toMatchObject({ id: "r", attempts: 1, lastError: "503" });
      expect(await outbox.bury("r", "i1", "unreachable")).toBe(true);
      expect(await outbox.list("pending", 10)).toEqual([]);
      const [dead] = await outbox.list("dead", 10);
      expect(dead).toMatchObject({ id: "r", attempts: 2, lastError: "unreachable" });
      expect(await outbox.claim("i1", T0 + 1e9, 10_000, 10)).toHaveLength(0);
    });
  });
}
