// The shape of a route-table row (./table.ts holds the rows; ./own-rows.ts the gateway's own).
import type { Scope } from "../../config/tenant-schema.js";
import type { ResourceKind } from "../state/types.js";
import type { TokenScope } from "../identity/tokens.js";
import type { BodySpec } from "./bodies/index.js";
import type { HandlerName } from "./handler-names.js";
import type { AgentPolicyKind } from "../agent-policy/engine.js";
import type * as z from "zod";

export type Method = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * A row's class in the latency histograms (`tollgate_request_duration_seconds`, `tollgate_upstream_duration_seconds`):
 * their only label, so their series stay bounded whatever the table or the traffic (docs/metrics.md). Requests no row
 * names get their surface's class (src/telemetry/metric-labels.ts).
 */
export type MetricClass =
  | "search"
  | "sessions"
  | "sandboxes"
  | "runtime"
  | "cdp"
  | "ports"
  | "jobs"
  | "agents"
  | "admin"
  | "tollgate"
  | "other";

/**
 * Who may call a row: a tenant key (with the row's scope), one of the gateway's own tokens, a ticket in the URL (checked
 * by the handler), or nobody in particular ("none"). The gateway's own rows (./own-rows.ts) add "public" (anyone; a
 * valid key or token presented still names the caller), "tenant-key" (any key of a tenant), "operator" (an admin or
 * operator-readonly key), "metrics-token", "mcp-token" (a keyless MCP token) and "console" (the console's session).
 * middleware/identify reads them all; nothing else parses credentials.
 */
type Credential =
  | "key"
  | "search-token"
  | "sandbox-token"
  | "session-token"
  | "ticket"
  | "none"
  | "public"
  | "tenant-key"
  | "operator"
  | "metrics-token"
  | "mcp-token"
  | "console";

/** Credit prices an operator sets (config `credits.prices`); USD per unit. */
export type PriceName =
  | "webSearch"
  | "webFetch"
  | "webPage"
  | "scrape"
  | "scrapePage"
  | "crawlPage"
  | "extract"
  | "agentStep"
  | "sessionMinute"
  | "sandboxMinute";

/**
 * How a credit-billed row is metered. `call`: one price per call, committed on success, released on failure.
 * `units`: price × the count the request asks for at most (its `urls`, `maxPages`, `maxSteps`…; a missing limit is set
 * to `default` so the upstream cannot run past what was reserved), settled when the job ends. `minutes`: price × `timeoutMinutes` reserved at creation, settled at stop, expiry or an upstream stop.
 * `extension`: price × `durationMinutes` added to the `resource`'s own hold (and its end time), so it settles once.
 */
export type Meter =
  | {
      per: "call";
      price: PriceName;
      /**
       * Where the call is billed: "chain" (default: the meter step, around the handler) or "handler" (the handler bills
       * only a call it sends upstream, src/payments/credit-meter.ts: a cached or coalesced answer costs nothing).
       */
      settles?: "chain" | "handler";
    }
  | {
      per: "units";
      price: PriceName;
      /** `extractPages`: one per URL, `maxLinks` for each URL ending in `/*` (`default` is then maxLinks when absent). */
      units: "urls" | "maxPages" | "crawlOptions.maxPages" | "maxSteps" | "extractPages";
      default: number;
    }
  | { per: "minutes"; price: PriceName; resource: "sandbox" | "session" }
  | { per: "extension"; price: PriceName; resource: "sandbox" | "session" };

/**
 * A creation counted against the tenant's active `kind`s. `until`: how a created one stops counting: "upstream" (default:
 * while the upstream says it runs) or "expiry" (an x402 session, not visible on the upstream's API: its paid `expiresAt`).
 */
export interface Quota {
  kind: "sandbox" | "session";
  until?: "upstream" | "expiry";
}

/** One answer of a documented row: JSON of `schema`, and/or a text body of type `text`. */
export interface DocAnswer {
  description: string;
  schema?: z.ZodType;
  text?: "text/plain" | "text/html" | "text/csv" | "application/toml";
}

/**
 * How one of the gateway's own rows appears in its OpenAPI document (src/operators/http/openapi.ts builds the document from
 * the rows that carry one, and nothing else). Security and the refusals any such row may give follow from `auth`, path
 * parameters from `path`, the request body from the row's `body` (a handler body's schema) unless `body` names one.
 */
export interface RouteDoc {
  tag: "gateway" | "usage" | "tokens" | "sessions" | "admin";
  summary: string;
  /** Default: made from the method and path (`put /admin/tenants/{id}/budget` → putAdminTenantsIdBudget). */
  operationId?: string;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** The row's answers by status (its refusals beside the common ones, e.g. 409). */
  answers: Record<number, DocAnswer>;
}

export interface RouteRow {
  /** Unique name: logs, metrics and the audit speak of rows by it. */
  name: string;
  /** The row's class in the latency histograms. */
  metric: MetricClass;
  /**
   * The agent policy the body step applies to this row's body (src/agent-policy/engine.ts: hosts a fetch may name,
   * images, lifetimes, crawl sizes, the egress floor); none: the row starts nothing a policy speaks of.
   */
  agentPolicy?: AgentPolicyKind;
  method: Method | readonly Method[];
  /** Hono pattern on the normalised path. */
  path: string;
  auth: readonly Credential[];
  /** Scope a tenant key needs (tokens carry their own scopes, `tokenScope`); none on own rows any key may call. */
  scope: Scope | undefined;
  tokenScope?: TokenScope;
  /**
   * The caller must own the resource named by this path parameter (another tenant's id answers 404). `byName`: the
   * parameter may also be the caller's own name for it (volumes), resolved within the caller's names only.
   */
  owns?: { kind: ResourceKind; param: string; byName?: boolean };
  /** The answer's id (`id` or `jobId`) becomes the caller's. */
  creates?: ResourceKind;
  /** A list of `field` filtered to the caller's `kind` (null: unpaged, filtered in the shape the upstream answered). */
  list?: { kind: ResourceKind; field: string | null };
  pay: "free" | "x402" | "credits";
  meter?: Meter;
  /**
   * What the request body may hold (./bodies/): a JSON body is checked against its schema before anything is forwarded
   * (unknown fields 400 unknown_field, limits 400 invalid_params, an id of a resource the caller does not own 404).
   */
  body: BodySpec;
  /** A JSON body above this many bytes answers 413 body_too_large (default 1 MiB; a search needs a few KiB). */
  bodyLimit?: number;
  /** Creation counted against the tenant's active-resource quota and body limits. */
  quota?: Quota;
  /**
   * The tenant's rate limit (requestsPerMinute) applies to this row; default true. The runtime plane sets false: it is
   * the hot path and is bounded by its sandbox.
   */
  rateLimited?: boolean;
  /**
   * Route handler, by its name in the one registry (./handler-names.ts: a name not there fails to compile); "forward"
   * relays the request to the upstream with the operator's key.
   */
  handler: HandlerName;
  /** An own row's answer to a gateway token it does not take (`{kind}`: the token's kind). */
  wrongToken?: { status: 401 | 403; code: string; message: string };
  /** "operator" rows: an operator-readonly key may also call this one though it is no read (its own console link). */
  readOnlyMay?: boolean;
  /** A 401 from identify carries `WWW-Authenticate: Bearer resource_metadata=<public origin><this path>` (MCP). */
  bearerChallenge?: string;
  /** In the gateway's OpenAPI document, thus (own rows, and the gateway-served computer action). */
  doc?: RouteDoc;
  /** Deliberately not fronted: answered with this refusal, never forwarded. */
  refuse?: { status: 403 | 404 | 410; code: string; message: string };
}
