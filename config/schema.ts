// The configuration file's schema: every option, its default, and the message a wrong value gets.
import * as z from "zod";
import { isCidr } from "../src/platform/cidr.js";
import { DestinationRules } from "../src/operators/destinations.js";

/** A USD amount such as "5.00" or "0.005" (at most 6 decimals, the precision of USDC). */
export const usdAmount = z
  .string({ error: 'expected a USD amount like "5.00"' })
  .regex(/^\d{1,12}(\.\d{1,6})?$/, { error: 'expected a USD amount like "5.00"' });

const isoDate = z
  .string({ error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' })
  .refine((s) => !Number.isNaN(Date.parse(s)), { error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' });

const origin = z.string({ error: 'expected an origin like "https://gateway.example.com"' }).refine(
  (s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "http:" || u.protocol === "https:") && (u.pathname === "/" || u.pathname === "");
    } catch {
      return false;
    }
  },
  { error: 'expected an origin like "https://gateway.example.com" (scheme and host, no path)' },
);

/** An address or CIDR range such as "10.0.0.0/8" or "::1". */
const cidr = z
  .string({ error: 'expected an address or CIDR range like "10.0.0.0/8"' })
  .refine(isCidr, { error: 'expected an address or CIDR range like "10.0.0.0/8" or "::1"' });

/** A host name with an optional port, as clients put it in Host: "gateway.example.com", "localhost:8787", "[::1]". */
const hostName = z.string({ error: 'expected a host like "gateway.example.com" or "localhost:8787"' }).refine(
  (s) => {
    try {
      // A bare host with an optional port (a default one such as :80 included): nothing the URL parser would change.
      const [, name, port] = /^(.*?)(?::(\d{1,5}))?$/.exec(s.toLowerCase())!;
      return new URL(`http://${s}`).hostname === name && (port === undefined || Number(port) <= 65535);
    } catch {
      return false;
    }
  },
  { error: 'expected a host like "gateway.example.com" or "localhost:8787" (no scheme, no path)' },
);

const caip2 = z.string().regex(/^[a-z0-9-]+:[A-Za-z0-9-]+$/, { error: 'expected a CAIP-2 network like "eip155:8453"' });
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, { error: "expected a 0x-prefixed 20-byte hex address" });

/**
 * What a tenant key may do; each route-table row names one (src/routing/table.ts). "operator-readonly" reads what an
 * admin reads (admin API GETs, the console) and changes nothing.
 */
export const SCOPES = ["search", "sessions", "sandboxes", "jobs", "agents", "admin", "operator-readonly"] as const;
export type Scope = (typeof SCOPES)[number];

export const tenantKeySchema = z.strictObject({
  /** `sha256:<64 hex>` of the key; the key itself is never stored. */
  hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, { error: 'expected "sha256:<64 lowercase hex>" as printed by `tollgate keys create`' }),
  label: z.string().optional(),
  expiresAt: isoDate.optional(),
  /** When the key was issued (set by the admin API and the console; absent for keys written by hand). */
  createdAt: isoDate.optional(),
});

export const budgetSchema = z.strictObject({
  daily: usdAmount.optional(),
  monthly: usdAmount.optional(),
  total: usdAmount.optional(),
});

export const paymentPolicySchema = z.strictObject({
  networks: z.array(caip2).optional(),
  assets: z.array(evmAddress).optional(),
  payees: z.array(evmAddress).optional(),
  maxPerRequest: usdAmount.optional(),
  maxAuthorizationSeconds: z.number({ error: "expected a number of seconds" }).int().positive().max(86_400).optional(),
});

export const quotaSchema = z.strictObject({
  maxSandboxes: z.number().int().nonnegative().optional(),
  maxSessions: z.number().int().nonnegative().optional(),
  maxTimeoutMinutes: z.number().int().positive().optional(),
  images: z.array(z.string()).optional(),
  regions: z.array(z.string()).optional(),
  requestsPerMinute: z.number().int().positive().optional(),
});

const percent = z
  .number({ error: "expected a percentage like 80" })
  .min(1, { error: "expected a percentage from 1 to 100" })
  .max(100, { error: "expected a percentage from 1 to 100" });
const webhookUrl = z
  .string({ error: 'expected a webhook URL like "https://ops.example.com/tollgate"' })
  .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
    error: 'expected an https URL like "https://ops.example.com/tollgate"',
  });

const windowSeconds = z.number({ error: "expected a number of seconds" }).int().min(10).max(86_400);

