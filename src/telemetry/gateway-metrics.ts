// The gateway's metric set: every family defined once, label values bounded, and one method per thing the chain counts.
import type { TenantDirectory } from "../identity/tenants.js";
import type { LedgerState, StateStores } from "../state/types.js";
import { LedgerGauges } from "./ledger-gauges.js";
import type { CounterChild, GaugeChild, HistogramChild, MetricFamily, MetricsRegistry } from "./types.js";
import { TextRegistry } from "./text-registry.js";
import { VERSION } from "../operators/version.js";
import { BoundedLabel, METHOD_INDEX, METHODS, routeClassOf, runtimeName, type WebSocketKind } from "./metric-labels.js";

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

const usd = (atomic: bigint) => Number(atomic) / 1e6;

/** A family's children by label values (both registries cache them, so a repeated label set is one Map lookup). */
const children =
  <C>(family: MetricFamily<C>) =>
  (...values: string[]): C =>
    family.labels(...values);

/** This instance's upstream calls since it started: what the upstream alert rules read (src/operators/alerts/alert-monitor.ts). */
export interface UpstreamTally {
  calls: number;
  /** Answered 5xx, or not at all. */
  errors: number;
  /** Slower than `slowSeconds` to their response headers. */
  slow: number;
  slowSeconds: number;
}

/** Per route: its class's histogram, and per tenant the counters keyed by `status * 8 + method index` (one number). */
type RequestChildren = { seconds: HistogramChild; byTenant: Map<string, Map<number, CounterChild>> };

export class GatewayMetrics {
  private readonly routes = new BoundedLabel(256);
  /** Each route row's class (its `metric` field), by row name: handed over by the gateway that mounts the rows. */
  private readonly rowClasses = new Map<string, string>();
  private readonly requestChildren = new Map<string, RequestChildren>();
  private readonly tenants = new BoundedLabel(1024);
  private readonly codes = new BoundedLabel(64);
  private readonly reasons = new BoundedLabel(128);
  private readonly upstreamByRoute = new Map<string, HistogramChild>();
  readonly upstreamTally: UpstreamTally = { calls: 0, errors: 0, slow: 0, slowSeconds: Infinity };

  private readonly requestsTotal: (route: string, method: string, code: string, tenant: string) => CounterChild;
  private readonly requestSeconds: (routeClass: string) => HistogramChild;
  private readonly upstreamSeconds: (routeClass: string) => HistogramChild;
  private readonly refusalsTotal: (reason: string) => CounterChild;
  private readonly tokensMinted: (kind: string) => CounterChild;
  private readonly webhookDeliveries: (outcome: string) => CounterChild;
  private readonly killSwitchTotal: (action: string) => CounterChild;
  private readonly reservedAheadTotal: (outcome: string) => CounterChild;
  private readonly alertsTotal: (type: string) => CounterChild;
  private readonly paymentsTotal: (tenant: string, state: string) => CounterChild;
  private readonly paymentsUsd: (tenant: string, state: string) => CounterChild;
  private readonly cacheTotal: (outcome: string) => CounterChild;
  private readonly cacheSaved: CounterChild;
  private readonly wsOpen: (kind: string) => GaugeChild;
  private readonly wsTotal: (kind: string) => CounterChild;
  private readonly stateErrors: CounterChild;
  /** The scrape-time gauges read from the ledger (./ledger-gauges.ts). */
  private readonly ledgerGauges: LedgerGauges;
  private readonly creditsSpentUsd: (tenant: string, route: string) => CounterChild;
  private readonly creditsDrift: GaugeChild;
  private readonly salesInboundMismatch: GaugeChild;
  private readonly accountBreakerOpen: (account: string) => GaugeChild;
  private readonly accountSpills: (account: string, reason: string) => CounterChild;
  private readonly accountRetries: (account: string) => CounterChild;
  private readonly credentialsRejectedTotal: (account: string) => CounterChild;
  private readonly credentialsRejectedNow: (account: string) => GaugeChild;
  private readonly configReloadFailedNow: GaugeChild;
  private readonly configReloadsTotal: (result: string) => CounterChild;
  private readonly accounts = new BoundedLabel(64);

