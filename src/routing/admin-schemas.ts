// The admin API's and the gateway's own rows' wire shapes (zod): request bodies they validate and the answers they
// give. Below the route table (./own-rows.ts names them as row bodies) and the operators' code that uses them; the
// OpenAPI document is generated from these (src/operators/http/openapi.ts), so what is validated and what is
// documented cannot drift apart.
import * as z from "zod";
import { usdAmount } from "../../config/fields.js";
import { MCP_SCOPES } from "../identity/tokens.js";
import {
  agentPolicySchema,
  budgetSchema,
  paymentPolicySchema,
  quotaSchema,
  SCOPES,
  tenantAlertsSchema,
  tenantSchema,
} from "../../config/tenant-schema.js";

const isoDate = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' });
const scopesSchema = z.array(z.enum(SCOPES, { error: `expected one of ${SCOPES.join(", ")}` }));

/** Everything about a tenant an admin may change (keys have their own routes). */
const settings = {
  enabled: z.boolean(),
  scopes: scopesSchema,
  budget: budgetSchema,
  payment: paymentPolicySchema,
  paysForItself: z.boolean(),
  quotas: quotaSchema,
  policy: agentPolicySchema,
  /** The named agent policies a person consenting to an OAuth grant may pick (docs/agent-policies.md#grants). */
  agentPolicies: tenantSchema.shape.agentPolicies.unwrap(),
  onExhausted: z.enum(["block", "stop"], { error: 'expected "block" or "stop"' }),
  alerts: tenantAlertsSchema,
  creditMultiplier: tenantSchema.shape.creditMultiplier.unwrap(),
};

/** The same settings, each optional: what a PATCH may carry, and what a creation may set beyond the defaults. */
const optionalSettings = {
  enabled: settings.enabled.optional(),
  scopes: settings.scopes.optional(),
  budget: settings.budget.optional(),
  payment: settings.payment.optional(),
  paysForItself: settings.paysForItself.optional(),
  quotas: settings.quotas.optional(),
  policy: settings.policy.optional(),
  agentPolicies: settings.agentPolicies.optional(),
  onExhausted: settings.onExhausted.optional(),
  alerts: settings.alerts.optional(),
  creditMultiplier: settings.creditMultiplier.optional(),
};

export const tenantCreateBody = z
  .strictObject({
    id: tenantSchema.shape.id,
    ...optionalSettings,
    /** Label and expiry of the first key, which the answer carries once. */
    keyLabel: z.string().max(200).optional(),
    keyExpiresAt: isoDate.optional(),
  })
  .meta({ id: "TenantCreate" });

export const tenantPatchBody = z.strictObject(optionalSettings).meta({ id: "TenantPatch" });

/** PUT /tenants/{id}/{section}: one section replaced whole. */
export const SECTIONS = {
  scopes: settings.scopes,
  budget: settings.budget,
  payment: settings.payment,
  quotas: settings.quotas,
  policy: settings.policy,
  agentPolicies: settings.agentPolicies,
  alerts: settings.alerts,
} as const;
export type Section = keyof typeof SECTIONS;

export const keyCreateBody = z
  .strictObject({ label: z.string().max(200).optional(), expiresAt: isoDate.optional() })
  .meta({ id: "KeyCreate" });
export const keyRotateBody = z
  .strictObject({
    label: z.string().max(200).optional(),
    /** How long the old key keeps working (default 0: it stops at once). */
    graceSeconds: z
      .number()
      .int()
      .nonnegative()
      .max(30 * 86_400)
      .default(0),
    /** When the new key expires (never later than the old key would have). */
    expiresAt: isoDate.optional(),
  })
  .meta({ id: "KeyRotate" });
export const keyExpireBody = z.strictObject({ expiresAt: isoDate }).meta({ id: "KeyExpire" });

const keyView = z
  .object({ id: z.string(), label: z.string().optional(), expiresAt: z.string().optional(), createdAt: z.string().optional() })
  .meta({ id: "Key" });
export const tenantView = z
  .object({
    id: z.string(),
    source: z.enum(["config", "api"]),
    updatedAt: z.string(),
    keys: z.array(keyView),
    ...settings,
    policy: settings.policy.optional(),
    agentPolicies: settings.agentPolicies.optional(),
  })
  .meta({ id: "Tenant" });
