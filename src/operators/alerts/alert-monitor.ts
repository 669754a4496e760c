// The alerts besides budgets, evaluated by every instance on a timer (Node) or the cron trigger (Workers), each fired
// once fleet-wide by an atomic set-if-absent on a marker in shared state:
//   upstream.errors / upstream.latency  the share of upstream calls failed (5xx, no answer) or slower than a threshold
//                                       over a window, from every instance's counts (flushed to shared counters)
//   wallet.low / team_credits.low       the wallet balance (as readiness reads it) or the upstream team's remaining
//                                       credits below a floor; re-armed once back above it
//   upstream.credentials_rejected       the upstream answered 401/403 to the gateway's own API key (a tenant's call or
//                                       readiness's probe): raised at once, once per account until the key is accepted
//                                       again (src/upstream/upstream-credentials.ts)
//   state.down                          the state backend not answering for a while. The alert cannot go through the
//                                       state backend while it is down: it is raised (once) when it answers again,
//                                       with the outage's start and end; `tollgate_state_up` is the live signal.
// The same pass delivers webhooks due in the outbox (./webhooks.ts).
import type { GatewayServices } from "../../services.js";
import { atomicToUsd, type PaymentSigner, usdToAtomic } from "../../payments/index.js";
import { Readiness } from "../actions/readiness.js";
import { raiseAlert, webhookDispatcher } from "./webhooks.js";

/** Where the floors' figures come from; tests and other runtimes may pass their own. */
export interface AlertSources {
  /** The wallet's lowest balance (atomic USD), or undefined when it cannot be read. */
  walletBalance?: () => Promise<bigint | undefined>;
  /** The upstream team's remaining credits, or undefined when they cannot be read. */
  teamCredits?: () => Promise<number | undefined>;
  /** Each upstream account wallet's lowest balance (atomic USD) by account id (docs/accounts.md#wallets); none: {}. */
  accountWalletBalances?: () => Promise<Record<string, bigint | undefined>>;
}

const BUCKETS = 5;
const STATE_DOWN_MARKER_MS = 10 * 60_000;
const FLOOR_MARKER_MS = 24 * 3_600_000;

export class AlertMonitor {
  private flushed = { calls: 0, errors: 0, slow: 0 };
  private downSince: number | undefined;
  private readonly sources: Required<AlertSources>;
  private running: Promise<void> | undefined;

  /** `wallet`: the gateway's signer, whose balance the wallet.low rule reads (through readiness) unless `sources` says. */
  constructor(
    private readonly services: GatewayServices,
    sources: AlertSources = {},
    wallet?: Pick<PaymentSigner, "address">,
  ) {
    const latency = services.config.alerts.rules.upstreamLatency;
    if (latency) services.metrics.upstreamTally.slowSeconds = latency.thresholdMs / 1000;
    let readiness: Readiness | undefined;
    const accountWallets = services.wallets?.addresses() ?? [];
    const probe = () => (readiness ??= new Readiness(services, wallet, { accountWallets }));
    this.sources = {
      walletBalance:
        sources.walletBalance ??
        (async () => {
          const b = (await probe().wallet()).balance;
          return typeof b === "string" ? usdToAtomic(b) : undefined;
        }),
      accountWalletBalances:
        sources.accountWalletBalances ??
        (async () => {
          if (!accountWallets.length) return {};
          const listed = ((await probe().wallet()).accounts ?? []) as Array<{ account: string; balance?: unknown }>;
          return Object.fromEntries(listed.map((a) => [a.account, typeof a.balance === "string" ? usdToAtomic(a.balance) : undefined]));
        }),
      teamCredits: sources.teamCredits ?? (() => this.readTeamCredits()),
    };
    const watch = services.upstream.credentials;
    const marker = (account: string) => `upstream.credentials_rejected:${account}`;
    watch.onRejected = (r) =>
      services.background(
        undefined,
        this.fire(marker(r.account), FLOOR_MARKER_MS, {
          id: `upstream.credentials_rejected:${r.account}:${new Date(r.since).toISOString()}`,
          type: "upstream.credentials_rejected",
          data: { account: r.account, status: r.status, since: new Date(r.since).toISOString() },
          summary: `the upstream rejects the gateway's API key (account ${r.account}, HTTP ${r.status}): tenants get 502 upstream_credentials_rejected until it is rotated`,
        }),
        "alert upstream.credentials_rejected",
      );
    watch.onCleared = (account) =>
      services.background(undefined, services.stores.kv.delete(`alert:${marker(account)}`), "re-arm upstream.credentials_rejected");
  }

