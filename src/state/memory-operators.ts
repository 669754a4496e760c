// In-process tenant directory records and audit log (one gateway process; fleets use Redis or Durable Objects).
import { seedReplaces } from "./tenant-records.js";
import type {
  AuditEntry,
  AuditLog,
  DueIndex,
  OutboxMessage,
  RequestLog,
  RequestRecord,
  StoredTenant,
  TenantStore,
  WebhookOutbox,
} from "./types.js";

const copy = <T>(v: T): T => structuredClone(v);

export class MemoryTenantStore implements TenantStore {
  private readonly records = new Map<string, StoredTenant>();
  private v = 0;

  async version() {
    return this.v;
  }
  async list() {
    return [...this.records.values()].sort((a, b) => (a.tenant.id < b.tenant.id ? -1 : 1)).map(copy);
  }
  async get(id: string) {
    const r = this.records.get(id);
    return r ? copy(r) : undefined;
  }
  async put(record: StoredTenant) {
    this.records.set(record.tenant.id, copy(record));
    this.v++;
  }
  async create(record: StoredTenant) {
    if (this.records.has(record.tenant.id)) return false;
    await this.put(record);
    return true;
  }
  async seed(record: StoredTenant) {
    if (!seedReplaces(this.records.get(record.tenant.id), record)) return false;
    await this.put(record);
    return true;
  }
}

export class MemoryAuditLog implements AuditLog {
  private readonly entries: AuditEntry[] = [];

  async append(entry: Omit<AuditEntry, "seq">) {
    const e = { ...copy(entry), seq: this.entries.length + 1 };
    this.entries.push(e);
    return copy(e);
  }
  async list(q: { limit: number; before?: number }) {
    const out: AuditEntry[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < q.limit; i--) {
      const e = this.entries[i]!;
      if (q.before === undefined || e.seq < q.before) out.push(copy(e));
    }
    return out;
  }
}

const DEAD_KEPT = 1000;

/** The webhook outbox of one process: a map of waiting messages with their claims, and the dead letters. */
export class MemoryOutbox implements WebhookOutbox {
  private readonly waiting = new Map<string, { m: OutboxMessage; owner?: string }>();
  private readonly dead: OutboxMessage[] = [];

  async enqueue(message: Omit<OutboxMessage, "attempts">) {
    if (this.waiting.has(message.id)) return false;
    this.waiting.set(message.id, { m: { ...copy(message), attempts: 0 } });
    return true;
  }
  async claim(owner: string, now: number, leaseMs: number, limit: number) {
    const due = [...this.waiting.values()].filter((w) => w.m.nextAt <= now).sort((a, b) => a.m.nextAt - b.m.nextAt);
    return due.slice(0, limit).map((w) => {
      w.owner = owner;
      w.m.nextAt = now + leaseMs;
      return copy(w.m);
    });
  }
  private held(id: string, owner: string) {
    const w = this.waiting.get(id);
    return w && w.owner === owner ? w : undefined;
  }
  async ack(id: string, owner: string) {
    return !!this.held(id, owner) && this.waiting.delete(id);
  }
  async retry(id: string, owner: string, nextAt: number, error: string) {
    const w = this.held(id, owner);
    if (!w) return false;
    w.owner = undefined;
    Object.assign(w.m, { attempts: w.m.attempts + 1, nextAt, lastError: error });
    return true;
  }
  async bury(id: string, owner: string, error: string) {
    const w = this.held(id, owner);
    if (!w) return false;
    this.waiting.delete(id);
    this.dead.unshift({ ...w.m, attempts: w.m.attempts + 1, lastError: error });
    this.dead.length = Math.min(this.dead.length, DEAD_KEPT);
    return true;
  }
  async list(which: "pending" | "dead", limit: number) {
    if (which === "dead") return this.dead.slice(0, limit).map(copy);
    return [...this.waiting.values()]
      .map((w) => w.m)
      .sort((a, b) => a.nextAt - b.nextAt)
      .slice(0, limit)
      .map(copy);
  }
}

/**
 * The request log of one process: per tenant, an array oldest first. It is cut back to the newest `keep` once it holds
 * twice that (one move per `keep` records, not one per record); reads see only the newest `keep`.
 */
export class MemoryRequestLog implements RequestLog {
  private readonly byTenant = new Map<string, RequestRecord[]>();
  private keep = Number.POSITIVE_INFINITY;

  async append(records: RequestRecord[], keep: number) {
    this.keep = keep;
    for (const r of records) {
      let list = this.byTenant.get(r.tenant);
      if (!list) this.byTenant.set(r.tenant, (list = []));
      list.push({ ...r }); // flat: a shallow copy is a whole copy
      if (list.length >= 2 * keep) list.splice(0, list.length - keep);
    }
  }
  async list(tenant: string, limit: number) {
    const list = this.byTenant.get(tenant) ?? [];
    const n = Math.min(limit, this.keep, list.length);
    const out: RequestRecord[] = [];
    for (let i = list.length - 1; out.length < n; i--) out.push({ ...list[i]! });
    return out;
  }
}

/** Due items per queue: id → due time. */
export class MemoryDueIndex implements DueIndex {
  private readonly queues = new Map<string, Map<string, number>>();

  async add(queue: string, id: string, at: number) {
    let q = this.queues.get(queue);
    if (!q) this.queues.set(queue, (q = new Map()));
    q.set(id, at);
  }
  async due(queue: string, now: number, limit: number) {
    const q = this.queues.get(queue);
    if (!q) return [];
    return [...q]
      .filter(([, at]) => at <= now)
      .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, limit)
      .map(([id]) => id);
  }
  async remove(queue: string, id: string) {
    this.queues.get(queue)?.delete(id);
  }
}
