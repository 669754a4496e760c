// OwnershipRegistry over TollgateState Durable Objects: a resource's owner in its own object (res:<kind>:<id>), a
// tenant's listing in its object (own:<tenant>), the previous layout's one "ownership" object read through while the
// Worker's cron copies it out (docs/state-layout.md).
import type { Objects } from "./durable-objects.js";
import type { OwnerRow } from "./durable-owner-tables.js";
import { groupBy } from "./fan-out.js";
import type { LimitedClaim, OwnershipRegistry, ResourceKind } from "./types.js";

/** How many rows of the previous layout's one ownership object each scheduled run copies out. */
const OWNERSHIP_MIGRATION_BATCH = 200;

export class DurableOwnership implements OwnershipRegistry {
  /** Set once the previous layout's "ownership" object is empty or copied out: never asked again in this isolate. */
  private legacyDone = false;
  constructor(
    private readonly o: Objects,
    private readonly retentionMs: number,
  ) {}
  /** Records that ended at or before this are past their retention. */
  private cutoff() {
    return Date.now() - this.retentionMs;
  }
  private res(kind: ResourceKind, id: string) {
    return `res:${kind}:${id}`;
  }
  private own(tenant: string) {
    return `own:${tenant}`;
  }
  /** Whether the previous layout may still hold rows not copied out (asked until it says done, then never). */
  private async migrating(): Promise<boolean> {
    if (this.legacyDone) return false;
    const { done } = await this.o.call("ownership", (s) => s.ownLegacyState());
    if (done) this.legacyDone = true;
    return !done;
  }
  /** Copies rows of the previous layout into their resource's and tenant's objects (a row already there is kept). */
  private async place(rows: OwnerRow[]) {
    const byTenant = groupBy(rows, (r) => r.tenant);
    await Promise.all([
      ...[...byTenant].map(([t, rs]) => this.o.call(this.own(t), (s) => s.ownImport(rs), t)),
      ...rows.map((r) => this.o.call(this.res(r.kind, r.id), (s) => s.ownImport([r]), r.tenant)),
    ]);
  }
  /** While migrating: the resource's row moved from the previous layout before it is read or written here. */
  private async pull(kind: ResourceKind, id: string) {
    if (!(await this.migrating())) return;
    const row = await this.o.call("ownership", (s) => s.ownRow(kind, id));
    if (row) await this.place([row]);
  }
  /** While migrating: the tenant's rows of a kind moved from the previous layout before its list is read. */
  private async pullTenant(kind: ResourceKind, tenant: string) {
    if (!(await this.migrating())) return;
    for (let after = 0, i = 0; i < 10_000; i++) {
      const rows = await this.o.call("ownership", (s) => s.ownExport(after, 500, tenant, kind));
      if (rows.length) await this.o.call(this.own(tenant), (s) => s.ownImport(rows), tenant);
      if (rows.length < 500) return;
      after = rows[rows.length - 1]!.seq;
    }
  }
  /**
   * One step of copying the previous layout's one ownership object out (run by the Worker's cron): a batch of rows
   * into their resources' and tenants' objects, then the cursor; the marker once all are out. True when done.
   */
  async migrateLegacy(limit = OWNERSHIP_MIGRATION_BATCH): Promise<boolean> {
    const state = await this.o.call("ownership", (s) => s.ownLegacyState());
    if (state.done) return (this.legacyDone = true);
    const rows = await this.o.call("ownership", (s) => s.ownExport(state.cursor, limit));
    await this.place(rows);
    const last = rows.at(-1)?.seq;
    await this.o.call("ownership", async (s) => {
      if (last !== undefined) await s.metaSet("owners-cursor", String(last));
      if (rows.length < limit) await s.metaSet("owners-migrated", "1");
    });
    return rows.length < limit;
  }
  async claim(kind: ResourceKind, id: string, tenant: string) {
    await this.pull(kind, id);
    // The resource's object decides (the first claim wins); the tenant's lists it.
    const cutoff = this.cutoff();
    // One round trip: the resource's object decides (the first claim wins) while the tenant's lists it; a refused
    // claim (another tenant's id, rare) takes the listing back.
    const [won, listed] = await Promise.all([
      this.o.call(this.res(kind, id), (s) => s.ownClaim(kind, id, tenant, cutoff), tenant),
      this.o.call(this.own(tenant), (s) => s.ownClaim(kind, id, tenant), tenant),
    ]);
    if (!won) {
      await this.o.call(this.own(tenant), (s) => s.ownDrop(kind, id), tenant);
      return false;
    }
    return listed;
  }
  /**
   * `claim` with the tenant's object counting `limit` in the same call (both objects at once: one round trip). A full
   * tenant writes nothing there; the resource's object, if it made the resource the tenant's, marks it ended (a second
   * call, on the refusal only: the caller stops the resource).
   */
  async claimWithin(kind: ResourceKind, id: string, tenant: string, limit: number): Promise<LimitedClaim> {
    await this.pull(kind, id);
    await this.pullTenant(kind, tenant);
    const cutoff = this.cutoff();
    const [won, listed] = await Promise.all([
      this.o.call(this.res(kind, id), (s) => s.ownClaim(kind, id, tenant, cutoff), tenant),
      this.o.call(this.own(tenant), (s) => s.ownClaimWithin(kind, id, tenant, cutoff, limit), tenant),
    ]);
    if (!won) {
      if (listed.claimed) await this.o.call(this.own(tenant), (s) => s.ownDrop(kind, id), tenant);
      return { outcome: "taken", active: listed.claimed ? listed.active - 1 : listed.active };
    }
    if (listed.claimed) return { outcome: "claimed", active: listed.active };
    await this.o.call(this.res(kind, id), (s) => s.ownSetActive(kind, id, false, Date.now()), tenant);
    return { outcome: "full", active: listed.active };
  }
  async owner(kind: ResourceKind, id: string) {
    await this.pull(kind, id);
    const cutoff = this.cutoff();
    return this.o.call(this.res(kind, id), (s) => s.ownOwner(kind, id, cutoff));
  }
  async ownerRecord(kind: ResourceKind, id: string) {
    await this.pull(kind, id);
    const cutoff = this.cutoff();
    return this.o.call(this.res(kind, id), (s) => s.ownOwnerRecord(kind, id, cutoff));
  }
  async list(kind: ResourceKind, tenant: string) {
    await this.pullTenant(kind, tenant);
    const cutoff = this.cutoff();
    return this.o.call(this.own(tenant), (s) => s.ownList(kind, tenant, cutoff), tenant);
  }
  async records(kind: ResourceKind, tenant: string) {
    await this.pullTenant(kind, tenant);
    const cutoff = this.cutoff();
    return this.o.call(this.own(tenant), (s) => s.ownRecords(kind, tenant, cutoff), tenant);
  }
  /** The owner of a known resource (its own object answers), undefined for an unknown one. */
  private async tenantOf(kind: ResourceKind, id: string) {
    await this.pull(kind, id);
    return this.o.call(this.res(kind, id), (s) => s.ownOwner(kind, id, 0));
  }
  async noteStatus(kind: ResourceKind, id: string, status: string) {
    const tenant = await this.tenantOf(kind, id);
    if (tenant !== undefined) await this.o.call(this.own(tenant), (s) => s.ownNoteStatus(kind, id, status), tenant);
  }
  async setActive(kind: ResourceKind, id: string, active: boolean) {
    const now = Date.now();
    const tenant = await this.tenantOf(kind, id);
    if (tenant === undefined) return;
    await Promise.all([
      this.o.call(this.res(kind, id), (s) => s.ownSetActive(kind, id, active, now), tenant),
      this.o.call(this.own(tenant), (s) => s.ownSetActive(kind, id, active, now), tenant),
    ]);
  }
  async activeCount(kind: ResourceKind, tenant: string) {
    await this.pullTenant(kind, tenant);
    return this.o.call(this.own(tenant), (s) => s.ownActiveCount(kind, tenant), tenant);
  }
}
