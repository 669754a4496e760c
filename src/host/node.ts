// Node entry: serves createGateway() with @hono/node-server v2, the undici transport and the `ws` relay.
import { serve, type ServerType } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import { STATUS_CODES, ServerResponse } from "node:http";
import type { TollgateConfig } from "../../config/schema.js";
import { ConfigError, type Secrets } from "../../config/load.js";
import { createGateway, type Gateway, type GatewayDeps } from "../gateway.js";
import { undiciTransport } from "./node/undici-transport.js";
import { withDirectRelays } from "./node/direct-relay.js";
import { turnEnd } from "./node/turn-writes.js";
import { unreadHeaderWriter } from "./node/unread-headers.js";
import { nodeWebSocketRelay, relayWebSocketServer } from "./node/ws-relay.js";
import { nodeStateStores } from "./node/stores.js";
import { drainable, type DrainReport } from "./node/drain.js";
import { gateHosts, gateUpgrades } from "./node/upgrade-gate.js";
import { answerFailedExpectations, answerParseErrors, closeAfterEarlyAnswer } from "./node/closing.js";
import { getConnInfo } from "@hono/node-server/conninfo";
import { GatewayMetrics } from "../telemetry/gateway-metrics.js";
import { promRegistry } from "./node/prom-registry.js";
import { nodeWebhookSender } from "./node/webhook-sender.js";
import { nodeDestinationGuard } from "./node/destination-guard.js";
import type { PlatformSpeed } from "../web/speed.js";
import { nodeHotHeader } from "./node/request-headers.js";
import { bodyFollowsHead, nodeHeldBody, nodeHeldText } from "./node/held-body.js";
import { flushStdoutLog, stdoutLogSink } from "./node/log-sink.js";
import { nodeDocsAssets } from "./node/docs-assets.js";
import { otelTracer } from "./node/otel-tracer.js";
import { VERSION } from "../operators/version.js";
import type { PeerAddress } from "../web/client-address.js";
import { openPkcs11Signer } from "./node/pkcs11-signer.js";
import { openRemoteSigner } from "./node/remote-signer.js";
import type { WalletSigner } from "../payments/index.js";
import { watchForReload } from "./node/reload.js";

/** The TCP peer of the request's socket (what @hono/node-server's getConnInfo reads, without the object it builds). */
const nodePeerAddress: PeerAddress = (c) => {
  const incoming = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming;
  if (incoming) return incoming.socket?.remoteAddress;
  try {
    return getConnInfo(c).remote.address; // an HTTP/2 stream, or not served by @hono/node-server: undefined
  } catch {
    return undefined;
  }
};

export interface NodeGatewayOptions {
  config: TollgateConfig;
  secrets: Secrets;
  logSink?: GatewayDeps["logSink"];
  host?: string;
  port?: number;
  /** Extra deps (state stores, clock) forwarded to createGateway. */
  deps?: Partial<GatewayDeps>;
  /**
   * The config file the gateway runs with: read again on SIGHUP or when it changes, its tenants applied
   * (./node/reload.ts). The secret files (`[secrets] *File`, `TOLLGATE_*_FILE` in `env`) are watched either way.
   */
  configFile?: string;
  /** Where `TOLLGATE_*_FILE` names are read (default process.env). */
  env?: Record<string, string | undefined>;
}

export interface RunningGateway {
  url: string;
  port: number;
  gateway: Gateway;
  server: ServerType;
  /** Closes everything at once: connections, WebSockets, then (after up to 2 s of background work) state, transport. */
  close(): Promise<void>;
  /** Reads the config file and the secret files again now, as SIGHUP does (undefined: neither is watched). */
  reload?: (why: string) => Promise<void>;
  /**
   * Graceful stop (SIGTERM/SIGINT): refuses new connections, lets in-flight requests finish for up to `seconds`
   * (server.drainSeconds), closes WebSockets with 1001, lets background work (alert webhooks being delivered) finish
   * within what is left of those seconds (at least 1 s), then releases everything close() does.
   */
  drain(seconds?: number): Promise<DrainReport>;
}

/** What @hono/node-server passes as `env`: the Node request and response (and the upgrade marker symbol). */
type NodeBindings = import("@hono/node-server").HttpBindings | import("@hono/node-server").Http2Bindings | undefined;

/**
 * A refused WebSocket upgrade keeps its JSON body (`{message, code}`), which the SDK reads from a failed handshake;
 * @hono/node-server would otherwise send the status alone. With `holdsBodies` (held bodies are taken), a request
 * whose body follows its head reaches the chain one turn later, its body held (bodyFollowsHead).
 */
