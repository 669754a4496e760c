// The sales book: one line per settled sale (inbound: what the buyer paid, on which chain, its transaction), beside the
// ledger's outbound entries for the same wallet tenant (what the gateway paid the upstream, on chain or in credits).
// Kept in the shared key-value store per tenant (bounded), so every instance reads the same lines.
import type { KeyValueStore } from "../state/types.js";

export interface SaleRecord {
  at: number;
  /** The wallet tenant the sale ran as. */
  tenant: string;
  /** The buyer's address (the settlement's payer). */
  payer: string;
  /** Who was paid (sales.payTo, or the gateway's wallet). */
  payTo: string;
  row: string;
  class: string;
  network: string;
  asset: string;
  /** What the buyer paid, in the asset's atomic units. */
  amount: string;
  /** The same in micro-USD (6 decimals). */
  priceMicroUsd: string;
  /** The settlement's transaction hash. */
  transaction: string;
  requestId?: string;
  paymentId?: string;
  /** `upto` for a metered sale (settled for what was used); absent: `exact`. */
  scheme?: "upto";
  /** A metered session or sandbox: the minutes settled. */
  minutes?: number;
  /** A sold job: the upstream's job id (settled for the credits it used). */
  job?: string;
}

/** How many sales of a tenant a listing reads back (the newest). */
const KEEP = 1000;
const YEAR_MS = 366 * 86_400_000;

/**
 * Each line is written once under its own key (`sales:<tenant>:<n>`, n from an atomic counter), so concurrent sales on
 * any instance never overwrite each other; the tenants with a book are numbered the same way.
 */
export class SalesBook {
  constructor(private readonly kv: KeyValueStore) {}

  async record(sale: SaleRecord): Promise<void> {
    const n = await this.kv.incrBy(`sales:${sale.tenant}:n`, 1, YEAR_MS);
    await this.kv.set(`sales:${sale.tenant}:${n}`, JSON.stringify(sale), YEAR_MS);
    if (await this.kv.setIfAbsent(`sales:seen:${sale.tenant}`, "1", YEAR_MS)) {
      const i = await this.kv.incrBy("sales:tenants:n", 1, YEAR_MS);
      await this.kv.set(`sales:tenants:${i}`, sale.tenant, YEAR_MS);
    }
  }

  /** The tenants that bought something. */
  async buyers(): Promise<string[]> {
    const n = Number((await this.kv.get("sales:tenants:n")) ?? 0);
    const ids = await Promise.all(Array.from({ length: n }, (_, i) => this.kv.get(`sales:tenants:${i + 1}`)));
    return ids.filter((t): t is string => !!t);
  }

  /** A tenant's sales (its newest KEEP), oldest first; every buyer's when none is named. */
  async list(tenant?: string): Promise<SaleRecord[]> {
    const tenants = tenant ? [tenant] : await this.buyers();
    const all = (await Promise.all(tenants.map((t) => this.read(t)))).flat();
    return all.sort((a, b) => a.at - b.at);
  }

  private async read(tenant: string): Promise<SaleRecord[]> {
    const n = Number((await this.kv.get(`sales:${tenant}:n`)) ?? 0);
    const from = Math.max(1, n - KEEP + 1);
    const raw = await Promise.all(Array.from({ length: n - from + 1 }, (_, i) => this.kv.get(`sales:${tenant}:${from + i}`)));
    return raw.filter((r): r is string => !!r).map((r) => JSON.parse(r) as SaleRecord);
  }
}
