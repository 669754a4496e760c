// Agent policies (docs/agent-policies.md), enforced on the body step for every row that starts work: which hosts a
// fetch, scrape, crawl or extract may name, which images a sandbox may run, how long a session or sandbox may live,
// how large a crawl may be, and the egress floor merged into every sandbox and session create. The policy is layered:
// the operator's (config `policy`), the tenant's (`tenants[].policy`) and the caller's token or grant (its `pol`
// claim). Every layer applies, so a narrower layer never widens another: the intersection is what passes. A refusal
// is 403 policy_denied naming the policy, the field and the layer; nothing is forwarded. Which rows a policy applies
// to, and which one, is the route table's (a row's `agentPolicy` field, src/routing/table.ts); the body step
// (middleware/body-check) applies it.
import type { AgentPolicy } from "../../config/tenant-schema.js";
import { LRUCache } from "lru-cache";
import { GatewayError } from "../errors.js";
import { cidrMatcher, isCidr } from "../web/cidr.js";

type PolicyLayerName = "operator" | "tenant" | "token";
export interface PolicyLayer {
  by: PolicyLayerName;
  policy: AgentPolicy;
}

type Json = Record<string, unknown>;

/** The refusal: which policy (`domains.deny`), which field of the body, what it named, and whose policy it was. */
function policyDenied(policy: string, field: string, value: string, by: PolicyLayerName, more: Json = {}): GatewayError {
  return new GatewayError(
    403,
    "policy_denied",
    `policy ${policy} refuses ${field} (${value}); set by the ${by}'s policy. Nothing was forwarded.`,
    {
      policy,
      field,
      value,
      by,
      ...more,
    },
  );
}

/** The layers that say something, in order (operator, tenant, token). */
export function activeLayers(layers: ReadonlyArray<PolicyLayer | undefined>): PolicyLayer[] {
  return layers.filter((l): l is PolicyLayer => !!l && Object.keys(l.policy).length > 0);
}

// ── Matching ──

/** A host as a rule reads it: lowercase, no trailing dot, no brackets around an IPv6 literal. */
function normalHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/\.$/, "")
    .replace(/^\[(.*)\]$/, "$1");
}

/** "example.com" matches it and its subdomains; "*.example.com" its subdomains only; "*" anything. */
export function hostMatches(rule: string, host: string): boolean {
  const r = normalHost(rule);
  const h = normalHost(host);
  if (r === "*") return true;
  if (r.startsWith("*.")) return h.endsWith(r.slice(1));
  return h === r || h.endsWith(`.${r}`);
}

/** The host a URL field names; undefined when it is not an absolute http(s) URL. */
function hostOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
    return normalHost(u.hostname);
  } catch {
    return undefined;
  }
}

const widthOf = (addr: string) => (addr.includes(":") ? 128 : 32);
function prefixOf(entry: string): number {
  const [addr, bits] = entry.split("/");
  return bits === undefined ? widthOf(addr ?? "") : Number(bits);
}

/**
 * Whether egress entry `inner` (an address, CIDR range or host) lies within `outer`: ranges by containment, hosts as
 * domain rules ("example.com" covers "api.example.com" and "*.example.com").
 */
export function egressCovers(outer: string, inner: string): boolean {
  const key = `${outer}\n${inner}`;
  let known = covered.get(key);
  if (known === undefined) {
    known = computeCovers(outer, inner);
    covered.set(key, known);
  }
  return known;
}
/** Answers by pair: a range is parsed (BigInt arithmetic, ~15 µs) once per rule and entry, not on every request. */
const covered = new LRUCache<string, boolean>({ max: 4096 });

function computeCovers(outer: string, inner: string): boolean {
  const o = outer.trim();
  const i = inner.trim();
  if (o === "*" || o === i) return true;
  if (isCidr(o) && isCidr(i)) {
    const [addr] = i.split("/");
    return prefixOf(i) >= prefixOf(o) && cidrMatcher([o])(addr);
  }
  if (isCidr(o) || isCidr(i)) return false;
  if (i.startsWith("*.")) return hostMatches(o, i.slice(2)) && (o.startsWith("*.") ? i.endsWith(o.slice(1)) : true);
  return hostMatches(o, i);
}