  constructor(
    readonly registry: MetricsRegistry = new TextRegistry(),
    build: { version?: string; runtime?: string } = {},
  ) {
    const r = registry;
    r.gauge({ name: "tollgate_build_info", help: "Always 1: the version and runtime of this gateway.", labelNames: ["version", "runtime"] })
      .labels(build.version ?? VERSION, build.runtime ?? runtimeName())
      .set(1);
    this.requestsTotal = children(
      r.counter({
        name: "tollgate_requests_total",
        help: "Requests answered, by route (a route-table row or a fixed surface), method, HTTP status code and tenant.",
        labelNames: ["route", "method", "code", "tenant"],
      }),
    );
    this.requestSeconds = children(
      r.histogram({
        name: "tollgate_request_duration_seconds",
        help: "Time from request to response headers at the gateway, by route class.",
        labelNames: ["class"],
        buckets: LATENCY_BUCKETS,
      }),
    );
    this.upstreamSeconds = children(
      r.histogram({
        name: "tollgate_upstream_duration_seconds",
        help: "Time from sending an upstream request to its response headers, by route class.",
        labelNames: ["class"],
        buckets: LATENCY_BUCKETS,
      }),
    );
    this.refusalsTotal = children(
      r.counter({
        name: "tollgate_refusals_total",
        help: "Requests the gateway refused itself, by reason (the error code in the JSON answer).",
        labelNames: ["reason"],
      }),
    );
    this.tokensMinted = children(
      r.counter({ name: "tollgate_tokens_minted_total", help: "Gateway tokens minted, by kind.", labelNames: ["kind"] }),
    );
    this.webhookDeliveries = children(
      r.counter({
        name: "tollgate_webhook_deliveries_total",
        help: "Alert webhook delivery attempts by outcome (delivered, failed, given_up).",
        labelNames: ["outcome"],
      }),
    );
    this.killSwitchTotal = children(
      r.counter({
        name: "tollgate_kill_switch_total",
        help: "Kill-switch actions: tenants killed, and the resources stopped and tokens revoked with them.",
        labelNames: ["action"],
      }),
    );
    this.reservedAheadTotal = children(
      r.counter({
        name: "tollgate_payments_reserved_ahead_total",
        help: "Payments by the hold reserved ahead beside the unpaid call (docs/paid-round-trips.md): taken (signed with no state round trip after the 402), released (not used: another option asked, or its reservation refused), none (nothing to reserve ahead: reserved after the 402).",
        labelNames: ["outcome"],
      }),
    );
    this.alertsTotal = children(
      r.counter({ name: "tollgate_alerts_total", help: "Alerts raised (once fleet-wide each), by type.", labelNames: ["type"] }),
    );
    this.paymentsTotal = children(
      r.counter({
        name: "tollgate_payments_total",
        help: "Ledger entries that reached each state (reserved, committed, released, uncertain), by tenant.",
        labelNames: ["tenant", "state"],
      }),
    );
    this.paymentsUsd = children(
      r.counter({
        name: "tollgate_payments_usd_total",
        help: "USD amount of the ledger entries that reached each state, by tenant.",
        labelNames: ["tenant", "state"],
      }),
    );
    this.cacheTotal = children(
      r.counter({
        name: "tollgate_cache_requests_total",
        help: "Paid-answer lookups by outcome (hit, miss, coalesced, bypass, idempotent-replay).",
        labelNames: ["outcome"],
      }),
    );
    this.cacheSaved = r
      .counter({
        name: "tollgate_cache_saved_usd_total",
        help: "USD not paid because a cached or coalesced answer was served.",
        labelNames: [],
      })
      .labels();
    this.wsOpen = children(
      r.gauge({ name: "tollgate_websockets_open", help: "WebSocket relays open now, by kind (cdp, runtime, port).", labelNames: ["kind"] }),
    );
    this.wsTotal = children(
      r.counter({ name: "tollgate_websockets_total", help: "WebSocket relays opened, by kind.", labelNames: ["kind"] }),
    );
    this.stateErrors = r
      .counter({
        name: "tollgate_state_errors_total",
        help: "Requests and scrapes that failed because the state backend was unavailable.",
        labelNames: [],
      })
      .labels();
    this.ledgerGauges = new LedgerGauges(r, () => this.stateError());
    this.creditsSpentUsd = children(
      r.counter({
        name: "tollgate_credits_spent_usd_total",
        help: "USD of credit spend settled in the ledger (the tenant's multiplier included), by tenant and route.",
        labelNames: ["tenant", "route"],
      }),
    );
    this.creditsDrift = r
      .gauge({
        name: "tollgate_credits_drift_usd",
        help: "The team's credit usage reported by the upstream minus the ledger's credit spend over the same time, at cost (the reconciler's last pass).",
        labelNames: [],
      })
      .labels();
    this.salesInboundMismatch = r
      .gauge({
        name: "tollgate_sales_inbound_mismatches",
        help: "Sales whose settlement transaction does not carry the buyer's transfer to the payee on chain (missing or mismatched; the reconciler's last pass).",
        labelNames: [],
      })
      .labels();
    this.accountBreakerOpen = children(
      r.gauge({
        name: "tollgate_upstream_account_breaker_open",
        help: "1 while an upstream account's circuit breaker is open or half-open (new work goes elsewhere), else 0.",
        labelNames: ["account"],
      }),
    );
    this.accountSpills = children(
      r.counter({
        name: "tollgate_upstream_account_spills_total",
        help: "Creations that moved on from an upstream account to the next, by account and reason (limit, failed).",
        labelNames: ["account", "reason"],
      }),
    );
    this.accountRetries = children(
      r.counter({
        name: "tollgate_upstream_account_retries_total",
        help: "Safe upstream calls (GETs) tried again after no answer or a 502/503/504, by account.",
        labelNames: ["account"],
      }),
    );
    this.credentialsRejectedTotal = children(
      r.counter({
        name: "tollgate_upstream_credentials_rejected_total",
        help: "Upstream answers of 401/403 to the gateway's own API key (tenants get 502 upstream_credentials_rejected), by account.",
        labelNames: ["account"],
      }),
    );
    this.credentialsRejectedNow = children(
      r.gauge({
        name: "tollgate_upstream_credentials_rejected",
        help: "1 while the upstream rejects the gateway's API key (its last authenticated answer was 401/403), else 0; by account.",
        labelNames: ["account"],
      }),
    );
    this.configReloadFailedNow = r
      .gauge({
        name: "tollgate_config_reload_failed",
        help: "1 when the last reload of the config file failed (the gateway serves with the config as it was), else 0.",
        labelNames: [],
      })
      .labels();
    this.configReloadsTotal = children(
      r.counter({
        name: "tollgate_config_reloads_total",
        help: "Reloads of the config file (SIGHUP or a change seen), by result (ok, failed).",
        labelNames: ["result"],
      }),
    );
  }

