// Readiness: can this instance serve? State backend, upstream, signer and the wallet's balance, each checked cheaply.
import { createClient, http, type Client } from "viem";
import { readContract } from "viem/actions";
import type { GatewayServices } from "../../services.js";
import { atomicToUsd, type PaymentSigner } from "../../payments/index.js";

const BALANCE_OF_ABI = [
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "account", type: "address" }],
    outputs: [{ type: "uint256" }],
  },
] as const;

export interface CheckResult {
  ok: boolean;
  [figure: string]: unknown;
}

export interface ReadinessReport {
  /** ready: all good; degraded: serves, but payments may fail (no signer, low or unknown balance); not_ready: cannot serve. */
  status: "ready" | "degraded" | "not_ready";
  checks: { state: CheckResult; upstream: CheckResult; signer: CheckResult; wallet: CheckResult; config?: CheckResult };
}

export interface ReadinessOptions {
  /** How long an upstream probe answer is reused. */
  upstreamCacheMs?: number;
  /** How long a wallet balance is reused. */
  walletCacheMs?: number;
  timeoutMs?: number;
  /** The upstream accounts' own wallets (docs/accounts.md#wallets): each one's balance read beside the gateway's. */
  accountWallets?: Array<{ account: string; address: `0x${string}` }>;
}

/**
 * A value computed at most once per `ttlMs`; concurrent callers share the computation in flight, unless `shared` is
 * false (Workers: each computes its own, as workerd may cancel a request waiting on another request's I/O).
 */
