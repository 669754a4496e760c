// The gateway's own endpoints as rows of the route table (./table.ts): under /_tollgate (a prefix the upstream never
// uses) and the MCP endpoint. The chain mounts them like any row (identify → rate limit → body → handler); they are
// free, forward nothing, and their handlers sit by name beside their surface (src/operators/, src/operators/http/token-routes.ts,
// src/mcp/endpoint.ts; the console's in src/console/handlers/, whose rows are mounted on its own sub-app). Callers: "public" (anyone; a
// tenant key or gateway token presented is still the caller, for the rate limit), "tenant-key" (any of a tenant's
// keys), "operator" (an admin or operator-readonly key: read-only keys may read, not change), "metrics-token"
// (TOLLGATE_METRICS_TOKEN as a bearer), "mcp-token" (a keyless MCP token for its tenant), "console" (the console's
// session cookie; the console's own pages sign in and out). A row a client calls carries its `doc` (summary, answers
// as zod schemas from ./own-answers.ts): the OpenAPI document (src/operators/http/openapi.ts) is built from those rows.
import {
  keyCreateBody,
  keyExpireBody,
  keyRotateBody,
  SECTIONS,
  tenantCreateBody,
  tenantPatchBody,
  consoleLinkBody,
  ledgerQuery,
  pageQuery,
  salesQuery,
  tenantView,
  issuedKey,
  outboxMessageView,
  outboxQuery,
  mintRequest,
  CONFIG_BODY_LIMIT,
  configApplyBody,
  secretPutBody,
} from "./admin-schemas.js";
import * as z from "zod";
import { BODY, type BodySpec } from "./bodies/index.js";
import type { Method, RouteDoc, RouteRow } from "./row.js";
import {
  anyObject,
  auditPage,
  configPlan,
  configState,
  consoleLinkAnswer,
  healthAnswer,
  json,
  keyRotated,
  ledgerEntry,
  ledgerPage,
  readiness,
  refusal,
  revokedToken,
  tenantCreated,
  text,
  tokenByValue,
  usageWindow,
  whoamiAnswer,
  requestPage,
  requestQuery,
  requestRecord,
} from "./own-answers.js";

const OWN_PREFIX = "/_tollgate";
const P = OWN_PREFIX;
const GET = "GET" as const,
  POST = "POST" as const,
  PATCH = "PATCH" as const,
  PUT = "PUT" as const,
  DELETE = "DELETE" as const;
const ANY = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;

/** A body the handler reads and checks itself (with this schema: the admin API's own, so it is checked once). */
const handlerBody = (what: string, schema?: z.ZodType): BodySpec => ({ kind: "handler", what, ...(schema ? { schema } : {}) });

type OwnRow = Pick<RouteRow, "name" | "metric" | "path" | "auth" | "handler"> & Partial<RouteRow> & { method: Method | readonly Method[] };
const own = (r: OwnRow): RouteRow => ({ scope: undefined, pay: "free", body: BODY.none, ...r });

const PUBLIC = ["public"] as const,
  TENANT = ["tenant-key"] as const,
  OPERATOR = ["operator"] as const,
  /** The console's session cookie (a page without one redirects to sign-in; the sign-in pages take none). */
  CONSOLE = ["console"] as const;
/** A row's entry in the OpenAPI document (src/operators/http/openapi.ts): its tag, summary and answers. */
const doc = (
  tag: RouteDoc["tag"],
  operationId: string | undefined,
  summary: string,
  answers: RouteDoc["answers"],
  more: Partial<RouteDoc> = {},
): RouteDoc => ({
  tag,
  ...(operationId ? { operationId } : {}),
  summary,
  answers,
  ...more,
});
const tenantAnswer = (description: string) => ({ 200: json(tenantView, description) });
/** A console form (urlencoded or multipart), read by the page. */
const FORM = handlerBody("form");
/** Minting and revoking keyless tokens takes the tenant's key: a token cannot mint another. */
const KEY_NOT_TOKEN = {
  status: 403,
  code: "tenant_key_required",
  message: "Tokens are minted and revoked with a tenant key, not with a gateway token.",
} as const;

