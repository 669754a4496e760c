// The OpenAPI 3.1 document of Tollgate's own endpoints (/_tollgate/*), generated from the zod schemas the routes
// validate with. The upstream's surfaces (/api, /x402, /sandbox) are the upstream's own API and are not repeated here.
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import * as z from "zod";
import { VERSION } from "./own-routes.js";
import { mintRequest } from "./token-routes.js";
import {
  auditEntryView,
  errorBody,
  issuedKey,
  keyCreateBody,
  keyExpireBody,
  keyRotateBody,
  ledgerQuery,
  pageQuery,
  SECTIONS,
  tenantCreateBody,
  tenantPatchBody,
  tenantView,
} from "./admin/schemas.js";
import { outboxMessageView, outboxQuery } from "./admin/webhooks.js";

const P = "/_tollgate";
const json = (schema: z.ZodType, description: string) => ({ description, content: { "application/json": { schema } } });
const errors = {
  400: json(errorBody, "Invalid request: `message` names each field and what it expected"),
  401: json(errorBody, "Missing, unknown, expired or disabled key"),
  403: json(errorBody, "The key lacks the scope the route needs"),
  404: json(errorBody, "Not found"),
  429: json(errorBody, "Rate limited (the tenant's requestsPerMinute); Retry-After says when to try again"),
  503: json(errorBody, "The state backend is unavailable (`state_unavailable`); nothing was changed"),
};
/** Refusals any route may give, credentials or not: the gateway's own endpoints are rate limited per client too. */
const openErrors = { 429: errors[429] };
const tenantKey: Array<Record<string, string[]>> = [{ tenantKey: [] }, { tenantBearer: [] }];
const idParam = z.object({ id: z.string() });
const keyParams = z.object({ id: z.string(), keyId: z.string().describe("First 16 hex digits of the key's SHA-256") });
const anyObject = z.object({}).passthrough();

const ledgerEntry = z
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

