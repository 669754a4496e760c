// What the gateway's own rows answer, as zod schemas: their rows (./own-rows.ts) carry them in `doc`, and the OpenAPI
// document (src/operators/http/openapi.ts) is built from the rows. Bodies the handlers read are the admin API's own
// (src/routing/admin-schemas.ts), declared on the rows too.
import * as z from "zod";
import { auditEntryView, errorBody, issuedKey, tenantView } from "./admin-schemas.js";
import type { DocAnswer } from "./row.js";

/** An answer of JSON of `schema`. */
export const json = (schema: z.ZodType, description: string): DocAnswer => ({ description, schema });
/** An answer of text of `text`. */
export const text = (type: NonNullable<DocAnswer["text"]>, description: string): DocAnswer => ({ description, text: type });
/** A refusal beside the common ones (`{message, code}`). */
export const refusal = (description: string): DocAnswer => ({ description, schema: errorBody });

export const anyObject = z.object({}).passthrough();

export const healthAnswer = z.object({ status: z.literal("ok"), service: z.string(), version: z.string() });
export const whoamiAnswer = z.object({ tenant: z.string(), scopes: z.array(z.string()) });

export const readiness = z
  .object({
    status: z.enum(["ready", "degraded", "not_ready"]),
    checks: z.object({ state: anyObject, upstream: anyObject, signer: anyObject, wallet: anyObject }),
  })
  .meta({ id: "Readiness" });

export const ledgerEntry = z
  .object({
    id: z.string(),
    tenant: z.string(),
    route: z.string(),
    kind: z.string().optional(),
    amount: z.string(),
    amountUsd: z.string(),
    state: z.enum(["reserved", "committed", "released", "uncertain"]),
    transaction: z.string().optional(),
    createdAt: z.number(),
  })
  .passthrough()
  .meta({ id: "LedgerEntry" });

export const revokedToken = z.object({ revoked: z.boolean(), jti: z.string() });
export const tokenByValue = z.object({ token: z.string() });

/** A usage window's bounds: `from` and `to` (ISO; default: this month). */
export const usageWindow = z.object({
  from: z.string().optional().describe("ISO date or time; default: the start of this month"),
  to: z.string().optional().describe("ISO date or time, exclusive; default: now"),
});

export const ledgerPage = z.object({ entries: z.array(ledgerEntry), next: z.string().nullable() });
export const auditPage = z.object({ entries: z.array(auditEntryView), next: z.string().nullable() });
export const tenantCreated = z.object({
  tenant: tenantView,
  key: z.string().describe("The plain key: shown once, never stored"),
  keyId: z.string(),
});
export const keyRotated = issuedKey.extend({ replaced: z.string(), replacedExpiresAt: z.string() });
export const consoleLinkAnswer = z.object({
  url: z.string().describe("The console's sign-in URL with a one-time code in its query"),
  expiresAt: z.string(),
});

/** One request of a tenant's request log (src/operators/actions/request-log.ts). */
export const requestRecord = z.object({
  id: z.string(),
  time: z.string(),
  tenant: z.string(),
  method: z.string(),
  route: z.string(),
  path: z.string(),
  status: z.number().int(),
  durationMs: z.number(),
  upstreamMs: z.number().optional(),
  spend: z.string().optional().describe("Atomic units (USD, 6 decimals)"),
  spendUsd: z.string().optional(),
  held: z.string().optional(),
  heldUsd: z.string().optional(),
  code: z.string().optional(),
  traceId: z.string().optional(),
  cache: z.string().optional(),
});
export const requestPage = z.object({ requests: z.array(requestRecord) });
/** The search of a request log; each field optional. */
export const requestQuery = z.object({
  status: z.string().optional().describe('"404", "4xx", "5xx", "error" or "ok"'),
  route: z.string().optional().describe('A row ("x402.web.search"), a family ("sandbox") or a path prefix ("/api/")'),
  code: z.string().optional().describe('The error code, e.g. "budget_exceeded"'),
  method: z.string().optional(),
  id: z.string().optional().describe("A request id"),
  from: z.string().optional().describe("ISO date or date-time"),
  to: z.string().optional().describe("ISO date (that whole day included) or date-time (exclusive)"),
  limit: z.string().optional().describe("1–1000, default 100"),
  format: z.enum(["json", "csv"]).optional(),
});

/** Config as code (src/operators/actions/config-state.ts): a plan (diff, apply, drift) and the exported state. */
const itemChange = z.object({
  id: z.string(),
  action: z.enum(["create", "update", "delete", "refused"]),
  fields: z.array(z.string()).optional().describe("An update's differing fields (keys by id, never by hash)"),
  reason: z.string().optional(),
});
export const configPlan = z
  .object({
    inSync: z.boolean(),
    prune: z.boolean(),
    sections: z.object({
      tenants: z.object({ changes: z.array(itemChange), unchanged: z.number(), notInFile: z.array(z.string()) }),
    }),
    ignored: z.array(z.string()).describe("Top-level keys of the file that are static configuration, not applied"),
  })
  .meta({ id: "ConfigPlan" });
export const configState = z.object({ tenants: z.array(anyObject) }).meta({ id: "ConfigState" });