  /** The route table's rows, whose `metric` field is their class in the latency histograms (createGateway calls this). */
  classifyRows(rows: Iterable<{ readonly name: string; readonly metric: string }>): void {
    for (const r of rows) this.rowClasses.set(r.name, r.metric);
  }

  /** A route label's class: its row's `metric` field, else (a request no row named) its surface's. */
  private classOf(route: string): string {
    return this.rowClasses.get(route) ?? routeClassOf(route);
  }

  /** One answered request (the access log calls this once per request): nested lookups, no allocation once warm. */
  request(route: string, method: string, status: number, tenant: string, seconds: number): void {
    const r = this.routes.of(route);
    let perRoute = this.requestChildren.get(r);
    if (!perRoute) this.requestChildren.set(r, (perRoute = { seconds: this.requestSeconds(this.classOf(r)), byTenant: new Map() }));
    const t = this.tenants.of(tenant);
    let counters = perRoute.byTenant.get(t);
    if (!counters) perRoute.byTenant.set(t, (counters = new Map()));
    const m = METHOD_INDEX[method] ?? 0;
    let counter = counters.get(status * 8 + m);
    if (!counter) counters.set(status * 8 + m, (counter = this.requestsTotal(r, METHODS[m]!, this.codes.of(String(status)), t)));
    counter.inc();
    perRoute.seconds.observe(seconds);
  }

  /** One upstream call, timed to its response headers (`failed`: answered 5xx or not at all). */
  upstream(route: string, seconds: number, failed = false): void {
    const r = this.routes.of(route);
    let h = this.upstreamByRoute.get(r);
    if (!h) this.upstreamByRoute.set(r, (h = this.upstreamSeconds(this.classOf(r))));
    h.observe(seconds);
    const t = this.upstreamTally;
    t.calls++;
    if (failed) t.errors++;
    if (seconds > t.slowSeconds) t.slow++;
  }

