// Live sessions and sandboxes per upstream account on Redis (docs/accounts.md): one sorted set per pool and account,
// members the holds and resource ids, scored by when each expires. A take is one script over the candidates' sets, so
// of racing instances no two take an account's last slot; in a Cluster every set carries the `{acct}` hash tag (one
// slot), so the script (tgAccountTake, ./redis-scripts.ts) may touch them all.
import type { RedisConnection } from "./redis-connection.js";
import type { AccountPool, AccountSlots, AccountTake } from "./types.js";

/** How long a set outlives its last write: the longest a member may live. */
const SET_TTL_MS = 7 * 86_400_000;

export class RedisAccountSlots implements AccountSlots {
  constructor(
    private readonly r: RedisConnection,
    private readonly now: () => number = Date.now,
  ) {}

  private key(pool: AccountPool, account: string) {
    return this.r.key("acct", "slots", pool, account);
  }

  async take(pool: AccountPool, candidates: Array<{ account: string; limit?: number }>, hold: string, leaseMs: number) {
    const now = this.now();
    const args: (string | number)[] = [`${this.r.key("acct", "slots")}:`, now, hold, now + leaseMs, SET_TTL_MS];
    for (const c of candidates) args.push(`${pool}:${c.account}`, c.limit === undefined ? "" : c.limit);
    const reply = (await this.r.run(() => this.r.client.tgAccountTake(this.r.key("acct", "slots"), ...args))) as number[];
    const out: AccountTake = { counts: {} };
    for (const [i, c] of candidates.entries()) out.counts[c.account] = Number(reply[i + 1]);
    const at = Number(reply[0]);
    if (at > 0) out.account = candidates[at - 1]!.account;
    return out;
  }
  async settle(pool: AccountPool, account: string, hold: string, id: string | undefined, liveMs: number) {
    const k = this.key(pool, account);
    await this.r.run(() => {
      const m = this.r.client.multi().zrem(k, hold);
      if (id !== undefined) m.zadd(k, this.now() + liveMs, id).pexpire(k, SET_TTL_MS);
      return m.exec();
    });
  }
  async release(pool: AccountPool, accounts: string[], id: string) {
    if (!accounts.length) return;
    await this.r.run(() => {
      const m = this.r.client.multi();
      for (const a of accounts) m.zrem(this.key(pool, a), id);
      return m.exec();
    });
  }
  async counts(pool: AccountPool, accounts: string[]) {
    const now = this.now();
    const replies = await this.r.run(() => {
      const m = this.r.client.multi();
      for (const a of accounts) m.zcount(this.key(pool, a), `(${now}`, "+inf");
      return m.exec();
    });
    const out: Record<string, number> = {};
    for (const [i, a] of accounts.entries()) out[a] = Number(replies?.[i]?.[1] ?? 0);
    return out;
  }
}
