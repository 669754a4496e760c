// Tenant records and the audit log on Redis: a hash of records with a version counter readers poll, and a sorted set
// of audit entries keyed by a fleet-wide sequence. Each write is one Lua script (./redis-scripts.ts).
import type { RedisConnection } from "./redis-connection.js";
import type { AuditEntry, AuditLog, StoredTenant, TenantStore } from "./types.js";

export class RedisTenantStore implements TenantStore {
  constructor(private readonly r: RedisConnection) {}

  private keys() {
    return [
      this.r.key("tenants", "records"),
      this.r.key("tenants", "sources"),
      this.r.key("tenants", "bodies"),
      this.r.key("tenants", "version"),
    ];
  }
  private async write(mode: "put" | "create" | "seed", rec: StoredTenant): Promise<boolean> {
    const source = rec.deleted ? "deleted" : rec.source;
    const n = await this.r.run(() =>
      this.r.client.tgTenantWrite(...this.keys(), mode, rec.tenant.id, JSON.stringify(rec), source, JSON.stringify(rec.tenant)),
    );
    return Number(n) === 1;
  }

  async version() {
    return Number((await this.r.run(() => this.r.client.get(this.r.key("tenants", "version")))) ?? 0);
  }
  async list() {
    const all = await this.r.run(() => this.r.client.hgetall(this.r.key("tenants", "records")));
    return Object.keys(all)
      .sort()
      .map((id) => JSON.parse(all[id]!) as StoredTenant);
  }
  async get(id: string) {
    const v = await this.r.run(() => this.r.client.hget(this.r.key("tenants", "records"), id));
    return v ? (JSON.parse(v) as StoredTenant) : undefined;
  }
  async put(rec: StoredTenant) {
    await this.write("put", rec);
  }
  create(rec: StoredTenant) {
    return this.write("create", rec);
  }
  seed(rec: StoredTenant) {
    return this.write("seed", rec);
  }
}

export class RedisAuditLog implements AuditLog {
  constructor(private readonly r: RedisConnection) {}

  async append(entry: Omit<AuditEntry, "seq">) {
    const seq = Number(
      await this.r.run(() =>
        this.r.client.tgAuditAppend(this.r.key("audit", "seq"), this.r.key("audit", "entries"), JSON.stringify(entry)),
      ),
    );
    return { ...entry, seq };
  }
  async list(q: { limit: number; before?: number }) {
    const max = q.before === undefined ? "+inf" : `(${q.before}`;
    const members = await this.r.run(() =>
      this.r.client.zrevrangebyscore(this.r.key("audit", "entries"), max, "-inf", "LIMIT", 0, q.limit),
    );
    return members.map((m) => {
      const bar = m.indexOf("|");
      return { ...(JSON.parse(m.slice(bar + 1)) as Omit<AuditEntry, "seq">), seq: Number(m.slice(0, bar)) };
    });
  }
}
