// The OpenAPI 3.1 document of Tollgate's own endpoints (/_tollgate/*), generated from the route table: every row that
// carries a `doc` (src/routing/own-rows.ts) is an operation, with the zod schemas its handler validates with and
// answers. The upstream's surfaces (/api, /x402, /sandbox) are the upstream's own API and are not repeated here.
import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from "@asteasolutions/zod-to-openapi";
import * as z from "zod";
import { VERSION } from "../version.js";
import { errorBody } from "../schemas.js";
import { methodsOf, ROUTES, type RouteRow } from "../../routing/table.js";
import type { DocAnswer, RouteDoc } from "../../routing/row.js";

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
/** Path parameters that say more than "a string". */
const PARAMS: Record<string, z.ZodType> = { keyId: z.string().describe("First 16 hex digits of the key's SHA-256") };

/** Who may call a documented row, and so what it may refuse: open rows, the metrics scrape, or a tenant's key. */
function access(row: RouteRow): Pick<RouteConfig, "security" | "responses"> {
  if (row.auth.includes("public") || row.auth.includes("none")) return { security: [], responses: openErrors };
  if (row.auth.includes("metrics-token"))
    return { security: [{ metricsToken: [] }, ...tenantKey], responses: { 401: errors[401], 403: errors[403], ...openErrors } };
  // The admin API also takes a person signed in through the identity provider (docs/sign-in.md).
  if (row.auth.includes("operator")) return { security: [...tenantKey, { identityProvider: [] }], responses: errors };
  return { security: tenantKey, responses: errors };
}

function answer(a: DocAnswer) {
  const content: Record<string, { schema: z.ZodType }> = {};
  if (a.schema) content["application/json"] = { schema: a.schema };
  if (a.text) content[a.text] = { schema: z.string() };
  return { description: a.description, content };
}

/** One operation per method of a row that carries a `doc`, its path in OpenAPI's `{param}` form. */
function operationsOf(row: RouteRow & { doc: RouteDoc }): RouteConfig[] {
  const { doc } = row;
  const path = row.path.replace(/:([A-Za-z]+)/g, "{$1}");
  const names = [...row.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const params = names.length ? z.object(Object.fromEntries(names.map((n) => [n, PARAMS[n] ?? z.string()]))) : undefined;
  const body = doc.body ?? (row.body.kind === "handler" ? row.body.schema : undefined);
  const { security, responses } = access(row);
  const answers = Object.fromEntries(Object.entries(doc.answers).map(([status, a]) => [status, answer(a)]));
  return methodsOf(row).map((m) => {
    const method = m.toLowerCase() as RouteConfig["method"];
    return {
      method,
      path,
      tags: [doc.tag],
      security,
      summary: doc.summary,
      operationId: doc.operationId ?? operationIdOf(method, path),
      ...(params || doc.query || body
        ? {
            request: {
              ...(params ? { params } : {}),
              ...(doc.query ? { query: doc.query } : {}),
              ...(body ? { body: { content: { "application/json": { schema: body } } } } : {}),
            },
          }
        : {}),
      responses: { ...responses, ...answers },
    };
  });
}

/** The document's operations: the rows that carry a `doc` (src/routing/own-rows.ts, and the computer action). */
function routes(rows: readonly RouteRow[]): RouteConfig[] {
  return rows.filter((r): r is RouteRow & { doc: RouteDoc } => r.doc !== undefined).flatMap(operationsOf);
}

/** `put /admin/tenants/{id}/budget` → putAdminTenantsIdBudget. */
function operationIdOf(method: string, path: string): string {
  const words = path
    .slice(P.length)
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
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
 * The document of `rows` (the route table's), with `publicOrigin` (server.publicOrigin) as its server when set, else the
 * origin it is read from.
 * @example openApiDocument("https://gateway.example.com").servers // [{ url: "https://gateway.example.com" }]
 */
export function openApiDocument(publicOrigin?: string, rows: readonly RouteRow[] = ROUTES) {
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
  for (const r of routes(rows)) registry.registerPath(r);
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
