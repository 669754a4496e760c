// The route table: every upstream operation Tollgate fronts, one row each. What is not here is refused
// (404 route_not_fronted). The chain (middleware/chain.ts) mounts every row: method-override → identify (+scope) →
// body-limit → rate limit → owner → body-check → quota → meter → handler. Paths are matched after normalisation
// (middleware/normalize), so a row sees what the upstream will.
// The gateway's own endpoints (/_tollgate/*, /mcp) are rows too (./own-rows.ts), first in ROUTES; the row's shape is ./row.ts.
import type { Scope } from "../../config/tenant-schema.js";
import type { ResourceKind } from "../state/types.js";
import type { TokenScope } from "../identity/tokens.js";
import { BODY, type BodySpec } from "./bodies/index.js";
import type { Meter, Method, MetricClass, RouteRow } from "./row.js";
import { OWN_ROWS } from "./own-rows.js";
import { anyObject, json } from "./own-answers.js";
import type { HandlerName } from "./handler-names.js";
import type { AgentPolicyKind } from "../agent-policy/engine.js";

export type { Meter, Method, PriceName, Quota, RouteRow } from "./row.js";

const KEY = ["key"] as const;
/** A search is a query and a few filters; a fetch may carry an output schema. */
const SEARCH_BODY = 16 * 1024,
  FETCH_BODY = 64 * 1024,
  /** One computer action: coordinates, keys or a drag path. */
  ACTION_BODY = 64 * 1024;
const GET = "GET" as const,
  POST = "POST" as const,
  PUT = "PUT" as const,
  DELETE = "DELETE" as const;

/** The job families the SDK polls: start, get, status (and stop for agent tasks). */
function jobRows(o: {
  name: string;
  metric: MetricClass;
  /** The start row's agent policy (src/agent-policy/engine.ts). */
  agentPolicy?: AgentPolicyKind;
  path: string;
  scope: Scope;
  kind: ResourceKind;
  meter: Meter;
  body: BodySpec;
  stop?: boolean;
  /** The start row's handler (agent tasks: "task.start", which may create the task's session first). */
  start?: HandlerName;
}): RouteRow[] {
  /** A read (or stop) of one job by id: the caller's own, free, no body. */
  const byId = (op: string, method: Method, rest: string): RouteRow => ({
    name: `${o.name}.${op}`,
    metric: o.metric,
    method,
    path: `${o.path}/:id${rest}`,
    auth: KEY,
    scope: o.scope,
    owns: { kind: o.kind, param: "id" },
    pay: "free",
    body: BODY.none,
    handler: "job.read",
  });
  const rows: RouteRow[] = [
    {
      name: `${o.name}.start`,
      metric: o.metric,
      ...(o.agentPolicy ? { agentPolicy: o.agentPolicy } : {}),
      method: POST,
      path: o.path,
      auth: KEY,
      scope: o.scope,
      creates: o.kind,
      pay: "credits",
      meter: o.meter,
      body: o.body,
      handler: o.start ?? "job.start",
    },
    byId("get", GET, ""),
    byId("status", GET, "/status"),
  ];
  if (o.stop) rows.push(byId("stop", PUT, "/stop"));
  return rows;
}

export const AGENTS = [
  "browser-use",
  "claude-computer-use",
  "gemini-computer-use",
  "grok-computer-use",
  "meta-computer-use",
  "cua",
  "hyper-agent",
] as const;

/** Runtime plane rows: `/sandbox/<id>/…` with a gateway sandbox token bound to `<id>`. */
function runtime(
  name: string,
  method: Method | readonly Method[],
  rest: string,
  handler: HandlerName = "runtime.forward",
  tokenScope: TokenScope = "runtime",
): RouteRow {
  return {
    name: `runtime.${name}`,
    metric: "runtime",
    method,
    path: `/sandbox/:id${rest}`,
    auth: ["sandbox-token"],
    scope: "sandboxes",
    tokenScope,
    owns: { kind: "sandbox", param: "id" },
    rateLimited: false,
    pay: "free",
    body: BODY.sandboxPlane,
    handler,
  };
}