/** The alert rules besides budget thresholds: each absent rule is off. */
export const alertRulesSchema = z.strictObject({
  /** Upstream calls answered 5xx or not at all: at least `percent` of at least `minCalls` calls in the window. */
  upstreamErrors: z
    .strictObject({ percent: percent, windowSeconds: windowSeconds.default(300), minCalls: z.number().int().positive().default(20) })
    .optional(),
  /** Upstream calls slower than `thresholdMs`: at least `percent` of at least `minCalls` calls in the window. */
  upstreamLatency: z
    .strictObject({
      thresholdMs: z.number().int().positive(),
      percent: percent.default(10),
      windowSeconds: windowSeconds.default(300),
      minCalls: z.number().int().positive().default(20),
    })
    .optional(),
  /** The wallet's lowest balance (read as readiness reads it) below this USD amount. */
  walletBelow: usdAmount.optional(),
  /** The upstream team's remaining credits (GET /api/team/credit-info) below this number. */
  teamCreditsBelow: z.number().nonnegative().optional(),
  /** The state backend not answering for this long. */
  stateDown: z.strictObject({ afterSeconds: z.number().int().positive().default(30) }).optional(),
  /** A webhook delivery failed this many attempts (the alert goes to the other receivers). */
  webhookFailing: z.strictObject({ afterAttempts: z.number().int().positive().default(3) }).optional(),
});

/** Budget alerts of one tenant: at which percentages of each budget window, and where (besides the global webhooks). */
export const tenantAlertsSchema = z.strictObject({
  thresholds: z.array(percent).optional(),
  webhooks: z.array(webhookUrl).optional(),
  /** Receivers sent a Slack-compatible `{"text": …}` body (an incoming-webhook URL), besides the global ones. */
  slack: z.array(webhookUrl).optional(),
});

export const tenantSchema = z.strictObject({
  id: z
    .string({ error: "expected a tenant id" })
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, { error: "expected a lowercase id of letters, digits, '-' or '_'" }),
  enabled: z.boolean().default(true),
  scopes: z
    .array(z.enum(SCOPES, { error: `expected one of ${SCOPES.join(", ")}` }))
    .default(["search", "sessions", "sandboxes", "jobs", "agents"]),
  keys: z.array(tenantKeySchema).min(1, { error: "expected at least one key (run `tollgate keys create --tenant ID`)" }),
  budget: budgetSchema.default({}),
  payment: paymentPolicySchema.default({}),
  /** Pass the client's own PAYMENT-SIGNATURE through and charge nothing to the tenant. */
  paysForItself: z.boolean().default(false),
  quotas: quotaSchema.default({}),
  /**
   * When a budget window is exhausted: "block" refuses further paid calls; "stop" also stops the tenant's open
   * sandboxes and sessions, closes its WebSockets and revokes its gateway tokens (the kill switch).
   */
  onExhausted: z.enum(["block", "stop"], { error: 'expected "block" or "stop"' }).default("block"),
  alerts: tenantAlertsSchema.default({}),
  /**
   * Chargeback: what this tenant pays for credit spend relative to its cost, e.g. "1.25" (a 25 % markup) or "0.9" (a
   * discount). Applied to every credits reservation and settlement in its budget and usage; x402 payments are not
   * affected. Unset = 1.
   */
  creditMultiplier: z
    .string({ error: 'expected a multiplier like "1.25"' })
    .regex(/^\d{1,6}(\.\d{1,6})?$/, { error: 'expected a multiplier like "1.25" (at most 6 decimals)' })
    .optional(),
});

/** Default credit prices (USD): estimates of the upstream's published credit costs; operators set their own. */
export const CREDIT_PRICE_DEFAULTS = {
  webSearch: "0.005",
  webFetch: "0.001",
  webPage: "0.001",
  scrape: "0.001",
  scrapePage: "0.001",
  crawlPage: "0.001",
  extract: "0.01",
  agentStep: "0.01",
  sessionMinute: "0.0017",
  sandboxMinute: "0.0017",
};
const creditPriceShape = Object.fromEntries(Object.entries(CREDIT_PRICE_DEFAULTS).map(([k, v]) => [k, usdAmount.default(v)])) as {
  [K in keyof typeof CREDIT_PRICE_DEFAULTS]: z.ZodDefault<typeof usdAmount>;
};

/** "host:port" of a Redis node or sentinel. */
const hostPort = z.string().regex(/^[^\s:/]+:\d{1,5}$/, { error: 'expected "host:port", e.g. "127.0.0.1:26379"' });

