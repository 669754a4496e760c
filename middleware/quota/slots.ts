// Atomic reservation of a creation slot (sandbox or session) against a tenant's limit, across gateway instances.
import type { KeyValueStore, OwnershipRegistry, ResourceKind } from "../../src/state/types.js";
import { stateKeys } from "../../src/state/keys.js";

/**
 * Creations in flight are counted in a pending counter (kv.incrBy, atomic on every backend) kept in 5-minute
 * buckets: a reservation increments the current bucket and is released into the same bucket, so a counter never
 * expires under a creation in flight (creations end within the upstream timeout, far less than a bucket).
 */
const BUCKET_MS = 5 * 60_000;
const BUCKET_TTL_MS = 3 * BUCKET_MS;

interface SlotFigures {
  limit: number;
  /** Active resources the registry counts for the tenant. */
  active: number;
  /** Other creations in flight when this one asked. */
  pending: number;
}

export type SlotResult = { ok: true; release: () => Promise<void> } | ({ ok: false } & SlotFigures);

export class CreationSlots {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly ownership: OwnershipRegistry,
    private readonly now: () => number,
  ) {}

  private key(kind: ResourceKind, tenant: string, bucket: number) {
    return stateKeys.quotaPending(kind, tenant, bucket);
  }

  /**
   * Reserves one slot if `active + in-flight` stays within `limit`: two round trips, the increment with the previous
   * bucket's read beside it, then the active count. Both of the first have answered before the active count is
   * read, so of two racing creations the later one always sees the earlier (pending, or already claimed: a creation
   * is claimed before its slot is released, so one released from the previous bucket after that bucket was read was
   * claimed after, and is in the active count read later).
   * A successful creation must be claimed in the ownership registry before `release()` is called.
   */
  async reserve(kind: ResourceKind, tenant: string, limit: number): Promise<SlotResult> {
    const bucket = Math.floor(this.now() / BUCKET_MS);
    const key = this.key(kind, tenant, bucket);
    const [mine, previousRaw] = await Promise.all([this.kv.incrBy(key, 1, BUCKET_TTL_MS), this.kv.get(this.key(kind, tenant, bucket - 1))]);
    const previous = Number(previousRaw ?? 0);
    const active = await this.ownership.activeCount(kind, tenant);
    const pending = Math.max(0, mine - 1) + Math.max(0, previous);
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await this.kv.incrBy(key, -1, BUCKET_TTL_MS);
    };
    if (active + pending + 1 > limit) {
      await release();
      return { ok: false, limit, active, pending };
    }
    return { ok: true, release };
  }
}
