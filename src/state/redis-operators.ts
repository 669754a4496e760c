// Tenant records and the audit log on Redis: a hash of records with a version counter readers poll, and a sorted set
// of audit entries keyed by a fleet-wide sequence. Each write is one Lua script (./redis-scripts.ts).
import type { RedisConnection } from "./redis-connection.js";
import type { AuditEntry, AuditLog, OutboxMessage, RequestLog, RequestRecord, StoredTenant, TenantStore, WebhookOutbox } from "./types.js";

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

/**
 * The webhook outbox on Redis: a hash of messages by id, a sorted set of due times (a claim moves a message's due time
 * to the end of its lease), a hash of claim owners, and a capped list of dead letters. Each step is one Lua script.
 */
export class RedisOutbox implements WebhookOutbox {
  constructor(private readonly r: RedisConnection) {}

  private k(name: string) {
    return this.r.key("outbox", name);
  }
  async enqueue(message: Omit<OutboxMessage, "attempts">) {
    const m: OutboxMessage = { ...message, attempts: 0 };
    const n = await this.r.run(() => this.r.client.tgOutboxEnqueue(this.k("messages"), this.k("due"), m.id, JSON.stringify(m), m.nextAt));
    return Number(n) === 1;
  }
  async claim(owner: string, now: number, leaseMs: number, limit: number) {
    const rows = (await this.r.run(() =>
      this.r.client.tgOutboxClaim(this.k("messages"), this.k("due"), this.k("owners"), owner, now, leaseMs, limit),
    )) as string[];
    return rows.map((row) => JSON.parse(row) as OutboxMessage);
  }
  private async settle(id: string, owner: string, mode: "ack" | "retry" | "bury", nextAt = 0, error = "") {
    const n = await this.r.run(() =>
      this.r.client.tgOutboxSettle(this.k("messages"), this.k("due"), this.k("owners"), this.k("dead"), id, owner, mode, nextAt, error),
    );
    return Number(n) === 1;
  }
  ack(id: string, owner: string) {
    return this.settle(id, owner, "ack");
  }
  retry(id: string, owner: string, nextAt: number, error: string) {
    return this.settle(id, owner, "retry", nextAt, error);
  }
  bury(id: string, owner: string, error: string) {
    return this.settle(id, owner, "bury", 0, error);
  }
  async list(which: "pending" | "dead", limit: number) {
    if (which === "dead") {
      const rows = await this.r.run(() => this.r.client.lrange(this.k("dead"), 0, limit - 1));
      return rows.map((row) => JSON.parse(row) as OutboxMessage);
    }
    const ids = await this.r.run(() => this.r.client.zrange(this.k("due"), "0", String(limit - 1)));
    if (!ids.length) return [];
    const rows = await this.r.run(() => this.r.client.hmget(this.k("messages"), ...ids));
    return rows.filter((row): row is string => !!row).map((row) => JSON.parse(row) as OutboxMessage);
  }
}

/** A tenant's request log left unwritten this long is dropped whole (a tenant gone quiet, or deleted). */
const REQUESTS_IDLE_MS = 30 * 86_400_000;

/**
 * The request log on Redis: one list per tenant, newest first. An append is one MULTI per tenant (LPUSH the records,
 * LTRIM to the newest `keep`, PEXPIRE): one key each, so it runs on any Cluster slot.
 */
export class RedisRequestLog implements RequestLog {
  constructor(private readonly r: RedisConnection) {}

  async append(records: RequestRecord[], keep: number) {
    const byTenant = new Map<string, string[]>();
    for (const rec of records) {
      const list = byTenant.get(rec.tenant) ?? [];
      list.push(JSON.stringify(rec));
      byTenant.set(rec.tenant, list);
    }
    await Promise.all(
      [...byTenant].map(([tenant, rows]) => {
        const key = this.r.key("requests", tenant);
        return this.r.run(() =>
          this.r.client
            .multi()
            .lpush(key, ...rows)
            .ltrim(key, 0, keep - 1)
            .pexpire(key, REQUESTS_IDLE_MS)
            .exec(),
        );
      }),
    );
  }
  async list(tenant: string, limit: number) {
    const rows = await this.r.run(() => this.r.client.lrange(this.r.key("requests", tenant), 0, limit - 1));
    return rows.map((row) => JSON.parse(row) as RequestRecord);
  }
}