class Cached<T> {
  private value: { at: number; v: T } | undefined;
  private inflight: Promise<T> | undefined;
  constructor(
    private readonly ttlMs: number,
    private readonly compute: () => Promise<T>,
    private readonly shared = true,
  ) {}
  /** Forgets the value: the next get computes anew (a rotated key is tried at once). */
  reset(): void {
    this.value = undefined;
  }
  get(now: number): Promise<T> {
    if (this.value && now - this.value.at < this.ttlMs) return Promise.resolve(this.value.v);
    if (!this.shared)
      return this.compute().then((v) => {
        this.value = { at: now, v };
        return v;
      });
    this.inflight ??= this.compute()
      .then((v) => {
        this.value = { at: now, v };
        return v;
      })
      .finally(() => (this.inflight = undefined));
    return this.inflight;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

export class Readiness {
  private readonly timeoutMs: number;
  private readonly upstreamProbe: Cached<CheckResult>;
  private readonly walletProbe: Cached<CheckResult>;
  private readonly clients = new Map<string, Client>();
  private readonly accountWallets: Array<{ account: string; address: `0x${string}` }>;
  /** The credential generation the cached upstream probe was made with. */
  private probedGeneration = 0;

  /** `signer`: the gateway's signer (its address is all readiness reads), undefined when no wallet key is set. */
  constructor(
    private readonly services: Pick<
      GatewayServices,
      "config" | "stores" | "upstream" | "now" | "configReload" | "payments" | "sharedWaits"
    >,
    private readonly signer: Pick<PaymentSigner, "address"> | undefined,
    opts: ReadinessOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 2000;
    this.accountWallets = opts.accountWallets ?? [];
    this.upstreamProbe = new Cached(opts.upstreamCacheMs ?? 5000, () => this.probeUpstream(), services.sharedWaits);
    this.walletProbe = new Cached(opts.walletCacheMs ?? 30_000, () => this.probeWallet(), services.sharedWaits);
  }

  async check(): Promise<ReadinessReport> {
    const now = this.services.now();
    const watch = this.services.upstream.credentials;
    if (watch.generation !== this.probedGeneration) {
      this.probedGeneration = watch.generation;
      this.upstreamProbe.reset();
    }
    const [state, probed, wallet] = await Promise.all([this.probeState(), this.upstreamProbe.get(now), this.walletProbe.get(now)]);
    // A rejection a tenant's call met since the probe counts too.
    const rejected = watch.current();
    const upstream: CheckResult =
      rejected.length && probed.ok && probed.credentials !== "rejected"
        ? { ...probed, credentials: "rejected", error: rejectedError(rejected.map((r) => r.account)) }
        : probed;
    const signer = this.signerCheck();
    const reload = this.services.configReload;
    const config: CheckResult | undefined = reload
      ? reload.ok
        ? { ok: true, reloadedAt: new Date(reload.at).toISOString() }
        : {
            ok: false,
            failedAt: new Date(reload.at).toISOString(),
            error: `the last reload of ${reload.file} failed; serving with the config as it was (see the log)`,
          }
      : undefined;
    const degraded = !signer.ok || !wallet.ok || upstream.credentials === "rejected" || config?.ok === false;
    const status = !state.ok || !upstream.ok ? "not_ready" : degraded ? "degraded" : "ready";
    return { status, checks: { state, upstream, signer, wallet, ...(config ? { config } : {}) } };
  }

  /** The wallet check alone (cached like check()'s): `balance` is the lowest balance in USD when it could be read. */
  wallet(): Promise<CheckResult> {
    return this.walletProbe.get(this.services.now());
  }

  private async probeState(): Promise<CheckResult> {
    const started = performance.now();
    try {
      await withTimeout(this.services.stores.ping(), this.timeoutMs, "state ping");
      // A rehearsal on memory (state.rehearsal) says so: nothing here outlives the process.
      const rehearsal = this.services.config.state.rehearsal
        ? { rehearsal: true, warning: "state in this process's memory (state.rehearsal): lost when it stops" }
        : {};
      return { ok: true, backend: this.services.config.state.backend, ...rehearsal, ms: ms(started) };
    } catch {
      // The error names the backend's host; the check says only that it did not answer.
      return { ok: false, backend: this.services.config.state.backend, ms: ms(started), error: "the state backend did not answer" };
    }
  }

  /**
   * Any HTTP answer from the upstream means it is reachable; only a network failure or timeout does not. The probe is
   * a cheap authenticated read (`GET /api/team/credit-info` with the gateway's key): a 401/403 to it means the key is
   * rejected (`credentials: "rejected"`, the gateway degraded), counted and alerted like a tenant's call meeting it.
   */
  private async probeUpstream(): Promise<CheckResult> {
    const started = performance.now();
    const ctrl = new AbortController();
    const timer = setTimeout(() => ctrl.abort(new Error("timeout")), this.timeoutMs);
    const upstream = this.services.upstream;
    const account = upstream.accounts?.configured ? upstream.accounts.defaultId : "default";
    let headers: Headers | undefined;
    try {
      headers = upstream.controlHeaders(`ready-${crypto.randomUUID()}`, undefined, undefined);
    } catch {
      headers = undefined; // no key to try: reachability alone
    }
    try {
      const res = await upstream.transport.request({
        url: `${upstream.origin}${headers ? "/api/team/credit-info" : "/"}`,
        method: "GET",
        headers: headers ?? new Headers(),
        signal: ctrl.signal,
      });
      if (headers && (await upstream.credentials.isRejection(res))) {
        await res.body?.cancel().catch(() => {});
        upstream.credentials.reject(account, res.status);
        return { ok: true, status: res.status, credentials: "rejected", error: rejectedError([account]), ms: ms(started) };
      }
      await res.body?.cancel().catch(() => {});
      if (headers && res.status < 400) upstream.credentials.accept(account);
      return { ok: true, status: res.status, ...(headers && res.status < 400 ? { credentials: "accepted" } : {}), ms: ms(started) };
    } catch {
      return {
        ok: false,
        ms: ms(started),
        error: ctrl.signal.aborted ? `no answer within ${this.timeoutMs} ms` : "the upstream could not be reached",
      };
    } finally {
      clearTimeout(timer);
    }
  }

  private signerCheck(): CheckResult {
    const enabled = this.services.config.payments.enabled;
    const present = !!this.signer;
    if (!enabled) return { ok: true, present, payments: "disabled" };
    return present ? { ok: true, present } : { ok: false, present, error: "no wallet key (TOLLGATE_WALLET_KEY): paid calls answer 503" };
  }

  /**
   * balanceOf(wallet) of each allowed payment asset on each network with an RPC; the smallest must be above the floor.
   * With account wallets, each is read the same way and listed under `accounts` (`{account, ok, balance, balances…}`;
   * like the gateway's, never its address); one below the floor makes the check fail, naming its account. `balance`
   * stays the gateway's wallet's.
   */
  private async probeWallet(): Promise<CheckResult> {
    const { payments } = this.services.config;
    const floor = this.services.payments.amounts.minWalletBalance;
    const others = this.accountWallets;
    if (!payments.enabled || (!this.signer && !others.length)) return { ok: true, skipped: "no wallet" };
    const listed = others.length ? { accounts: others.map((w) => ({ account: w.account })) } : {};
    if (floor === 0n) return { ok: true, skipped: "payments.minWalletBalance is 0", ...listed };
    const networks = Object.keys(payments.rpc).filter((n) => !payments.networks || payments.networks.includes(n));
    const assets = payments.assets ?? [];
    if (!networks.length || !assets.length)
      return { ok: true, skipped: "needs payments.rpc and payments.assets to read the balance", ...listed };
    const main: CheckResult = this.signer
      ? await this.balanceCheck(this.signer.address, networks, assets, floor)
      : { ok: true, skipped: "no gateway wallet (TOLLGATE_WALLET_KEY)" };
    if (!others.length) return main;
    const accounts = await Promise.all(
      others.map(
        async (w): Promise<CheckResult> => ({
          account: w.account,
          ...(await this.balanceCheck(w.address, networks, assets, floor)),
        }),
      ),
    );
    const low = accounts.find((a) => !a.ok);
    return {
      ...main,
      ok: main.ok && !low,
      accounts,
      ...(main.ok && low ? { error: `upstream account ${String(low.account)}'s wallet: ${String(low.error)}` } : {}),
    };
  }

  private async balanceCheck(address: `0x${string}`, networks: string[], assets: string[], floor: bigint): Promise<CheckResult> {
    const balances: Array<{ network: string; asset: string; balance: string }> = [];
    let lowest: bigint | undefined;
    try {
      for (const network of networks) {
        for (const asset of assets) {
          const b = await withTimeout(
            readContract(this.client(network), {
              address: asset as `0x${string}`,
              abi: BALANCE_OF_ABI,
              functionName: "balanceOf",
              args: [address],
            }),
            this.timeoutMs,
            "balanceOf",
          );
          balances.push({ network, asset, balance: atomicToUsd(b) });
          if (lowest === undefined || b < lowest) lowest = b;
        }
      }
    } catch {
      return { ok: false, floor: atomicToUsd(floor), balances, error: "the wallet balance could not be read from the RPC" };
    }
    const ok = lowest! >= floor;
    return {
      ok,
      balance: atomicToUsd(lowest!),
      floor: atomicToUsd(floor),
      balances,
      ...(ok ? {} : { error: `wallet balance $${atomicToUsd(lowest!)} is below the floor of $${atomicToUsd(floor)}` }),
    };
  }

  private client(network: string): Client {
    let c = this.clients.get(network);
    if (!c) {
      c = createClient({
        transport: http(this.services.config.payments.rpc[network], { retryCount: 0, timeout: this.timeoutMs }),
      });
      this.clients.set(network, c);
    }
    return c;
  }
}

const rejectedError = (accounts: string[]) =>
  `the upstream rejects the gateway's API key (${accounts.join(", ")}): tenants get 502 upstream_credentials_rejected; rotate it (TOLLGATE_UPSTREAM_API_KEY or its file)`;

const ms = (started: number) => Math.round((performance.now() - started) * 10) / 10;
