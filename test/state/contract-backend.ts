// What a backend gives the state contract, and how each test opens and closes its stores.
import { afterEach } from "vitest";
import type { StateStores } from "../../src/state/types.js";

export interface ContractBackend {
  name: string;
  /** Fresh stores over an empty namespace of their own. */
  fresh(): Promise<StateStores>;
  /** Two handles on one shared namespace, as two gateway instances would hold them. */
  pair(): Promise<[StateStores, StateStores]>;
  /** Fresh stores that remember the owner of an ended resource for `endedRetentionMs` only. */
  retaining(endedRetentionMs: number): Promise<StateStores>;
}

/** Opens stores for one test and closes them after it. */
export function opener(b: ContractBackend) {
  const opened: StateStores[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
  });
  return {
    async fresh() {
      const s = await b.fresh();
      opened.push(s);
      return s;
    },
    async retaining(ms: number) {
      const s = await b.retaining(ms);
      opened.push(s);
      return s;
    },
    async pair() {
      const p = await b.pair();
      opened.push(...p);
      return p;
    },
  };
}

export type Opener = ReturnType<typeof opener>;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