function imageAllowed(rule: string, image: string): boolean {
  return rule.endsWith("*") ? image.startsWith(rule.slice(0, -1)) : rule === image;
}

// ── Checks on body parts ──

/** Each URL must be allowed by every layer's `domains`. */
function checkUrls(layers: PolicyLayer[], field: string, urls: unknown[]): void {
  for (const [i, u] of urls.entries()) {
    if (typeof u !== "string") continue;
    const at = urls.length > 1 || field.endsWith("urls") ? `${field}[${i}]` : field;
    for (const { by, policy } of layers) {
      const d = policy.domains;
      if (!d || (!d.allow && !d.deny)) continue;
      const host = hostOf(u);
      if (host === undefined) throw policyDenied(d.allow ? "domains.allow" : "domains.deny", at, u, by, { reason: "not an http(s) URL" });
      const denied = d.deny?.find((r) => hostMatches(r, host));
      if (denied) throw policyDenied("domains.deny", at, host, by, { rule: denied });
      if (d.allow && !d.allow.some((r) => hostMatches(r, host))) throw policyDenied("domains.allow", at, host, by, { allowed: d.allow });
    }
  }
}

/** A lifetime in minutes: refused above the smallest layer's limit, that limit sent when the body leaves it out. */
function checkMinutes(
  layers: PolicyLayer[],
  key: "maxSessionMinutes" | "maxSandboxMinutes",
  o: Json,
  field: string,
  prefix: string,
  fill: boolean,
): void {
  let min: { max: number; by: PolicyLayerName } | undefined;
  for (const { by, policy } of layers) {
    const max = policy[key];
    if (max !== undefined && (!min || max < min.max)) min = { max, by };
  }
  if (!min) return;
  const t = o[field];
  if (t === undefined || t === null) {
    if (fill) o[field] = min.max;
    return;
  }
  if (typeof t === "number" && t > min.max)
    throw policyDenied(key, prefix + field, `${t} > ${min.max}`, min.by, { limit: min.max, requested: t });
}

/** Pages of a crawl: the same, with maxCrawlPages. */
function checkPages(layers: PolicyLayer[], o: Json, field: string, path: string, fill: boolean): void {
  let min: { max: number; by: PolicyLayerName } | undefined;
  for (const { by, policy } of layers) {
    const max = policy.maxCrawlPages;
    if (max !== undefined && (!min || max < min.max)) min = { max, by };
  }
  if (!min) return;
  const n = o[field];
  if (n === undefined || n === null) {
    if (fill) o[field] = min.max;
    return;
  }
  if (typeof n === "number" && n > min.max)
    throw policyDenied("maxCrawlPages", path, `${n} > ${min.max}`, min.by, { limit: min.max, requested: n });
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);

/**
 * The egress floor on one create (or network update) body `o`: its `allowOut` entries must lie within every layer's
 * `allowOut` and outside every layer's `denyOut`; `allowInternetAccess: true` is refused where a layer turns it off.
 * Then every layer's `denyOut` is added, a layer's `allowInternetAccess: false` is sent, and when the body names no
 * `allowOut` the layers' own (what lies within all of them) is sent.
 */
