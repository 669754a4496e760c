// The label values of the gateway's metrics, each kept to a bounded set: route classes, methods, WebSocket kinds, a cap
// for labels whose values come from traffic or config (tenants, routes, codes), and the runtime's name.

/**
 * The class of a request no route row named (a row's class is its `metric` field, src/routing/table.ts): the coarse
 * surfaces of ./route-label.ts and the sandbox port label. The latency histograms' only label, so their series are
 * bounded (11 classes), whatever the route table or the traffic.
 */
const SURFACE_CLASSES: Record<string, string> = {
  "api.sandboxes": "sandboxes",
  "api.sessions": "sessions",
  "api.volumes": "sandboxes",
  "api.web": "search",
  "api.other": "other",
  "x402.sessions": "sessions",
  "x402.other": "search",
  "sandbox.runtime": "runtime",
  "sandbox.port": "ports",
  cdp: "cdp",
  "tollgate.other": "tollgate",
};

/** The class of a route label no row named: its surface's; a matched own pattern's (admin, tollgate); else other. */
export function routeClassOf(route: string): string {
  if (route.startsWith("/_tollgate/admin") || route.startsWith("/_tollgate/console")) return "admin";
  if (route.startsWith("/_tollgate")) return "tollgate";
  return SURFACE_CLASSES[route] ?? "other";
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
