// The chain's body step: a row's JSON body is checked against the row's declaration (./bodies/) before anything is
// forwarded. Fields the declaration does not know are refused (400 unknown_field, naming the path), limits out of range
// are refused (400 invalid_params), and every id the body names must be the caller's (else the same 404 as a foreign
// id in the path). Deny by default, on body fields as on paths.
import type { Context, MiddlewareHandler, Next } from "hono";
import type { GatewayEnv } from "../../src/context.js";
import { GatewayError } from "../../src/errors.js";
import type { GatewayServices } from "../../src/services.js";
import { jsonBody, jsonBodyNow, type JsonBody, setJsonBody } from "../../src/routing/json-body.js";
import { LRUCache } from "lru-cache";
import { notOwned } from "../../src/routing/not-owned.js";
import { bodyProblems, canonicalEgress, declaresEgress, namedRefs, type NamedRef } from "../../src/routing/bodies/declare.js";
import { webPlatform } from "../../src/web/speed.js";
import { callerTenant } from "../../src/identity/caller.js";
import type { RouteRow } from "../../src/routing/table.js";
import { imageOfSnapshot } from "../../src/sandboxes/snapshot-image.js";
import { activeLayers, type AgentPolicyKind, applyPolicy, type PolicyLayer } from "../../src/agent-policy/engine.js";

/** The body step reads the server config (`unknownBodyFields`), logs forwarded unknown fields, checks ownership. */
type BodyCheckServices = Pick<GatewayServices, "config" | "logger" | "stores"> & Partial<Pick<GatewayServices, "platform" | "upstream">>;

/** Bodies up to this many characters are remembered once they pass (see checkBody). */
const PASSED_MAX_CHARS = 4096;

declare module "hono" {
  interface ContextVariableMap {
    /** The row declares no body: none is forwarded, whatever the client sent. */
    forwardNoBody: boolean;
  }
}