function routes(): RouteConfig[] {
  const admin = (r: Omit<RouteConfig, "security" | "tags" | "responses"> & { responses: RouteConfig["responses"] }): RouteConfig => ({
    ...r,
    path: `${P}/admin${r.path}`,
    tags: ["admin"],
    security: [...tenantKey, { identityProvider: [] }],
    responses: { ...errors, ...r.responses },
  });
  return [
    {
      method: "get",
      path: `${P}/health`,
      tags: ["gateway"],
      security: [],
      summary: "Liveness",
      responses: { 200: json(z.object({ status: z.literal("ok"), service: z.string(), version: z.string() }), "Up"), ...openErrors },
    },
    {
      method: "get",
      path: `${P}/ready`,
      tags: ["gateway"],
      security: [],
      summary: "Readiness: the state backend, the upstream, the signer and the wallet, each with its figures",
      responses: {
        200: json(readiness, "Ready, or degraded (serving; payments at risk)"),
        503: json(readiness, "Not ready: the state backend or the upstream cannot be reached"),
        ...openErrors,
      },
    },
    {
      method: "get",
      path: `${P}/metrics`,
      tags: ["gateway"],
      security: [{ metricsToken: [] }, ...tenantKey],
      summary: "Prometheus metrics (an admin key, or the TOLLGATE_METRICS_TOKEN bearer)",
      responses: {
        200: { description: "The text exposition format 0.0.4", content: { "text/plain": { schema: z.string() } } },
        401: errors[401],
        403: errors[403],
        ...openErrors,
      },
    },
    {
      method: "get",
      path: `${P}/openapi.json`,
      tags: ["gateway"],
      security: [],
      summary: "This document",
      responses: { 200: json(anyObject, "The OpenAPI 3.1 document"), ...openErrors },
    },
    {
      method: "get",
      path: `${P}/docs`,
      tags: ["gateway"],
      security: [],
      summary: "This document, as a browsable page (Swagger UI served by the gateway)",
      responses: {
        200: { description: "The page", content: { "text/html": { schema: z.string() } } },
        404: json(errorBody, "Not served by this runtime (Workers)"),
        ...openErrors,
      },
    },
    {
      method: "get",
      path: `${P}/whoami`,
      tags: ["gateway"],
      security: tenantKey,
      summary: "The tenant behind a key",
      responses: { 200: json(z.object({ tenant: z.string(), scopes: z.array(z.string()) }), "The tenant"), ...errors },
    },
    {
      method: "get",
      path: `${P}/usage`,
      tags: ["usage"],
      security: tenantKey,
      summary: "Budget windows (limit, spent, remaining, reset) and cache savings across the fleet",
      responses: { 200: json(anyObject, "Usage"), ...errors },
    },
    {
      method: "get",
      path: `${P}/ledger`,
      tags: ["usage"],
      security: tenantKey,
      summary: "The tenant's own payment authorizations",
      request: { query: z.object({ state: ledgerQuery.shape.state, limit: pageQuery.shape.limit }) },
      responses: { 200: json(z.object({ entries: z.array(ledgerEntry) }), "Entries, newest first"), ...errors },
    },
    {
      method: "post",
      path: `${P}/tokens`,
      tags: ["tokens"],
      security: tenantKey,
      summary: "Mint a keyless token for an untrusted client",
      request: { body: { content: { "application/json": { schema: mintRequest } } } },
      responses: { 201: json(anyObject, "The token, once"), ...errors },
    },
    {
      method: "delete",
      path: `${P}/tokens/{jti}`,
      tags: ["tokens"],
      security: tenantKey,
      summary: "Revoke a minted token",
      request: { params: z.object({ jti: z.string() }) },
      responses: { 200: json(z.object({ revoked: z.boolean(), jti: z.string() }), "Revoked"), ...errors },
    },
    {
      method: "post",
      path: `${P}/tokens/revoke`,
      tags: ["tokens"],
      security: tenantKey,
      summary: "Revoke a token by its value",
      request: { body: { content: { "application/json": { schema: z.object({ token: z.string() }) } } } },
      responses: { 200: json(z.object({ revoked: z.boolean(), jti: z.string() }), "Revoked"), ...errors },
    },
    {
      method: "post",
      path: `${P}/computer-action/{id}`,
      tags: ["sessions"],
      security: tenantKey,
      summary: "A session's computer action (the SDK's computerActionEndpoint)",
      request: { params: idParam },
      responses: { 200: json(anyObject, "The upstream's answer"), ...errors },
    },
    admin({
      method: "get",
      path: "/usage",
      summary: "Every tenant's usage",
      responses: { 200: json(z.object({ tenants: z.array(anyObject) }), "Usage per tenant") },
    }),
    admin({
      method: "get",
      path: "/ledger",
      summary: "Every tenant's ledger, filtered and paged",
      request: { query: ledgerQuery },
      responses: { 200: json(z.object({ entries: z.array(ledgerEntry), next: z.string().nullable() }), "A page, newest first") },
    }),
    admin({
      method: "get",
      path: "/audit",
      summary: "The audit log of admin actions, paged",
      request: { query: pageQuery },
      responses: { 200: json(z.object({ entries: z.array(auditEntryView), next: z.string().nullable() }), "A page, newest first") },
    }),
    admin({
      method: "get",
      path: "/webhooks",
      summary: "The alert outbox: deliveries waiting (attempts, next try, last error) or given up (dead letters)",
      request: { query: outboxQuery },
      responses: { 200: json(z.object({ state: z.enum(["pending", "dead"]), messages: z.array(outboxMessageView) }), "Messages") },
    }),
    admin({
      method: "get",
      path: "/tenants",
      summary: "List tenants",
      responses: { 200: json(z.object({ tenants: z.array(tenantView) }), "Tenants") },
    }),
    admin({
      method: "post",
      path: "/tenants",
      summary: "Create a tenant and its first key (shown once)",
      request: { body: { content: { "application/json": { schema: tenantCreateBody } } } },
      responses: {
        201: json(
          z.object({ tenant: tenantView, key: z.string().describe("The plain key: shown once, never stored"), keyId: z.string() }),
          "Created",
        ),
        409: json(errorBody, "The id is taken"),
      },
    }),
    admin({
      method: "get",
      path: "/tenants/{id}",
      summary: "Read a tenant",
      request: { params: idParam },
      responses: { 200: json(tenantView, "The tenant") },
    }),
    admin({
      method: "patch",
      path: "/tenants/{id}",
      summary: "Update a tenant (disabling pulls the kill switch)",
      request: { params: idParam, body: { content: { "application/json": { schema: tenantPatchBody } } } },
      responses: { 200: json(tenantView, "Updated"), 409: json(errorBody, "An admin would lock itself out") },
    }),
    ...Object.entries(SECTIONS).map(([section, schema]) =>
      admin({
        method: "put",
        path: `/tenants/{id}/${section}`,
        summary: `Replace a tenant's ${section}`,
        request: { params: idParam, body: { content: { "application/json": { schema } } } },
        responses: { 200: json(tenantView, "Updated") },
      }),
    ),
    admin({
      method: "post",
      path: "/tenants/{id}/disable",
      summary: "Disable a tenant: stops its sandboxes and sessions, revokes its tokens",
      request: { params: idParam },
      responses: { 200: json(tenantView, "Disabled") },
    }),
    admin({
      method: "post",
      path: "/tenants/{id}/enable",
      summary: "Enable a tenant",
      request: { params: idParam },
      responses: { 200: json(tenantView, "Enabled") },
    }),
    admin({
      method: "delete",
      path: "/tenants/{id}",
      summary: "Delete a tenant (kill switch, then a tombstone)",
      request: { params: idParam },
      responses: { 200: json(z.object({ id: z.string(), deleted: z.literal(true) }), "Deleted") },
    }),
    admin({
      method: "post",
      path: "/tenants/{id}/keys",
      summary: "Create a key (the plain key is in this answer only)",
      request: { params: idParam, body: { content: { "application/json": { schema: keyCreateBody } } } },
      responses: { 201: json(issuedKey, "The new key, once") },
    }),
    admin({
      method: "post",
      path: "/tenants/{id}/keys/{keyId}/rotate",
      summary: "Replace a key by a new one (the old one stops now or after graceSeconds)",
      request: { params: keyParams, body: { content: { "application/json": { schema: keyRotateBody } } } },
      responses: { 201: json(issuedKey.extend({ replaced: z.string(), replacedExpiresAt: z.string() }), "The new key, once") },
    }),
    admin({
      method: "post",
      path: "/tenants/{id}/keys/{keyId}/expire",
      summary: "Set a key's expiry",
      request: { params: keyParams, body: { content: { "application/json": { schema: keyExpireBody } } } },
      responses: { 200: json(z.object({ tenant: z.string(), id: z.string(), expiresAt: z.string() }), "Expiry set") },
    }),
    admin({
      method: "delete",
      path: "/tenants/{id}/keys/{keyId}",
      summary: "Revoke a key",
      request: { params: keyParams },
      responses: { 200: json(z.object({ tenant: z.string(), revoked: z.string() }), "Revoked") },
    }),
    admin({
      method: "post",
      path: "/tenants/{id}/keys/{keyId}/revoke",
      summary: "Revoke a key (the form the console posts)",
      request: { params: keyParams },
      responses: { 200: json(z.object({ tenant: z.string(), revoked: z.string() }), "Revoked") },
    }),
  ];
}

