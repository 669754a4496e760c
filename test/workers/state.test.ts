// The state contract against the Durable Objects backend, inside workerd, through real RPC stubs of TollgateState.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { doStores } from "../../src/state/durable-client.js";
import { LedgerTables, type SqlLike } from "../../src/state/durable-ledger.js";
import * as entry from "../../src/host/worker.js";
import { stateContract } from "../state/contract.js";

const bindings = env as unknown as Record<string, unknown>;
const namespace = () => `test-${crypto.randomUUID()}`;

stateContract({
  name: "durable-objects",
  fresh: async () => doStores(bindings, { namespace: namespace() }),
  retaining: async (ms) => doStores(bindings, { namespace: namespace(), endedRetentionMs: ms }),
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
      { id: "x1", tenant: "t", route: "/r", fingerprint: "f", amount: "5", asset: "a", network: "n", payee: "p" },
      { total: 10n },
      Date.now(),
    );
    expect(r.ok).toBe(true);
    await b.ledger.commit("x1", "0xtx", Date.now());
    expect(await b.ledger.get("x1")).toMatchObject({ state: "committed", transaction: "0xtx", tenant: "t" });
    expect((await a.ledger.usage("t", Date.now())).total).toBe(5n);
  });

  it("migrates a ledger table written before spend kinds: its rows read back as x402", async () => {
    const ns = bindings.TOLLGATE_STATE as { idFromName(n: string): unknown; get(id: unknown): any };
    const stub = ns.get(ns.idFromName(`${namespace()}/ledger:old`));
    await runInDurableObject(stub, (_instance: unknown, state: { storage: { sql: SqlLike } }) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE IF EXISTS ledger");
      sql.exec(`CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, state TEXT NOT NULL,
        hold_until INTEGER, body TEXT NOT NULL)`);
      const old = {
        id: "old",
        tenant: "old",
        route: "/r",
        fingerprint: "f",
        amount: "5",
        asset: "a",
        network: "n",
        payee: "p",
        state: "uncertain",
        day: "2026-01-01",
        month: "2026-01",
        createdAt: 1,
        updatedAt: 1,
        validBefore: 100,
      };
      sql.exec("INSERT INTO ledger (id, state, hold_until, body) VALUES (?, ?, ?, ?)", "old", "uncertain", 100_000, JSON.stringify(old));
      const tables = new LedgerTables(sql);
      expect(tables.get("old")).toMatchObject({ id: "old", kind: "x402", state: "uncertain" });
      expect(tables.list({ kind: "x402" }, undefined).map((e) => e.id)).toEqual(["old"]);
      expect(tables.list({ kind: "credits" }, undefined)).toEqual([]);
      expect(tables.expiredHolds("x402", 200_000, 10).map((e) => e.id)).toEqual(["old"]);
      expect(tables.expiredHolds("credits", 200_000, 10)).toEqual([]);
      new LedgerTables(sql); // a second start finds the columns in place
    });
  });
});
