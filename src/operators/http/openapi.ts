// The OpenAPI 3.1 document of Tollgate's own endpoints (/_tollgate/*), generated from the route table: every row that
// carries a `doc` (src/routing/own-rows.ts) is an operation, with the zod schemas its handler validates with and
// answers. The upstream's surfaces (/api, /x402, /sandbox) are the upstream's own API and are not repeated here.
// Schemas are converted by zod's own `toJSONSchema` (JSON Schema 2020-12, OpenAPI 3.1's dialect); a schema named with
// `.meta({ id })` becomes a component and is referenced.
import * as z from "zod";
import { VERSION } from "../version.js";
import { errorBody } from "../../routing/admin-schemas.js";
import { methodsOf, ROUTES, type RouteRow } from "../../routing/table.js";
import type { DocAnswer, RouteDoc } from "../../routing/row.js";

const P = "/_tollgate";
const json = (schema: z.ZodType, description: string): DocAnswer => ({ description, schema });
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
function access(row: RouteRow): { security: Array<Record<string, string[]>>; responses: Record<number, DocAnswer> } {
  if (row.auth.includes("public") || row.auth.includes("none")) return { security: [], responses: openErrors };
  if (row.auth.includes("metrics-token"))
    return { security: [{ metricsToken: [] }, ...tenantKey], responses: { 401: errors[401], 403: errors[403], ...openErrors } };
  // The admin API also takes a person signed in through the identity provider (docs/sign-in.md).
  if (row.auth.includes("operator")) return { security: [...tenantKey, { identityProvider: [] }], responses: errors };
  return { security: tenantKey, responses: errors };
}

type Json = Record<string, unknown>;
type Io = "input" | "output";

/** Converts schemas into one document's components: a named schema (`.meta({ id })`) becomes `#/components/schemas/<id>`. */
class Schemas {
  readonly components: Record<string, Json> = {};

  /** `s` as JSON Schema for the document: `io` "input" for what a client sends, "output" for what it is answered. */
  of(s: z.ZodType, io: Io): Json {
    const id = z.globalRegistry.get(s)?.id;
    if (id) {
      if (!this.components[id]) {
        // zod puts a named schema itself into $defs (converted there) and answers a reference to it.
        const { id: _, ...rest } = this.convert(s, io);
        this.components[id] ??= rest;
      }
      return { $ref: `#/components/schemas/${id}` };
    }
    return this.convert(s, io);
  }

  private convert(s: z.ZodType, io: Io): Json {
    const { $schema: _, $defs, ...schema } = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
    for (const [name, def] of Object.entries(($defs ?? {}) as Record<string, Json>)) this.components[name] ??= relink(def);
    return relink(schema);
  }
}

/** `#/$defs/X` (where zod puts named subschemas) → `#/components/schemas/X`. */
function relink(schema: Json): Json {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/$defs/', '"#/components/schemas/'));
}

function answer(a: DocAnswer, schemas: Schemas) {
  const content: Record<string, { schema: Json }> = {};
  if (a.schema) content["application/json"] = { schema: schemas.of(a.schema, "output") };
  if (a.text) content[a.text] = { schema: { type: "string" } };
  return { description: a.description, content };
}

/** An object schema's properties as OpenAPI parameters `in` the path or the query. */
function parameters(object: z.ZodObject, where: "path" | "query", schemas: Schemas): Json[] {
  const json = schemas.of(object, "input") as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, schema]) => ({
    name,
    in: where,
    required: where === "path" || (json.required ?? []).includes(name),
    ...(typeof schema.description === "string" ? { description: schema.description } : {}),
    schema,
  }));
}

/** One operation per method of a row that carries a `doc`, its path in OpenAPI's `{param}` form. */
function operationsOf(row: RouteRow & { doc: RouteDoc }, schemas: Schemas): Array<{ path: string; method: string; op: Json }> {
  const { doc } = row;
  const path = row.path.replace(/:([A-Za-z]+)/g, "{$1}");
  const names = [...row.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const params = [
    ...(names.length ? parameters(z.object(Object.fromEntries(names.map((n) => [n, PARAMS[n] ?? z.string()]))), "path", schemas) : []),
    ...(doc.query ? parameters(doc.query, "query", schemas) : []),
  ];
  const body = doc.body ?? (row.body.kind === "handler" ? row.body.schema : undefined);
  const { security, responses } = access(row);
  const common = Object.fromEntries(Object.entries(responses).map(([status, a]) => [status, answer(a, schemas)]));
  const answers = Object.fromEntries(Object.entries(doc.answers).map(([status, a]) => [status, answer(a, schemas)]));
  const methods = methodsOf(row);
  return methods.map((m) => {
    const method = m.toLowerCase();
    // A row of several methods (the egress takes any) names each operation by its method too: ids stay unique.
    const named =
      doc.operationId && methods.length > 1 ? `${method}${doc.operationId[0]!.toUpperCase()}${doc.operationId.slice(1)}` : doc.operationId;
    return {
      path,
      method,
      op: {
        tags: [doc.tag],
        security,
        summary: doc.summary,
        operationId: named ?? operationIdOf(method, path),
        ...(params.length ? { parameters: params } : {}),
        ...(body ? { requestBody: { content: { "application/json": { schema: schemas.of(body, "input") } } } } : {}),
        responses: { ...common, ...answers },
      },
    };
  });
}

/** `put /admin/tenants/{id}/budget` → putAdminTenantsIdBudget. */
function operationIdOf(method: string, path: string): string {
  const words = path
    .slice(P.length)
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
}

const SECURITY_SCHEMES = {
  tenantKey: { type: "apiKey", in: "header", name: "x-api-key", description: "A tenant key; admin routes need the admin scope" },
  tenantBearer: { type: "http", scheme: "bearer", description: "A tenant key as `Authorization: Bearer <key>`" },
  identityProvider: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "With [operators.oidc]: a JWT of the identity provider (its role from the configured mappings), or Cloudflare Access's Cf-Access-Jwt-Assertion header with [operators.access] (docs/sign-in.md)",
  },
  metricsToken: {
    type: "http",
    scheme: "bearer",
    description: "TOLLGATE_METRICS_TOKEN, for Prometheus scrapes of /_tollgate/metrics only",
  },
};

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
  const schemas = new Schemas();
  const paths: Record<string, Record<string, Json>> = {};
  for (const row of rows.filter((r): r is RouteRow & { doc: RouteDoc } => r.doc !== undefined))
    for (const { path, method, op } of operationsOf(row, schemas)) (paths[path] ??= {})[method] = op;
  return {
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
    components: { securitySchemes: SECURITY_SCHEMES, schemas: schemas.components },
    paths,
  };
}
