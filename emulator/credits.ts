// What the emulator charges in credits, by its own schedule, in the units the real service bills: browser time per
// minute and proxy data per MB for sessions, vCPU and memory time for sandboxes, per page for scrape/crawl/extract/web
// fetch, per step for agent tasks, per search. The team's running usage (`/api/team/credit-info`) is the sum.

/** Credits per unit. The defaults differ on purpose from the gateway's default price table (config/schema.ts). */
export interface CreditSchedule {
  /** Browser time of a session, per minute (charged by the second). */
  browserMinute: number;
  /** Proxy data a session's browser loaded through the proxy (`useProxy`), per MB (10^6 bytes). */
  proxyMB: number;
  /** A sandbox's vCPUs, per vCPU-minute (by the second). */
  sandboxVcpuMinute: number;
  /** A sandbox's memory, per GiB-minute (by the second). */
  sandboxGiBMinute: number;
  /** Each page a scrape, batch scrape or crawl loaded. */
  scrapePage: number;
  /** Each page an extract loaded. */
  extractPage: number;
  /** Each page a web fetch, batch fetch or web crawl loaded. */
  fetchPage: number;
  /** Each step an agent task ran. */
  agentStep: number;
  /** Each search answered (`/api/web/search`). */
  search: number;
  /**
   * How long after a session or sandbox ends its usage lands, as on the real service: until then its `creditsUsed`
   * reads 0 and the team's usage does not include it. 0 = at once.
   */
  lateUsageMs: number;
}

export const DEFAULT_CREDIT_SCHEDULE: CreditSchedule = {
  browserMinute: 2,
  proxyMB: 10,
  sandboxVcpuMinute: 0.5,
  sandboxGiBMinute: 0.25,
  scrapePage: 1.5,
  extractPage: 12,
  fetchPage: 1.2,
  agentStep: 8,
  search: 6,
  lateUsageMs: 0,
};

/** Credits are reported with three decimals (a thousandth of a credit). */
export const roundCredits = (n: number) => Math.round(n * 1000) / 1000;

/** The team's credit meter: charges made at once (jobs, searches) plus what each resource source reports as landed. */
export class CreditMeter {
  readonly schedule: CreditSchedule;
  private charged = 0;
  /** What was charged at once, by account (with several accounts: ./accounts.ts). */
  private readonly chargedBy = new Map<string, number>();
  private readonly sources = new Set<(owns?: (id: string) => boolean) => number>();
  /**
   * With several accounts: the account of the request being served, and the account that made a resource. Usage is
   * then kept per account as well; the total stays the sum.
   */
  accountOf?: { current(): string | undefined; owner(id: string): string | undefined; fallback: string };

  constructor(schedule: Partial<CreditSchedule> = {}) {
    this.schedule = { ...DEFAULT_CREDIT_SCHEDULE, ...schedule };
  }

  /** Adds credits to the team's usage now (a job's pages, a search), to the account of `resource` or of the request. */
  charge(credits: number, resource?: string): void {
    if (!Number.isFinite(credits) || credits <= 0) return;
    this.charged = roundCredits(this.charged + credits);
    const by = this.accountOf;
    if (!by) return;
    const account = (resource !== undefined ? by.owner(resource) : undefined) ?? by.current() ?? by.fallback;
    this.chargedBy.set(account, roundCredits((this.chargedBy.get(account) ?? 0) + credits));
  }

  /**
   * A module whose resources report their own credits (sessions, sandboxes): its landed total is read on demand, of
   * the resources `owns` keeps when given (one account's).
   */
  addSource(landedTotal: (owns?: (id: string) => boolean) => number): void {
    this.sources.add(landedTotal);
  }

  /** Whether the usage of a resource that ended at `endedAt` (epoch ms) has landed by `now`. */
  landed(endedAt: number | undefined, now = Date.now()): boolean {
    return endedAt !== undefined && now >= endedAt + this.schedule.lateUsageMs;
  }

  /** Browser time and proxy data credits of a session that ran from `start` to `end` (epoch ms). */
  session(start: number, end: number, proxyBytes: number) {
    const browserTimeCreditsUsed = roundCredits((Math.max(0, end - start) / 60_000) * this.schedule.browserMinute);
    const proxyDataCreditsUsed = roundCredits((proxyBytes / 1e6) * this.schedule.proxyMB);
    return { creditsUsed: roundCredits(browserTimeCreditsUsed + proxyDataCreditsUsed), browserTimeCreditsUsed, proxyDataCreditsUsed };
  }

  /** vCPU and memory time credits of a sandbox that ran from `start` to `end` (epoch ms). */
  sandbox(start: number, end: number, vcpus: number, memMiB: number): number {
    const minutes = Math.max(0, end - start) / 60_000;
    return roundCredits(minutes * (vcpus * this.schedule.sandboxVcpuMinute + (memMiB / 1024) * this.schedule.sandboxGiBMinute));
  }

  /** The team's usage so far; of one account's key when `account` is given (with several accounts). */
  usage(account?: string): number {
    const by = this.accountOf;
    if (account === undefined || !by) {
      let total = this.charged;
      for (const source of this.sources) total += source();
      return roundCredits(total);
    }
    let total = this.chargedBy.get(account) ?? 0;
    const owns = (id: string) => (by.owner(id) ?? by.fallback) === account;
    for (const source of this.sources) total += source(owns);
    return roundCredits(total);
  }
}

/**
 * A schedule from JSON (`tollgate emulator --credits '{"browserMinute": 3}'`): only known keys, each a non-negative
 * number. @throws Error naming the field that is wrong.
 */
export function parseCreditSchedule(json: string): Partial<CreditSchedule> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('--credits: expected a JSON object like {"browserMinute": 3}');
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new Error('--credits: expected a JSON object like {"browserMinute": 3}');
  const out: Partial<CreditSchedule> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!(k in DEFAULT_CREDIT_SCHEDULE))
      throw new Error(`--credits.${k}: unknown; expected one of ${Object.keys(DEFAULT_CREDIT_SCHEDULE).join(", ")}`);
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0) throw new Error(`--credits.${k}: expected a non-negative number`);
    out[k as keyof CreditSchedule] = v;
  }
  return out;
}