const readiness = z
  .object({
    status: z.enum(["ready", "degraded", "not_ready"]),
    checks: z.object({ state: anyObject, upstream: anyObject, signer: anyObject, wallet: anyObject }),
  })
  .meta({ id: "Readiness" });

/** Readable ids for the operations; one added later without an entry gets one made from its method and path. */
const OPERATION_IDS: Record<string, string> = {
  "get /health": "getHealth",
  "get /ready": "getReadiness",
  "get /metrics": "getMetrics",
  "get /openapi.json": "getOpenApiDocument",
  "get /docs": "getApiDocs",
  "get /whoami": "whoAmI",
  "get /usage": "getUsage",
  "get /ledger": "listLedger",
  "post /tokens": "mintToken",
  "delete /tokens/{jti}": "revokeTokenById",
  "post /tokens/revoke": "revokeToken",
  "post /computer-action/{id}": "sessionComputerAction",
  "get /admin/usage": "adminGetUsage",
  "get /admin/ledger": "adminListLedger",
  "get /admin/audit": "adminListAudit",
  "get /admin/webhooks": "adminListWebhookDeliveries",
  "get /admin/tenants": "adminListTenants",
  "post /admin/tenants": "adminCreateTenant",
  "get /admin/tenants/{id}": "adminGetTenant",
  "patch /admin/tenants/{id}": "adminUpdateTenant",
  "delete /admin/tenants/{id}": "adminDeleteTenant",
  "post /admin/tenants/{id}/disable": "adminDisableTenant",
  "post /admin/tenants/{id}/enable": "adminEnableTenant",
  "post /admin/tenants/{id}/keys": "adminCreateKey",
  "post /admin/tenants/{id}/keys/{keyId}/rotate": "adminRotateKey",
  "post /admin/tenants/{id}/keys/{keyId}/expire": "adminExpireKey",
  "delete /admin/tenants/{id}/keys/{keyId}": "adminRevokeKey",
  "post /admin/tenants/{id}/keys/{keyId}/revoke": "adminRevokeKeyByForm",
};