export const issuedKey = z
  .object({
    key: z.string().describe("The plain key: shown once, never stored"),
    id: z.string(),
    tenant: z.string(),
    label: z.string().optional(),
    expiresAt: z.string().optional(),
  })
  .meta({ id: "IssuedKey" });

export const auditEntryView = z
  .object({
    seq: z.number(),
    at: z.string(),
    actor: z.string(),
    action: z.string(),
    target: z.string(),
    before: z.unknown().optional(),
    after: z.unknown().optional(),
    requestId: z.string().optional(),
  })
  .meta({ id: "AuditEntry" });

export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().optional().describe("`next` of the previous page"),
});
/** An ISO date or day ("2026-11-24", "2026-11-24T10:00:00Z") in a query, as epoch ms. */
const queryDate = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)), { error: 'expected an ISO-8601 date like "2026-11-24" or "2026-11-24T10:00:00Z"' })
  .transform((s) => Date.parse(s));

/** The audit log's filters; any other query parameter is refused (400), so a misspelt filter never passes silently. */
export const auditQuery = z
  .strictObject({
    ...pageQuery.shape,
    action: z.string().max(100).optional().describe('an action ("key.revoke"), or a prefix ending in "." or "*" ("key.", "tenant.*")'),
    actor: z.string().max(100).optional().describe("the tenant that acted, or system"),
    target: z.string().max(200).optional().describe('"tenant:<id>" (also matches its keys) or "key:<id>/<keyId>"'),
    since: queryDate.optional().describe("entries at or after this time"),
    until: queryDate.optional().describe("entries before this time"),
  })
  .meta({ id: "AuditQuery" });

export const ledgerQuery = pageQuery.extend({
  since: queryDate.optional().describe("entries created at or after this time"),
  until: queryDate.optional().describe("entries created before this time"),
  tenant: z.string().optional(),
  state: z.enum(["reserved", "committed", "released", "uncertain"]).optional(),
  kind: z.enum(["x402", "credits"]).optional().describe("how it was paid: x402 (on chain) or the operator's credits"),
  surface: z.enum(["search", "fetch", "session", "sandbox", "other"]).optional().describe("what it paid for"),
});

/** GET /admin/sales: one buyer's sales (a wallet tenant's id), and whether to check each against the chain. */
export const salesQuery = z.object({
  tenant: z.string().optional().describe("a wallet tenant (wallet-<address>); unset: every buyer"),
  check: z.enum(["chain"]).optional().describe("chain: look each sale's transaction up and compare its transfer"),
});

/** POST /admin/console-links: how long the one-time sign-in code lives (default 300 s). */
export const consoleLinkBody = z
  .strictObject({ ttlSeconds: z.number().int().min(30).max(900).optional() })
  .meta({ id: "ConsoleLinkCreate" });

export const errorBody = z.object({ message: z.string(), code: z.string() }).meta({ id: "Error" });

// ── The alert outbox (GET /_tollgate/admin/webhooks) ──

