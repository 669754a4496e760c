// The admin API's wire shapes (zod): request bodies it validates and the answers it gives. The OpenAPI document is
// generated from these (./http/openapi.ts), so what is validated and what is documented cannot drift apart.
import * as z from "zod";
import { budgetSchema, paymentPolicySchema, quotaSchema, SCOPES, tenantAlertsSchema, tenantSchema } from "../../config/tenant-schema.js";

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

/** POST /admin/console-links: how long the one-time sign-in code lives (default 300 s). */
export const consoleLinkBody = z
  .strictObject({ ttlSeconds: z.number().int().min(30).max(900).optional() })
  .meta({ id: "ConsoleLinkCreate" });

export const errorBody = z.object({ message: z.string(), code: z.string() }).meta({ id: "Error" });