function applyEgress(layers: PolicyLayer[], o: Json, prefix: string): void {
  const withEgress = layers.filter((l) => l.policy.egress);
  if (!withEgress.length) return;
  const asked = strings(o.allowOut);
  for (const { by, policy } of withEgress) {
    const e = policy.egress!;
    if (e.allowInternetAccess === false && o.allowInternetAccess === true)
      throw policyDenied("egress.allowInternetAccess", `${prefix}allowInternetAccess`, "true", by);
    for (const entry of asked) {
      const denied = e.denyOut?.find((d) => egressCovers(d, entry));
      if (denied) throw policyDenied("egress.denyOut", `${prefix}allowOut`, entry, by, { rule: denied });
      if (e.allowOut && !e.allowOut.some((a) => egressCovers(a, entry)))
        throw policyDenied("egress.allowOut", `${prefix}allowOut`, entry, by, { allowed: e.allowOut });
    }
  }
  const deny = new Set(strings(o.denyOut));
  for (const { policy } of withEgress) for (const d of policy.egress!.denyOut ?? []) deny.add(d);
  if (deny.size) o.denyOut = [...deny];
  if (withEgress.some((l) => l.policy.egress!.allowInternetAccess === false)) o.allowInternetAccess = false;
  if (!asked.length) {
    const lists = withEgress.map((l) => l.policy.egress!.allowOut).filter((a): a is string[] => !!a);
    if (lists.length) {
      // What lies within every list: each entry of any list that every list covers, less those another one covers.
      const within = [...new Set(lists.flat())].filter((entry) => lists.every((list) => list.some((a) => egressCovers(a, entry))));
      const minimal = within.filter((e) => !within.some((other) => other !== e && egressCovers(other, e)));
      o.allowOut = minimal;
      // Lists with nothing in common allow nothing (an empty allowOut would read as no list at all).
      if (!minimal.length) o.allowInternetAccess = false;
    }
  }
}

/** The domains every layer denies, added to a browser's own `urlBlocklist` (what a session or agent opens). */
function applyBlocklist(layers: PolicyLayer[], o: Json): void {
  const deny = layers.flatMap((l) => l.policy.domains?.deny ?? []);
  if (!deny.length) return;
  o.urlBlocklist = [...new Set([...strings(o.urlBlocklist), ...deny])];
}

/** A session's options, wherever they sit (a create body, or `sessionOptions` of a job or task). */
function applySession(layers: PolicyLayer[], o: Json, prefix: string, fill: boolean): void {
  checkMinutes(layers, "maxSessionMinutes", o, "timeoutMinutes", prefix, fill);
  applyEgress(layers, o, prefix);
  applyBlocklist(layers, o);
}

/** A job's or task's `sessionOptions`: checked and merged when present, added when a layer has a floor to merge. */
function applySessionOptions(layers: PolicyLayer[], body: Json): void {
  const present = body.sessionOptions && typeof body.sessionOptions === "object";
  const floor = layers.some((l) => l.policy.egress || l.policy.domains?.deny?.length);
  if (!present && !floor) return;
  const o: Json = present ? { ...(body.sessionOptions as Json) } : {};
  applySession(layers, o, "sessionOptions.", false);
  body.sessionOptions = o;
}

/** The image a snapshot was taken from, when the upstream knows the snapshot. */
export type SnapshotImage = (snapshotName: string) => Promise<string | undefined>;

async function checkImages(layers: PolicyLayer[], body: Json, snapshotImage: SnapshotImage): Promise<void> {
  const withImages = layers.filter((l) => l.policy.images);
  if (!withImages.length) return;
  const named: Array<{ field: string; image: string }> = [];
  if (typeof body.imageName === "string") named.push({ field: "imageName", image: body.imageName });
  if (typeof body.snapshotName === "string") {
    const image = await snapshotImage(body.snapshotName);
    // A snapshot the upstream does not know is its own 404; one whose image is unknown cannot be shown to be allowed.
    if (image !== undefined) named.push({ field: "snapshotName", image });
  }
  for (const { by, policy } of withImages) {
    const allowed = policy.images!;
    if (typeof body.imageId === "string")
      throw policyDenied("images", "imageId", body.imageId, by, { allowed, reason: "name an allowed imageName" });
    if (typeof body.snapshotId === "string" && typeof body.snapshotName !== "string")
      throw policyDenied("images", "snapshotId", body.snapshotId, by, { allowed, reason: "start from a snapshot by its snapshotName" });
    if (!named.length && typeof body.snapshotName !== "string")
      throw policyDenied("images", "imageName", "none", by, { allowed, reason: "imageName is required" });
    for (const n of named)
      if (!allowed.some((r) => imageAllowed(r, n.image))) throw policyDenied("images", n.field, n.image, by, { allowed });
  }
}