// biome-ignore format: one row per line, so the table reads as a table
const UPSTREAM_ROWS: readonly RouteRow[] = [
  // ── Web search and fetch: x402 (the gateway pays) or the operator's credits; cached and coalesced either way ──
  { name: "x402.web.search", metric: "search", method: POST, path: "/x402/web/search", auth: ["key", "search-token"], scope: "search", tokenScope: "search", pay: "x402", bodyLimit: SEARCH_BODY, body: BODY.webSearch, handler: "paid.search" },
  { name: "x402.web.fetch", metric: "search", agentPolicy: "fetchUrl", method: POST, path: "/x402/web/fetch", auth: ["key", "search-token"], scope: "search", tokenScope: "search", pay: "x402", bodyLimit: FETCH_BODY, body: BODY.webFetch, handler: "paid.search" },
  { name: "web.search", metric: "search", method: POST, path: "/api/web/search", auth: ["key", "search-token"], scope: "search", tokenScope: "search", pay: "credits", meter: { per: "call", price: "webSearch", settles: "handler" }, bodyLimit: SEARCH_BODY, body: BODY.webSearch, handler: "paid.search" },
  { name: "web.fetch", metric: "search", agentPolicy: "fetchUrl", method: POST, path: "/api/web/fetch", auth: ["key", "search-token"], scope: "search", tokenScope: "search", pay: "credits", meter: { per: "call", price: "webFetch", settles: "handler" }, bodyLimit: FETCH_BODY, body: BODY.webFetch, handler: "paid.search" },
  ...jobRows({ name: "web.batchFetch", metric: "search", agentPolicy: "fetchUrls", path: "/api/web/batch-fetch", scope: "search", kind: "job", meter: { per: "units", price: "webPage", units: "urls", default: 1 }, body: BODY.batchFetch }),
  ...jobRows({ name: "web.crawl", metric: "search", agentPolicy: "webCrawl", path: "/api/web/crawl", scope: "search", kind: "job", meter: { per: "units", price: "webPage", units: "crawlOptions.maxPages", default: 10 }, body: BODY.webCrawl }),

  // ── Jobs billed to credits ──
  ...jobRows({ name: "scrape.batch", metric: "jobs", agentPolicy: "scrapeUrls", path: "/api/scrape/batch", scope: "jobs", kind: "job", meter: { per: "units", price: "scrapePage", units: "urls", default: 1 }, body: BODY.batchScrape }),
  ...jobRows({ name: "scrape", metric: "jobs", agentPolicy: "scrapeUrl", path: "/api/scrape", scope: "jobs", kind: "job", meter: { per: "call", price: "scrape" }, body: BODY.scrape }),
  ...jobRows({ name: "crawl", metric: "jobs", agentPolicy: "crawl", path: "/api/crawl", scope: "jobs", kind: "job", meter: { per: "units", price: "crawlPage", units: "maxPages", default: 10 }, body: BODY.crawl }),
  ...jobRows({ name: "extract", metric: "jobs", agentPolicy: "extract", path: "/api/extract", scope: "jobs", kind: "job", meter: { per: "units", price: "extract", units: "extractPages", default: 10 }, body: BODY.extract }),
  ...AGENTS.flatMap((a) =>
    jobRows({ name: `task.${a}`, metric: "agents", agentPolicy: "task", path: `/api/task/${a}`, scope: "agents", kind: "task", stop: true, meter: { per: "units", price: "agentStep", units: "maxSteps", default: 20 }, body: BODY.task(a), start: "task.start" }),
  ),

  // ── Browser sessions (credits by the minute) ──
  { name: "session.create", metric: "sessions", agentPolicy: "session", method: POST, path: "/api/session", auth: KEY, scope: "sessions", creates: "session", quota: { kind: "session" }, pay: "credits", meter: { per: "minutes", price: "sessionMinute", resource: "session" }, body: BODY.createSession, handler: "session.create" },
  { name: "session.list", metric: "sessions", method: GET, path: "/api/sessions", auth: KEY, scope: "sessions", list: { kind: "session", field: "sessions" }, pay: "free", body: BODY.none, handler: "session.list" },
  { name: "session.activeCount", metric: "sessions", method: GET, path: "/api/sessions/active-count", auth: KEY, scope: "sessions", pay: "free", body: BODY.none, handler: "session.activeCount" },
  { name: "session.get", metric: "sessions", method: GET, path: "/api/session/:id", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "session.get" },
  { name: "session.stop", metric: "sessions", method: PUT, path: "/api/session/:id/stop", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "session.stop" },
  { name: "session.extend", metric: "sessions", agentPolicy: "sessionExtend", method: PUT, path: "/api/session/:id/extend-session", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "credits", meter: { per: "extension", price: "sessionMinute", resource: "session" }, body: BODY.extendSession, handler: "forward" },
  ...(
    [
      ["snapshot", POST, "/snapshot", BODY.sessionSnapshot, "session.snapshot"],
      ["captcha", POST, "/captcha/evaluate", BODY.captcha, "forward"],
      ["recording", GET, "/recording", BODY.none, "forward"],
      ["eventLogs", GET, "/event-logs", BODY.none, "forward"],
      ["uploads", POST, "/uploads", BODY.sessionUpload, "forward"],
      ["update", PUT, "/update", BODY.updateSession, "forward"],
    ] as const
  ).map(([n, m, rest, body, handler]): RouteRow => ({ name: `session.${n}`, metric: "sessions", method: m, path: `/api/session/:id${rest}`, auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body, handler })),
  // File links the upstream signs on its own host are handed out as gateway links (a ticket), never as the upstream's.
  { name: "session.recordingUrl", metric: "sessions", method: GET, path: "/api/session/:id/recording-url", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "session.fileUrl" },
  { name: "session.videoRecordingUrl", metric: "sessions", method: GET, path: "/api/session/:id/video-recording-url", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "session.fileUrl" },
  { name: "session.downloadsUrl", metric: "sessions", method: GET, path: "/api/session/:id/downloads-url", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "session.fileUrl" },
  { name: "session.file", metric: "sessions", method: ["GET", "HEAD"], path: "/_tollgate/session-files/:id", auth: ["ticket"], scope: "sessions", pay: "free", body: BODY.none, handler: "session.file" },
  {
    name: "session.computerAction.upstream", metric: "sessions", method: ["GET", "POST", "PUT"], path: "/api/session/:id/computer-action", auth: ["none"], scope: "sessions", pay: "free", body: BODY.none, handler: "refuse",
    refuse: { status: 404, code: "route_not_fronted", message: "Computer actions go to the session's computerActionEndpoint on the gateway." },
  },
  { name: "session.computerAction", metric: "sessions", method: POST, path: "/_tollgate/computer-action/:id", auth: ["key", "session-token"], scope: "sessions", tokenScope: "computer", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.computerAction, bodyLimit: ACTION_BODY, handler: "cdp.computerAction",
    doc: { tag: "sessions", operationId: "sessionComputerAction", summary: "A session's computer action (the SDK's computerActionEndpoint)", answers: { 200: json(anyObject, "The upstream's answer") } },
  },
  { name: "session.cdp", metric: "sessions", method: GET, path: "/devtools/browser/:id", auth: ["session-token", "key"], scope: "sessions", tokenScope: "cdp", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "cdp.connect" },
  // The gateway's own live view (liveUrl): the ticket in the link is checked by the handler (scope live, the owner's).
  { name: "session.live", metric: "sessions", method: GET, path: "/_tollgate/live/:id", auth: ["ticket"], scope: "sessions", pay: "free", body: BODY.none, handler: "live.page" },
  { name: "session.liveSocket", metric: "sessions", method: GET, path: "/_tollgate/live/:id/ws", auth: ["ticket"], scope: "sessions", pay: "free", body: BODY.none, handler: "live.socket" },
  { name: "x402.session.create", metric: "search", agentPolicy: "x402Session", method: POST, path: "/x402/session", auth: KEY, scope: "sessions", creates: "session", quota: { kind: "session", until: "expiry" }, pay: "x402", body: BODY.x402Session, handler: "x402session.create" },
  { name: "x402.session.get", metric: "search", method: GET, path: "/x402/session/:id", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "x402session.get" },
  { name: "x402.session.stop", metric: "search", method: PUT, path: "/x402/session/:id/stop", auth: KEY, scope: "sessions", owns: { kind: "session", param: "id" }, pay: "free", body: BODY.none, handler: "x402session.stop" },

  // ── Profiles and extensions (used by sessions) ──
  { name: "profile.create", metric: "sessions", method: POST, path: "/api/profile", auth: KEY, scope: "sessions", creates: "profile", pay: "free", body: BODY.createProfile, handler: "owned.create" },
  { name: "profile.list", metric: "sessions", method: GET, path: "/api/profiles", auth: KEY, scope: "sessions", list: { kind: "profile", field: "profiles" }, pay: "free", body: BODY.none, handler: "owned.list" },
  { name: "profile.get", metric: "sessions", method: GET, path: "/api/profile/:id", auth: KEY, scope: "sessions", owns: { kind: "profile", param: "id" }, pay: "free", body: BODY.none, handler: "forward" },
  { name: "profile.delete", metric: "sessions", method: DELETE, path: "/api/profile/:id", auth: KEY, scope: "sessions", owns: { kind: "profile", param: "id" }, pay: "free", body: BODY.none, handler: "forward" },
  { name: "profile.fork", metric: "sessions", method: POST, path: "/api/profile/:id/fork", auth: KEY, scope: "sessions", owns: { kind: "profile", param: "id" }, creates: "profile", pay: "free", body: BODY.createProfile, handler: "owned.create" },
  { name: "extension.add", metric: "sessions", method: POST, path: "/api/extensions/add", auth: KEY, scope: "sessions", creates: "extension", pay: "free", body: BODY.extensionUpload, handler: "owned.create" },
  { name: "extension.list", metric: "sessions", method: GET, path: "/api/extensions/list", auth: KEY, scope: "sessions", list: { kind: "extension", field: null }, pay: "free", body: BODY.none, handler: "owned.list" },

  // ── Sandboxes (credits by the minute), images, snapshots, volumes ──
  { name: "sandbox.create", metric: "sandboxes", agentPolicy: "sandboxCreate", method: POST, path: "/api/sandbox", auth: KEY, scope: "sandboxes", creates: "sandbox", quota: { kind: "sandbox" }, pay: "credits", meter: { per: "minutes", price: "sandboxMinute", resource: "sandbox" }, body: BODY.createSandbox, handler: "sandbox.create" },
  { name: "sandbox.list", metric: "sandboxes", method: GET, path: "/api/sandboxes", auth: KEY, scope: "sandboxes", list: { kind: "sandbox", field: "sandboxes" }, pay: "free", body: BODY.none, handler: "sandbox.list" },
  { name: "sandbox.get", metric: "sandboxes", method: GET, path: "/api/sandbox/:id", auth: KEY, scope: "sandboxes", owns: { kind: "sandbox", param: "id" }, pay: "free", body: BODY.none, handler: "sandbox.get" },
  { name: "sandbox.stop", metric: "sandboxes", method: PUT, path: "/api/sandbox/:id/stop", auth: KEY, scope: "sandboxes", owns: { kind: "sandbox", param: "id" }, pay: "free", body: BODY.none, handler: "sandbox.stop" },
  { name: "sandbox.snapshot", metric: "sandboxes", method: POST, path: "/api/sandbox/:id/snapshot", auth: KEY, scope: "sandboxes", owns: { kind: "sandbox", param: "id" }, pay: "free", body: BODY.sandboxSnapshot, handler: "sandbox.snapshot" },
  { name: "sandbox.expose", metric: "sandboxes", method: POST, path: "/api/sandbox/:id/expose", auth: KEY, scope: "sandboxes", owns: { kind: "sandbox", param: "id" }, pay: "free", body: BODY.expose, handler: "sandbox.expose" },
  { name: "sandbox.unexpose", metric: "sandboxes", method: POST, path: "/api/sandbox/:id/unexpose", auth: KEY, scope: "sandboxes", owns: { kind: "sandbox", param: "id" }, pay: "free", body: BODY.unexpose, handler: "forward" },
  { name: "sandbox.network", metric: "sandboxes", agentPolicy: "sandboxNetwork", method: PUT, path: "/api/sandbox/:id/network", auth: KEY, scope: "sandboxes", owns: { kind: "sandbox", param: "id" }, pay: "free", body: BODY.network, handler: "sandbox.network" },
  { name: "image.list", metric: "sandboxes", method: GET, path: "/api/images", auth: KEY, scope: "sandboxes", pay: "free", body: BODY.none, handler: "forward" },
  // The image catalog is the operator's, shared by every tenant: changing it is for admins.
  { name: "image.delete", metric: "sandboxes", method: DELETE, path: "/api/images/:name", auth: KEY, scope: "admin", pay: "free", body: BODY.none, handler: "forward" },
  { name: "image.build.create", metric: "sandboxes", method: POST, path: "/api/images/builds", auth: KEY, scope: "admin", pay: "free", body: BODY.createImageBuild, handler: "forward" },
  { name: "image.build.reuse", metric: "sandboxes", method: POST, path: "/api/images/builds/reuse", auth: KEY, scope: "admin", pay: "free", body: BODY.reuseImageBuild, handler: "forward" },
  { name: "image.build.list", metric: "sandboxes", method: GET, path: "/api/images/builds", auth: KEY, scope: "admin", pay: "free", body: BODY.none, handler: "forward" },
  { name: "image.build.get", metric: "sandboxes", method: GET, path: "/api/images/builds/:id", auth: KEY, scope: "admin", pay: "free", body: BODY.none, handler: "forward" },
  { name: "image.build.complete", metric: "sandboxes", method: POST, path: "/api/images/builds/:id/complete", auth: KEY, scope: "admin", pay: "free", body: BODY.completeImageBuild, handler: "forward" },
  { name: "image.build.cancel", metric: "sandboxes", method: POST, path: "/api/images/builds/:id/cancel", auth: KEY, scope: "admin", pay: "free", body: BODY.cancelImageBuild, handler: "forward" },
  { name: "snapshot.list", metric: "sandboxes", method: GET, path: "/api/snapshots", auth: KEY, scope: "sandboxes", list: { kind: "snapshot", field: "snapshots" }, pay: "free", body: BODY.none, handler: "snapshot.list" },
  { name: "snapshot.get", metric: "sandboxes", method: GET, path: "/api/snapshots/:idOrName", auth: KEY, scope: "sandboxes", pay: "free", body: BODY.none, handler: "snapshot.byIdOrName" },
  { name: "snapshot.delete", metric: "sandboxes", method: DELETE, path: "/api/snapshots/:idOrName", auth: KEY, scope: "sandboxes", pay: "free", body: BODY.none, handler: "snapshot.byIdOrName" },
  // Volume names are per tenant: `data` is `<tenant>.data` upstream (src/sandboxes/volume-names.ts). As upstream, a volume
  // is read by id and deleted by id or name.
  { name: "volume.create", metric: "sandboxes", method: POST, path: "/api/volume", auth: KEY, scope: "sandboxes", creates: "volume", pay: "free", body: BODY.createVolume, handler: "volume.create" },
  { name: "volume.list", metric: "sandboxes", method: GET, path: "/api/volume", auth: KEY, scope: "sandboxes", list: { kind: "volume", field: "volumes" }, pay: "free", body: BODY.none, handler: "volume.list" },
  { name: "volume.get", metric: "sandboxes", method: GET, path: "/api/volume/:id", auth: KEY, scope: "sandboxes", owns: { kind: "volume", param: "id" }, pay: "free", body: BODY.none, handler: "volume.byKey" },
  { name: "volume.delete", metric: "sandboxes", method: DELETE, path: "/api/volume/:id", auth: KEY, scope: "sandboxes", owns: { kind: "volume", param: "id", byName: true }, pay: "free", body: BODY.none, handler: "volume.byKey" },
  // The operator's credit balance is the operator's business.
  { name: "team.creditInfo", metric: "admin", method: GET, path: "/api/team/credit-info", auth: KEY, scope: "admin", pay: "free", body: BODY.none, handler: "forward" },

  // ── Sandbox runtime plane (gateway token bound to the sandbox; the upstream runtime token is injected) ──
  runtime("exec", POST, "/exec", "runtime.secretEnv"),
  runtime("processes.list", GET, "/processes"),
  runtime("processes.start", POST, "/processes", "runtime.secretEnv"),
  runtime("processes.get", GET, "/processes/:pid"),
  runtime("processes.delete", DELETE, "/processes/:pid"),
  runtime("processes.signal", POST, "/processes/:pid/signal"),
  runtime("processes.stdin", POST, "/processes/:pid/stdin"),
  runtime("processes.wait", POST, "/processes/:pid/wait"),
  runtime("processes.stream", GET, "/processes/:pid/stream"),
  runtime("files.list", GET, "/files"),
  runtime("files.stat", GET, "/files/stat"),
  runtime("files.download", GET, "/files/download"),
  runtime("files.upload", PUT, "/files/upload"),
  ...(["read", "write", "mkdir", "move", "delete", "copy", "chmod", "chown", "watch"] as const).map((op) => runtime(`files.${op}`, POST, `/files/${op}`)),
  runtime("files.watch.stop", DELETE, "/files/watch/:wid"),
  runtime("files.watch.events", GET, "/files/watch/:wid/ws", "runtime.websocket"),
  runtime("files.presignUpload", POST, "/files/presign-upload", "runtime.presign"),
  runtime("files.presignDownload", POST, "/files/presign-download", "runtime.presign"),
  { name: "runtime.files.presigned", metric: "runtime", method: ["GET", "HEAD", "PUT"], path: "/sandbox/:id/files/presigned", auth: ["ticket"], scope: "sandboxes", rateLimited: false, pay: "free", body: BODY.bytes, handler: "runtime.presigned" },
  runtime("pty.create", POST, "/pty", "runtime.secretEnv", "terminal"),
  runtime("pty.get", GET, "/pty/:tid", "runtime.forward", "terminal"),
  runtime("pty.wait", POST, "/pty/:tid/wait", "runtime.forward", "terminal"),
  runtime("pty.kill", POST, "/pty/:tid/kill", "runtime.forward", "terminal"),
  runtime("pty.resize", POST, "/pty/:tid/resize", "runtime.forward", "terminal"),
  runtime("pty.attach", GET, "/pty/:tid/ws", "runtime.websocket", "terminal"),
];

/** Every row the chain mounts, in mount order: the gateway's own (./own-rows.ts), then the upstream's. */
export const ROUTES: readonly RouteRow[] = [...OWN_ROWS, ...UPSTREAM_ROWS];

// Exposed ports are not path routes: `<port>-<id>.<gateway host>` forwards any method and path to that port of the
// sandbox (src/sandboxes/ports.ts), for a gateway token with the "ports" scope or the browser cookie it grants.

export const methodsOf = (row: RouteRow): Method[] => (typeof row.method === "string" ? [row.method] : [...row.method]);