function withUpgradeErrorBodies(fetch: (req: Request, env: NodeBindings) => Response | Promise<Response>, holdsBodies: boolean) {
  return async (req: Request, env: NodeBindings) => {
    // An upgrade comes without `outgoing`: only then is the env's symbol count needed (no array per plain request).
    const symbolsBefore = env && env.outgoing === undefined ? Object.getOwnPropertySymbols(env).length : 0;
    if (holdsBodies && env?.outgoing instanceof ServerResponse && bodyFollowsHead(env.outgoing.req)) await undefined;
    const res = await fetch(req, env);
    if (env?.outgoing instanceof ServerResponse) {
      closeAfterEarlyAnswer(env.outgoing.req, env.outgoing);
      // node-server writes the answer once this returns: with the turn's other answers (src/host/node/turn-writes.ts).
      if (!env.outgoing.headersSent) await turnEnd();
    }
    const socket = env?.outgoing === undefined ? env?.incoming?.socket : undefined;
    if (!socket || (req.headers.get("upgrade") ?? "").toLowerCase() !== "websocket") return res;
    // upgradeWebSocket() marks the env with its connection symbol: then the upgrade goes ahead as usual.
    if (res.status === 101 || Object.getOwnPropertySymbols(env).length > symbolsBefore) return res;
    const body = Buffer.from(await res.arrayBuffer());
    let head = `HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ""}\r\n`;
    res.headers.forEach((v, k) => {
      if (!["content-length", "connection", "transfer-encoding"].includes(k)) head += `${k}: ${v}\r\n`;
    });
    head += `content-length: ${body.length}\r\nconnection: close\r\n\r\n`;
    socket.end(Buffer.concat([Buffer.from(head), body]));
    return res;
  };
}

const directRelays = (config: TollgateConfig) => config.server.directRelay && process.env.TOLLGATE_DIRECT_RELAY !== "off";

/** The wallet signer `[wallet] signer` names that only Node can open (a PKCS#11 token, the remote signer); none for "local". */
async function nodeWalletSigner(config: TollgateConfig, secrets: Secrets): Promise<WalletSigner | undefined> {
  const kind = config.wallet.signer;
  // A TOLLGATE_WALLET_KEY set beside another signer is refused by createGateway (the one reader of the key).
  if (kind === "local") return undefined;
  try {
    if (kind === "remote") {
      const r = config.wallet.remote!;
      return await openRemoteSigner(r.url ? { url: r.url, ca: r.ca!, cert: r.cert!, key: r.key! } : { socket: r.socket! });
    }
    return openPkcs11Signer(config.wallet.pkcs11!, secrets.pkcs11Pin);
  } catch (err) {
    throw new ConfigError([(err as Error).message], "the wallet signer");
  }
}

/** The accounts' wallets in a remote signer of their own (`walletSigner`), opened; a problem names the account's field. */
async function nodeAccountSigners(config: TollgateConfig): Promise<Record<string, WalletSigner> | undefined> {
  const out: Record<string, WalletSigner> = {};
  for (const [i, a] of (config.upstream.accounts ?? []).entries()) {
    const r = a.walletSigner;
    if (!r) continue;
    try {
      out[a.id] = await openRemoteSigner(r.url ? { url: r.url, ca: r.ca!, cert: r.cert!, key: r.key! } : { socket: r.socket! });
    } catch (err) {
      for (const w of Object.values(out)) await w.close?.();
      throw new ConfigError(
        [(err as Error).message.replace(/^wallet\.remote\./, `upstream.accounts[${i}].walletSigner.`)],
        "an account's wallet signer",
      );
    }
  }
  return Object.keys(out).length ? out : undefined;
}