/** `put /admin/tenants/{id}/budget` → adminPutTenantsIdBudget. */
function operationIdOf(method: string, path: string): string {
  const rel = path.slice(P.length);
  const known = OPERATION_IDS[`${method} ${rel}`];
  if (known) return known;
  const words = rel.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
}

const TAGS = [
  { name: "gateway", description: "Liveness, readiness, metrics and this document" },
  { name: "usage", description: "A tenant's budgets, spend and ledger" },
  { name: "tokens", description: "Keyless tokens a tenant mints for untrusted clients" },
  { name: "sessions", description: "Browser-session helpers the gateway serves itself" },
  { name: "admin", description: "The operator API (a key with the admin scope)" },
];

/**
 * The document, with `publicOrigin` (server.publicOrigin) as its server when set, else the origin it is read from.
 * @example openApiDocument("https://gateway.example.com").servers // [{ url: "https://gateway.example.com" }]
 */
export function openApiDocument(publicOrigin?: string) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent("securitySchemes", "tenantKey", {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "A tenant key; admin routes need the admin scope",
  });
  registry.registerComponent("securitySchemes", "tenantBearer", {
    type: "http",
    scheme: "bearer",
    description: "A tenant key as `Authorization: Bearer <key>`",
  });
  registry.registerComponent("securitySchemes", "identityProvider", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "With [operators.oidc]: a JWT of the identity provider (its role from the configured mappings), or Cloudflare Access's Cf-Access-Jwt-Assertion header with [operators.access] (docs/sign-in.md)",
  });
  registry.registerComponent("securitySchemes", "metricsToken", {
    type: "http",
    scheme: "bearer",
    description: "TOLLGATE_METRICS_TOKEN, for Prometheus scrapes of /_tollgate/metrics only",
  });
  for (const r of routes()) registry.registerPath({ ...r, operationId: r.operationId ?? operationIdOf(r.method, r.path) });
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: "3.1.0",
    info: {
      title: "Tollgate",
      version: VERSION,
      description: "The gateway's own endpoints. Errors are `{message, code}` with the HTTP status.",
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers: [{ url: publicOrigin ?? "/", description: publicOrigin ? "This gateway" : "The origin this document was read from" }],
    security: tenantKey,
    tags: TAGS,
  });
}
