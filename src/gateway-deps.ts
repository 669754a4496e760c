// What a gateway is given (GatewayDeps: the entry's transport, relay, stores, signers...) and what createGateway
// (gateway.ts) hands back (Gateway), with the parts it builds from the config and those deps before the app: the
// payment signer, the accounts' wallets, the upstream accounts; and the env a sub-request runs with.
import type { Hono, Context, ExecutionContext } from "hono";
import type { TollgateConfig } from "../config/schema.js";
import { ConfigError, type Secrets } from "../config/load.js";
import type { GatewayEnv } from "./context.js";
import type { Logger, LogSink } from "./log.js";
import type { TenantDirectory } from "./identity/tenants.js";
import type { UpstreamTransport } from "./web/transport.js";
import type { Upstream } from "./upstream/upstream.js";
import { UpstreamAccounts } from "./upstream/accounts.js";
import type { WebSocketRelay } from "./web/websocket.js";
import type { PlatformSpeed } from "./web/speed.js";
import type { StateStores } from "./state/types.js";
import type { GatewayServices } from "./services.js";
import { AccountWallets, localWalletSigner, type PaymentReconciler, PaymentSigner, type WalletSigner } from "./payments/index.js";
import type { GatewayMetrics } from "./telemetry/gateway-metrics.js";
import type { AlertMonitor, AlertSources } from "./operators/alerts/alert-monitor.js";
import type { DocsAssets } from "./operators/http/docs.js";
import type { Tracer } from "./telemetry/tracing.js";

export interface GatewayDeps {
  secrets: Secrets;
  /** Upstream transport; the Node entry passes undici, Workers use fetch. */
  transport?: UpstreamTransport;
  /** WebSocket relay; the Node entry passes the `ws` relay, Workers hand sockets through with fetch. */
  webSocketRelay?: WebSocketRelay;
  /** The TCP peer's address, for `server.trustedProxies`; the Node entry passes it, Workers have none. */
  peerAddress?: GatewayServices["peerAddress"];
  /** The runtime's speed helpers for this gateway; the Node entry passes its own, elsewhere the Web default. */
  platform?: PlatformSpeed;
  /**
   * false where the runtime never hands the app an ExecutionContext (Node): work started beside a request does not ask
   * the request for one (Hono's getter throws without it, a stack trace each time). Default: asked (Workers).
   */
  executionContexts?: boolean;
  /**
   * false where a request must never wait on a promise another request's I/O settles (Workers: workerd may see such a
   * request as hung and cancel it with a 500 once the other request is done). Where a wait is needed there, each
   * request makes its own state call. Default: shared (Node).
   */
  sharedWaits?: boolean;
  /** Shared state; memory by default, Redis or Durable Objects for fleets. */
  stores?: StateStores;
  logSink?: LogSink;
  /** Metrics; the Node entry passes prom-client's, Workers keep in-process counters (src/telemetry/text-registry.ts). */
  metrics?: GatewayMetrics;
  now?: () => number;
  instanceId?: string;
  /** Where the wallet and team-credit alert rules read their figures (default: readiness's wallet probe, the upstream). */
  alertSources?: AlertSources;
  /** Traces when tracing.otlpEndpoint is set (OpenTelemetry on Node, OTLP over fetch on Workers); none: nothing traced, nothing spent. */
  tracer?: Tracer;
  /** The docs page's assets (swagger-ui-dist); the Node entry reads them from node_modules, Workers have none. */
  docsAssets?: DocsAssets;
  /** Alert webhooks; the Node entry passes one that checks the resolved address and connects to it. */
  webhookSender?: GatewayServices["webhookSender"];
  /** Outbound fetches a client or tenant names; the Node entry passes one that checks resolved addresses. */
  destinations?: GatewayServices["destinations"];
  /**
   * What holds the wallet's key when it is not the local TOLLGATE_WALLET_KEY (`[wallet] signer`): the Node entry opens
   * a PKCS#11 token (src/host/node/pkcs11-signer.ts). The gateway closes it when it closes.
   */
  walletSigner?: WalletSigner;
  /**
   * The accounts' wallets held in a remote signer (`walletSigner` of [[upstream.accounts]]), by account id: opened by
   * the Node entry (src/host/node/remote-signer.ts). The gateway closes them when it closes.
   */
  accountWalletSigners?: Record<string, WalletSigner>;
}

export interface Gateway {
  app: Hono<GatewayEnv>;
  services: GatewayServices;
  logger: Logger;
  upstream: Upstream;
  directory: TenantDirectory;
  stores: StateStores;
  /** Settles held payments from the chain; the Node entry runs it on a timer. */
  reconciler: PaymentReconciler;
  /** Evaluates the alert rules and delivers webhooks due; the Node entry runs it on a timer, Workers on the cron. */
  alerts: AlertMonitor;
  /**
   * Waits up to `backgroundMs` (default 2 s) for background work still running (an alert webhook being delivered, its
   * audit record), then releases timers and connections held by the gateway's state.
   */
  close(backgroundMs?: number): Promise<void>;
  /**
   * Secrets re-read where they are kept (a file changed, docs/secrets.md), each handed to its one holder as
   * createGateway did: the upstream key to `upstream` (from the next call), token secrets to `tokens` (the replaced one
   * verifies `tokenGraceMs` more), the webhook secret to the dispatcher, the metrics token to its check. Returns the
   * names of those that changed; never logs a value (each new one is added to the log's redactor).
   */
  rotateSecrets(next: RotatableSecrets, tokenGraceMs: number): string[];
}