// biome-ignore format: one row per line, so the table reads as a table
export const OWN_ROWS: readonly RouteRow[] = [
  own({ name: "own.health", metric: "tollgate", method: GET, path: `${P}/health`, auth: PUBLIC, handler: "own.health", doc: doc("gateway", "getHealth", "Liveness", { 200: json(healthAnswer, "Up") }) }),
  own({ name: "own.whoami", metric: "tollgate", method: GET, path: `${P}/whoami`, auth: TENANT, handler: "own.whoami", doc: doc("gateway", "whoAmI", "The tenant behind a key", { 200: json(whoamiAnswer, "The tenant") }) }),
  own({ name: "own.ready", metric: "tollgate", method: GET, path: `${P}/ready`, auth: PUBLIC, handler: "own.ready", doc: doc("gateway", "getReadiness", "Readiness: the state backend, the upstream, the signer and the wallet, each with its figures", { 200: json(readiness, "Ready, or degraded (serving; payments at risk)"), 503: json(readiness, "Not ready: the state backend or the upstream cannot be reached") }) }),
  own({ name: "own.metrics", metric: "tollgate", method: GET, path: `${P}/metrics`, auth: ["metrics-token", "operator"], scope: "admin", handler: "own.metrics", doc: doc("gateway", "getMetrics", "Prometheus metrics (an admin key, or the TOLLGATE_METRICS_TOKEN bearer)", { 200: text("text/plain", "The text exposition format 0.0.4") }) }),
  own({ name: "own.openapi", metric: "tollgate", method: GET, path: `${P}/openapi.json`, auth: PUBLIC, handler: "own.openapi", doc: doc("gateway", "getOpenApiDocument", "This document", { 200: json(anyObject, "The OpenAPI 3.1 document") }) }),
  own({ name: "own.docs", metric: "tollgate", method: GET, path: `${P}/docs`, auth: PUBLIC, handler: "own.docs", doc: doc("gateway", "getApiDocs", "This document, as a browsable page (Swagger UI served by the gateway)", { 200: text("text/html", "The page"), 404: refusal("Not served by this runtime (Workers)") }) }),
  own({ name: "own.docs.init", metric: "tollgate", method: GET, path: `${P}/docs/init.js`, auth: PUBLIC, handler: "own.docs.init" }),
  own({ name: "own.docs.asset", metric: "tollgate", method: GET, path: `${P}/docs/:asset`, auth: PUBLIC, handler: "own.docs.asset" }),
  // ── Spend visibility: a tenant's own; an operator's of everyone ──
  own({ name: "own.usage", metric: "tollgate", method: GET, path: `${P}/usage`, auth: ["tenant-key", "mcp-token"], wrongToken: { status: 401, code: "tenant_key_required", message: "Usage is read with a tenant key or an MCP token." }, handler: "own.usage", doc: doc("usage", "getUsage", "Budget windows (limit, spent, remaining, reset) and cache savings across the fleet", { 200: json(anyObject, "Usage") }) }),
  own({ name: "own.ledger", metric: "tollgate", method: GET, path: `${P}/ledger`, auth: TENANT, handler: "own.ledger", doc: doc("usage", "listLedger", "The tenant's own payment authorizations", { 200: json(z.object({ entries: z.array(ledgerEntry) }), "Entries, newest first") }, { query: z.object({ state: ledgerQuery.shape.state, limit: pageQuery.shape.limit }) }) }),
  // ── Keyless tokens ──
  own({ name: "own.tokens.mint", metric: "tollgate", method: POST, path: `${P}/tokens`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, body: handlerBody("JSON: a mint request (kind sandbox, session, search or mcp)"), handler: "own.tokens.mint", doc: doc("tokens", "mintToken", "Mint a keyless token for an untrusted client", { 201: json(anyObject, "The token, once") }, { body: mintRequest }) }),
  own({ name: "own.tokens.revokeByToken", metric: "tollgate", method: POST, path: `${P}/tokens/revoke`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, body: handlerBody("JSON: {token}"), handler: "own.tokens.revokeByToken", doc: doc("tokens", "revokeToken", "Revoke a token by its value", { 200: json(revokedToken, "Revoked") }, { body: tokenByValue }) }),
  own({ name: "own.tokens.revoke", metric: "tollgate", method: DELETE, path: `${P}/tokens/:jti`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, handler: "own.tokens.revoke", doc: doc("tokens", "revokeTokenById", "Revoke a minted token", { 200: json(revokedToken, "Revoked") }) }),
  // ── The admin API: an admin key changes, an operator-readonly key reads ──
  own({ name: "admin.usage", metric: "admin", method: GET, path: `${P}/admin/usage`, auth: OPERATOR, scope: "admin", handler: "admin.usage", doc: doc("admin", "adminGetUsage", "Every tenant's usage", { 200: json(z.object({ tenants: z.array(anyObject) }), "Usage per tenant") }) }),
  own({ name: "admin.usage.export", metric: "admin", method: GET, path: `${P}/admin/usage/export`, auth: OPERATOR, scope: "admin", handler: "admin.usage.export", doc: doc("admin", "adminExportUsage", "Chargeback: spend by tenant, day, kind and route row, as JSON or CSV", { 200: { ...json(anyObject, "The export (format=csv: a CSV file)"), text: "text/csv" } }, { query: usageWindow.extend({ format: z.enum(["json", "csv"]).optional() }) }) }),
  own({ name: "admin.credits.calibrate", metric: "admin", method: GET, path: `${P}/admin/credits/calibrate`, auth: OPERATOR, scope: "admin", handler: "admin.credits.calibrate", doc: doc("admin", "adminCalibrateCredits", "The credit price table against what the upstream reported over a window", { 200: json(anyObject, "The comparison per price") }, { query: usageWindow }) }),
  own({ name: "admin.consoleLink", metric: "admin", method: POST, path: `${P}/admin/console-links`, auth: OPERATOR, scope: "admin", readOnlyMay: true, body: handlerBody("JSON: ConsoleLink", consoleLinkBody), handler: "admin.consoleLink", doc: doc("admin", "adminCreateConsoleLink", "A one-time console sign-in link for the calling operator (the code is in this answer only)", { 201: json(consoleLinkAnswer, "The link, once") }) }),
  own({ name: "admin.tenants.list", metric: "admin", method: GET, path: `${P}/admin/tenants`, auth: OPERATOR, scope: "admin", handler: "admin.tenants.list", doc: doc("admin", "adminListTenants", "List tenants", { 200: json(z.object({ tenants: z.array(tenantView) }), "Tenants") }) }),
  own({ name: "admin.tenants.create", metric: "admin", method: POST, path: `${P}/admin/tenants`, auth: OPERATOR, scope: "admin", body: handlerBody("JSON: TenantCreate", tenantCreateBody), handler: "admin.tenants.create", doc: doc("admin", "adminCreateTenant", "Create a tenant and its first key (shown once)", { 201: json(tenantCreated, "Created"), 409: refusal("The id is taken") }) }),
  own({ name: "admin.tenants.get", metric: "admin", method: GET, path: `${P}/admin/tenants/:id`, auth: OPERATOR, scope: "admin", handler: "admin.tenants.get", doc: doc("admin", "adminGetTenant", "Read a tenant", tenantAnswer("The tenant")) }),
  own({ name: "admin.tenants.patch", metric: "admin", method: PATCH, path: `${P}/admin/tenants/:id`, auth: OPERATOR, scope: "admin", body: handlerBody("JSON: TenantPatch", tenantPatchBody), handler: "admin.tenants.patch", doc: doc("admin", "adminUpdateTenant", "Update a tenant (disabling pulls the kill switch)", { ...tenantAnswer("Updated"), 409: refusal("An admin would lock itself out, or the gateway's config file owns the tenant (config_conflict)") }) }),
  ...(Object.keys(SECTIONS) as (keyof typeof SECTIONS)[]).map((s) =>
    own({ name: `admin.tenants.${s}`, metric: "admin", method: PUT, path: `${P}/admin/tenants/:id/${s}`, auth: OPERATOR, scope: "admin", body: handlerBody(`JSON: the tenant's ${s}`, SECTIONS[s]), handler: "admin.tenants.section", doc: doc("admin", undefined, `Replace a tenant's ${s}`, tenantAnswer("Updated")) }),
  ),
  own({ name: "admin.tenants.disable", metric: "admin", method: POST, path: `${P}/admin/tenants/:id/disable`, auth: OPERATOR, scope: "admin", handler: "admin.tenants.disable", doc: doc("admin", "adminDisableTenant", "Disable a tenant: stops its sandboxes and sessions, revokes its tokens", tenantAnswer("Disabled")) }),
  own({ name: "admin.tenants.enable", metric: "admin", method: POST, path: `${P}/admin/tenants/:id/enable`, auth: OPERATOR, scope: "admin", handler: "admin.tenants.enable", doc: doc("admin", "adminEnableTenant", "Enable a tenant", tenantAnswer("Enabled")) }),
  own({ name: "admin.tenants.delete", metric: "admin", method: DELETE, path: `${P}/admin/tenants/:id`, auth: OPERATOR, scope: "admin", handler: "admin.tenants.delete", doc: doc("admin", "adminDeleteTenant", "Delete a tenant (kill switch, then a tombstone)", { 200: json(z.object({ id: z.string(), deleted: z.literal(true) }), "Deleted") }) }),
  own({ name: "admin.keys.create", metric: "admin", method: POST, path: `${P}/admin/tenants/:id/keys`, auth: OPERATOR, scope: "admin", body: handlerBody("JSON: KeyCreate", keyCreateBody), handler: "admin.keys.create", doc: doc("admin", "adminCreateKey", "Create a key (the plain key is in this answer only)", { 201: json(issuedKey, "The new key, once") }) }),
  own({ name: "admin.keys.rotate", metric: "admin", method: POST, path: `${P}/admin/tenants/:id/keys/:keyId/rotate`, auth: OPERATOR, scope: "admin", body: handlerBody("JSON: KeyRotate", keyRotateBody), handler: "admin.keys.rotate", doc: doc("admin", "adminRotateKey", "Replace a key by a new one (the old one stops now or after graceSeconds)", { 201: json(keyRotated, "The new key, once") }) }),
  own({ name: "admin.keys.revoke", metric: "admin", method: DELETE, path: `${P}/admin/tenants/:id/keys/:keyId`, auth: OPERATOR, scope: "admin", handler: "admin.keys.revoke", doc: doc("admin", "adminRevokeKey", "Revoke a key", { 200: json(z.object({ tenant: z.string(), revoked: z.string() }), "Revoked") }) }),
  own({ name: "admin.keys.expire", metric: "admin", method: POST, path: `${P}/admin/tenants/:id/keys/:keyId/expire`, auth: OPERATOR, scope: "admin", body: handlerBody("JSON: KeyExpire", keyExpireBody), handler: "admin.keys.expire", doc: doc("admin", "adminExpireKey", "Set a key's expiry", { 200: json(z.object({ tenant: z.string(), id: z.string(), expiresAt: z.string() }), "Expiry set") }) }),
  own({ name: "admin.audit", metric: "admin", method: GET, path: `${P}/admin/audit`, auth: OPERATOR, scope: "admin", handler: "admin.audit", doc: doc("admin", "adminListAudit", "The audit log of admin actions, paged", { 200: json(auditPage, "A page, newest first") }, { query: pageQuery }) }),
  own({ name: "admin.ledger", metric: "admin", method: GET, path: `${P}/admin/ledger`, auth: OPERATOR, scope: "admin", handler: "admin.ledger", doc: doc("admin", "adminListLedger", "Every tenant's ledger, filtered and paged", { 200: json(ledgerPage, "A page, newest first") }, { query: ledgerQuery }) }),
  own({ name: "admin.sales", metric: "admin", method: GET, path: `${P}/admin/sales`, auth: OPERATOR, scope: "admin", handler: "admin.sales", doc: doc("admin", "adminListSales", "What wallet buyers paid ([sales]): per buyer inbound, outbound and margin, and each sale (checked against the chain with check=chain)", { 200: json(anyObject, "Buyers and their sales") }, { query: salesQuery }) }),
  own({ name: "admin.webhooks", metric: "admin", method: GET, path: `${P}/admin/webhooks`, auth: OPERATOR, scope: "admin", handler: "admin.webhooks", doc: doc("admin", "adminListWebhookDeliveries", "The alert outbox: deliveries waiting (attempts, next try, last error) or given up (dead letters)", { 200: json(z.object({ state: z.enum(["pending", "dead"]), messages: z.array(outboxMessageView) }), "Messages") }, { query: outboxQuery }) }),
  // Config as code (docs/config-as-code.md): the live state in the config file's shape; a file compared and applied.
  own({ name: "admin.config.export", metric: "admin", method: GET, path: `${P}/admin/config/export`, auth: OPERATOR, scope: "admin", handler: "admin.config.export", doc: doc("admin", "adminExportConfig", "The live state (tenants, their key hashes, budgets, policies, quotas, alerts) in the config file's shape: TOML, or JSON with format=json", { 200: { ...json(configState, "The state (format=json); TOML by default"), text: "application/toml" } }, { query: z.object({ format: z.enum(["toml", "json"]).optional() }) }) }),
  own({ name: "admin.config.diff", metric: "admin", method: POST, path: `${P}/admin/config/diff`, auth: OPERATOR, scope: "admin", readOnlyMay: true, bodyLimit: CONFIG_BODY_LIMIT, body: handlerBody("JSON: ConfigApply", configApplyBody), handler: "admin.config.diff", doc: doc("admin", "adminDiffConfig", "What applying a file would change (nothing is written)", { 200: json(configPlan, "The plan"), 400: refusal("The file is invalid (every problem named by its path)") }) }),
  own({ name: "admin.config.apply", metric: "admin", method: POST, path: `${P}/admin/config/apply`, auth: OPERATOR, scope: "admin", bodyLimit: CONFIG_BODY_LIMIT, body: handlerBody("JSON: ConfigApply", configApplyBody), handler: "admin.config.apply", doc: doc("admin", "adminApplyConfig", "Apply a file: what it names is made to match it, what it does not name is left alone (deleted with prune); audited", { 200: json(configPlan.extend({ applied: z.boolean() }), "What was applied"), 400: refusal("The file is invalid"), 409: refusal("An item is refused (a deleted id, the last admin key): nothing written") }) }),
  own({ name: "admin.config.drift", metric: "admin", method: GET, path: `${P}/admin/config/drift`, auth: OPERATOR, scope: "admin", handler: "admin.config.drift", doc: doc("admin", "adminConfigDrift", "Drift: what the admin API and console changed since the last apply (before any, against the gateway's config file)", { 200: json(configPlan.extend({ against: anyObject }), "The drift") }) }),
  // ── The operator console: server-rendered pages behind its session cookie (sign-in pages are open) ──
  own({ name: "console.login.page", metric: "admin", method: GET, path: `${P}/console/login`, auth: CONSOLE, handler: "console.login.page" }),
  own({ name: "console.login", metric: "admin", method: POST, path: `${P}/console/login`, auth: CONSOLE, body: FORM, handler: "console.login" }),
  own({ name: "console.oidc.login", metric: "admin", method: GET, path: `${P}/console/oidc/login`, auth: CONSOLE, handler: "console.oidc.login" }),
  own({ name: "console.oidc.callback", metric: "admin", method: GET, path: `${P}/console/oidc/callback`, auth: CONSOLE, handler: "console.oidc.callback" }),
  own({ name: "console.link.page", metric: "admin", method: GET, path: `${P}/console/link`, auth: CONSOLE, handler: "console.link.page" }),
  own({ name: "console.link", metric: "admin", method: POST, path: `${P}/console/link`, auth: CONSOLE, body: FORM, handler: "console.link" }),
  own({ name: "console.logout", metric: "admin", method: POST, path: `${P}/console/logout`, auth: CONSOLE, body: FORM, handler: "console.logout" }),
  own({ name: "console.overview", metric: "admin", method: GET, path: `${P}/console`, auth: CONSOLE, handler: "console.overview" }),
  own({ name: "console.tenants.create", metric: "admin", method: POST, path: `${P}/console/tenants`, auth: CONSOLE, body: FORM, handler: "console.tenants.create" }),
  own({ name: "console.tenant", metric: "admin", method: GET, path: `${P}/console/tenants/:id`, auth: CONSOLE, handler: "console.tenant" }),
  own({ name: "console.tenant.settings", metric: "admin", method: POST, path: `${P}/console/tenants/:id/settings`, auth: CONSOLE, body: FORM, handler: "console.tenant.settings" }),
  own({ name: "console.tenant.enable", metric: "admin", method: POST, path: `${P}/console/tenants/:id/enable`, auth: CONSOLE, body: FORM, handler: "console.tenant.enabled" }),
  own({ name: "console.tenant.disable", metric: "admin", method: POST, path: `${P}/console/tenants/:id/disable`, auth: CONSOLE, body: FORM, handler: "console.tenant.enabled" }),
  own({ name: "console.ledger", metric: "admin", method: GET, path: `${P}/console/ledger`, auth: CONSOLE, handler: "console.ledger" }),
  own({ name: "console.ledger.csv", metric: "admin", method: GET, path: `${P}/console/ledger.csv`, auth: CONSOLE, handler: "console.ledger.csv" }),
  own({ name: "console.resources", metric: "admin", method: GET, path: `${P}/console/resources`, auth: CONSOLE, handler: "console.resources" }),
  own({ name: "console.resources.stopSandbox", metric: "admin", method: POST, path: `${P}/console/resources/sandbox/:id/stop`, auth: CONSOLE, body: FORM, handler: "console.resources.stop" }),
  own({ name: "console.resources.stopSession", metric: "admin", method: POST, path: `${P}/console/resources/session/:id/stop`, auth: CONSOLE, body: FORM, handler: "console.resources.stop" }),
  own({ name: "console.keys", metric: "admin", method: GET, path: `${P}/console/keys`, auth: CONSOLE, handler: "console.keys" }),
  own({ name: "console.keys.create", metric: "admin", method: POST, path: `${P}/console/tenants/:id/keys`, auth: CONSOLE, body: FORM, handler: "console.keys.create" }),
  own({ name: "console.keys.rotate", metric: "admin", method: POST, path: `${P}/console/tenants/:id/keys/:keyId/rotate`, auth: CONSOLE, body: FORM, handler: "console.keys.rotate" }),
  own({ name: "console.keys.revoke", metric: "admin", method: POST, path: `${P}/console/tenants/:id/keys/:keyId/revoke`, auth: CONSOLE, body: FORM, handler: "console.keys.revoke" }),
  own({ name: "console.tokens", metric: "admin", method: GET, path: `${P}/console/tokens`, auth: CONSOLE, handler: "console.tokens" }),
  own({ name: "console.tokens.mint", metric: "admin", method: POST, path: `${P}/console/tokens`, auth: CONSOLE, body: FORM, handler: "console.tokens.mint" }),
  own({ name: "console.tokens.revoke", metric: "admin", method: POST, path: `${P}/console/tokens/:jti/revoke`, auth: CONSOLE, body: FORM, handler: "console.tokens.revoke" }),
  own({ name: "console.grants", metric: "admin", method: GET, path: `${P}/console/grants`, auth: CONSOLE, handler: "console.grants" }),
  own({ name: "console.grants.revoke", metric: "admin", method: POST, path: `${P}/console/grants/:id/revoke`, auth: CONSOLE, body: FORM, handler: "console.grants.revoke" }),
  own({ name: "console.secrets", metric: "admin", method: GET, path: `${P}/console/secrets`, auth: CONSOLE, handler: "console.secrets" }),
  own({ name: "console.secrets.put", metric: "admin", method: POST, path: `${P}/console/tenants/:id/secrets`, auth: CONSOLE, body: FORM, handler: "console.secrets.put" }),
  own({ name: "console.secrets.delete", metric: "admin", method: POST, path: `${P}/console/tenants/:id/secrets/:name/delete`, auth: CONSOLE, body: FORM, handler: "console.secrets.delete" }),
  own({ name: "console.audit", metric: "admin", method: GET, path: `${P}/console/audit`, auth: CONSOLE, handler: "console.audit" }),
  own({ name: "console.requests", metric: "admin", method: GET, path: `${P}/console/requests`, auth: CONSOLE, handler: "console.requests" }),
  own({ name: "console.config", metric: "admin", method: GET, path: `${P}/console/config`, auth: CONSOLE, handler: "console.config" }),
  own({ name: "console.sales", metric: "admin", method: GET, path: `${P}/console/sales`, auth: CONSOLE, handler: "console.sales" }),
  own({ name: "console.notFound", metric: "admin", method: ANY, path: `${P}/console/*`, auth: CONSOLE, handler: "console.notFound" }),
  // ── MCP (Streamable HTTP) and its protected-resource metadata (RFC 9728) ──
  // ── The OAuth authorization server for /mcp (src/oauth/): metadata, registration, consent, tokens, revocation; grants ──
  own({ name: "oauth.metadata", metric: "tollgate", method: GET, path: "/.well-known/oauth-authorization-server", auth: ["none"], handler: "oauth.metadata" }),
  own({ name: "oauth.register", metric: "tollgate", method: POST, path: "/register", auth: ["none"], body: handlerBody("JSON: client metadata (RFC 7591)"), handler: "oauth.register" }),
  own({ name: "oauth.authorize.page", metric: "tollgate", method: GET, path: "/authorize", auth: ["none"], handler: "oauth.authorize.page" }),
  own({ name: "oauth.authorize", metric: "tollgate", method: POST, path: "/authorize", auth: ["none"], body: handlerBody("form: the consent"), handler: "oauth.authorize" }),
  own({ name: "oauth.token", metric: "tollgate", method: POST, path: "/token", auth: ["none"], body: handlerBody("form: a token request (RFC 6749)"), handler: "oauth.token" }),
  own({ name: "oauth.revoke", metric: "tollgate", method: POST, path: "/revoke", auth: ["none"], body: handlerBody("form: a revocation (RFC 7009)"), handler: "oauth.revoke" }),
  own({ name: "own.grants", metric: "tollgate", method: GET, path: `${P}/grants`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, handler: "own.grants", doc: doc("tokens", "listGrants", "The tenant's OAuth grants (agents connected with a link): client, scopes, cap, spend, last use", { 200: json(z.object({ grants: z.array(anyObject) }), "Grants, newest first") }) }),
  own({ name: "own.grants.revoke", metric: "tollgate", method: DELETE, path: `${P}/grants/:id`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, handler: "own.grants.revoke", doc: doc("tokens", "revokeGrant", "Revoke an OAuth grant: its tokens and refreshes are refused fleet-wide at once", { 200: json(anyObject, "The revoked grant") }) }),
  own({ name: "admin.grants", metric: "admin", method: GET, path: `${P}/admin/grants`, auth: OPERATOR, scope: "admin", handler: "admin.grants", doc: doc("admin", "adminListGrants", "A tenant's OAuth grants, or a person's (`person=oidc:<sub>`)", { 200: json(z.object({ grants: z.array(anyObject) }), "Grants, newest first") }, { query: z.object({ tenant: z.string().optional(), person: z.string().optional() }) }) }),
  own({ name: "admin.grants.revokePerson", metric: "admin", method: DELETE, path: `${P}/admin/grants`, auth: OPERATOR, scope: "admin", handler: "admin.grants.revokePerson", doc: doc("admin", "adminRevokePersonGrants", "Revoke every OAuth grant a person consented", { 200: json(z.object({ person: z.string(), revoked: z.array(anyObject) }), "The grants revoked") }, { query: z.object({ person: z.string() }) }) }),
  own({ name: "admin.grants.revoke", metric: "admin", method: DELETE, path: `${P}/admin/grants/:id`, auth: OPERATOR, scope: "admin", handler: "admin.grants.revoke", doc: doc("admin", "adminRevokeGrant", "Revoke any tenant's OAuth grant", { 200: json(anyObject, "The revoked grant") }) }),
  // The tenants' request logs (docs/request-logs.md): a tenant's own, and any tenant's for operators; JSON or CSV.
  own({ name: "own.requests", metric: "tollgate", method: GET, path: `${P}/requests`, auth: TENANT, handler: "own.requests", doc: doc("usage", "listRequests", "The tenant's last requests (route, status, latency, spend, error code, request and trace id), searched", { 200: { ...json(requestPage, "Requests, newest first (format=csv: a CSV file)"), text: "text/csv" }, 400: refusal("A search field is malformed (named in `field`)") }, { query: requestQuery }) }),
  own({ name: "own.requests.get", metric: "tollgate", method: GET, path: `${P}/requests/:id`, auth: TENANT, handler: "own.requests.get", doc: doc("usage", "getRequest", "One of the tenant's requests by its request id", { 200: json(requestRecord, "The request"), 404: refusal("Not one of this tenant's kept requests") }) }),
  own({ name: "admin.requests", metric: "admin", method: GET, path: `${P}/admin/requests`, auth: OPERATOR, scope: "admin", handler: "admin.requests", doc: doc("admin", "adminListRequests", "Any tenant's last requests (every tenant's without `tenant`), searched", { 200: { ...json(requestPage, "Requests, newest first (format=csv: a CSV file)"), text: "text/csv" }, 400: refusal("A search field is malformed (named in `field`)"), 404: refusal("No such tenant") }, { query: requestQuery.extend({ tenant: z.string().optional() }) }) }),
  // What the gateway sells over x402 ([sales], docs/sales.md): the Bazaar's discovery list, at a well-known path.
  own({ name: "sales.discovery", metric: "tollgate", method: GET, path: "/.well-known/x402", auth: ["none"], handler: "own.x402.discovery", doc: doc("usage", "listSoldResources", "What the gateway sells over x402: each sold resource with its offer and Bazaar input (the Bazaar discovery list's shape)", { 200: json(anyObject, "{x402Version, items}") }) }),
  // Tenant secrets (docs/secrets-for-agents.md): written, never read back; placeholders in sandboxes; the egress that swaps them.
  own({ name: "own.secrets.list", metric: "tollgate", method: GET, path: `${P}/secrets`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, handler: "own.secrets.list", doc: doc("tokens", "listSecrets", "The tenant's secrets: hosts, methods, paths, header, format, when changed and last used (never a value)", { 200: json(z.object({ secrets: z.array(anyObject) }), "Secrets, by name") }) }),
  own({ name: "own.secrets.get", metric: "tollgate", method: GET, path: `${P}/secrets/:name`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, handler: "own.secrets.get", doc: doc("tokens", "getSecret", "One secret's rules and last use (never its value)", { 200: json(anyObject, "The secret"), 404: refusal("No secret by that name") }) }),
  own({ name: "own.secrets.put", metric: "tollgate", method: PUT, path: `${P}/secrets/:name`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, body: handlerBody("JSON: value, hosts, methods?, paths?, header?, format?, sandboxes?", secretPutBody), handler: "own.secrets.put", doc: doc("tokens", "putSecret", "Create or replace a secret; it applies fleet-wide from its next use", { 200: json(anyObject, "Replaced"), 201: json(anyObject, "Created"), 400: refusal("A field is malformed (named in `fields`)") }, { body: secretPutBody }) }),
  own({ name: "own.secrets.delete", metric: "tollgate", method: DELETE, path: `${P}/secrets/:name`, auth: TENANT, wrongToken: KEY_NOT_TOKEN, handler: "own.secrets.delete", doc: doc("tokens", "deleteSecret", "Delete a secret: its placeholders are refused fleet-wide from now on", { 200: json(anyObject, "The deleted secret"), 404: refusal("No secret by that name") }) }),
  own({ name: "admin.secrets.list", metric: "admin", method: GET, path: `${P}/admin/secrets/:tenant`, auth: OPERATOR, scope: "admin", handler: "admin.secrets.list", doc: doc("admin", "adminListSecrets", "A tenant's secrets (never a value)", { 200: json(z.object({ secrets: z.array(anyObject) }), "Secrets, by name"), 404: refusal("No such tenant") }) }),
  own({ name: "admin.secrets.get", metric: "admin", method: GET, path: `${P}/admin/secrets/:tenant/:name`, auth: OPERATOR, scope: "admin", handler: "admin.secrets.get", doc: doc("admin", "adminGetSecret", "One of a tenant's secrets (never its value)", { 200: json(anyObject, "The secret"), 404: refusal("No such tenant or secret") }) }),
  own({ name: "admin.secrets.put", metric: "admin", method: PUT, path: `${P}/admin/secrets/:tenant/:name`, auth: OPERATOR, scope: "admin", body: handlerBody("JSON: value, hosts, methods?, paths?, header?, format?, sandboxes?", secretPutBody), handler: "admin.secrets.put", doc: doc("admin", "adminPutSecret", "Create or replace a tenant's secret", { 200: json(anyObject, "Replaced"), 201: json(anyObject, "Created"), 400: refusal("A field is malformed (named in `fields`)"), 404: refusal("No such tenant") }, { body: secretPutBody }) }),
  own({ name: "admin.secrets.delete", metric: "admin", method: DELETE, path: `${P}/admin/secrets/:tenant/:name`, auth: OPERATOR, scope: "admin", handler: "admin.secrets.delete", doc: doc("admin", "adminDeleteSecret", "Delete a tenant's secret", { 200: json(anyObject, "The deleted secret"), 404: refusal("No such tenant or secret") }) }),
  // Called from inside a sandbox with a secret's placeholder (no key: the placeholder is the credential), any method.
  own({ name: "egress", metric: "tollgate", method: ANY, path: `${P}/egress/:name/*`, auth: ["none"], body: BODY.bytes, handler: "egress", doc: doc("tokens", "egress", "From inside a sandbox: send a request to secret NAME's host with its placeholder in a header; the gateway writes the value in its place", { 200: { description: "The destination's answer, streamed as it comes" }, 401: refusal("No placeholder in any header"), 403: refusal("A placeholder not NAME's, of an ended sandbox or a deleted secret; a host, method or path the secret does not allow"), 429: refusal("egress.requestsPerMinute reached"), 502: refusal("The destination could not be reached") }) }),
  own({ name: "mcp.metadata", metric: "tollgate", method: GET, path: "/.well-known/oauth-protected-resource", auth: ["none"], handler: "mcp.metadata" }),
  own({ name: "mcp.metadata.resource", metric: "tollgate", method: GET, path: "/.well-known/oauth-protected-resource/mcp", auth: ["none"], handler: "mcp.metadata" }),
  own({ name: "mcp", metric: "tollgate", method: ANY, path: "/mcp", auth: ["tenant-key", "mcp-token"], wrongToken: { status: 403, code: "token_scope", message: "This is a {kind} token; /mcp takes a tenant key or an MCP token." }, body: handlerBody("JSON-RPC: one MCP message or a batch"), bearerChallenge: "/.well-known/oauth-protected-resource/mcp", handler: "mcp" }),
];
