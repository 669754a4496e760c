// The state contract against the in-process memory backend (the reference semantics).
import { memoryStores } from "../../src/state/memory.js";
import { stateContract } from "./contract.js";

stateContract({
  name: "memory",
  fresh: async () => memoryStores(),
  retaining: async (ms) => memoryStores(Date.now, { endedRetentionMs: ms }),
  pair: async () => {
    const shared = memoryStores();
    return [shared, shared];
  },
});
