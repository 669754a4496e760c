// Live sessions and sandboxes per upstream account, in one process (the memory backend; docs/accounts.md).
import type { AccountPool, AccountSlots, AccountTake } from "./types.js";

export class MemoryAccountSlots implements AccountSlots {
  /** "<pool>:<account>" → member (a hold or a resource id) → when it expires. */
  private readonly sets = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number) {}

  private set(pool: AccountPool, account: string): Map<string, number> {
    const k = `${pool}:${account}`;
    let s = this.sets.get(k);
    if (!s) this.sets.set(k, (s = new Map()));
    const now = this.now();
    for (const [m, exp] of s) if (exp <= now) s.delete(m);
    return s;
  }

  async take(pool: AccountPool, candidates: Array<{ account: string; limit?: number }>, hold: string, leaseMs: number) {
    const out: AccountTake = { counts: {} };
    for (const c of candidates) {
      const s = this.set(pool, c.account);
      out.counts[c.account] = s.size;
      if (out.account === undefined && (c.limit === undefined || s.size < c.limit)) {
        s.set(hold, this.now() + leaseMs);
        out.account = c.account;
      }
    }
    return out;
  }
  async settle(pool: AccountPool, account: string, hold: string, id: string | undefined, liveMs: number) {
    const s = this.set(pool, account);
    s.delete(hold);
    if (id !== undefined) s.set(id, this.now() + liveMs);
  }
  async release(pool: AccountPool, accounts: string[], id: string) {
    for (const a of accounts) this.set(pool, a).delete(id);
  }
  async counts(pool: AccountPool, accounts: string[]) {
    const out: Record<string, number> = {};
    for (const a of accounts) out[a] = this.set(pool, a).size;
    return out;
  }
}
