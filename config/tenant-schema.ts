// A tenant's part of the configuration: its keys and scopes, budget, payment policy, quotas, alerts and chargeback.
import * as z from "zod";
import { accountId } from "./accounts-schema.js";
import { caip2, egressRule, evmAddress, isoDate, percent, usdAmount, webhookUrl, windowSeconds } from "./fields.js";

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

/** A host name a domain rule names: "example.com" (it and its subdomains) or "*.example.com" (its subdomains only). */
const domainRule = z.string().regex(/^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i, {
  error: 'expected a host name like "example.com" or "*.example.com"',
});

/**
 * What an agent may do (docs/agent-policies.md): declared by the operator for every tenant (`policy`) and per tenant
 * (`tenants[].policy`), narrowed per keyless token or grant. Every layer applies: a request passes only if each allows
 * it, so a narrower layer can never widen another. Checked on the route table's body step, before anything is forwarded.
 */
export const agentPolicySchema = z.strictObject({
  /** Hosts the URLs of fetch, scrape, crawl and extract may name: `allow` (when set, only these) and `deny`. */
  domains: z
    .strictObject({
      /** When set, only URLs on these hosts ("example.com" and its subdomains; "*.example.com" its subdomains only). */
      allow: z.array(domainRule).optional(),
      /** URLs on these hosts are refused; they are also added to the urlBlocklist of every browser an agent starts. */
      deny: z.array(domainRule).optional(),
    })
    .optional(),
  /** Sandbox images a sandbox may start from ("name", or "prefix*"); a snapshot's image counts. */
  images: z.array(z.string().min(1).max(256)).optional(),
  /** The longest a browser session may live (its timeoutMinutes; sent when the body leaves it out). */
  maxSessionMinutes: z.number({ error: "expected a number of minutes" }).positive().optional(),
  /** The longest a sandbox may live (its timeoutMinutes; sent when the body leaves it out). */
  maxSandboxMinutes: z.number({ error: "expected a number of minutes" }).positive().optional(),
  /** The largest crawl: maxPages of a crawl and a web crawl, maxLinks of an extract (sent when left out). */
  maxCrawlPages: z.number({ error: "expected a number of pages" }).int().positive().optional(),
  /**
   * The egress floor merged into every sandbox and session create (and a sandbox's network update): `denyOut` is always
   * added; a body's `allowOut` must fit within `allowOut` and outside `denyOut`; `allowInternetAccess: false` cannot be
   * turned on.
   */
  egress: z
    .strictObject({
      /** false: a body asking for internet access is refused, and false is sent. */
      allowInternetAccess: z.boolean().optional(),
      /** Addresses, CIDR ranges or hosts a body's allowOut entries must lie within (sent when the body names none). */
      allowOut: z.array(egressRule).optional(),
      /** Addresses, CIDR ranges or hosts always added to denyOut; a body's allowOut entry inside one is refused. */
      denyOut: z.array(egressRule).optional(),
    })
    .optional(),
});
export type AgentPolicy = z.infer<typeof agentPolicySchema>;

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

/** Cloudflare's Durable Object location hints. */
const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"] as const;

export const tenantSchema = z.strictObject({
  id: z
    .string({ error: "expected a tenant id" })
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, { error: "expected a lowercase id of letters, digits, '-' or '_'" }),
  enabled: z.boolean().default(true),
  scopes: z
    .array(z.enum(SCOPES, { error: `expected one of ${SCOPES.join(", ")}` }))
    .default(["search", "sessions", "sandboxes", "jobs", "agents"]),
  /**
   * The tenant's API keys by hash. Empty is a tenant whose every key was revoked: its key callers are refused, its
   * OAuth grants and wallet sales go on (the export writes it so, and applies back unchanged).
   */
  keys: z.array(tenantKeySchema, {
    error: "expected a list of keys (run `tollgate keys create --tenant ID` for one; `keys = []` for a tenant with every key revoked)",
  }),
  budget: budgetSchema.default({}),
  payment: paymentPolicySchema.default({}),
  /** The upstream accounts ([[upstream.accounts]] ids) this tenant's new work may be placed on; unset: any. */
  accounts: z.array(accountId).min(1, { error: "expected at least one account id (or leave accounts out)" }).optional(),
  /** Pass the client's own PAYMENT-SIGNATURE through and charge nothing to the tenant. */
  paysForItself: z.boolean().default(false),
  quotas: quotaSchema.default({}),
  /** What this tenant's agents may do, within the operator's `policy` ([agent policies](agent-policies.md)). */
  policy: agentPolicySchema.optional(),
  /**
   * Named agent policies the person consenting to an OAuth grant may pick for it ([agent policies](agent-policies.md#grants)):
   * the grant's tokens carry the one chosen, which narrows `policy` (every layer applies).
   */
  agentPolicies: z
    .record(
      z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, { error: "expected a policy name of lowercase letters, digits, '-' or '_'" }),
      agentPolicySchema,
    )
    .optional(),
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
  /**
   * Workers: where this tenant's Durable Objects (its ledger, its resources) are created, a Cloudflare location hint
   * near its users. Applies when an object is first created. Unset: near the first request that needs it.
   */
  locationHint: z.enum(LOCATION_HINTS, { error: `expected a Durable Object location hint: ${LOCATION_HINTS.join(", ")}` }).optional(),
});