export const outboxQuery = z.object({
  state: z.enum(["pending", "dead"]).default("pending"),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const outboxMessageView = z
  .object({
    id: z.string(),
    event: z.string().describe("The `webhook-id` receivers dedupe on"),
    receiver: z.string().describe("The receiver's host"),
    format: z.enum(["standard", "slack"]),
    attempts: z.number(),
    nextAt: z.string().describe("When it is next due (while claimed: when the claim lapses)"),
    createdAt: z.string(),
    lastError: z.string().optional(),
  })
  .meta({ id: "OutboxMessage" });

// ── Keyless tokens (POST /_tollgate/tokens) ──

const ttl = z.number().int().positive().optional();
const nonEmptyUnique = <T extends string>(values: readonly [T, ...T[]]) =>
  z
    .array(z.enum(values))
    .min(1)
    .refine((a) => new Set(a).size === a.length, { error: "scopes must not repeat" });

export const mintRequest = z.discriminatedUnion("kind", [
  z.strictObject({
    kind: z.literal("sandbox"),
    sandboxId: z.string().min(1),
    scopes: nonEmptyUnique(["runtime", "terminal", "ports"] as const),
    ttlSeconds: ttl,
  }),
  z.strictObject({
    kind: z.literal("session"),
    sessionId: z.string().min(1),
    scopes: nonEmptyUnique(["cdp", "computer"] as const).optional(),
    ttlSeconds: ttl,
  }),
  // `policy` narrows what the holder may do within its tenant's policy (never wider: both apply; docs/agent-policies.md).
  z.strictObject({ kind: z.literal("search"), cap: usdAmount, ttlSeconds: ttl, policy: agentPolicySchema.optional() }),
  // An agent's credential for the MCP endpoint (/mcp) and the rows its tools call: the tenant scopes it may act in, and
  // its own spend cap within the tenant's budget.
  z.strictObject({
    kind: z.literal("mcp"),
    scopes: nonEmptyUnique(MCP_SCOPES),
    cap: usdAmount,
    ttlSeconds: ttl,
    policy: agentPolicySchema.optional(),
  }),
]);
export type MintRequest = z.infer<typeof mintRequest>;

// ── Config as code (POST /_tollgate/admin/config/diff and /apply) ──

/** The most a plan or apply body may hold: thousands of tenants with keys and rules. */
export const CONFIG_BODY_LIMIT = 8 * 1024 * 1024;

/** POST /admin/config/diff and /apply: the file, parsed (the CLI reads TOML or JSON and sends the object). */
export const configApplyBody = z
  .strictObject({
    document: z.record(z.string(), z.unknown()).describe("The file's content as an object (its TOML or JSON parsed)"),
    prune: z.boolean().default(false).describe("Also delete what the file does not name"),
  })
  .meta({ id: "ConfigApply" });

// ── Tenant secrets (PUT /_tollgate/secrets/NAME and /_tollgate/admin/secrets/TENANT/NAME) ──

/** A secret's name: what its placeholder's environment variable is called. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const HOST_PORT = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const HOP_BY_HOP = new Set(["host", "connection", "content-length", "transfer-encoding", "upgrade", "te", "trailer", "keep-alive"]);

/** Image or snapshot names a secret is limited to, as a sandbox create body names them. */
const sourceNames = (what: string) =>
  z
    .array(
      z
        .string()
        .trim()
        .min(1, { error: `expected a ${what} name` })
        .max(256),
      { error: `expected a list of ${what} names` },
    )
    .min(1, { error: `name at least one ${what}, or leave the field out` })
    .max(32);

export const secretPutBody = z.strictObject({
  /** The value: written once, never read back. */
  value: z.string().min(1, { error: "expected a non-empty value" }).max(16_384),
  /** Where it may go: `host` or `host:port` (https; plain http only to loopback where the operator allows it). */
  hosts: z
    .array(
      z
        .string()
        .transform((h) =>
          h
            .trim()
            .toLowerCase()
            .replace(/\.(?=:|$)/, ""),
        )
        .refine((h) => HOST_PORT.test(h) && !/:0*$/.test(h) && Number(h.split(":")[1] ?? 1) <= 65_535, {
          error: 'expected a host or host:port like "api.example.com" or "api.example.com:8443" (no scheme, path or wildcard)',
        }),
    )
    .min(1, { error: "name at least one host the secret may be sent to" })
    .max(32),
  /** The methods allowed; absent: any. */
  methods: z
    .array(z.enum(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], { error: "expected an HTTP method in upper case" }))
    .min(1)
    .optional(),
  /** Path prefixes allowed (each starts with `/`); absent: any. */
  paths: z
    .array(z.string().regex(/^\/[^?#\s]*$/, { error: 'expected a path prefix like "/v1/"' }))
    .min(1)
    .max(32)
    .optional(),
  /** The header the value is written into (default `authorization`). */
  header: z
    .string()
    .regex(HEADER_NAME, { error: "expected an HTTP header name" })
    .refine((h) => !HOP_BY_HOP.has(h.toLowerCase()), { error: "a hop-by-hop or framing header cannot carry a secret" })
    .transform((h) => h.toLowerCase())
    .default("authorization"),
  /** How the header's value is written, `{}` standing for the secret (default `Bearer {}`). */
  format: z
    .string()
    .max(256)
    .refine((f) => f.split("{}").length === 2, { error: 'expected the format to hold "{}" exactly once, like "Bearer {}"' })
    .default("Bearer {}"),
  /** Which sandboxes get its placeholder: every one (default), or processes whose env sets NAME to "tollgate:secret". */
  sandboxes: z.enum(["all", "on-request"], { error: 'expected "all" or "on-request"' }).default("all"),
  /** Only sandboxes created from one of these images (`imageName`), or from one of `snapshots`; absent both: any. */
  images: sourceNames("image").optional(),
  /** Only sandboxes created from one of these snapshots (`snapshotName`), or from one of `images`. */
  snapshots: sourceNames("snapshot").optional(),
});
