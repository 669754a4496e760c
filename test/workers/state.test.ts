// The state contract against the Durable Objects backend, inside workerd, through real RPC stubs of TollgateState.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { doStores } from "../../src/state/durable-client.js";
import * as entry from "../../src/worker.js";
import { stateContract } from "../state/contract.js";

const bindings = env as unknown as Record<string, unknown>;
const namespace = () => `test-${crypto.randomUUID()}`;

stateContract({
  name: "durable-objects",
  fresh: async () => doStores(bindings, { namespace: namespace() }),
  pair: async () => {
    const ns = namespace();
    return [doStores(bindings, { namespace: ns }), doStores(bindings, { namespace: ns })];
  },
});

describe("Durable Objects wiring", () => {
  it("exports the TollgateState class from the Worker entry, as wrangler.toml binds it", () => {
    expect(entry.TollgateState).toBeTypeOf("function");
  });

  it("names the missing binding when durable-objects state is asked for without it", () => {
    expect(() => doStores({})).toThrow(/TOLLGATE_STATE/);
  });

  it("finds an entry by id from another isolate's client (no local id cache)", async () => {
    const ns = namespace();
    const a = doStores(bindings, { namespace: ns });
    const b = doStores(bindings, { namespace: ns });
    const r = await a.ledger.reserve(
      { id: "x1", tenant: "t", route: "/r", fingerprint: "f", amount: "5", asset: "a", network: "n", payee: "p" }, { total: 10n }, Date.now(),
    );
    expect(r.ok).toBe(true);
    await b.ledger.commit("x1", "0xtx", Date.now());
    expect(await b.ledger.get("x1")).toMatchObject({ state: "committed", transaction: "0xtx", tenant: "t" });
    expect((await a.ledger.usage("t", Date.now())).total).toBe(5n);
  });
});
