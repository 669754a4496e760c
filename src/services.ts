// Everything a route module needs, built once per gateway and passed down (no globals).
import type { Context } from "hono";
import type { TollgateConfig } from "../config/schema.js";
import type { Logger } from "./log.js";
import type { TenantDirectory } from "./identity/tenants.js";
import type { Upstream } from "./upstream/upstream.js";
import type { StateStores } from "./state/types.js";
import type { TokenService } from "./identity/tokens.js";
import type { WebSocketRelay } from "./web/websocket.js";
import type { PlatformSpeed } from "./web/speed.js";
import type { GatewayMetrics } from "./telemetry/gateway-metrics.js";
import type { TenantSync } from "./identity/tenant-sync.js";
import type { WebhookSender } from "./operators/alerts/webhook-sender.js";
import type { DestinationGuard } from "./web/destination-guard.js";
import type { Tracer } from "./telemetry/tracing.js";
import type { AccessSignIn, OidcSignIn } from "./identity/sign-in.js";
import type { AccountWallets, MoneyEvents, PaymentsMemory } from "./payments/index.js";
import type { RequestRecorder } from "./telemetry/request-recorder.js";
import type { RuntimeCustody } from "./sandboxes/custody.js";
import type { PublicHostsWritten } from "./sandboxes/port-hosts.js";
import type { WebhookDispatcher } from "./operators/alerts/webhooks.js";
import type { SavingsCounter } from "./operators/actions/savings.js";
import type { SalesMount } from "./sales/index.js";
import type { TenantSecrets } from "./identity/tenant-secrets.js";

/**
 * Everything a gateway remembers between requests is built once by createGateway and hangs here, typed (payments,
 * custody, publicHosts, webhooks, savings…): no module keeps a memory of its own keyed by the services or the
 * configuration (`npm run lint:state`, scripts/platform-state.mjs).
 *
 * No secret is here: each reaches only the module that uses it (createGateway hands them out): the upstream API key to
 * `upstream`, token secrets to `tokens`, the wallet key to the PaymentSigner, the metrics token to the metrics route,
 * the webhook secret to the webhook dispatcher.
 */
export interface GatewayServices {
  config: TollgateConfig;
  logger: Logger;
  directory: TenantDirectory;
  /** Keeps `directory` in step with the shared tenant store (admin API changes made on any instance). */
  tenantSync: TenantSync;
  upstream: Upstream;
  stores: StateStores;
  tokens: TokenService;
  webSocketRelay: WebSocketRelay;
  /**
   * The runtime's speed helpers for this gateway (src/web/speed.ts): the Node entry's when its fast paths are on,
   * else the Web default (everything through the Request and Response).
   */
  platform: PlatformSpeed;
  /** Whether a peer is one of `server.trustedProxies` (src/platform/forwarded.ts), matched as parsed once. */
  trustedProxy: (address: string | undefined) => boolean;
  /** The TCP peer's address (Node); undefined where the runtime does not say (Workers): no proxy is then trusted. */
  peerAddress?: (c: Context) => string | undefined;
  metrics: GatewayMetrics;
  /** Traces requests when configured (src/telemetry/tracing.ts); undefined: nothing is traced. */
  tracer?: Tracer;
  /** Sends alert webhooks; the Node entry's checks the resolved address (src/host/node/webhook-sender.ts), else fetch. */
  webhookSender?: WebhookSender;
  /**
   * The one guard for outbound fetches a client or tenant names (src/web/destination-guard.ts): the Node entry's
   * resolves and checks every address and connects to the one it checked; else the Web one (the URL checked).
   */
  destinations: DestinationGuard;
  now: () => number;
  /** Identifies this gateway process in the ledger (crash recovery). */
  instanceId: string;
  /**
   * Whether a request may wait on a promise another request's I/O settles (GatewayDeps.sharedWaits): false on Workers,
   * where each waiting request makes its own state call instead.
   */
  sharedWaits: boolean;
  /**
   * Runs work the gateway does not await beside the request `c` (src/web/background.ts): on Workers it is kept alive by the
   * request's ExecutionContext.waitUntil; everywhere it is tracked until it settles (closing the gateway waits for it,
   * bounded) and a failure is logged as `what`. Pass undefined outside a request.
   */
  background(c: Context | undefined, work: Promise<unknown>, what: string): void;
  /** Registers cleanup run when the gateway closes. */
  onClose(fn: () => Promise<void> | void): void;
  /**
   * Where the money side (src/payments) announces budget and credit events: thresholds, exhaustion, settlements above
   * their hold, drift. Set by createGateway to the operators' listener (alerts, the kill switch); none: nobody hears.
   */
  moneyEvents?: MoneyEvents;
  /**
   * Sends a request through the gateway's own app, the same chain as a client's (identify, scope, quota, meter…): how
   * a request that starts another resource (a task's kept-open browser) creates it as the caller would.
   */
  dispatch?: (req: Request, c: Context) => Promise<Response>;
  /** Whether a bearer is the TOLLGATE_METRICS_TOKEN (src/identity/caller.ts's metricsTokenCheck; the token stays there). */
  isMetricsToken?: (bearer: string) => boolean;
  /** Writes each tenant's requests to the shared request log (src/telemetry/request-recorder.ts), set by createGateway. */
  requests?: RequestRecorder;
  /**
   * The upstream accounts' own wallets beside the gateway's (src/payments/account-wallets.ts): which signer pays a
   * tenant's x402 call. Set by createGateway; absent or empty: the gateway's wallet pays every call.
   */
  wallets?: AccountWallets;
  /** How the last reload of the config file went (Node's reloader sets it; readiness and the console show a failure). */
  configReload?: { ok: boolean; at: number; file: string; error?: string };
  /** What the money side remembers between calls (src/payments/memory.ts): amounts parsed, stopped tenants, holds to retry… */
  payments: PaymentsMemory;
  /** The sandboxes' runtime tokens, held for the control, runtime and port routes (src/sandboxes/custody.ts). */
  custody: RuntimeCustody;
  /** The gateway hosts this instance lately wrote exposed-port URLs under (src/sandboxes/port-hosts.ts). */
  publicHosts: PublicHostsWritten;
  /** Delivers alert webhooks, signed with the webhook secret it alone holds (src/operators/alerts/webhooks.ts). */
  webhooks: WebhookDispatcher;
  /** Cache and coalescing savings not yet written to shared state (src/operators/actions/savings.ts). */
  savings: SavingsCounter;
  /** With [sales]: the rows sold, who is paid, and the book of what wallet buyers paid (src/sales/). */
  sales?: SalesMount;
  /**
   * The tenants' secrets (src/identity/tenant-secrets.ts): sealed at rest, never answered back; `valueFor(tenant, name)`
   * reads a value and the hosts, methods and paths it may go to (anew from the shared state at each call).
   */
  vault: TenantSecrets;
  /** Sign-in through an identity provider (src/identity/sign-in.ts), when [operators.oidc] or [operators.access] is set. */
  signIn?: { oidc?: OidcSignIn; access?: AccessSignIn };
}