export async function startNodeGateway(opts: NodeGatewayOptions): Promise<RunningGateway> {
  const transport = undiciTransport({ headersTimeoutMs: opts.config.upstream.timeoutMs });
  let gateway: Gateway | undefined;
  const metrics = opts.deps?.metrics ?? new GatewayMetrics(promRegistry());
  const stores = opts.deps?.stores ?? nodeStateStores(opts.config, (msg, fields) => gateway?.logger.error(msg, fields));
  const walletSigner = opts.deps?.walletSigner ?? (await nodeWalletSigner(opts.config, opts.secrets));
  const accountWalletSigners = opts.deps?.accountWalletSigners ?? (await nodeAccountSigners(opts.config));
  // The Node fast paths, this gateway's own (src/web/speed.ts): where server.directRelay is on, the chain's hot
  // request headers are read off node:http's parsed head (./node/request-headers.ts), a small body the parser already
  // holds is taken as it sits (./node/held-body.ts), and (once `serve` runs, below) headers added after the handler go
  // into an answer's unread record (./node/unread-headers.ts). Off, every request takes the standard path, the one
  // Workers use.
  const platform: PlatformSpeed = directRelays(opts.config)
    ? { hotHeader: nodeHotHeader, heldBody: nodeHeldBody, heldText: nodeHeldText, writeUnread: undefined }
    : {};
  const destinations = nodeDestinationGuard();
  gateway = createGateway(opts.config, {
    secrets: opts.secrets,
    platform,
    executionContexts: false, // node:http passes none (work beside a request is tracked, not kept alive)
    transport,
    // Lines to stdout are batched (src/host/node/log-sink.ts); a caller's own sink gets each line as it comes.
    logSink: opts.logSink ?? stdoutLogSink(),
    webSocketRelay: nodeWebSocketRelay({ metrics }),
    peerAddress: nodePeerAddress,
    webhookSender: nodeWebhookSender(opts.config.alerts, destinations),
    destinations,
    docsAssets: nodeDocsAssets(),
    tracer: opts.config.tracing.otlpEndpoint
      ? otelTracer({ endpoint: opts.config.tracing.otlpEndpoint, serviceName: opts.config.tracing.serviceName, version: VERSION })
      : undefined,
    ...opts.deps,
    metrics,
    stores,
    ...(walletSigner ? { walletSigner } : {}),
    ...(accountWalletSigners ? { accountWalletSigners } : {}),
  });
  const reloader = watchForReload({ gateway, config: opts.config, configFile: opts.configFile, env: opts.env ?? process.env });
  const stopReconciler = gateway.reconciler.start(opts.config.payments.reconcileIntervalSeconds * 1000);
  const stopAlerts = gateway.alerts.start(opts.config.alerts.evaluateSeconds * 1000);
  const wss = relayWebSocketServer();
  const host = opts.host ?? opts.config.server.host;
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve(
      {
        // server.directRelay: the transport may relay answers straight to the client's socket (src/host/node/direct-relay.ts)
        // only on a server that finishes them; off (or TOLLGATE_DIRECT_RELAY=off, how the test suites run the other way),
        // every answer takes the standard path, the one Workers use.
        fetch: directRelays(opts.config)
          ? withUpgradeErrorBodies(withDirectRelays(gateway.app.fetch), true)
          : withUpgradeErrorBodies(gateway.app.fetch, false),
        hostname: host,
        port: opts.port ?? opts.config.server.port,
        websocket: { server: wss },
      },
      () => resolve(s),
    );
    s.once("error", reject);
  });
  // With `serve` running the global Response is node-server's: headers added after the handler go into an answer's
  // unread record (src/host/node/unread-headers.ts). Like the other fast paths, only where they are on.
  if (directRelays(opts.config)) platform.writeUnread = unreadHeaderWriter();
  gateUpgrades(server as import("node:http").Server);
  gateHosts(server as import("node:http").Server);
  answerParseErrors(server as import("node:http").Server);
  answerFailedExpectations(server as import("node:http").Server);
  const port = (server.address() as AddressInfo).port;
  const drainer = drainable(server as import("node:http").Server, wss);
  let closed = false;
  const release = async (backgroundMs?: number) => {
    reloader?.stop();
    stopReconciler();
    stopAlerts();
    await gateway.close(backgroundMs);
    await transport.close();
    flushStdoutLog();
  };
  return {
    url: `http://${host}:${port}`,
    port,
    gateway,
    server,
    ...(reloader ? { reload: reloader.reload } : {}),
    async close() {
      if (closed) return;
      closed = true;
      for (const client of wss.clients) client.terminate();
      wss.close();
      (server as import("node:http").Server).closeAllConnections?.();
      await new Promise((r) => server.close(() => r(null)));
      await release();
    },
    async drain(seconds = opts.config.server.drainSeconds) {
      if (closed) return { inFlight: 0, cut: 0, webSockets: 0 };
      closed = true;
      const started = Date.now();
      const report = await drainer.drain(seconds * 1000);
      wss.close();
      await release(Math.max(1000, seconds * 1000 - (Date.now() - started)));
      return report;
    },
  };
}
