// The configuration file's schema: every option, its default, and the message a wrong value gets.
import * as z from "zod";
import { DestinationRules } from "../src/web/destinations.js";
import { caip2, cidr, hostName, origin, percent, remoteSigner, usdAmount, webhookUrl } from "./fields.js";
import { agentPolicySchema, alertRulesSchema, paymentPolicySchema, tenantSchema } from "./tenant-schema.js";
import { operatorsSchema } from "./operators-schema.js";
import { accountProblems, breakerSchema, upstreamAccountSchema } from "./accounts-schema.js";
import { secretFilesSchema } from "./secrets-schema.js";
import { stateSchema } from "./state-schema.js";
import { salesSchema } from "./sales-schema.js";
import { egressSchema } from "./egress-schema.js";

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
         * (src/host/node/held-body.ts). No effect on Workers. The Node entry offers the relay only when this is on and
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
         * Workers), "host-header" connects to the runtime host and names the port host in `Host` (Node only: Workers' fetch
         * cannot set Host, refused at start there), "port-header" connects to the runtime host and names the port host in
         * `x-tollgate-port-host` (the local emulator; any runtime); "auto" picks "dns" for a named runtime host and, for
         * localhost and IP runtime hosts (a local emulator, whose wildcard names do not resolve), "host-header" on Node
         * and "port-header" on Workers. A port request is never sent as a plain request to the runtime host.
         */
        exposedPorts: z.enum(["auto", "dns", "host-header", "port-header"]).default("auto"),
        /**
         * Several upstream accounts (docs/accounts.md): each with its own API key, concurrency limits and weight. New
         * work is placed among a tenant's accounts; everything later for a resource goes to the account holding it.
         * Absent: the one account of TOLLGATE_UPSTREAM_API_KEY.
         */
        accounts: z.array(upstreamAccountSchema).min(1, { error: "expected at least one [[upstream.accounts]] entry" }).optional(),
        /** Each account's circuit breaker and the retries of safe calls (with [[upstream.accounts]] only). */
        breaker: breakerSchema,
      })
      .default({
        baseUrl: "https://api.hyperbrowser.ai",
        allowedHosts: [],
        timeoutMs: 30_000,
        exposedPorts: "auto",
        breaker: { failures: 5, window: 20, slowMs: 10_000, openSeconds: 30, retries: 2, retryBackoffMs: 100, retryBudgetMs: 2_000 },
      }),
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
    /**
     * What holds the wallet's key (docs/signers.md). "local": TOLLGATE_WALLET_KEY in the gateway's environment.
     * "pkcs11": a secp256k1 key generated inside an HSM token (SoftHSM, YubiHSM, CloudHSM, Luna…) that never leaves it;
     * the gateway holds the token's PIN (TOLLGATE_PKCS11_PIN) and no key; Node only. "remote": `tollgate signer serve`
     * in its own process, with its own limits, over a Unix socket; the gateway holds nothing; Node only.
     */
    wallet: z
      .strictObject({
        signer: z.enum(["local", "pkcs11", "remote"], { error: 'expected "local", "pkcs11" or "remote"' }).default("local"),
        pkcs11: z
          .strictObject({
            /** The PKCS#11 module (shared library) of the HSM. */
            module: z.string().min(1).default("/usr/lib/softhsm/libsofthsm2.so"),
            /** The label of the token (slot) holding the key. */
            tokenLabel: z.string({ error: "expected the token's label" }).min(1),
            /** The CKA_LABEL of the key pair (`tollgate signer keygen --label` makes one). */
            keyLabel: z.string().min(1).default("tollgate-wallet"),
          })
          .optional(),
        remote: remoteSigner({ socket: "/run/tollgate/signer.sock", url: "https://signer.internal:8443" }).optional(),
      })
      .default({ signer: "local" })
      .refine((w) => w.signer !== "remote" || !!w.remote, {
        error: 'required when wallet.signer is "remote": [wallet.remote] socket = "/run/tollgate/signer.sock"',
        path: ["remote"],
      })
      .refine((w) => w.signer !== "pkcs11" || !!w.pkcs11, {
        error: 'required when wallet.signer is "pkcs11": [wallet.pkcs11] tokenLabel = "…" (module and keyLabel have defaults)',
        path: ["pkcs11"],
      }),
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
    /**
     * The OAuth 2.1 authorization server for /mcp and keyless tokens (src/oauth/): agents connect with a link, the tenant
     * consents to scopes, a spend cap and an expiry, and the grant's tokens carry them.
     */
    oauth: z
      .strictObject({
        /** Off: no authorization server (the metadata names none; /authorize, /token, /register answer 404). */
        enabled: z.boolean().default(true),
        /** Lifetime of an OAuth access token; defaults to tokens.ttlSeconds. Refresh tokens live as long as their grant. */
        accessTokenTtlSeconds: z.number().int().min(30).max(86_400).optional(),
        /**
         * Refreshes presenting one refresh token within this many seconds of its first use (a host's parallel calls at an
         * access token's expiry) all get the pair that first use issued; a use after it is a reuse and revokes the grant.
         */
        refreshGraceSeconds: z.number().int().min(0).max(30).default(5),
        /**
         * A grant a person consented through the identity provider refreshes only while the provider's word on them is
         * at most this old (their last sign-in, console or consent page); past it the refresh is refused until they sign
         * in again, and no access token outlives it. A sign-in that no longer maps them to the tenant ends the grant.
         */
        personReconfirmSeconds: z
          .number()
          .int()
          .min(5)
          .max(90 * 86_400)
          .default(7 * 86_400),
        /** How long an authorization code may wait for its exchange. */
        codeTtlSeconds: z.number().int().min(10).max(600).default(60),
        /** The longest expiry a tenant may give a grant on the consent page. */
        maxGrantDays: z.number().int().min(1).max(365).default(90),
        /** The expiry the consent page offers first (at most maxGrantDays). */
        defaultGrantDays: z.number().int().min(1).max(365).default(30),
        /** Client ID metadata documents: a client_id that is an https URL names the client's JSON document. */
        clientMetadataDocuments: z
          .strictObject({
            /** Off: only registered clients (client_id from POST /register). */
            enabled: z.boolean().default(true),
            /** Also http://127.0.0.1 and http://localhost URLs (tests, local development); never in production. */
            allowHttpLoopback: z.boolean().default(false),
            /** How long the gateway waits for a client's document. */
            timeoutMs: z.number().int().min(100).max(10_000).default(3_000),
            /** The largest document read (a bigger one is refused, not truncated). */
            maxBytes: z.number().int().min(512).max(65_536).default(16_384),
            /** How long a fetched document is reused, fleet-wide. */
            cacheSeconds: z.number().int().min(0).max(86_400).default(300),
          })
          .default({ enabled: true, allowHttpLoopback: false, timeoutMs: 3_000, maxBytes: 16_384, cacheSeconds: 300 }),
        /** Dynamic client registration (RFC 7591, POST /register), the fallback for clients without a metadata document. */
        registration: z
          .strictObject({
            /** Off: clients identify themselves with a metadata document only. */
            enabled: z.boolean().default(true),
            /**
             * A registration is forgotten this long after its last use (made, or a token issued to it); the client then
             * gets invalid_client, registers again and asks for consent again.
             */
            ttlDays: z.number().int().min(1).max(365).default(30),
            /** Registrations the whole fleet accepts per UTC day. */
            maxPerDay: z.number().int().min(1).max(1_000_000).default(1_000),
            /** Registrations one client address may make per hour. */
            perAddressPerHour: z.number().int().min(1).max(10_000).default(20),
          })
          .default({ enabled: true, ttlDays: 30, maxPerDay: 1_000, perAddressPerHour: 20 }),
      })
      .superRefine((o, ctx) => {
        if (o.defaultGrantDays > o.maxGrantDays)
          ctx.addIssue({ code: "custom", path: ["defaultGrantDays"], message: `must be at most maxGrantDays (${o.maxGrantDays})` });
      })
      .default({
        enabled: true,
        refreshGraceSeconds: 5,
        personReconfirmSeconds: 7 * 86_400,
        codeTtlSeconds: 60,
        maxGrantDays: 90,
        defaultGrantDays: 30,
        clientMetadataDocuments: { enabled: true, allowHttpLoopback: false, timeoutMs: 3_000, maxBytes: 16_384, cacheSeconds: 300 },
        registration: { enabled: true, ttlDays: 30, maxPerDay: 1_000, perAddressPerHour: 20 },
      }),
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
    state: stateSchema,
    /** Tenant secrets' egress (docs/secrets-for-agents.md). */
    egress: egressSchema,
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
        /**
         * The most an upstream report may come to, as a multiple of the hold (or of the price table's estimate, when
         * larger). A report above it, negative, not finite or not a number is refused: the hold settles to the
         * estimate, the ledger entry names why (`refusedReport`) and one `credits.report_refused` alert is raised.
         */
        maxReportMultiple: z.number({ error: "expected a whole number like 10" }).int().min(1).max(1_000_000).default(10),
      })
      .default({
        enabled: true,
        prices: CREDIT_PRICE_DEFAULTS,
        defaultTimeoutMinutes: 30,
        jobHoldMinutes: 24 * 60,
        usdPerCredit: "0.001",
        driftAlertUsd: "1.00",
        lateUsageMinutes: 60,
        maxReportMultiple: 10,
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
        /** Alerts besides budgets; each is off until configured (src/operators/alerts/alert-monitor.ts). */
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
    /** The last requests of each tenant, searchable in the console and the admin API ([request logs](request-logs.md)). */
    requestLog: z
      .strictObject({
        /** How many of each tenant's newest requests are kept in the shared state (0: none recorded). */
        keep: z.number().int().min(0).max(10_000).default(1000),
      })
      .default({ keep: 1000 }),
    /**
     * OpenTelemetry traces (Node, and Workers over fetch): spans for each request, its chain steps, payment and upstream
     * calls. Off without an endpoint.
     */
    tracing: z
      .strictObject({
        /** An OTLP/HTTP traces endpoint, e.g. "http://127.0.0.1:4318/v1/traces" (a collector). */
        otlpEndpoint: z.string().url({ error: 'expected an OTLP/HTTP URL like "http://127.0.0.1:4318/v1/traces"' }).optional(),
        serviceName: z.string().min(1).default("tollgate"),
      })
      .default({ serviceName: "tollgate" }),
    /** What every tenant's agents may do ([agent policies](agent-policies.md)); each tenant's `policy` narrows it, never widens it. */
    policy: agentPolicySchema.default({}),
    /** Sign-in through an identity provider (OIDC) or Cloudflare Access: docs/sign-in.md. */
    operators: operatorsSchema,
    /** Secrets read from files (Kubernetes and Docker secrets), re-read when they change: docs/secrets.md. */
    secrets: secretFilesSchema,
    tenants: z.array(tenantSchema).default([]),
    /** Selling over x402 to clients holding only a wallet (docs/sales.md); off unless present. */
    sales: salesSchema.optional(),
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
    accountProblems(cfg, (path, message) => ctx.addIssue({ code: "custom", path, message }));
    cfg.tenants.forEach((t, i) => {
      check(t.alerts.webhooks, ["tenants", i, "alerts", "webhooks"]);
      check(t.alerts.slack, ["tenants", i, "alerts", "slack"]);
    });
  });

export type TollgateConfig = z.infer<typeof configSchema>;
export type TenantConfig = z.infer<typeof tenantSchema>;
export type PaymentPolicyConfig = z.infer<typeof paymentPolicySchema>;
