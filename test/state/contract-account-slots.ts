// Contract for the live sessions and sandboxes per upstream account (AccountSlots): a take holds a slot on the first
// candidate with room, atomically across instances (no account above its limit under concurrent takes from two
// instances); a settled hold becomes the resource, a dropped one frees its slot; an end frees it (idempotent); holds
// expire after their lease; pools and accounts are apart.
import { describe, expect, it } from "vitest";
import { opener, type ContractBackend } from "./contract-backend.js";

const LIVE = 3_600_000;

export function accountSlotsContract(b: ContractBackend) {
  describe(`AccountSlots (${b.name})`, () => {
    const open = opener(b);

    it("holds a slot on the first candidate with room, and counts holds and live resources", async () => {
      const { accountSlots: s } = await open.fresh();
      const cands = [{ account: "a", limit: 1 }, { account: "b", limit: 2 }, { account: "c" }];
      expect(await s.take("sessions", cands, "h1", 60_000)).toEqual({ account: "a", counts: { a: 0, b: 0, c: 0 } });
      expect(await s.take("sessions", cands, "h2", 60_000)).toEqual({ account: "b", counts: { a: 1, b: 0, c: 0 } });
      await s.settle("sessions", "a", "h1", "ses_1", LIVE);
      await s.settle("sessions", "b", "h2", undefined, LIVE); // nothing made: the hold is dropped
      expect(await s.counts("sessions", ["a", "b", "c"])).toEqual({ a: 1, b: 0, c: 0 });
      expect((await s.take("sessions", cands, "h3", 60_000)).account).toBe("b");
      expect((await s.take("sessions", cands, "h4", 60_000)).account).toBe("b");
      const full = await s.take("sessions", cands, "h5", 60_000);
      expect(full).toEqual({ account: "c", counts: { a: 1, b: 2, c: 0 } });
      expect(await s.take("sessions", cands.slice(0, 2), "h6", 60_000)).toEqual({ account: undefined, counts: { a: 1, b: 2 } });
      // Another pool is apart.
      expect(await s.counts("sandboxes", ["a", "b"])).toEqual({ a: 0, b: 0 });
    });

    it("frees a slot when its resource ends, once, on whichever account counted it", async () => {
      const { accountSlots: s } = await open.fresh();
      await s.take("sandboxes", [{ account: "a", limit: 1 }], "h1", 60_000);
      await s.settle("sandboxes", "a", "h1", "sbx_1", LIVE);
      expect((await s.take("sandboxes", [{ account: "a", limit: 1 }], "h2", 60_000)).account).toBeUndefined();
      await s.release("sandboxes", ["a", "b"], "sbx_1");
      await s.release("sandboxes", ["a", "b"], "sbx_1");
      expect(await s.counts("sandboxes", ["a"])).toEqual({ a: 0 });
      expect((await s.take("sandboxes", [{ account: "a", limit: 1 }], "h3", 60_000)).account).toBe("a");
    });

    it("lets a hold expire after its lease (an instance that died mid-creation)", async () => {
      const { accountSlots: s } = await open.fresh();
      await s.take("sessions", [{ account: "a", limit: 1 }], "h1", 150);
      expect((await s.take("sessions", [{ account: "a", limit: 1 }], "h2", 150)).account).toBeUndefined();
      await new Promise((r) => setTimeout(r, 300));
      expect((await s.take("sessions", [{ account: "a", limit: 1 }], "h3", 60_000)).account).toBe("a");
    });

    it("keeps every account within its limit under concurrent takes from two instances", async () => {
      const [x, y] = await open.pair();
      const cands = [
        { account: "a", limit: 3 },
        { account: "b", limit: 2 },
      ];
      const got = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 ? x : y).accountSlots.take("sessions", cands, `h${i}`, 60_000)),
      );
      const on = (a: string) => got.filter((g) => g.account === a).length;
      expect([on("a"), on("b"), got.filter((g) => g.account === undefined).length]).toEqual([3, 2, 7]);
      expect(await x.accountSlots.counts("sessions", ["a", "b"])).toEqual({ a: 3, b: 2 });
    });
  });
}
