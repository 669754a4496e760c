// Owners remembered per instance: a resource's owner never changes once written (the first claim wins, nothing moves
// it), so an owner lookup answered once is answered again without a state round trip. What can change is only whether
// the owner is still remembered at all (an ended resource past its retention answers undefined): a remembered owner
// is kept at most `ttlMs` (never longer than the retention), and forgotten at once when this instance ends it.
// Revocation needs nothing here: a revoked key or a deleted tenant fails authentication first (within the fleet's
// tenant-sync bound), before any owner is looked up.
import { LRUCache } from "lru-cache";
import type { OwnershipRegistry, ResourceKind, StateStores } from "./types.js";

/** How long an owner is remembered when the retention allows it (a minute). */
export const OWNER_MEMORY_MS = 60_000;

export interface OwnerMemory {
  /** The clock the memory ages by (the gateway's, so tests with a fake clock see it age). */
  now: () => number;
  /** How long an answer is reused; 0 turns the memory off. */
  ttlMs: number;
  /** Owners remembered at most (least recently used forgotten first). */
  max?: number;
}

function rememberingOwnership(inner: OwnershipRegistry, opts: OwnerMemory): OwnershipRegistry {
  if (opts.ttlMs <= 0) return inner;
  const known = new LRUCache<string, { tenant: string; at: number }>({ max: opts.max ?? 100_000 });
  const keyOf = (kind: ResourceKind, id: string) => `${kind}\u0000${id}`;
  return {
    async claim(kind, id, tenant) {
      const won = await inner.claim(kind, id, tenant);
      if (won) known.set(keyOf(kind, id), { tenant, at: opts.now() });
      return won;
    },
    async claimWithin(kind, id, tenant, limit) {
      const answer = await inner.claimWithin(kind, id, tenant, limit);
      if (answer.outcome === "claimed") known.set(keyOf(kind, id), { tenant, at: opts.now() });
      return answer;
    },
    owner(kind, id) {
      const k = keyOf(kind, id);
      const seen = known.get(k);
      if (seen && opts.now() - seen.at < opts.ttlMs) return Promise.resolve(seen.tenant);
      return inner.owner(kind, id).then((tenant) => {
        // Only an owner is remembered: an unknown id may be claimed a moment later.
        if (tenant !== undefined) known.set(k, { tenant, at: opts.now() });
        else known.delete(k);
        return tenant;
      });
    },
    // Never remembered: whether it still runs may change on any instance. The owner it names is remembered.
    ownerRecord(kind, id) {
      return inner.ownerRecord(kind, id).then((record) => {
        if (record !== undefined) known.set(keyOf(kind, id), { tenant: record.tenant, at: opts.now() });
        else known.delete(keyOf(kind, id));
        return record;
      });
    },
    list: (kind, tenant) => inner.list(kind, tenant),
    records: (kind, tenant) => inner.records(kind, tenant),
    noteStatus: (kind, id, status) => inner.noteStatus(kind, id, status),
    async setActive(kind, id, active) {
      if (!active) known.delete(keyOf(kind, id));
      await inner.setActive(kind, id, active);
    },
    activeCount: (kind, tenant) => inner.activeCount(kind, tenant),
  };
}

/** `stores` with its ownership registry remembering owners per instance (see rememberingOwnership). */
export function withRememberedOwners<S extends StateStores>(stores: S, opts: OwnerMemory): S {
  return { ...stores, ownership: rememberingOwnership(stores.ownership, opts), close: () => stores.close(), ping: () => stores.ping() };
}
