// The tenants' secrets (src/identity/tenant-secrets.ts), kept sealed, on the KeyValueStore every backend has (memory,
// Redis, Durable Objects): no cache in front, so a change or a deletion made on one instance is what every instance
// reads at its next use. A tenant's names are listed through slots handed out once per name (a counter and
// setIfAbsent), so concurrent creations never overwrite a list. Placeholders handed to sandboxes are bound here by
// their digest (the placeholder itself is never stored). Its own contract suite (test/state/contract-secrets.ts) runs
// on all three backends.
import type { KeyValueStore } from "./types.js";

/** A secret as stored: its rules in the clear, its value sealed (src/identity/secret-seal.ts). */
export interface SecretRecord {
  tenant: string;
  name: string;
  sealed: { kid: string; iv: string; ct: string };
  /** Where the value may go: `host` or `host:port`, lower case. */
  hosts: string[];
  /** The methods allowed (upper case); absent: any. */
  methods?: string[];
  /** Path prefixes allowed (each starts with `/`); absent: any. */
  paths?: string[];
  /** The request header the value is written into. */
  header: string;
  /** How the header's value is written, `{}` standing for the secret (e.g. `Bearer {}`). */
  format: string;
  /** Which sandboxes get its placeholder: every one of the tenant's, or only processes whose env asks for it. */
  sandboxes: "all" | "on-request";
  /** Only sandboxes created from one of these images or of `snapshots` (absent both: any sandbox). */
  images?: string[];
  snapshots?: string[];
  createdAt: number;
  updatedAt: number;
  /** Grows with each change. */
  version: number;
}

/** What a placeholder stands for. */
export interface PlaceholderBinding {
  tenant: string;
  sandboxId: string;
  name: string;
}

/** Kept until deleted (the store takes a lifetime; this is longer than any gateway runs). */
const FOREVER_MS = 100 * 365 * 86_400_000;
/** A tenant's names listed at most. */
const LISTED = 500;

const key = {
  record: (tenant: string, name: string) => `sec:rec:${tenant}:${name}`,
  count: (tenant: string) => `sec:n:${tenant}`,
  slot: (tenant: string, n: number) => `sec:slot:${tenant}:${n}`,
  slotted: (tenant: string, name: string) => `sec:slotted:${tenant}:${name}`,
  used: (tenant: string, name: string) => `sec:used:${tenant}:${name}`,
  binding: (digest: string) => `sec:ph:${digest}`,
  source: (sandboxId: string) => `sec:src:${sandboxId}`,
};

export interface SecretStore {
  /** Creates or replaces a secret; a new name joins the tenant's list. */
  put(record: SecretRecord): Promise<void>;
  get(tenant: string, name: string): Promise<SecretRecord | undefined>;
  /** Forgets a secret (its placeholders go with it: they resolve to nothing). True when there was one. */
  delete(tenant: string, name: string): Promise<boolean>;
  /** The tenant's secrets, by name. */
  list(tenant: string): Promise<SecretRecord[]>;
  /** Records a use at `at` (epoch ms). */
  noteUse(tenant: string, name: string, at: number): Promise<void>;
  lastUse(tenant: string, name: string): Promise<number | undefined>;
  /** Binds a placeholder (by its digest) to its sandbox and secret for `ttlMs`. */
  bind(digest: string, binding: PlaceholderBinding, ttlMs: number): Promise<void>;
  binding(digest: string): Promise<PlaceholderBinding | undefined>;
  /** Records what a sandbox was created from (its image or snapshot name), for `ttlMs`. */
  setSource(sandboxId: string, source: SandboxSource, ttlMs: number): Promise<void>;
  source(sandboxId: string): Promise<SandboxSource | undefined>;
}

/** What a sandbox was created from, as its create body named it: what a secret's `images` / `snapshots` select. */
export interface SandboxSource {
  image?: string;
  snapshot?: string;
}

/** The secret store over a backend's key-value store. */
export function kvSecretStore(kv: KeyValueStore): SecretStore {
  const json = async <T>(k: string): Promise<T | undefined> => {
    const raw = await kv.get(k);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  };
  return {
    async put(record) {
      await kv.set(key.record(record.tenant, record.name), JSON.stringify(record), FOREVER_MS);
      // A name gets one slot, ever: re-created after a deletion it is listed from the slot it had.
      if (await kv.setIfAbsent(key.slotted(record.tenant, record.name), "1", FOREVER_MS)) {
        const n = await kv.incrBy(key.count(record.tenant), 1, FOREVER_MS);
        await kv.set(key.slot(record.tenant, n), record.name, FOREVER_MS);
      }
    },
    get: (tenant, name) => json<SecretRecord>(key.record(tenant, name)),
    async delete(tenant, name) {
      const had = (await kv.get(key.record(tenant, name))) !== undefined;
      await kv.delete(key.record(tenant, name));
      await kv.delete(key.used(tenant, name));
      return had;
    },
    async list(tenant) {
      const raw = await kv.get(key.count(tenant));
      const n = raw === undefined ? 0 : Number(raw);
      const slots = Array.from({ length: Math.min(n, LISTED) }, (_, i) => n - i);
      const names = [...new Set((await Promise.all(slots.map((i) => kv.get(key.slot(tenant, i))))).filter((x) => x !== undefined))];
      const records = await Promise.all(names.map((name) => json<SecretRecord>(key.record(tenant, name))));
      return records.filter((r): r is SecretRecord => !!r && r.tenant === tenant).sort((a, b) => (a.name < b.name ? -1 : 1));
    },
    noteUse: (tenant, name, at) => kv.set(key.used(tenant, name), String(at), FOREVER_MS),
    async lastUse(tenant, name) {
      const raw = await kv.get(key.used(tenant, name));
      return raw === undefined ? undefined : Number(raw);
    },
    bind: (digest, binding, ttlMs) => kv.set(key.binding(digest), JSON.stringify(binding), ttlMs),
    binding: (digest) => json<PlaceholderBinding>(key.binding(digest)),
    setSource: (sandboxId, source, ttlMs) => kv.set(key.source(sandboxId), JSON.stringify(source), ttlMs),
    source: (sandboxId) => json<SandboxSource>(key.source(sandboxId)),
  };
}
