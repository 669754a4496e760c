// The label values of the gateway's metrics, each kept to a bounded set: route classes, methods, WebSocket kinds, a cap
// for labels whose values come from traffic or config (tenants, routes, codes), and the runtime's name.

/**
 * Route classes: the latency histograms' only label, so their series are bounded by this list (13 classes × 15 series
 * = 195 per histogram), whatever the route table or the traffic. A route's class is its row name's first part
 * (`session.create` → sessions), or its surface for requests no row named.
 */
const ROUTE_CLASSES: Record<string, string> = {
  web: "search",
  x402: "search",
  session: "sessions",
  profile: "sessions",
  extension: "sessions",
  sandbox: "sandboxes",
  image: "sandboxes",
  snapshot: "sandboxes",
  volume: "sandboxes",
  runtime: "runtime",
  scrape: "jobs",
  crawl: "jobs",
  extract: "jobs",
  task: "agents",
  team: "admin",
  "api.sandboxes": "sandboxes",
  "api.sessions": "sessions",
  "api.volumes": "sandboxes",
  "api.web": "search",
  "x402.sessions": "sessions",
  "x402.other": "search",
  "sandbox.runtime": "runtime",
  cdp: "cdp",
};

/** The class of a route label (./route-label.ts): search, sessions, sandboxes, runtime, cdp, jobs, agents, ports, tollgate, admin, other. */
export function routeClassOf(route: string): string {
  if (route.startsWith("/_tollgate/admin") || route.startsWith("/_tollgate/console")) return "admin";
  if (route.startsWith("/_tollgate") || route.startsWith("tollgate.")) return "tollgate";
  const exact = ROUTE_CLASSES[route];
  if (exact) return exact;
  const dot = route.indexOf(".");
  const head = dot > 0 ? route.slice(0, dot) : route;
  if (ROUTE_CLASSES[head]) return ROUTE_CLASSES[head];
  if (route === "port" || route.startsWith("port.")) return "ports";
  if (head === "api" || route.startsWith("/api/")) return "other";
  return "other";
}

/** The `method` label's values; anything else is "other" (index 0). */
export const METHODS = ["other", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const;
export const METHOD_INDEX: Record<string, number> = Object.assign(Object.create(null), {
  GET: 1,
  POST: 2,
  PUT: 3,
  PATCH: 4,
  DELETE: 5,
  HEAD: 6,
  OPTIONS: 7,
});
/** What a WebSocket relay carries: a browser's CDP, a sandbox runtime stream, or an exposed port. */
export type WebSocketKind = "cdp" | "runtime" | "port";

/** The kind of a relayed WebSocket, from its path: /devtools → cdp, /sandbox/<id> → runtime, anything else (a port host). */
export function webSocketKindOf(path: string): WebSocketKind {
  if (path.startsWith("/devtools/")) return "cdp";
  if (path.startsWith("/sandbox/")) return "runtime";
  return "port";
}

/** Caps the distinct values one label may take; past the cap a value is reported as "other". */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max: number) {}
  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return "other";
    this.seen.add(value);
    return value;
  }
}

/** node, bun or workerd: the runtime `tollgate_build_info` names. */
export function runtimeName(): string {
  const versions = (globalThis as { process?: { versions?: Record<string, string> } }).process?.versions;
  if (versions?.bun) return "bun";
  if (versions?.node && (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent !== "Cloudflare-Workers") return "node";
  return "workerd";
}