  /** An upstream call that got no answer (network error, timeout): counted for the error-rate alert. */
  upstreamFailed(): void {
    this.upstreamTally.calls++;
    this.upstreamTally.errors++;
  }

  /** A request the gateway refused itself, by its error code. */
  refusal(reason: string): void {
    this.refusalsTotal(this.reasons.of(reason)).inc();
  }

  tokenMinted(kind: string): void {
    this.tokensMinted(kind).inc();
  }

  webhookDelivery(outcome: "delivered" | "failed" | "given_up"): void {
    this.webhookDeliveries(outcome).inc();
  }

  killSwitch(action: "tenant_killed" | "resource_stopped" | "token_revoked", by = 1): void {
    if (by > 0) this.killSwitchTotal(action).inc(by);
  }

  /** What a payment did with the hold reserved ahead for it (src/payments/payer.ts). */
  reservedAhead(outcome: "taken" | "released" | "none"): void {
    this.reservedAheadTotal(outcome).inc();
  }

  alert(type: string): void {
    this.alertsTotal(type).inc();
  }

  /** A ledger entry reached `state` (called by the metered ledger, ./metered-ledger.ts). */
  payment(tenant: string, state: LedgerState, atomic: bigint): void {
    const t = this.tenants.of(tenant);
    this.paymentsTotal(t, state).inc();
    if (atomic > 0n) this.paymentsUsd(t, state).inc(usd(atomic));
  }

  /** Credit spend settled (or corrected upward; a counter cannot go down) for a tenant on a route row. */
  creditsSpent(tenant: string, route: string, atomic: bigint): void {
    if (atomic > 0n) this.creditsSpentUsd(this.tenants.of(tenant), this.routes.of(route)).inc(usd(atomic));
  }

  /** The reconciler's last drift figure (USD, signed). */
  creditsDriftUsd(value: number): void {
    this.creditsDrift.set(value);
  }

  /** The inbound reconciliation's last count of sales the chain does not show (src/sales/reconcile.ts). */
  salesInboundMismatches(count: number): void {
    this.salesInboundMismatch.set(count);
  }

  /** A paid-answer lookup; `savedAtomic` is the price of the answer served without paying. */
  cache(outcome: string, savedAtomic: bigint | undefined): void {
    this.cacheTotal(outcome).inc();
    if (savedAtomic && savedAtomic > 0n) this.cacheSaved.inc(usd(savedAtomic));
  }

  /** A relay opened; the returned function (call it once) records its close. */
  webSocketOpened(kind: WebSocketKind): () => void {
    this.wsTotal(kind).inc();
    const open = this.wsOpen(kind);
    open.inc();
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      open.dec();
    };
  }

  stateError(): void {
    this.stateErrors.inc();
  }

  /** An upstream account's breaker changed state (with [[upstream.accounts]]). */
  accountBreaker(account: string, state: "closed" | "open" | "half-open"): void {
    this.accountBreakerOpen(this.accounts.of(account)).set(state === "closed" ? 0 : 1);
  }

  /** A creation moved on from `account` to the next. */
  accountSpill(account: string, reason: string): void {
    this.accountSpills(this.accounts.of(account), reason).inc();
  }

  /** A safe call to `account` tried again. */
  accountRetry(account: string): void {
    this.accountRetries(this.accounts.of(account)).inc();
  }

  /** The upstream answered the gateway's own key with 401/403 (`rejected`), or accepted it again. */
  upstreamCredentials(account: string, rejected: boolean): void {
    const a = this.accounts.of(account);
    if (rejected) this.credentialsRejectedTotal(a).inc();
    this.credentialsRejectedNow(a).set(rejected ? 1 : 0);
  }

  /** A reload of the config file ended: `ok` false leaves tollgate_config_reload_failed at 1 until one succeeds. */
  configReload(ok: boolean): void {
    this.configReloadsTotal(ok ? "ok" : "failed").inc();
    this.configReloadFailedNow.set(ok ? 0 : 1);
  }

  /** Refreshes the scrape-time gauges from the ledger: budget spent and remaining per window, held amounts. */
  collectLedger(stores: StateStores, directory: TenantDirectory, now: number): Promise<void> {
    return this.ledgerGauges.collect(stores, directory, now);
  }

  render(): Promise<string> {
    return this.registry.render();
  }
}