  /** Runs a pass every `intervalMs` (unref'd); returns the function that stops it. */
  start(intervalMs: number): () => void {
    const timer = setInterval(() => this.services.background(undefined, this.runOnce(), "alert checks"), intervalMs);
    (timer as { unref?: () => void }).unref?.();
    return () => clearInterval(timer);
  }

  /** One pass: the rules, then the webhooks due. Overlapping calls share the pass in flight; never rejects. */
  runOnce(): Promise<void> {
    this.running ??= (async () => {
      try {
        if (await this.stateAnswers()) {
          await Promise.allSettled([this.upstreamRules(), this.floors()]);
          await webhookDispatcher(this.services).pump();
        }
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private fire(marker: string, ttlMs: number, event: Parameters<typeof raiseAlert>[1]): Promise<void> {
    return this.services.stores.kv.setIfAbsent(`alert:${marker}`, this.services.instanceId, ttlMs).then((won) => {
      if (won) raiseAlert(this.services, event);
    });
  }

  private async stateAnswers(): Promise<boolean> {
    const rule = this.services.config.alerts.rules.stateDown;
    const now = this.services.now();
    try {
      await this.services.stores.ping();
    } catch {
      this.downSince ??= now;
      return false;
    }
    const since = this.downSince;
    this.downSince = undefined;
    if (rule && since !== undefined && now - since >= rule.afterSeconds * 1000) {
      const seconds = Math.round((now - since) / 1000);
      await this.fire("state.down", STATE_DOWN_MARKER_MS, {
        id: `state.down:${new Date(since).toISOString()}`,
        type: "state.down",
        data: {
          backend: this.services.config.state.backend,
          since: new Date(since).toISOString(),
          until: new Date(now).toISOString(),
          seconds,
        },
        summary: `the ${this.services.config.state.backend} state backend did not answer for ${seconds} s`,
      });
    }
    return true;
  }

  /** Flushes this instance's upstream counts to the shared counters of each rule's window, then evaluates the rules. */
  private async upstreamRules(): Promise<void> {
    const { upstreamErrors, upstreamLatency } = this.services.config.alerts.rules;
    if (!upstreamErrors && !upstreamLatency) return;
    const tally = this.services.metrics.upstreamTally;
    const delta = {
      calls: tally.calls - this.flushed.calls,
      errors: tally.errors - this.flushed.errors,
      slow: tally.slow - this.flushed.slow,
    };
    this.flushed = { calls: tally.calls, errors: tally.errors, slow: tally.slow };
    const now = this.services.now();
    const kv = this.services.stores.kv;
    const check = async (kind: "errors" | "slow", rule: { percent: number; windowSeconds: number; minCalls: number }) => {
      const windowMs = rule.windowSeconds * 1000;
      const bucketMs = windowMs / BUCKETS;
      const current = Math.floor(now / bucketMs);
      const key = (b: number, what: string) => `alert:upstream:${kind}:${rule.windowSeconds}:${b}:${what}`;
      if (delta.calls) await kv.incrBy(key(current, "calls"), delta.calls, windowMs * 2);
      if (delta[kind]) await kv.incrBy(key(current, "bad"), delta[kind], windowMs * 2);
      let calls = 0;
      let bad = 0;
      for (let b = current - BUCKETS + 1; b <= current; b++) {
        const [c, x] = await Promise.all([kv.get(key(b, "calls")), kv.get(key(b, "bad"))]);
        calls += Number(c ?? 0);
        bad += Number(x ?? 0);
      }
      if (calls < rule.minCalls || bad * 100 < rule.percent * calls) return;
      const period = Math.floor(now / windowMs);
      const type = kind === "errors" ? "upstream.errors" : "upstream.latency";
      const share = Math.round((bad * 1000) / calls) / 10;
      await this.fire(`${type}:${rule.windowSeconds}:${period}`, windowMs * 2, {
        id: `${type}:${new Date(period * windowMs).toISOString()}`,
        type,
        data: { windowSeconds: rule.windowSeconds, calls, [kind === "errors" ? "failed" : "slow"]: bad, percent: share },
        summary:
          kind === "errors"
            ? `${share} % of ${calls} upstream calls failed in the last ${rule.windowSeconds} s`
            : `${share} % of ${calls} upstream calls took over ${upstreamLatency?.thresholdMs} ms in the last ${rule.windowSeconds} s`,
      });
    };
    await Promise.all([upstreamErrors && check("errors", upstreamErrors), upstreamLatency && check("slow", upstreamLatency)]);
  }

  /** Wallet balance and team credits: fired once when below the floor, re-armed when back above it. */
  private async floors(): Promise<void> {
    const { walletBelow, teamCreditsBelow } = this.services.config.alerts.rules;
    const kv = this.services.stores.kv;
    const floor = async (name: string, below: boolean | undefined, event: () => Parameters<typeof raiseAlert>[1]) => {
      if (below === undefined) return;
      if (below) return this.fire(name, FLOOR_MARKER_MS, event());
      if (await kv.get(`alert:${name}`)) await kv.delete(`alert:${name}`);
    };
    await Promise.all([
      walletBelow !== undefined &&
        this.sources.walletBalance().then((b) =>
          floor("wallet.low", b === undefined ? undefined : b < this.services.payments.amounts.walletBelow!, () => ({
            id: `wallet.low:${new Date(this.services.now()).toISOString()}`,
            type: "wallet.low",
            data: { balance: atomicToUsd(b!), floor: walletBelow },
            summary: `the wallet holds $${atomicToUsd(b!)}, below the floor of $${walletBelow}`,
          })),
        ),
      // Each account wallet its own alert, naming the account (fired and re-armed apart from the gateway's wallet's).
      walletBelow !== undefined &&
        this.sources.accountWalletBalances().then((balances) =>
          Promise.all(
            Object.entries(balances).map(([account, b]) =>
              floor(`wallet.low:${account}`, b === undefined ? undefined : b < this.services.payments.amounts.walletBelow!, () => ({
                id: `wallet.low:${account}:${new Date(this.services.now()).toISOString()}`,
                type: "wallet.low",
                data: { account, balance: atomicToUsd(b!), floor: walletBelow },
                summary: `upstream account ${account}'s wallet holds $${atomicToUsd(b!)}, below the floor of $${walletBelow}`,
              })),
            ),
          ),
        ),
      teamCreditsBelow !== undefined &&
        this.sources.teamCredits().then((n) =>
          floor("team_credits.low", n === undefined ? undefined : n < teamCreditsBelow, () => ({
            id: `team_credits.low:${new Date(this.services.now()).toISOString()}`,
            type: "team_credits.low",
            data: { remaining: n, floor: teamCreditsBelow },
            summary: `the upstream team has ${n} credits left, below the floor of ${teamCreditsBelow}`,
          })),
        ),
    ]);
  }

  private async readTeamCredits(): Promise<number | undefined> {
    const { upstream } = this.services;
    try {
      const res = await upstream.transport.request({
        url: `${upstream.origin}/api/team/credit-info`,
        method: "GET",
        headers: upstream.controlHeaders(`alerts-${crypto.randomUUID()}`),
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status !== 200) {
        await res.body?.cancel().catch(() => {});
        return undefined;
      }
      const body = (await res.json()) as { remaining?: unknown };
      return typeof body.remaining === "number" ? body.remaining : undefined;
    } catch {
      return undefined;
    }
  }
}
