// Ownership on Redis in the tenant layout (a Cluster, or `hashTags`; docs/state-layout.md), split the way the Durable
// Object backend splits it: each resource's record (owner, liveness, last status) is one key on its own slot, found by
// kind and id alone, so owner lookups (every control call) spread over the primaries resource by resource; a tenant's
// lists, live sets, ended set and sequence carry the tenant as hash tag, so each tenant's list, count and claim
// bookkeeping is one slot, and tenants spread over the primaries. Nothing sits on one slot for the whole fleet.
//
// A claim sends two scripts at once, one round trip's wait: the record's (the first claim wins there, atomically) and
// the tenant's (its list, live set, sequence); a claim the record refuses takes the tenant's step back. Lists and list
// pages keep only ids whose record names the tenant, so a tenant's list never shows another tenant's resource, even
// while a lost claim is taken back. Ending a resource is the record's step (which names its owner), then the owner's
// sets. A step lost between two (the gateway died, or a claim's record step got no answer) leaves the record right
// and the tenant's live count one off, put right by the next claim or liveness change of the resource; a count one
// too many refuses a creation early, never lets one past its quota.
import type { RedisClient, RedisConnection } from "./redis-connection.js";
import { ownRecordKey, ownTenantKey, refuseUnmigratedOwnership } from "./redis-migrate-ownership.js";
import type { LimitedClaim, OwnedRecord, OwnershipRegistry, ResourceKind, ResourceOwner } from "./types.js";
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
    const list = this.t(tenant, "list", kind);
    const live = this.t(tenant, "active", kind);
    // Both steps at once (a creation waits one round trip): the record decides, the tenant's step is taken back if
    // the record is another tenant's. Readers of the tenant's lists keep only what the record says is the tenant's,
    // so the tenant's step alone never shows a resource.
    const [record, own] = await Promise.allSettled([
      this.r.run(() => this.r.client.tgOwnClaim(this.record(kind, id), tenant)),
      this.r.run(() => this.r.client.tgOwnClaimTenant(this.t(tenant, "seq"), this.t(tenant, "ended"), list, live, kind, id)),
    ]);
    if (record.status === "fulfilled" && record.value === 1) {
      if (own.status === "rejected") throw own.reason;
      return true;
    }
    // Unknown (no answer): the record may be the tenant's (this one or an earlier claim), so nothing is taken back;
    // lists show the id only if the record names the tenant, and a live set one too many refuses early, never late.
    if (record.status === "rejected") throw record.reason;
    // Lost (another tenant's): the tenant's step must not count (its live set is what quotas count).
    if (own.status === "fulfilled") await this.r.run(() => this.r.client.tgOwnUnclaimTenant(list, live, id));
    return false;
  }
  /**
   * `claim` with the tenant's step counted against `limit` (its live set), both steps at once as in `claim`: one round
   * trip. A full tenant step writes nothing; the record step, if it wrote the resource the tenant's, is then marked
   * ended (a second round trip, on the refusal only: the caller stops the resource).
   */
  async claimWithin(kind: ResourceKind, id: string, tenant: string, limit: number): Promise<LimitedClaim> {
    await this.layout();
    const list = this.t(tenant, "list", kind);
    const live = this.t(tenant, "active", kind);
    const [record, own] = await Promise.allSettled([
      this.r.run(() => this.r.client.tgOwnClaim(this.record(kind, id), tenant)),
      this.r.run(
        () =>
          this.r.client.tgOwnClaimTenantWithin(this.t(tenant, "seq"), this.t(tenant, "ended"), list, live, kind, id, limit) as Promise<
            [number, number]
          >,
      ),
    ]);
    if (record.status === "rejected") throw record.reason;
    if (own.status === "rejected") throw own.reason;
    const [seq, active] = own.value;
    if (record.value === 1) {
      if (seq !== -1) return { outcome: "claimed", active };
      await this.setActive(kind, id, false);
      return { outcome: "full", active };
    }
    // Another tenant's: the tenant's step, if it counted the id, is taken back.
    if (seq === -1) return { outcome: "taken", active };
    await this.r.run(() => this.r.client.tgOwnUnclaimTenant(list, live, id));
    return { outcome: "taken", active: active - 1 };
  }
  async owner(kind: ResourceKind, id: string) {
    await this.layout();
    return (await this.r.run(() => this.r.client.hget(this.record(kind, id), "tenant"))) ?? undefined;
  }
  async ownerRecord(kind: ResourceKind, id: string): Promise<ResourceOwner | undefined> {
    await this.layout();
    const [tenant, active] = await this.r.run(() => this.r.client.hmget(this.record(kind, id), "tenant", "active"));
    return tenant ? { tenant, active: active === "1" } : undefined;
  }
  /**
   * The tenant's ids of a kind, newest first, with their records' fields: ended ones past their retention dropped
   * from its lists first (one round trip, the tenant's slot), then each record read, all at once (one round trip's
   * wait, over the primaries). Only ids whose record names the tenant are kept.
   */
  private async owned(kind: ResourceKind, tenant: string): Promise<{ id: string; active: string | null; status: string | null }[]> {
    await this.layout();
    const listKey = this.t(tenant, "list", kind);
    const ids = await this.r.run(async () => {
      const p = this.r.client.pipeline(); // one slot: the tenant's
      (p as unknown as RedisClient).tgOwnPruneTenant(this.t(tenant, "ended"), `${this.t(tenant)}:`, Date.now(), PRUNE_BATCH);
      p.zrevrange(listKey, 0, -1);
      const replies = (await p.exec()) ?? [];
      for (const [err] of replies) if (err) throw err;
      return (replies[1]?.[1] ?? []) as string[];
    });
    if (ids.length === 0) return [];
    const rows = await this.r.run(() =>
      Promise.all(ids.map((id) => this.r.client.hmget(this.record(kind, id), "tenant", "active", "status"))),
    );
    const out: { id: string; active: string | null; status: string | null }[] = [];
    ids.forEach((id, i) => {
      const [owner, active, status] = rows[i] ?? [];
      if (owner === tenant) out.push({ id, active: active ?? null, status: status ?? null });
    });
    return out;
  }
  async list(kind: ResourceKind, tenant: string) {
    return (await this.owned(kind, tenant)).map((o) => o.id);
  }
  async records(kind: ResourceKind, tenant: string): Promise<OwnedRecord[]> {
    return (await this.owned(kind, tenant)).map(({ id, active, status }) =>
      typeof status === "string" ? { id, active: active === "1", status } : { id, active: active === "1" },
    );
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