/** Each id a body names, checked against the ownership registry (one lookup per distinct id). */
async function requireOwnedRefs(services: BodyCheckServices, c: Context<GatewayEnv>, refs: NamedRef[]): Promise<void> {
  const tenant = callerTenant(c).id;
  const seen = new Set<string>();
  for (const ref of refs) {
    const key = `${ref.kind}:${ref.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if ((await services.stores.ownership.owner(ref.kind, ref.id)) !== tenant) throw notOwned(ref.kind, ref.id, ref.path);
    // With several upstream accounts, what the body names binds the request to the account holding it.
    const account = await services.upstream?.accounts?.accountOf(ref.kind, ref.id);
    if (account === undefined) continue;
    const pinned = c.get("accountPin");
    if (pinned !== undefined && pinned !== account)
      throw new GatewayError(
        409,
        "accounts_differ",
        `${ref.path} names a ${ref.kind} held by another upstream account than the rest of the body; use resources of one account.`,
      );
    c.set("accountPin", account);
  }
}

/** The policy layers that apply to the caller: the operator's, its tenant's, its token's or grant's. */
function callerLayers(services: BodyCheckServices, c: Context<GatewayEnv>): PolicyLayer[] {
  const caller = c.get("caller");
  const tenant = caller && "tenant" in caller ? caller.tenant : undefined;
  return activeLayers([
    { by: "operator", policy: services.config.policy ?? {} },
    tenant ? { by: "tenant", policy: tenant.policy ?? {} } : undefined,
    caller?.via === "token" && caller.token.policy ? { by: "token", policy: caller.token.policy } : undefined,
  ]);
}

/**
 * The row's agent policy (its `agentPolicy` field, src/agent-policy/engine.ts) on the body, after its declaration
 * passed: refused, or the body to forward set.
 */
async function enforcePolicy(
  services: BodyCheckServices,
  c: Context<GatewayEnv>,
  kind: AgentPolicyKind,
  read: JsonBody,
  layers: PolicyLayer[],
): Promise<void> {
  const body = read.json as Record<string, unknown>;
  const out = await applyPolicy(kind, layers, body, async (name) => {
    const { upstream } = services;
    return upstream ? imageOfSnapshot(c, { upstream }, name) : undefined;
  });
  if (out) setJsonBody(c, out);
}

/**
 * The body step of a row's chain, or undefined for rows whose body is not JSON (runtime plane, uploads): those stream
 * through, and a row that declares no body forwards none.
 * @example app.on("POST", "/api/sandbox", identify(...), checkBody(services, row), handler)
 */
export function checkBody(services: BodyCheckServices, row: RouteRow): MiddlewareHandler<GatewayEnv> | undefined {
  const spec = row.body;
  if (spec.kind === "none") {
    return async function dropBodyMiddleware(c, next) {
      c.set("forwardNoBody", true);
      return next();
    };
  }
  if (spec.kind !== "json") return undefined;
  const schema = spec.schema;
  const egress = declaresEgress(schema);
  const policy = row.agentPolicy;
  const platform = services.platform ?? webPlatform;
  // Texts this row's declaration found nothing wrong with, the ids each names and whether its egress rules are rewritten:
  // a pure function of the text, so a body sent again is not walked again (its ids are still checked against the
  // registry, on every request).
  const passed = new LRUCache<string, { refs: NamedRef[]; rewrite: boolean }>({
    max: 1024,
    maxSize: 1024 * 1024,
    sizeCalculation: (_v, k) => k.length + 64,
  });
  const checked = (c: Context<GatewayEnv>, next0: Next, read: JsonBody): Promise<void> => {
    // Rows that start work apply the caller's agent policy last (nothing to do, and no promise, for other rows).
    const next: Next = policy
      ? () => {
          const layers = callerLayers(services, c);
          return layers.length ? enforcePolicy(services, c, policy, read, layers).then(next0) : next0();
        }
      : next0;
    const text = read.text;
    // Egress rules go on (and meet the policy) in their one canonical spelling; one with none is refused below.
    const canonical = () => {
      const rewrote = egress && canonicalEgress(schema, read.json);
      if (rewrote) setJsonBody(c, read.json);
      return rewrote;
    };
    const known = passed.get(text);
    if (known) {
      if (known.rewrite) canonical();
      return known.refs.length ? requireOwnedRefs(services, c, known.refs).then(next) : next();
    }
    const body = read.json; // parsed here, not before: a text that passed needs no object
    const rewrite = canonical();
    const problems = bodyProblems(schema, body);
    const invalid = problems.find((p) => p.code === "invalid_params");
    const unknown = problems.filter((p) => p.code === "unknown_field");
    if (unknown.length) {
      if (services.config.server.unknownBodyFields !== "forward") {
        const first = unknown[0]!;
        throw new GatewayError(
          400,
          "unknown_field",
          `${first.message} Fields this route takes are listed in docs/routes.md; nothing was forwarded.`,
          { field: first.field, fields: unknown.map((u) => u.field) },
        );
      }
      services.logger.info('unknown body fields forwarded (server.unknownBodyFields = "forward")', {
        requestId: c.get("requestId"),
        route: row.name,
        fields: unknown.map((u) => u.field),
      });
    }
    if (invalid) throw new GatewayError(400, "invalid_params", invalid.message, { field: invalid.field });
    const refs = namedRefs(schema, body);
    if (!problems.length && text.length <= PASSED_MAX_CHARS) passed.set(text, { refs, rewrite });
    return refs.length ? requireOwnedRefs(services, c, refs).then(next) : next();
  };
  // Not an async function: a body already held (src/web/held-body.ts) naming no id is checked with no promise or
  // turn of its own. Its refusals are thrown as they are; Hono's chain answers them either way.
  return function checkBodyMiddleware(c, next) {
    const now = jsonBodyNow(c, platform);
    return now ? checked(c, next, now) : jsonBody(c, platform).then((b) => checked(c, next, b));
  };
}