// ── Rows ──

/**
 * The policies a route row may name (its `agentPolicy` field): what each checks, limits or merges into the body. A row
 * naming none starts nothing a policy speaks of.
 */
export type AgentPolicyKind =
  | "fetchUrl"
  | "fetchUrls"
  | "webCrawl"
  | "scrapeUrl"
  | "scrapeUrls"
  | "crawl"
  | "extract"
  | "session"
  | "x402Session"
  | "sessionExtend"
  | "sandboxCreate"
  | "sandboxNetwork"
  | "task";

type RowPolicy = (layers: PolicyLayer[], body: Json, snapshotImage: SnapshotImage) => void | Promise<void>;

const urlField =
  (fetchLike: boolean): RowPolicy =>
  (layers, body) => {
    checkUrls(layers, "url", [body.url]);
    if (!fetchLike) applySessionOptions(layers, body);
  };
const urlsField =
  (fetchLike: boolean): RowPolicy =>
  (layers, body) => {
    checkUrls(layers, "urls", strings(body.urls));
    if (!fetchLike) applySessionOptions(layers, body);
  };

const POLICIES: Record<AgentPolicyKind, RowPolicy> = {
  fetchUrl: urlField(true),
  fetchUrls: urlsField(true),
  webCrawl: (layers, body) => {
    checkUrls(layers, "url", [body.url]);
    const o: Json = body.crawlOptions && typeof body.crawlOptions === "object" ? { ...(body.crawlOptions as Json) } : {};
    checkPages(layers, o, "maxPages", "crawlOptions.maxPages", true);
    if (Object.keys(o).length) body.crawlOptions = o;
  },
  scrapeUrl: urlField(false),
  scrapeUrls: urlsField(false),
  crawl: (layers, body) => {
    checkUrls(layers, "url", [body.url]);
    checkPages(layers, body, "maxPages", "maxPages", true);
    applySessionOptions(layers, body);
  },
  extract: (layers, body) => {
    checkUrls(layers, "urls", strings(body.urls));
    checkPages(layers, body, "maxLinks", "maxLinks", false);
    applySessionOptions(layers, body);
  },
  session: (layers, body) => applySession(layers, body, "", true),
  // The x402 session takes a few fields only (no allowOut/denyOut/urlBlocklist): a floor it cannot carry refuses it.
  x402Session: (layers, body) => {
    const floor = layers.find((l) => l.policy.egress || l.policy.domains?.deny?.length);
    if (floor)
      throw policyDenied(floor.policy.egress ? "egress" : "domains.deny", "body", "an x402 session", floor.by, {
        reason: "an x402 session cannot carry the egress floor or a URL blocklist; create it with POST /api/session",
      });
    const limit = layers
      .filter((l) => l.policy.maxSessionMinutes !== undefined)
      .sort((a, b) => a.policy.maxSessionMinutes! - b.policy.maxSessionMinutes!)[0];
    if (limit && (body.timeoutMinutes === undefined || body.timeoutMinutes === null)) {
      // Its timeout is 5 to 60 whole minutes; left out, the upstream's default may be longer than the limit.
      const max = Math.floor(limit.policy.maxSessionMinutes!);
      if (max < 5)
        throw policyDenied("maxSessionMinutes", "timeoutMinutes", "none", limit.by, {
          limit: limit.policy.maxSessionMinutes,
          reason: "an x402 session lasts at least 5 minutes",
        });
      body.timeoutMinutes = Math.min(max, 60);
    }
    checkMinutes(layers, "maxSessionMinutes", body, "timeoutMinutes", "", false);
  },
  sessionExtend: (layers, body) => {
    const limit = layers.find((l) => l.policy.maxSessionMinutes !== undefined);
    // A session's start is the upstream's to know: under a lifetime limit, its lifetime is the one it was created with.
    if (limit)
      throw policyDenied("maxSessionMinutes", "durationMinutes", String(body.durationMinutes), limit.by, {
        limit: limit.policy.maxSessionMinutes,
        reason: "a session cannot be extended under a lifetime limit",
      });
  },
  sandboxCreate: async (layers, body, snapshotImage) => {
    await checkImages(layers, body, snapshotImage);
    checkMinutes(layers, "maxSandboxMinutes", body, "timeoutMinutes", "", true);
    applyEgress(layers, body, "");
  },
  sandboxNetwork: (layers, body) => applyEgress(layers, body, ""),
  task: (layers, body) => applySessionOptions(layers, body),
};

