// In-process tenant directory records and audit log (one gateway process; fleets use Redis or Durable Objects).
import { seedReplaces } from "./tenant-records.js";
import type { AuditEntry, AuditLog, StoredTenant, TenantStore } from "./types.js";

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