export const configSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().default("127.0.0.1"),
        port: z.number({ error: "expected a port number" }).int().min(0).max(65535).default(8787),
        /** Origin clients reach the gateway at; exposed ports live at `<port>-<id>.<host of this origin>`. */
        publicOrigin: origin.optional(),
        /**
         * Hosts (`name` or `name:port`) whose requests may build the URLs handed out when publicOrigin is unset; a request
         * by any other Host that needs one is refused (421). Unset: any Host (`tollgate start` narrows it to loopback names).
         */
        publicHosts: z.array(hostName).optional(),
        /** Peers (addresses or CIDR ranges) whose X-Forwarded-Proto/Host/For are believed; everyone else's are ignored. */
        trustedProxies: z.array(cidr).default([]),
        /** On SIGTERM/SIGINT, how long in-flight requests may take to finish before the gateway exits anyway. */
        drainSeconds: z.number({ error: "expected a number of seconds" }).int().nonnegative().max(3600).default(15),
        /** Browser origins allowed to call the gateway (CORS); preflights from them are answered without credentials. */
        cors: z
          .strictObject({
            origins: z.array(origin).default([]),
            /** How long a browser may cache a preflight answer. */
            maxAgeSeconds: z.number().int().nonnegative().max(86_400).default(600),
          })
          .default({ origins: [], maxAgeSeconds: 600 }),
        /** Log level: "info" logs one line per request; "debug" adds upstream detail; "silent" none. */
        logLevel: z.enum(["silent", "error", "info", "debug"]).default("info"),
        /**
         * Forward `/api/*` requests that match no route-table row for tenants with the "admin" scope. Off by default:
         * Tollgate refuses what it does not front (404 route_not_fronted), so turn it on only to reach a new upstream
         * operation before Tollgate has a row for it.
         */
        adminPassthrough: z.boolean().default(false),
        /**
         * A request body field no route-table row declares: "refuse" (400 unknown_field, the default: deny by default on
         * body fields as on paths) or "forward" (logged), for clients newer than the table. Declared fields that name a
         * resource are checked either way.
         */
        unknownBodyFields: z.enum(["refuse", "forward"]).default("refuse"),
        /**
         * Node: relay the proxied planes' answers (runtime, exposed ports, presigned files) straight from the upstream's
         * socket to the client's, without Web Request/Response objects in between. On by default; off takes the standard
         * path (the one Workers use). With it, a small request body the parser already holds is taken as it sits
         * (src/platform/node/held-body.ts). No effect on Workers. The Node entry offers the relay only when this is on and
         * TOLLGATE_DIRECT_RELAY is not "off" (how the gateway suites run the standard path).
         */
        directRelay: z.boolean().default(true),
      })
      .default({
        host: "127.0.0.1",
        port: 8787,
        trustedProxies: [],
        drainSeconds: 15,
        cors: { origins: [], maxAgeSeconds: 600 },
        logLevel: "info",
        adminPassthrough: false,
        unknownBodyFields: "refuse",
        directRelay: true,
      }),
    upstream: z
      .strictObject({
        baseUrl: origin.default("https://api.hyperbrowser.ai"),
        /** Hosts (hostname or hostname:port) the gateway may follow upstream-provided URLs to (runtime, CDP). */
        allowedHosts: z.array(z.string()).default([]),
        timeoutMs: z.number().int().positive().default(30_000),
        /**
         * How exposed-port traffic reaches the upstream: "dns" connects to `<port>-<id>.<runtime host>` itself (production,
         * Workers), "host-header" connects to the runtime host and names the port host in `Host` (a local emulator, whose
         * wildcard names do not resolve); "auto" picks "host-header" for localhost and IP runtime hosts, else "dns".
         */
        exposedPorts: z.enum(["auto", "dns", "host-header"]).default("auto"),
      })
      .default({ baseUrl: "https://api.hyperbrowser.ai", allowedHosts: [], timeoutMs: 30_000, exposedPorts: "auto" }),
    payments: paymentPolicySchema
      .extend({
        enabled: z.boolean().default(true),
        /** JSON-RPC endpoint per network, used to settle uncertain payments from the chain's truth. */
        rpc: z.record(caip2, z.string().url({ error: 'expected an RPC URL like "https://mainnet.base.org"' })).default({}),
        /** How often held (uncertain) payments past their validBefore are reconciled with the chain. */
        reconcileIntervalSeconds: z.number().int().positive().default(30),
        /**
         * Readiness reports "degraded" (still 200) while the wallet holds less than this much of the payment asset, read
         * with balanceOf through `rpc`. "0" turns the check off.
         */
        minWalletBalance: usdAmount.default("1.00"),
      })
      .default({ enabled: true, rpc: {}, reconcileIntervalSeconds: 30, minWalletBalance: "1.00" }),
    cache: z
      .strictObject({
        enabled: z.boolean().default(true),
        scope: z.enum(["tenant", "shared"], { error: 'expected "tenant" or "shared"' }).default("tenant"),
        ttlSeconds: z.number().int().nonnegative().default(300),
        maxBytes: z
          .number()
          .int()
          .positive()
          .default(64 * 1024 * 1024),
      })
      .default({ enabled: true, scope: "tenant", ttlSeconds: 300, maxBytes: 64 * 1024 * 1024 }),
    tokens: z
      .strictObject({
        /** Lifetime of the runtime/CDP tokens the gateway mints for clients. */
        ttlSeconds: z.number().int().positive().max(86_400).default(900),
      })
      .default({ ttlSeconds: 900 }),
    /** The gateway's live view of a session (`liveUrl` → /_tollgate/live/<id>, src/sessions/live.ts). */
    liveView: z
      .strictObject({
        /**
         * Origins whose pages may show the live view in an iframe (its CSP `frame-ancestors`), e.g.
         * "https://app.example.com", or "'self'". Empty: it cannot be framed at all.
         */
        frameAncestors: z
          .array(
            z.string().refine(
              (s) => {
                if (s === "'self'") return true;
                try {
                  const u = new URL(s);
                  return (u.protocol === "https:" || u.protocol === "http:") && u.origin === s;
                } catch {
                  return false;
                }
              },
              { error: `expected an origin like "https://app.example.com" (scheme, host, optional port; no path) or "'self'"` },
            ),
          )
          .default([]),
      })
      .default({ frameAncestors: [] }),
    state: z
      .strictObject({
        backend: z
          .enum(["memory", "redis", "durable-objects"], { error: 'expected "memory", "redis" or "durable-objects"' })
          .default("memory"),
        redisUrl: z.string().optional(),
        /** Redis Sentinel: the sentinels ("host:port") and the name of the primary they watch (`sentinelName`). */
        sentinels: z.array(hostPort).optional(),
        sentinelName: z.string().min(1).optional(),
        /** Redis Cluster: some of its nodes ("host:port"); the rest are discovered. */
        clusterNodes: z.array(hostPort).optional(),
        /**
         * Money writes (ledger, idempotency keys) count as done only once this many replicas confirm them (Redis WAIT);
         * fewer in `confirmTimeoutMs` fails the call closed. Set 1 with Sentinel so a failover cannot lose a payment.
         */
        confirmReplicas: z.number().int().min(0).max(10).default(0),
        confirmTimeoutMs: z.number().int().positive().max(10_000).default(500),
        /** How long the owner of a resource that ended (stopped, expired, deleted, finished) is remembered. */
        endedRetentionDays: z.number().positive().max(3650).default(7),
      })
      .default({ backend: "memory", confirmReplicas: 0, confirmTimeoutMs: 500, endedRetentionDays: 7 })
      .refine((s) => s.backend !== "redis" || !!s.redisUrl || !!s.sentinels?.length || !!s.clusterNodes?.length, {
        error:
          'state.redisUrl: expected a URL like "redis://127.0.0.1:6379" (or state.sentinels with state.sentinelName, or state.clusterNodes) when backend is "redis"',
        path: ["redisUrl"],
      })
      .refine((s) => [s.redisUrl, s.sentinels, s.clusterNodes].filter((x) => x !== undefined).length <= 1, {
        error: "give one of redisUrl, sentinels or clusterNodes, not several",
        path: ["sentinels"],
      })
      .refine((s) => !s.sentinels || !!s.sentinelName, {
        error: 'state.sentinelName: expected the name of the primary the sentinels monitor (e.g. "mymaster")',
        path: ["sentinelName"],
      }),
    /**
     * What the operator's upstream credits cost, in USD, for the rows billed to them (src/routing/table.ts). These are
     * estimates the operator sets to match their plan; every credit-billed call is reserved at this price against the
     * tenant's budget before it is forwarded (the same budgets as x402 payments).
     */
    credits: z
      .strictObject({
        enabled: z.boolean().default(true),
        prices: z.strictObject(creditPriceShape).default(CREDIT_PRICE_DEFAULTS),
        /** timeoutMinutes the gateway sets on a session or sandbox created without one (its reservation is timeout × rate). */
        defaultTimeoutMinutes: z
          .number()
          .int()
          .positive()
          .max(24 * 60)
          .default(30),
        /** How long a job's reservation may stay open before it is committed at its maximum. */
        jobHoldMinutes: z
          .number()
          .int()
          .positive()
          .default(24 * 60),
        /**
         * What one upstream credit costs the operator, in USD: sessions and sandboxes settle to the upstream's
         * `creditsUsed` × this, and the team's usage (`/api/team/credit-info`) is converted with it for the drift check.
         */
        usdPerCredit: usdAmount.default("0.001"),
        /** The reconciler alerts (once) when the team's usage and the ledger's credit spend differ by more than this. */
        driftAlertUsd: usdAmount.default("1.00"),
        /**
         * A session or sandbox settled from an estimate (its usage had not landed upstream) is read again by the
         * reconciler for this long after it ended, and corrected to the upstream's figure once it lands.
         */
        lateUsageMinutes: z
          .number()
          .int()
          .positive()
          .max(7 * 24 * 60)
          .default(60),
      })
      .default({
        enabled: true,
        prices: CREDIT_PRICE_DEFAULTS,
        defaultTimeoutMinutes: 30,
        jobHoldMinutes: 24 * 60,
        usdPerCredit: "0.001",
        driftAlertUsd: "1.00",
        lateUsageMinutes: 60,
      }),
    alerts: z
      .strictObject({
        /** Percentages of each budget window at which an alert is sent, once per window. */
        thresholds: z.array(percent).default([50, 80, 100]),
        /** Receivers of every tenant's alerts; signed with TOLLGATE_WEBHOOK_SECRET (header tollgate-signature). */
        webhooks: z.array(webhookUrl).default([]),
        /** Deliveries that fail are retried from the outbox with exponential backoff, up to this many attempts in all. */
        maxAttempts: z.number().int().positive().max(20).default(12),
        initialBackoffMs: z.number().int().positive().default(500),
        /** Receivers of every tenant's alerts with a Slack-compatible body (`{"text": …}`). */
        slack: z.array(webhookUrl).default([]),
        /** Allow http: receivers (default https only). */
        allowHttp: z.boolean().default(false),
        /**
         * Loopback, link-local, private and reserved addresses are refused as receivers (at config and on the resolved
         * address at delivery); a receiver on the operator's own network needs its range here.
         */
        allowCidrs: z.array(cidr).default([]),
        /** Alerts besides budgets; each is off until configured (src/operators/alert-monitor.ts). */
        rules: alertRulesSchema.default({ webhookFailing: { afterAttempts: 3 } }),
        /** How often each instance evaluates the rules and looks for deliveries due. */
        evaluateSeconds: z.number().int().positive().max(3600).default(15),
      })
      .default({
        thresholds: [50, 80, 100],
        webhooks: [],
        maxAttempts: 12,
        initialBackoffMs: 500,
        slack: [],
        allowHttp: false,
        allowCidrs: [],
        rules: { webhookFailing: { afterAttempts: 3 } },
        evaluateSeconds: 15,
      }),
    /** OpenTelemetry traces (Node): spans for each request, its chain steps, payment and upstream calls. Off without an endpoint. */
    tracing: z
      .strictObject({
        /** An OTLP/HTTP traces endpoint, e.g. "http://127.0.0.1:4318/v1/traces" (a collector). */
        otlpEndpoint: z.string().url({ error: 'expected an OTLP/HTTP URL like "http://127.0.0.1:4318/v1/traces"' }).optional(),
        serviceName: z.string().min(1).default("tollgate"),
      })
      .default({ serviceName: "tollgate" }),
    tenants: z.array(tenantSchema).default([]),
  })
  // Alert receivers: the scheme and address checks need alerts.allowHttp and alerts.allowCidrs, so they run here.
  .superRefine((cfg, ctx) => {
    const rules = new DestinationRules(cfg.alerts);
    const check = (urls: readonly string[] | undefined, path: PropertyKey[]) =>
      urls?.forEach((url, i) => {
        const problem = rules.urlProblem(url);
        if (problem) ctx.addIssue({ code: "custom", path: [...path, i], message: `webhook ${url} refused: ${problem}` });
      });
    check(cfg.alerts.webhooks, ["alerts", "webhooks"]);
    check(cfg.alerts.slack, ["alerts", "slack"]);
    cfg.tenants.forEach((t, i) => {
      check(t.alerts.webhooks, ["tenants", i, "alerts", "webhooks"]);
      check(t.alerts.slack, ["tenants", i, "alerts", "slack"]);
    });
  });

export type TollgateConfig = z.infer<typeof configSchema>;
export type TenantConfig = z.infer<typeof tenantSchema>;
export type PaymentPolicyConfig = z.infer<typeof paymentPolicySchema>;