/** Whether the policy changed nothing: the same keys, each the same value (nested objects compared as JSON). */
function sameJson(a: Json, b: Json): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const k of keys) {
    const x = a[k];
    const y = b[k];
    if (x === y) continue;
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false;
    if (JSON.stringify(x) !== JSON.stringify(y)) return false;
  }
  return true;
}

/**
 * Applies the layers to a row's body: throws the refusal, or returns the body to forward (the floor merged in, limits
 * filled in), or undefined when nothing changed.
 */
export async function applyPolicy(
  kind: AgentPolicyKind,
  layers: PolicyLayer[],
  body: Json,
  snapshotImage: SnapshotImage,
): Promise<Json | undefined> {
  const fn = POLICIES[kind];
  if (!fn || !layers.length) return undefined;
  const out = { ...body };
  await fn(layers, out, snapshotImage);
  return sameJson(out, body) ? undefined : out;
}

// ── Where a browser goes (the CDP navigation floor, src/sessions/cdp-guard.ts) ──

/**
 * The host a page's URL reaches: "" for a document that reaches none (about:blank, about:srcdoc, data:, an error
 * page), undefined for a scheme that names no web host (file:, chrome:, devtools:…). blob:, filesystem: and
 * view-source: URLs are read as the URL they wrap.
 */
function navigationHost(url: string): string | undefined {
  if (url === "" || /^(about|data|chrome-error):/i.test(url)) return "";
  const inner = /^(blob|filesystem|view-source):(.*)$/is.exec(url);
  if (inner) return navigationHost(inner[2]!);
  try {
    const u = new URL(url);
    if (!/^(https?|wss?):$/.test(u.protocol)) return undefined;
    return normalHost(u.hostname);
  } catch {
    return undefined;
  }
}

export interface NavigationRefusal {
  policy: "domains.deny" | "domains.allow";
  by: PolicyLayerName;
  /** The host the page reached (or the scheme, for one that names no web host). */
  host: string;
  rule?: string;
}

/**
 * Whether the layers' `domains` rules refuse a page at `url` (a committed navigation seen on the CDP stream): a denied
 * host, or under an allow list a host outside it or a scheme that names no web host. Pages that reach no host pass.
 */
export function navigationRefusal(layers: ReadonlyArray<PolicyLayer>, url: string): NavigationRefusal | undefined {
  const host = navigationHost(url);
  if (host === "") return undefined;
  for (const { by, policy } of layers) {
    const d = policy.domains;
    if (!d || (!d.allow && !d.deny)) continue;
    if (host === undefined) {
      if (d.allow) return { policy: "domains.allow", by, host: url.slice(0, url.indexOf(":") + 1) || url.slice(0, 16) };
      continue;
    }
    const denied = d.deny?.find((r) => hostMatches(r, host));
    if (denied) return { policy: "domains.deny", by, host, rule: denied };
    if (d.allow && !d.allow.some((r) => hostMatches(r, host))) return { policy: "domains.allow", by, host };
  }
  return undefined;
}

/** Whether any layer has a `domains` rule (then the CDP navigation floor is on for the caller's connections). */
export function hasDomainRules(layers: ReadonlyArray<PolicyLayer>): boolean {
  return layers.some((l) => !!(l.policy.domains?.allow || l.policy.domains?.deny?.length));
}
