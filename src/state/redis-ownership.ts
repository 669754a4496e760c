// Ownership on Redis in the tenant layout (a Cluster, or `hashTags`; docs/state-layout.md), split the way the Durable
// Object backend splits it: each resource's record (owner, liveness, last status) is one key on its own slot, found by
// kind and id alone, so owner lookups (every control call) spread over the primaries resource by resource; a tenant's
// lists, live sets, ended set and sequence carry the tenant as hash tag, so each tenant's list, count and claim
// bookkeeping is one slot, and tenants spread over the primaries. Nothing sits on one slot for the whole fleet.
//
// A claim is two steps, the record first (the first claim wins there, atomically), then the tenant's list: a tenant's
// list only ever names resources the tenant won. Ending a resource is the record's step (which names its owner), then
// the owner's sets. A step lost between the two (the gateway died) leaves the record right and the tenant's list or
// count one behind, put right by the next claim or liveness change of the resource (the quota recheck makes them).
import type { RedisConnection } from "./redis-connection.js";
import { ownRecordKey, ownTenantKey, refuseUnmigratedOwnership } from "./redis-migrate-ownership.js";
import type { OwnedRecord, OwnershipRegistry, ResourceKind } from "./types.js";
import { ENDED_RETENTION_MS } from "./types.js";

/** Redis refuses a PX of 0 or less. */
const ttl = (ms: number) => Math.max(1, Math.ceil(ms));

/** How many ended records one list call drops from the tenant's lists at most (the rest on the next calls). */
const PRUNE_BATCH = 200;

export class RedisTenantOwnership implements OwnershipRegistry {
  constructor(
    private readonly r: RedisConnection,
    private readonly retentionMs: number = ENDED_RETENTION_MS,
  ) {}

  /** Settles once per instance that no "{own}" ownership waits to be migrated (it would be invisible here). */
  private layoutChecked: Promise<void> | undefined;
  private async layout(): Promise<void> {
    this.layoutChecked ??= refuseUnmigratedOwnership(this.r).catch((err) => {
      this.layoutChecked = undefined; // asked again next time
      throw err;
    });
    await this.layoutChecked;
  }
  private record(kind: ResourceKind, id: string) {
    return ownRecordKey(this.r, kind, id);
  }
  private t(tenant: string, ...parts: string[]) {
    return ownTenantKey(this.r, tenant, ...parts);
  }

  async claim(kind: ResourceKind, id: string, tenant: string) {
    await this.layout();
    const won = (await this.r.run(() => this.r.client.tgOwnClaim(this.record(kind, id), tenant))) === 1;
    if (!won) return false;
    await this.r.run(() =>
      this.r.client.tgOwnClaimTenant(
        this.t(tenant, "seq"),
        this.t(tenant, "ended"),
        this.t(tenant, "list", kind),
        this.t(tenant, "active", kind),
        kind,
        id,
      ),
    );
    return true;
  }
  async owner(kind: ResourceKind, id: string) {
    await this.layout();
    return (await this.r.run(() => this.r.client.hget(this.record(kind, id), "tenant"))) ?? undefined;
  }
  /** Drops the tenant's ended resources past their retention from its lists (their records expired by themselves). */
  private async prune(tenant: string) {
    await this.r.run(() => this.r.client.tgOwnPruneTenant(this.t(tenant, "ended"), `${this.t(tenant)}:`, Date.now(), PRUNE_BATCH));
  }
  async list(kind: ResourceKind, tenant: string) {
    await this.layout();
    await this.prune(tenant);
    return this.r.run(() => this.r.client.zrevrange(this.t(tenant, "list", kind), 0, -1));
  }
  async records(kind: ResourceKind, tenant: string): Promise<OwnedRecord[]> {
    const ids = await this.list(kind, tenant);
    if (ids.length === 0) return [];
    // Each record on its own slot: one read each, all sent at once (one round trip's wait, over the primaries).
    const rows = await this.r.run(() =>
      Promise.all(ids.map((id) => this.r.client.hmget(this.record(kind, id), "tenant", "active", "status"))),
    );
    const out: OwnedRecord[] = [];
    ids.forEach((id, i) => {
      const [owner, active, status] = rows[i] ?? [];
      if (owner && owner !== tenant) return; // not the tenant's (anymore): never shown to it
      out.push(typeof status === "string" ? { id, active: active === "1", status } : { id, active: active === "1" });
    });
    return out;
  }
  async noteStatus(kind: ResourceKind, id: string, status: string) {
    await this.layout();
    await this.r.run(() => this.r.client.tgNoteStatus(this.record(kind, id), status));
  }
  async setActive(kind: ResourceKind, id: string, active: boolean) {
    await this.layout();
    const flag = active ? "1" : "0";
    const retention = ttl(this.retentionMs);
    const endsAt = Date.now() + retention;
    const got = (await this.r.run(() => this.r.client.tgOwnSetActive(this.record(kind, id), flag, retention))) as [string, number] | null;
    if (!got) return; // unknown (or expired): left alone
    const [tenant, changed] = got;
    // Marked live again while live: the tenant's sets have it already (a detail read of a running resource costs one
    // round trip). Ended: always written again, which also puts right a step an earlier call lost.
    if (active && Number(changed) === 0) return;
    await this.r.run(() =>
      this.r.client.tgOwnSetActiveTenant(this.t(tenant, "active", kind), this.t(tenant, "ended"), `${kind}:${id}`, id, flag, endsAt),
    );
  }
  async activeCount(kind: ResourceKind, tenant: string) {
    await this.layout();
    return this.r.run(() => this.r.client.scard(this.t(tenant, "active", kind)));
  }
}
