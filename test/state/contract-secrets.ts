// Contract for the tenant secret store (src/state/secrets.ts) over each backend's key-value store: a record written on
// one instance is what the other reads next (no cache), a deletion likewise; a tenant's list is its own, by name,
// whatever the concurrency; placeholders resolve through their binding.
import { describe, expect, it } from "vitest";
import { kvSecretStore, type SecretRecord } from "../../src/state/secrets.js";
import { opener, type ContractBackend } from "./contract-backend.js";

const T0 = 1_800_000_000_000;
const record = (tenant: string, name: string, version = 1): SecretRecord => ({
  tenant,
  name,
  sealed: { kid: "k1", iv: "aaaa", ct: `ct-${name}-${version}` },
  hosts: ["api.example.com"],
  header: "authorization",
  format: "Bearer {}",
  sandboxes: "all",
  createdAt: T0,
  updatedAt: T0 + version,
  version,
});

export function secretsContract(b: ContractBackend) {
  describe(`SecretStore (${b.name})`, () => {
    const open = opener(b);

    it("a write or a deletion on one instance is what the other reads next", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvSecretStore(x.kv));
      await a!.put(record("acme", "OPENAI"));
      expect(await b2!.get("acme", "OPENAI")).toEqual(record("acme", "OPENAI"));
      await b2!.put(record("acme", "OPENAI", 2));
      expect((await a!.get("acme", "OPENAI"))?.version).toBe(2);
      expect(await a!.delete("acme", "OPENAI")).toBe(true);
      expect(await b2!.get("acme", "OPENAI")).toBeUndefined();
      expect(await b2!.delete("acme", "OPENAI")).toBe(false);
      expect(await b2!.list("acme")).toEqual([]);
    });

    it("lists a tenant's own secrets by name, each once, whatever the concurrency", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvSecretStore(x.kv));
      const names = ["Z", "A", "M", "B", "Q", "C"];
      await Promise.all(names.flatMap((n, i) => [(i % 2 ? a : b2)!.put(record("acme", n)), (i % 2 ? b2 : a)!.put(record("acme", n))]));
      await a!.put(record("initech", "A"));
      expect((await b2!.list("acme")).map((r) => r.name)).toEqual(["A", "B", "C", "M", "Q", "Z"]);
      expect((await a!.list("initech")).map((r) => r.name)).toEqual(["A"]);
      // Deleted and made again: listed once, from the slot it had.
      await a!.delete("acme", "M");
      expect((await b2!.list("acme")).map((r) => r.name)).toEqual(["A", "B", "C", "Q", "Z"]);
      await b2!.put(record("acme", "M", 3));
      expect((await a!.list("acme")).map((r) => `${r.name}${r.version}`)).toEqual(["A1", "B1", "C1", "M3", "Q1", "Z1"]);
    });

    it("keeps the last use and the placeholders' bindings; a deletion forgets the use", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvSecretStore(x.kv));
      await a!.put(record("acme", "GH"));
      expect(await a!.lastUse("acme", "GH")).toBeUndefined();
      await b2!.noteUse("acme", "GH", T0 + 5);
      expect(await a!.lastUse("acme", "GH")).toBe(T0 + 5);
      await a!.bind("digest-1", { tenant: "acme", sandboxId: "sb1", name: "GH" }, 60_000);
      expect(await b2!.binding("digest-1")).toEqual({ tenant: "acme", sandboxId: "sb1", name: "GH" });
      expect(await b2!.binding("digest-2")).toBeUndefined();
      await a!.delete("acme", "GH");
      expect(await b2!.lastUse("acme", "GH")).toBeUndefined();
    });

    it("keeps what a sandbox was created from, and a secret's images and snapshots", async () => {
      const [a, b2] = (await open.pair()).map((x) => kvSecretStore(x.kv));
      await a!.setSource("sb-src-1", { image: "node" }, 60_000);
      await a!.setSource("sb-src-2", { snapshot: "agent-base" }, 60_000);
      expect(await b2!.source("sb-src-1")).toEqual({ image: "node" });
      expect(await b2!.source("sb-src-2")).toEqual({ snapshot: "agent-base" });
      expect(await b2!.source("sb-src-3")).toBeUndefined();
      const limited = { ...record("acme", "LIMITED"), images: ["node"], snapshots: ["agent-base"] };
      await a!.put(limited);
      expect(await b2!.get("acme", "LIMITED")).toEqual(limited);
    });
  });
}