/**
 * The secrets a running gateway takes anew (the wallet keys and the PKCS#11 PIN are read at start only):
 * `accountApiKeys` holds the keys of the accounts whose apiKeyFile was re-read, by account id.
 */
export type RotatableSecrets = Pick<Secrets, "upstreamApiKey" | "tokenSecrets" | "webhookSecret" | "metricsToken" | "accountApiKeys">;

/** The request's ExecutionContext where the runtime has one (Workers), so a sub-request's background work is kept alive. */
export function executionContextOf(c: Context): ExecutionContext | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}

/**
 * The env a sub-request runs with: the client's, without its Node response object, so an answer the Node transport
 * would relay socket to socket (runtime plane, src/host/node/direct-relay.ts) comes back to the caller as a Response instead
 * of being written to the client's connection.
 */
export function subrequestEnv(env: unknown): unknown {
  if (!env || typeof env !== "object" || !("outgoing" in env)) return env;
  const { outgoing: _client, ...rest } = env as Record<string, unknown>;
  return rest;
}

/**
 * The signer `[wallet] signer` names: the local key (TOLLGATE_WALLET_KEY) or one the entry opened (deps.walletSigner);
 * none when no key is configured (paid calls answer 503). @throws ConfigError when the two disagree.
 */
export function paymentSignerOf(config: TollgateConfig, deps: GatewayDeps): PaymentSigner | undefined {
  const kind = config.wallet.signer;
  if (kind === "local") return deps.secrets.walletKey ? new PaymentSigner(localWalletSigner(deps.secrets.walletKey)) : undefined;
  if (deps.secrets.walletKey)
    throw new ConfigError(
      [`TOLLGATE_WALLET_KEY: set, but wallet.signer is "${kind}": the key lives in the signer; unset it`],
      "environment",
    );
  if (!deps.walletSigner || deps.walletSigner.kind !== kind)
    throw new ConfigError([`wallet.signer: "${kind}" is opened by the Node entry (tollgate start); this runtime cannot`], "configuration");
  return new PaymentSigner(deps.walletSigner);
}

/**
 * The accounts' own wallets beside the gateway's `signer` (docs/accounts.md#wallets): walletKeyEnv / walletKeyFile are
 * local keys, each its own signer the one holder; walletSigner is a remote signer the Node entry opened. None
 * configured: the gateway's wallet pays every call, as before. @throws ConfigError naming the account's field.
 */
export function accountWallets(config: TollgateConfig, deps: GatewayDeps, signer: PaymentSigner | undefined): AccountWallets {
  const keys = deps.secrets.accountWalletKeys ?? {};
  const byAccount = new Map<string, PaymentSigner>();
  config.upstream.accounts?.forEach((a, i) => {
    if (a.walletSigner) {
      const opened = deps.accountWalletSigners?.[a.id];
      if (!opened)
        throw new ConfigError(
          [`upstream.accounts[${i}].walletSigner: a remote signer is opened by the Node entry (tollgate start); this runtime cannot`],
          "configuration",
        );
      byAccount.set(a.id, new PaymentSigner(opened));
      return;
    }
    if (!a.walletKeyEnv && !a.walletKeyFile) return;
    const key = keys[a.id];
    if (!key)
      throw new ConfigError(
        [
          `upstream.accounts[${i}].${a.walletKeyFile ? "walletKeyFile" : "walletKeyEnv"}: account "${a.id}" names a wallet, but no key was read`,
        ],
        "environment",
      );
    byAccount.set(a.id, new PaymentSigner(localWalletSigner(key)));
  });
  return new AccountWallets(signer, byAccount);
}

/**
 * The upstream accounts ([[upstream.accounts]]; else the one of TOLLGATE_UPSTREAM_API_KEY): their breakers shown in
 * metrics and the log, and each session or sandbox seen to end freeing its account's slot.
 */
export function upstreamAccounts(
  config: TollgateConfig,
  deps: GatewayDeps,
  stores: StateStores,
  metrics: GatewayMetrics,
  now: () => number,
): UpstreamAccounts {
  const accounts = new UpstreamAccounts(config.upstream, deps.secrets, stores.kv, now, stores.accountSlots);
  if (!accounts.configured) return accounts;
  for (const a of accounts.list) metrics.accountBreaker(a.id, "closed");
  accounts.events = {
    breaker: (account, state) => metrics.accountBreaker(account, state),
    spill: (account, reason) => metrics.accountSpill(account, reason),
  };
  const ownership = stores.ownership;
  const setActive = ownership.setActive.bind(ownership);
  ownership.setActive = async (kind, id, active) => {
    await Promise.all([setActive(kind, id, active), active ? undefined : accounts.ended(kind, id)]);
  };
  return accounts;
}

export function randomSecret(): string {
  return [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
}
