// Contract for the due index: ids filed under a queue by due time, read soonest first, shared by every instance.
import { describe, expect, it } from "vitest";
import { opener, type ContractBackend } from "./contract-backend.js";

const T0 = 1_800_000_000_000;

export function dueContract(b: ContractBackend) {
  describe(`DueIndex (${b.name})`, () => {
    const open = opener(b);

    it("hands out only what is due, soonest first, up to the limit, per queue", async () => {
      const { due } = await open.fresh();
      await due.add("sales", "b", T0 + 10);
      await due.add("sales", "a", T0);
      await due.add("sales", "later", T0 + 60_000);
      await due.add("jobs", "j", T0);
      expect(await due.due("sales", T0 - 1, 10)).toEqual([]);
      expect(await due.due("sales", T0 + 10, 10)).toEqual(["a", "b"]);
      expect(await due.due("sales", T0 + 10, 1)).toEqual(["a"]);
      expect(await due.due("jobs", T0 + 60_000, 10)).toEqual(["j"]);
      expect(await due.due("none", T0 + 60_000, 10)).toEqual([]);
    });

    it("moves an id filed again, and forgets a removed one (removing twice is harmless)", async () => {
      const { due } = await open.fresh();
      await due.add("q", "x", T0);
      await due.add("q", "x", T0 + 1000);
      expect(await due.due("q", T0, 10)).toEqual([]);
      expect(await due.due("q", T0 + 1000, 10)).toEqual(["x"]);
      await due.remove("q", "x");
      await due.remove("q", "x");
      await due.remove("q", "never");
      expect(await due.due("q", T0 + 1000, 10)).toEqual([]);
    });

    it("is one index for every instance", async () => {
      const [a, b2] = await open.pair();
      await a.due.add("q", "shared", T0);
      expect(await b2.due.due("q", T0, 10)).toEqual(["shared"]);
      await b2.due.remove("q", "shared");
      expect(await a.due.due("q", T0, 10)).toEqual([]);
    });
  });
}
